import type { Pieces } from '../internal/pieces.ts';
import type { U64 } from '../internal/u64.ts';
import type { ProtocolParameters } from '../protocol/constants.ts';
import type { Payload } from '../protocol/events.ts';
/** The read model's rows are the API's types (src/schemas/model.ts). */
import type {
  NodeRecord,
  NodeSubscription,
  Stack,
  StackAttestationDispute,
  StackSettlementTicket,
  Task,
} from '../schemas/model.ts';
import type { AutopilotAction, AutopilotSpending } from './autopilot-actions.ts';
import type { NewNodeEvent, NodeEventQuery, NodeEventRow } from './node-events.ts';

export type UsageOutcome =
  | { status: 'recorded'; already_computed_units: U64; num_compute_units: U64; num_total_messages: U64 }
  | { status: 'not_found' }
  | { status: 'not_ours'; selected_node_id: U64 }
  | { status: 'over_capacity'; already_computed_units: U64; num_compute_units: U64 };

/** One usage report as the store records it (Store.addStackUsage's arguments). */
export interface UsageReport {
  stackSmallId: U64;
  computeUnits: U64;
  /** The served request's hash; without one, the synthetic hash of the stack's next message. */
  requestHash?: Uint8Array | undefined;
  nowMs: number;
  /** The nodes the report may be for: a stack assigned to another is not_ours (nothing recorded). */
  ownNodes?: readonly U64[] | undefined;
}

/** An open stack (not settled, not claimed) of one of the operator's nodes, as the usage source follows it. */
export interface FollowedStack {
  stack_small_id: U64;
  already_computed_units: U64;
  num_total_messages: U64;
  num_compute_units: U64;
}

/** A stack's usage as the node's usage source (atoma-state) holds it. */
export interface MirroredUsage {
  stack_small_id: U64;
  /** The node the source says the stack is for: a stack of another node is left alone. */
  selected_node_id: U64;
  already_computed_units: U64;
  num_total_messages: U64;
}

/**
 * What a mirrored usage did: set (the stack now holds it), unchanged (it held it already), or closed (the
 * stack is unknown, another node's, settled or claimed: nothing was written, and it is no longer followed).
 */
export type MirrorOutcome = 'set' | 'unchanged' | 'closed';

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

/** What a stack's claim needs to know of it: its terms (when the stack was seen) and who attested it. */
export interface ClaimContext {
  terms: StackTerms | undefined;
  /** The stack's node (null when the stack was never seen). */
  selected_node_id: U64 | null;
  /** The ticket's already_attested_nodes ([] when the ticket was never seen). */
  already_attested: U64[];
}

/** What decides a stack's fees: its price, its size, and its task's security level (null: never seen). */
export interface StackTerms {
  price_per_one_million_compute_units: U64;
  num_compute_units: U64;
  security_level: number | null;
}

/** When and for how much a stack was claimed (the fee is null when its terms were never seen). */
export interface ClaimRecord {
  epoch: U64 | undefined;
  node_fee_amount: U64 | null;
}

export interface AttesterReward {
  stack_small_id: U64;
  /** The attester's index in the ticket's requested_attestation_nodes. */
  slot: number;
  node_small_id: U64;
  amount: U64;
  epoch: U64 | null;
}

/** The chain as the indexer last saw it: epochs pass and parameters change without events. */
export interface ChainState {
  epoch: U64 | null;
  parameters: ProtocolParameters | null;
}

/** A page of a list: the rows after an id, at most `limit` of them (each absent: from the first, all). */
export interface Page {
  after?: U64;
  limit?: number;
}

/**
 * Rows of a list as the API's JSON array text, how many, the small id of the last, and whether rows remain
 * past the page's limit.
 */
export interface JsonRows {
  /** The JSON array, encoded (UTF-8; in fact ASCII), in pieces (a usage report replaces one: stack-list/). */
  body: Pieces;
  count: number;
  last: U64 | null;
  more: boolean;
}

