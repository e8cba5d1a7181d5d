import type { U64 } from '../internal/u64.ts';
import type { Payload } from '../protocol/events.ts';
/** The read model's rows are the API's types (src/schemas/model.ts). */
import type {
  NodeSubscription,
  Stack,
  StackAttestationDispute,
  StackSettlementTicket,
  Task,
} from '../schemas/model.ts';

export type UsageOutcome =
  | { status: 'recorded'; already_computed_units: U64; num_compute_units: U64; num_total_messages: U64 }
  | { status: 'not_found' }
  | { status: 'over_capacity'; already_computed_units: U64; num_compute_units: U64 };

export interface IdempotencyRecord {
  request_hash: string;
  /** The HTTP status of the recorded response; 0 while the outcome is not recorded. */
  status: number;
  response: string | null;
  created_at: number;
}

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** What the indexer has done with one event source. */
export interface IndexerCounts {
  applied: number;
  duplicate: number;
  ignored: number;
  unknown: number;
  malformed: number;
  orphaned: number;
}

export interface CursorState extends IndexerCounts {
  source: string;
  cursor: string | null;
  updatedAt: string;
}

/** What the indexer writes: the decoded payloads of the chain's events (contracts.md §2.22). */
export type NewTask = Payload<'TaskRegisteredEvent'>;
export type NewStack = Omit<Payload<'StackCreatedEvent'>, 'owner'> & { owner_address: string };
export type TrySettle = Payload<'StackTrySettleEvent'>;
export type Attestation = Payload<'NewStackSettlementAttestationEvent'>;
/** applied; or the ticket is unknown (orphan); or the node was not requested as an attester. */
export type AttestationOutcome = 'applied' | 'no_ticket' | 'not_requested';
export type TicketSettled = Payload<'StackSettlementTicketEvent'>;
export type TicketClaimed = Payload<'StackSettlementTicketClaimedEvent'>;
export type StackClaimed = Payload<'ClaimedStackEvent'>;
export type Dispute = Payload<'StackAttestationDisputeEvent'>;

/**
 * The writes the indexer makes inside one transaction. Each method is one idempotent statement or a small
 * read-modify-write; the transaction that holds them also saves the cursor, so a page is all or nothing.
 */
export interface IndexerTx {
  /** Records the event keys and returns those not recorded before (the others are duplicates). */
  claimEvents(keys: readonly string[]): Promise<Set<string>>;
  putTask(task: NewTask): Promise<void>;
  /** false when the task is unknown. */
  deprecateTask(taskSmallId: U64, epoch: U64): Promise<boolean>;
  /** Marks the task removed and its subscriptions invalid; false when the task is unknown. */
  removeTask(taskSmallId: U64, epoch: U64): Promise<boolean>;
  putNode(nodeSmallId: U64, badgeId: string, address: string): Promise<void>;
  putNodeModel(nodeSmallId: U64, modelName: string, echelonId: U64): Promise<void>;
  /** Inserts or updates a subscription and marks it valid. */
  putSubscription(sub: Omit<NodeSubscription, 'valid'>): Promise<void>;
  deleteSubscription(nodeSmallId: U64, taskSmallId: U64): Promise<boolean>;
  putStack(stack: NewStack): Promise<void>;
  putTicket(ticket: TrySettle): Promise<void>;
  recordAttestation(attestation: Attestation): Promise<AttestationOutcome>;
  settleTicket(ticket: TicketSettled): Promise<void>;
  claimTicket(claim: TicketClaimed): Promise<void>;
  putDispute(dispute: Dispute): Promise<void>;
  claimStack(claim: StackClaimed): Promise<void>;
  /** Saves the source's cursor and adds to its counters. */
  saveCursor(source: string, cursor: string | null, counts: IndexerCounts): Promise<void>;
}

