import type { U64 } from '../internal/u64.ts';
import type { ProtocolParameters } from '../protocol/constants.ts';
import type { DecodeOutcome } from '../protocol/events.ts';
import type { Abort, GasOptions, GasUsed } from '../schemas/writes.ts';

export type { GasOptions, GasUsed };
/** A Move abort, decoded to the contract's error name (e.g. ETaskNotFound, or EFieldDoesNotExist). */
export type MoveAbort = Abort;

/**
 * The chain, whichever network runs: the HTTP layer and the indexer use only this interface. The dev
 * network (src/chain/dev/) and the Sui adapter (src/chain/sui/) implement it.
 */

/**
 * One event as a source delivers it: the SuiEvent JSON, or why the source could not parse it, or the event
 * decoded already by a source that decodes on a thread of its own (the file source), with no `raw`.
 */
export interface RawEvent {
  /** Where the event came from, for logs: a file line or a chain cursor. */
  position: string;
  raw?: unknown;
  parseError?: string;
  decoded?: DecodeOutcome;
  /**
   * The source's cursor just past this event, when it has one for each event. A transaction that ends
   * with this event saves it: the indexer's short transactions at the head each resume exactly after
   * themselves, not at the start of their page.
   */
  cursor?: string | undefined;
  /**
   * The epoch of the transaction that emitted it, when the source knows it (the SuiEvent JSON does not
   * carry it): a try-settle's epoch decides when its stack can be claimed.
   */
  epoch?: U64 | undefined;
}

export interface EventPage {
  events: RawEvent[];
  /** The cursor after this page; saved in the same transaction as the page's effects. */
  nextCursor: string | null;
  hasMore: boolean;
  /**
   * The chain's current epoch as of this read, when the source knows it. Epochs pass without events;
   * the indexer keeps this with its cursor, and claims are measured against it.
   */
  epoch?: U64 | undefined;
  /** The AtomaDb fee parameters as of this read, when the source knows them (they change without events). */
  parameters?: ProtocolParameters | undefined;
}

/** Where events come from: a chain network's event source, or a JSON-lines file (node-daemon replay). */
export interface EventSource {
  /** Stable name under which the cursor is saved. */
  readonly id: string;
  readPage(cursor: string | null): Promise<EventPage>;
  close?(): Promise<void>;
}

/** A NodeBadge owned by the signer. */
export interface Badge {
  badge_id: string;
  node_small_id: U64;
}

/** One entry-function call of the Atoma db module, as the node operator's signer makes it. */
export type Operation =
  | { kind: 'register_node' }
  | { kind: 'add_node_to_model'; badge: Badge; model_name: string; echelon_id: U64 }
  | {
      kind: 'subscribe_node_to_task';
      badge: Badge;
      task_small_id: U64;
      price_per_one_million_compute_units: U64;
    }
  | {
      kind: 'update_node_subscription';
      badge: Badge;
      task_small_id: U64;
      price_per_one_million_compute_units: U64;
    }
  | { kind: 'unsubscribe_node_from_task'; badge: Badge; task_small_id: U64 }
  | {
      kind: 'try_settle_stack';
      badge: Badge;
      stack_small_id: U64;
      num_claimed_compute_units: U64;
      committed_stack_proof: Uint8Array;
      stack_merkle_leaf: Uint8Array;
    }
  | {
      kind: 'submit_stack_settlement_attestation';
      badge: Badge;
      stack_small_id: U64;
      committed_stack_proof: Uint8Array;
      stack_merkle_leaf: Uint8Array;
    }
  | {
      kind: 'start_attestation_dispute';
      badge: Badge;
      stack_small_id: U64;
      attestation_commitment: Uint8Array;
    }
  | { kind: 'claim_funds'; badge: Badge; settled_ticket_ids: U64[] }
  | {
      kind: 'claim_funds_for_stacks';
      badge: Badge;
      stack_small_ids: U64[];
      num_compute_units_per_stack_to_claim: U64[];
    };

export type OperationKind = Operation['kind'];

/** The outcome of a transaction that reached the chain (executed, successfully or not). */
export interface Submission {
  digest: string;
  status: 'success' | 'failure';
  /** Set when status is failure. */
  abort?: MoveAbort;
  /** The events in SuiEvent JSON form, exactly as the chain's event source will deliver them. */
  events: unknown[];
  gas_used: GasUsed;
  /** The event-source cursor just after this transaction's events, where the network can tell it. */
  cursor?: string;
}