/**
 * What a cached read depends on (its topics), each versioned in the store: a change moves the version of
 * every topic it touched, in its own transaction, whichever process made it.
 */
export const topics = {
  tasks: 'tasks',
  subscriptions: (node: U64) => `subscriptions:${node}`,
  stacks: (node: U64) => `stacks:${node}`,
  tickets: (node: U64) => `tickets:${node}`,
  disputes: (node: U64) => `disputes:${node}`,
  rewards: (node: U64) => `rewards:${node}`,
  chain: 'chain',
} as const;

/** One stack of a node with its ticket, for the node's earnings; stack fields are null when never seen. */
export interface LedgerRow {
  stack_small_id: U64;
  terms: StackTerms | undefined;
  already_computed_units: U64 | null;
  /** Claimed through claim_funds_for_stacks, or (with its ticket) through claim_funds. */
  stack_claimed: boolean;
  ticket:
    | {
        num_claimed_compute_units: U64;
        is_in_dispute: boolean;
        is_claimed: boolean;
        claimable_from_epoch: U64 | null;
        claimed_epoch: U64 | null;
        node_fee_amount: U64 | null;
        user_refund_amount: U64;
      }
    | undefined;
}

/** An open stack of a node that the autopilot may settle (or claim directly, on ConfidentialCompute). */
export interface OpenStack {
  stack_small_id: U64;
  terms: StackTerms;
  already_computed_units: U64;
  /** When usage was last reported (ms since the epoch); null when never. */
  last_usage_at: number | null;
}

/** A settled, undisputed, unclaimed ticket of a node that can be claimed from its epoch. */
export interface ClaimableTicket {
  stack_small_id: U64;
  num_claimed_compute_units: U64;
  claimable_from_epoch: U64;
  terms: StackTerms | undefined;
}

/** A ticket that asks a node to attest it, not yet attested by it. */
export interface AttestationRequest {
  stack_small_id: U64;
  slot: number;
  /** Attestations are accepted up to this epoch (the ticket's claimable_from_epoch); null: not known. */
  until_epoch: U64 | null;
  is_in_dispute: boolean;
  /** This daemon holds a record of the stack's requests (it can build the attestation). */
  has_record: boolean;
}

/**
 * An event to look for among those applied (Store.hasEvents): its key, and for a StackCreatedEvent the
 * stack it created, whose row records it (IndexerTx.createStack).
 */