/** Exclusive ownership of a named role (such as running the indexer) among the processes sharing a store. */
export interface Lease {
  /** Resolves when the lease is gone without release() (its connection broke or was ended). */
  readonly lost: Promise<void>;
  release(): Promise<void>;
}

/** The daemon's state, whichever engine holds it. */
export interface Store {
  readonly engine: 'sqlite' | 'postgres';
  /** Where the data lives, safe to print (no password). */
  readonly location: string;
  /** Runs fn in one write transaction; it commits when fn resolves and rolls back when it throws. */
  indexerTransaction<T>(fn: (tx: IndexerTx) => Promise<T>): Promise<T>;
  getCursor(source: string): Promise<CursorState | undefined>;
  listTasks(): Promise<Task[]>;
  listSubscriptions(nodeSmallId: U64): Promise<NodeSubscription[]>;
  /** Stacks of the node; with minFillFraction, those whose usage / capacity >= it (zero capacity is full). */
  listStacks(nodeSmallId: U64, minFillFraction?: number): Promise<Stack[]>;
  /** Claimed stacks of the node, through settlement tickets and through the confidential-compute path. */
  listClaimedStacks(nodeSmallId: U64): Promise<StackSettlementTicket[]>;
  listDisputesAgainst(nodeSmallId: U64): Promise<StackAttestationDispute[]>;
  listDisputesOwn(nodeSmallId: U64): Promise<StackAttestationDispute[]>;
  /**
   * Adds served work to a stack's off-chain usage: units to already_computed_units, one message, and the
   * request's hash to the stack's running hash. Refuses (changing nothing) when the stack is unknown or
   * the total would exceed its capacity.
   */
  addStackUsage(stackSmallId: U64, computeUnits: U64, requestHash: Uint8Array): Promise<UsageOutcome>;
  /** Records the running hash of a stack this node re-ran as an attester (replacing an older record). */
  putStackHash(stackSmallId: U64, totalHash: Uint8Array, numRequests: U64): Promise<void>;
  /** The running hash of a stack's requests, when this daemon has a record of them. */
  getStackHash(stackSmallId: U64): Promise<{ total_hash: Uint8Array; num_requests: U64 } | undefined>;
  getTask(taskSmallId: U64): Promise<Task | undefined>;
  getStack(stackSmallId: U64): Promise<Stack | undefined>;
  getSubscription(nodeSmallId: U64, taskSmallId: U64): Promise<NodeSubscription | undefined>;
  /** The settlement ticket of a stack, claimed or not. */
  getTicket(stackSmallId: U64): Promise<StackSettlementTicket | undefined>;
  /** Whether every one of these event keys has been applied. */
  hasEvents(keys: readonly string[]): Promise<boolean>;
  /**
   * Reserves an Idempotency-Key for a request (by its hash) unless it is already known: returns
   * 'reserved', or the record that holds it (status 0 while its outcome is not recorded).
   */
  reserveIdempotencyKey(
    key: string,
    requestHash: string,
    nowMs: number,
  ): Promise<'reserved' | IdempotencyRecord>;
  /** Records the outcome of a reserved key. */
  completeIdempotencyKey(key: string, status: number, response: string): Promise<void>;
  /** Forgets a reserved key whose request was refused before anything was submitted. */
  releaseIdempotencyKey(key: string): Promise<void>;
  /** A token that changes whenever any process commits a change: the key of cached responses. */
  dataVersion(): Promise<string>;
  /**
   * Takes the named lease unless another holder (another process, or another lease of this one) has it.
   * A holder that dies frees it at once. One process per SQLite file: there it is always granted.
   */
  tryLease(name: string): Promise<Lease | undefined>;
  /** Runs fn while no other process sharing the store runs one under the same name (waits its turn). */
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export const ZERO_COUNTS: Readonly<IndexerCounts> = Object.freeze({
  applied: 0,
  duplicate: 0,
  ignored: 0,
  unknown: 0,
  malformed: 0,
  orphaned: 0,
});