/** The chain could not be reached or refused before execution; nothing was executed. */
export class ChainUnavailableError extends Error {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds = 2, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChainUnavailableError';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

const logged = new WeakSet<object>();

/**
 * Marks an error the network adapter has logged (it says each reason once, and when it stops): the
 * indexer and the autopilot, which meet the same error at every retry, need not log it again.
 */
export function markLogged<E extends Error>(error: E): E {
  logged.add(error);
  return error;
}

/** Whether the error, or one it was made from (its cause), was logged by the network adapter. */
export function wasLogged(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (logged.has(e)) return true;
  }
  return false;
}

/**
 * The transaction was sent but whether it executed is unknown (the connection failed or timed out after the
 * request left). It must not be retried blindly: the network resolves it before its next transaction (the
 * Sui adapter re-sends the same signed bytes, which cannot execute twice), and the digest can be looked
 * up meanwhile.
 */
export class ChainOutcomeUnknownError extends Error {
  readonly digest: string;
  constructor(digest: string, detail: string) {
    super(
      `transaction ${digest} was sent but its outcome is unknown (${detail}); look it up by digest before retrying`,
    );
    this.name = 'ChainOutcomeUnknownError';
    this.digest = digest;
  }
}

/** The transaction was refused before execution for a reason the caller can fix (gas budget, gas coin). */
export class ChainRejectedError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'ChainRejectedError';
    this.code = code;
  }
}

/** A settlement ticket as the chain holds it now (the indexer's copy may not know its epoch). */
export interface ChainTicket {
  stack_small_id: U64;
  selected_node_id: U64;
  /** Claims are possible from this epoch; attestations until it (contracts.md §3.5). */
  dispute_settled_at_epoch: U64;
  is_in_dispute: boolean;
  requested_attestation_nodes: U64[];
  already_attested_nodes: U64[];
}

/** What an operation would do if it were sent now (Chain.simulate). */
export interface Simulation {
  gas: bigint;
  /** The Move abort it would meet; null when it would succeed. */
  abort: MoveAbort | null;
}

export interface Chain {
  readonly network: 'dev' | 'sui';
  /** The address that signs every operation. */
  readonly signerAddress: string;
  /** Executes one operation, signed by the signer; resolves once it is final. */
  submit(operation: Operation, gas?: GasOptions): Promise<Submission>;
  /**
   * Runs the operation against the chain's current state without signing or sending it: the gas it would
   * use (computation and storage, MIST) and the abort it would meet, if any. Nothing is spent.
   */
  simulate(operation: Operation): Promise<Simulation>;
  /**
   * How long after a submission its effects may still appear when its outcome was never recorded (the
   * daemon stopped meanwhile): the autopilot acts on those stacks again only after this.
   */
  readonly outcomeWindowMs: number;
  /** The db module's events, ascending, from a cursor. */
  readonly events: EventSource;
  /** NodeBadges the signer owns, by small id. */
  listBadges(): Promise<Badge[]>;
  currentEpoch(): Promise<U64>;
  /** The AtomaDb fee and sampling parameters, now (the admin changes them without events). */
  parameters(): Promise<ProtocolParameters>;
  /** The stack's settlement ticket, or undefined when it has none (not try-settled, or claimed and deleted). */
  getTicket(stackSmallId: U64): Promise<ChainTicket | undefined>;
  /** The signer's balances where the network offers them, by coin (e.g. USDC, SUI), smallest units. */
  balances?(): Promise<Record<string, U64>>;
  /**
   * Forgets cached object versions (gas coins, badges): another daemon signing with the same address may
   * have used them since. Called under the cross-process signer lock when daemons share a store.
   */
  forgetCachedObjects?(): void;
  /**
   * Why the network cannot be used now, in one line (e.g. its node does not answer), or undefined when
   * nothing is known to stand in the way. Networks that are always there leave it out; /ready reports it.
   */
  unavailableReason?(): string | undefined;
  /** Calls back when new events may be available (the indexer then reads without waiting). */
  onNewEvents(listener: () => void): () => void;
  close(): Promise<void>;
}