export interface EventLookup {
  key: string;
  createdStack?: U64;
}

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
  /** The nodes subscribed to the task, as the transaction sees them (its own writes included). */
  taskSubscribers(taskSmallId: U64): Promise<U64[]>;
  /** Marks the task removed and its subscriptions invalid; false when the task is unknown. */
  removeTask(taskSmallId: U64, epoch: U64): Promise<boolean>;
  putNode(nodeSmallId: U64, badgeId: string, address: string): Promise<void>;
  putNodeModel(nodeSmallId: U64, modelName: string, echelonId: U64): Promise<void>;
  /** Inserts or updates a subscription and marks it valid. */
  putSubscription(sub: Omit<NodeSubscription, 'valid'>): Promise<void>;
  deleteSubscription(nodeSmallId: U64, taskSmallId: U64): Promise<boolean>;
  /** Inserts the stack with its task's security level (when the task is known). */
  putStack(stack: NewStack): Promise<void>;
  /**
   * putStack that says whether it inserted: false when a stack with that small id exists. A
   * StackCreatedEvent is recorded by the stack's row alone, and the indexer does not claim its key
   * (claimEvents): only that event inserts a stack, the chain gives each stack its small id once, and a
   * stack is never deleted, so the row exists exactly when the event was applied. A claimed key is a
   * random digest, a write to a leaf page of its own; the stack's row goes where its node's last one went
   * (docs/DECISIONS.md, "A stack's row records its creation event"). PostgreSQL, whose inserts go in
   * staged statements that are sent and not awaited, learns whether each stack exists from readAhead (or a
   * read of its own), and fails the transaction if another writer created one meanwhile.
   */
  createStack(stack: NewStack): Promise<boolean>;
  /** The try-settle: the ticket (claimable from epoch + 1 when the epoch is known) and its attester slots. */
  putTicket(ticket: TrySettle, epoch: U64 | undefined): Promise<void>;
  recordAttestation(attestation: Attestation): Promise<AttestationOutcome>;
  settleTicket(ticket: TicketSettled): Promise<void>;
  /** What a claim of the stack needs to know, read inside the transaction (it sees the page's writes). */
  claimContext(stackSmallId: U64): Promise<ClaimContext>;
  /**
   * Names, before the page's writes, the stacks whose claimContext it will ask, the tasks of the stacks it
   * creates among them, and the stacks it creates (createStack). An engine whose reads are round trips
   * reads them all at once and then answers claimContext, and whether a stack existed, from them and the
   * transaction's own writes, exactly as a read would; one that reads in process needs none. Any other
   * stack is read when asked.
   */
  readAhead?(
    stackSmallIds: readonly U64[],
    taskSmallIds: readonly U64[],
    createdSmallIds: readonly U64[],
  ): Promise<void>;
  claimTicket(claim: TicketClaimed, record: ClaimRecord): Promise<void>;
  /**
   * The dispute, and the ticket in dispute. When it is the failed final check of an attestation (changes.ts,
   * disputedAttestationRow; `epoch` is the event's, when known), the attester is also recorded as having
   * attested, as the chain records it.
   */
  putDispute(dispute: Dispute, epoch: U64 | undefined): Promise<void>;
  claimStack(claim: StackClaimed, record: ClaimRecord): Promise<void>;
  putAttesterRewards(rewards: readonly AttesterReward[]): Promise<void>;
  /** Saves the chain's epoch and parameters as of the page (each when known). */
  saveChainState(state: {
    epoch?: U64 | undefined;
    parameters?: ProtocolParameters | undefined;
  }): Promise<void>;
  /** Saves the source's cursor and adds to its counters. */
  saveCursor(source: string, cursor: string | null, counts: IndexerCounts): Promise<void>;
  /** Records node events, with the next ids of the sequence, in this transaction. */
  appendNodeEvents(events: readonly NewNodeEvent[]): Promise<void>;
  /** The tickets, of any node, that become claimable at an epoch in (after, upTo]: unclaimed, undisputed. */
  listBecomingClaimable(after: U64 | null, upTo: U64): Promise<ClaimableTicketOf[]>;
}

/** A claimable ticket and its node. */
export interface ClaimableTicketOf extends ClaimableTicket {
  selected_node_id: U64;
}

/** Exclusive ownership of a named role (such as running the indexer) among the processes sharing a store. */
export interface Lease {
  /** Resolves when the lease is gone without release() (its connection broke or was ended). */
  readonly lost: Promise<void>;
  release(): Promise<void>;
}

/*
 * The store's roles. Each engine (sqlite/, postgres/) implements all of them, as one Store; each consumer
 * asks for the narrowest role it needs (the read routes a ReadStore, the response cache a VersionStore,
 * the event stream a NodeEventStore, ...), so that what it may touch is written in its signature.
 */

/** The indexer's side: a page of events in one transaction, its source's cursor, what was applied. */
export interface IndexerStore {
  /** Runs fn in one write transaction; it commits when fn resolves and rolls back when it throws. */
  indexerTransaction<T>(fn: (tx: IndexerTx) => Promise<T>): Promise<T>;
  getCursor(source: string): Promise<CursorState | undefined>;
  /** Whether every one of these events has been applied. */
  hasEvents(events: readonly EventLookup[]): Promise<boolean>;
}

/** The read model, as the API serves it. The lists are in small-id order and take an optional page (Page). */
export interface ReadStore {
  listTasks(page?: Page): Promise<Task[]>;
  listSubscriptions(nodeSmallId: U64, page?: Page): Promise<NodeSubscription[]>;
  /** Stacks of the node; with minFillFraction, those whose usage / capacity >= it (zero capacity is full). */
  listStacks(nodeSmallId: U64, minFillFraction?: number, page?: Page): Promise<Stack[]>;
  /**
   * The same stacks as the API's JSON, from the node's kept list (stack-list/): no decoding, no
   * serializing. seenStacksVersion: the node's stacks topic version the caller read just before; the list
   * answered shows at least that version, and one kept at it or later is answered without a read.
   */
  listStacksJson(
    nodeSmallId: U64,
    minFillFraction?: number,
    page?: Page,
    seenStacksVersion?: number,
  ): Promise<JsonRows>;
  /** Claimed stacks of the node, through settlement tickets and through the confidential-compute path. */
  listClaimedStacks(nodeSmallId: U64, page?: Page): Promise<StackSettlementTicket[]>;
  /** Disputes against the node, by stack then attester; a page starts after a stack (all its disputes). */
  listDisputesAgainst(nodeSmallId: U64, page?: Page): Promise<StackAttestationDispute[]>;
  listDisputesOwn(nodeSmallId: U64, page?: Page): Promise<StackAttestationDispute[]>;
  getTask(taskSmallId: U64): Promise<Task | undefined>;
  /** The node, if the store knows it: registered, or named by a subscription or a stack. */
  getNode(nodeSmallId: U64): Promise<NodeRecord | undefined>;
  getStack(stackSmallId: U64): Promise<Stack | undefined>;
  /** What decides the stack's fees, when the stack was seen. */
  getStackTerms(stackSmallId: U64): Promise<StackTerms | undefined>;
  getSubscription(nodeSmallId: U64, taskSmallId: U64): Promise<NodeSubscription | undefined>;
  /**
   * The task's valid subscriptions priced at most `price` per million with room for `units`: the nodes
   * sample_attestation_nodes may draw for a stack of these terms, as far as events tell (contracts.md §2.6;
   * a disabled or destroyed node emits no event, so it is still counted).
   */
  countEligibleSubscribers(taskSmallId: U64, price: U64, units: U64): Promise<number>;
  /** The settlement ticket of a stack, claimed or not. */
  getTicket(stackSmallId: U64): Promise<StackSettlementTicket | undefined>;
  /** The chain's epoch and fee parameters as last indexed. */
  getChainState(): Promise<ChainState>;
  /** Every stack and ticket of the node, for its earnings. */
  listLedger(nodeSmallId: U64): Promise<LedgerRow[]>;
  listAttesterRewards(nodeSmallId: U64): Promise<AttesterReward[]>;
}

/** What a cached read is checked against (http/response-cache.ts): the versions of its topics. */
export interface VersionStore {
  /** The current version of each topic (0: never changed), read after the call. */
  topicVersions(topics: readonly string[]): Promise<number[]>;
  /**
   * How a kept response is checked. 'data version': dataVersion() first, and the topics' versions only
   * when it moved (SQLite: both local reads, and the data version spares the others while nothing
   * commits). 'topics': the topics' versions at once (PostgreSQL: each read is a round trip, the data
   * version moves with nearly every commit under writes, and topicVersions answers all the topics asked in
   * one event-loop turn with one statement).
   */
  readonly checkBy: 'data version' | 'topics';
  /** A token that changes whenever any process commits a change. */
  dataVersion(): Promise<string>;
  /** A random id of this store, made when it was created: versions of different stores never compare. */
  storeId(): Promise<string>;
}

/** The usage the node's inference server reports, and the running hash of a stack's requests. */
export interface UsageStore {
  /**
   * Adds served work to a stack's off-chain usage: units to already_computed_units, one message, and the
   * request's hash (UsageReport.requestHash) to the stack's running hash. Refuses (changing nothing) when
   * the stack is unknown, assigned to a node not in ownNodes (when given), or the total would exceed its
   * capacity. Reports that arrive while earlier ones are being written are written together, in one
   * transaction (each outcome as if they had come one after the other).
   */
  addStackUsage(
    stackSmallId: U64,
    computeUnits: U64,
    requestHash: Uint8Array | undefined,
    nowMs: number,
    ownNodes?: readonly U64[],
  ): Promise<UsageOutcome>;
  /** Records the running hash of a stack this node re-ran as an attester (replacing an older record). */
  putStackHash(stackSmallId: U64, totalHash: Uint8Array, numRequests: U64): Promise<void>;
  /** The running hash of a stack's requests, when this daemon has a record of them. */
  getStackHash(stackSmallId: U64): Promise<{ total_hash: Uint8Array; num_requests: U64 } | undefined>;
  /**
   * The node's open stacks for the usage source to follow: those with usage (one index range), and those
   * without numbered after `after` (the node's range from there); with after null, all of its open stacks.
   */
  listFollowedStacks(nodeSmallId: U64, after: U64 | null): Promise<FollowedStack[]>;
  /**
   * Sets stacks' usage to what the node's usage source holds, in one transaction: a mirror, not a sum, so it
   * may go down, and setting it again changes nothing. Each stack's last usage time becomes nowMs, its fill
   * and its stack_filled events follow (each threshold once, the first time the stack reaches it), and no
   * request record is kept (settling then uses the empty one: docs/ATOMA-NODE.md). Usage beyond a stack's
   * units is taken as its units.
   */
  mirrorStackUsage(usage: readonly MirroredUsage[], nowMs: number): Promise<MirrorOutcome[]>;
}

/** What the autopilot asks (each one index range, whatever the store's size) and the actions it records. */
export interface AutopilotStore {
  /**
   * The node's open stacks (not settled, not claimed) with usage, filled to at least minFillPpm parts per
   * million or last used before idleBefore (ms). A stack without usage is never one, whatever minFillPpm:
   * it has nothing to claim.
   */
  listSettleCandidates(nodeSmallId: U64, minFillPpm: number, idleBefore: number): Promise<OpenStack[]>;
  /** When the node's longest-idle open stack with usage was last used (ms), or null. */
  oldestUsageAt(nodeSmallId: U64): Promise<number | null>;
  /** The node's settled, undisputed, unclaimed tickets claimable by `epoch`. */
  listClaimable(nodeSmallId: U64, epoch: U64): Promise<ClaimableTicket[]>;
  /** The attestations asked of the node that it has not submitted. */
  listAttestationRequests(nodeSmallId: U64): Promise<AttestationRequest[]>;
  /**
   * Takes the node's requests of these stacks out of the open ones, for good: their tickets can never be
   * attested (in dispute, or past the attestation window), so no later pass reads them again.
   */
  retireAttestationRequests(nodeSmallId: U64, stackSmallIds: readonly U64[]): Promise<void>;
  /** Records an autopilot action (and its node event); returns its id. */
  insertAutopilotAction(action: Omit<AutopilotAction, 'id'>): Promise<number>;
  updateAutopilotAction(
    id: number,
    change: Pick<AutopilotAction, 'status' | 'tx_digests' | 'error' | 'updated_at'> &
      Partial<Pick<AutopilotAction, 'node_fee_amount' | 'gas_used'>>,
  ): Promise<void>;
  /** The most recent actions, newest first; with pending, only those whose outcome is not recorded. */
  listAutopilotActions(options: { limit: number; pending?: boolean }): Promise<AutopilotAction[]>;
  /** The actions decided at or after `since` (ms) that spent or may spend gas (pending, succeeded, failed), oldest first. */
  listAutopilotSpending(since: number): Promise<AutopilotSpending[]>;
}

/** The node events of GET /events (node-events.ts). */
export interface NodeEventStore {
  /** Records node events in a transaction of their own (those no other change carries: the indexer's state). */
  appendNodeEvents(events: readonly NewNodeEvent[]): Promise<void>;
  /**
   * From now on, records only the events of these nodes (the operator's) and everyone's (no node); null,
   * the default: every node's. Set by the daemon as its nodes become known (docs/NODE-EVENTS.md).
   */
  scopeNodeEvents(nodes: readonly U64[] | null): Promise<void>;
  /** Node events after an id, ascending, filtered. */
  listNodeEvents(query: NodeEventQuery): Promise<NodeEventRow[]>;
  /**
   * Where the newest `count` events that match a filter begin: the id just before the oldest of them, so
   * that listNodeEvents after it reads them (GET /events?last=N); null when none match.
   */
  recentNodeEventsStart(
    query: Omit<NodeEventQuery, 'after' | 'limit'> & { count: number },
  ): Promise<number | null>;
  /** The oldest and newest recorded ids (0 and 0 when none was ever recorded; oldest null when pruned all). */
  nodeEventBounds(): Promise<{ oldest: number | null; newest: number }>;
  /** Deletes events recorded before `before` (ms), and beyond the newest `keep`; returns how many. */
  pruneNodeEvents(before: number, keep: number): Promise<number>;
  /**
   * Calls back after this process commits node events, and, where the engine can tell, after another
   * process sharing the store does; returns the function that stops it.
   */
  onNodeEvents(listener: () => void): () => void;
}

/** A condition the operator hears of when it starts and when it ends (ConditionStore), as recorded. */
export interface ConditionState {
  /** Its name and what it is about, e.g. `signer_gas_low:0x12…` or `indexer_behind`. */
  key: string;
  holds: boolean;
  /** When it last started or ended (ms since the epoch). */
  since: number;
}

/**
 * The conditions announced as node events (operations/conditions.ts): each starts once and ends once,
 * whichever process sees it and however often it is checked, across restarts.
 */
export interface ConditionStore {
  /**
   * Records whether a condition holds now (one never recorded does not). When that changes what was
   * recorded, `event` (its start or its end) is recorded in the same transaction and the answer is true;
   * otherwise nothing is written and the answer is false, so two processes that see the same change, or
   * a restart that sees it again, announce it once.
   */
  setCondition(key: string, holds: boolean, event: NewNodeEvent, nowMs: number): Promise<boolean>;
  /** Every condition recorded, holding or not. */
  listConditions(): Promise<ConditionState[]>;
}

/** A webhook endpoint as stored (docs/WEBHOOKS.md). Times in ms since the epoch. */
export interface WebhookEndpointRow {
  id: number;
  url: string;
  /** The event types it asks for; null: every type. */
  types: string[] | null;
  description: string;
  /** `whsec_` + base64: never answered but by its creation. */
  secret: string;
  created_at: number;
  disabled_at: number | null;
  disabled_reason: string | null;
  /** When its deliveries started failing (null: its last attempt succeeded, or none failed). */
  failing_since: number | null;
}

/** One attempt to send a delivery. */
export interface WebhookAttemptRow {
  n: number;
  at: number;
  /** The receiver's HTTP status; null when it did not answer (error says why). */
  status: number | null;
  error: string | null;
  duration_ms: number;
}

export type WebhookDeliveryState = 'pending' | 'delivered' | 'failed';

/** One event for one endpoint: the outbox's row. */
export interface WebhookDeliveryRow {
  id: number;
  /** The Standard Webhooks message id (`webhook-id`), the same on every attempt. */
  webhook_id: string;
  endpoint_id: number;
  /** The node event it carries; null for a test. */
  event_id: number | null;
  type: string;
  at: number;
  node_small_id: U64 | null;
  /** The event's fields as stored (JSON object text). */
  data: string;
  state: WebhookDeliveryState;
  attempts: number;
  /** The position in the back-off schedule (a replay starts over). */
  step: number;
  next_attempt_at: number;
  finished_at: number | null;
}

/** A delivery claimed to be sent, with where and how to sign it. */
export interface ClaimedDelivery extends WebhookDeliveryRow {
  url: string;
  secret: string;
  /** The endpoint's failing_since when claimed. */
  failing_since: number | null;
}

/** What an attempt changes: its own record, the delivery's state, the endpoint's. */
export interface WebhookAttemptOutcome {
  attempt: Omit<WebhookAttemptRow, 'n'>;
  state: WebhookDeliveryState;
  /** The step the next attempt will use, and when it is due (pending only). */
  step: number;
  next_attempt_at: number;
  /** The endpoint's failing_since after it (null: it succeeded). */
  failing_since: number | null;
  /** Disables the endpoint, with the node event that says so, in the same transaction. */
  disable?: { reason: string; event: NewNodeEvent } | undefined;
}

/** The figures of the webhook metrics. */
export interface WebhookStats {
  pending: number;
  /** When the oldest pending delivery of an enabled endpoint was made (its event's time); null: none. */
  oldest_pending_at: number | null;
  disabled_endpoints: number;
}

/**
 * The webhook endpoints and their outbox (operations/webhooks.ts). The deliveries of a node event are
 * written by the engine where the event is inserted, in its transaction: no writer of events calls this.
 */
export interface WebhookStore {
  createWebhookEndpoint(
    endpoint: Omit<WebhookEndpointRow, 'id' | 'disabled_at' | 'disabled_reason' | 'failing_since'>,
  ): Promise<WebhookEndpointRow>;
  listWebhookEndpoints(): Promise<WebhookEndpointRow[]>;
  getWebhookEndpoint(id: number): Promise<WebhookEndpointRow | undefined>;
  /** Deletes the endpoint with its deliveries and their attempts; whether it existed. */
  deleteWebhookEndpoint(id: number): Promise<boolean>;
  /** Enables a disabled endpoint (its pending deliveries go again); whether it exists. */
  enableWebhookEndpoint(id: number): Promise<boolean>;
  /** Adds a delivery that carries no node event (a test) to one endpoint. */
  addWebhookDelivery(
    endpointId: number,
    delivery: { webhook_id: string; type: string; at: number; data: string },
  ): Promise<WebhookDeliveryRow>;
  /** The endpoint's deliveries, newest first, before an id, with their attempts. */
  listWebhookDeliveries(
    endpointId: number,
    page: { before: number | null; limit: number },
  ): Promise<(WebhookDeliveryRow & { attempts_list: WebhookAttemptRow[] })[]>;
  getWebhookDelivery(id: number): Promise<WebhookDeliveryRow | undefined>;
  /** Makes a delivery pending again, due now, its schedule started over; whether it was not pending. */
  retryWebhookDelivery(id: number): Promise<boolean>;
  /**
   * Leases up to `limit` enabled endpoints that have a due delivery (pending, next_attempt_at <= now) and
   * no lease of another sender alive, until `leaseUntil`, and answers each one's oldest due delivery. On
   * PostgreSQL, daemons sharing the database never lease the same endpoint (FOR UPDATE SKIP LOCKED), so
   * each delivery is sent by one, and one at a time per endpoint, in order.
   */
  claimWebhookDeliveries(
    now: number,
    limit: number,
    leaseUntil: number,
    owner: string,
  ): Promise<ClaimedDelivery[]>;
  /** Records an attempt and its outcome, and frees the endpoint's lease, in one transaction. */
  recordWebhookAttempt(
    delivery: ClaimedDelivery,
    outcome: WebhookAttemptOutcome,
    owner: string,
  ): Promise<void>;
  /** Frees the leases of an owner, or every lease (null: a store only this process uses). */
  releaseWebhookLeases(owner: string | null): Promise<void>;
  /** When the next pending delivery of an enabled endpoint is due, or an endpoint lease ends; null: none. */
  nextWebhookDue(): Promise<number | null>;
  webhookStats(): Promise<WebhookStats>;
  /** Deletes delivered and failed deliveries (with their attempts) finished before `before` (ms); how many. */
  pruneWebhookDeliveries(before: number): Promise<number>;
}

/** The Idempotency-Keys of the writes (http/idempotency.ts). */
export interface IdempotencyStore {
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
}

/** Roles that one process at a time may hold among those that share a store (PostgreSQL). */
export interface Coordination {
  /**
   * Takes the named lease unless another holder (another process, or another lease of this one) has it.
   * A holder that dies frees it at once. One process per SQLite file: there it is always granted.
   */
  tryLease(name: string): Promise<Lease | undefined>;
  /** Runs fn while no other process sharing the store runs one under the same name (waits its turn). */
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T>;
}

/** A named API token as the store keeps it: never its text, only the sha256 of it (TokenStore). */
export interface ApiTokenRow {
  name: string;
  /** read, usage, write or admin (http/scopes.ts). */
  scope: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** A new named token: its name, scope, the hex sha256 of its text, and when it expires (ms, or null). */
export interface NewApiToken {
  name: string;
  scope: string;
  hash: string;
  createdAt: number;
  expiresAt: number | null;
}

/** The named API tokens (http/tokens.ts), shared by every daemon on a PostgreSQL database. */
export interface TokenStore {
  /** Adds a token; 'exists' when a token of that name is live (a revoked one's name is taken again). */
  createToken(token: NewApiToken): Promise<'created' | 'exists'>;
  /** The token whose text hashes to `hash`, revoked and expired ones included (the caller judges). */
  findToken(hash: string): Promise<ApiTokenRow | undefined>;
  /** Every token, by name. */
  listTokens(): Promise<ApiTokenRow[]>;
  /** Revokes a live token; false when there is none of that name (or it is revoked already). */
  revokeToken(name: string, nowMs: number): Promise<boolean>;
  /** Records that a token was used (callers do so at most once a minute per token). */
  touchToken(name: string, nowMs: number): Promise<void>;
}

/** One audited request (a write or an admin request, refused or not): never a token, only its name. */
export interface AuditEntry {
  at: number;
  token_name: string | null;
  method: string;
  /** The route as OpenAPI writes it (`/stacks/{stack_small_id}/usage`), or the path when none matched. */
  route: string;
  request_id: string;
  status: number;
  problem_code: string | null;
  tx_digest: string | null;
  /** The transaction's gas (MIST, a u64 in decimal) when the answer says it. */
  gas_used: string | null;
  /** The answer was an Idempotency-Key's replay of an earlier one. */
  idempotent_replay: boolean;
}

export interface AuditRow extends AuditEntry {
  id: number;
}

/** What GET /audit asks: newest first, before an id (paging), with optional filters. */
export interface AuditQuery {
  token?: string | undefined;
  route?: string | undefined;
  method?: string | undefined;
  /** ok: status < 400; denied: 401 or 403; failed: any other status >= 400. */
  outcome?: 'ok' | 'denied' | 'failed' | undefined;
  since?: number | undefined;
  until?: number | undefined;
  before?: number | undefined;
  limit: number;
}

/** The audit trail (http/audit.ts writes it in batches, off the requests' path). */
export interface AuditStore {
  appendAudit(entries: readonly AuditEntry[]): Promise<void>;
  listAudit(query: AuditQuery): Promise<AuditRow[]>;
  /** Deletes the entries older than `beforeMs`; answers how many. */
  pruneAudit(beforeMs: number): Promise<number>;
}

/** The daemon's state, whichever engine holds it: every role, and the engine's own facts. */
export interface Store
  extends IndexerStore,
    ReadStore,
    VersionStore,
    UsageStore,
    AutopilotStore,
    NodeEventStore,
    ConditionStore,
    IdempotencyStore,
    WebhookStore,
    Coordination,
    TokenStore,
    AuditStore {
  readonly engine: 'sqlite' | 'postgres';
  /** Where the data lives, safe to print (no password). */
  readonly location: string;
  close(): Promise<void>;
}

export type { NewNodeEvent, NodeEventQuery, NodeEventRow } from './node-events.ts';

export const ZERO_COUNTS: Readonly<IndexerCounts> = Object.freeze({
  applied: 0,
  duplicate: 0,
  ignored: 0,
  unknown: 0,
  malformed: 0,
  orphaned: 0,
});
