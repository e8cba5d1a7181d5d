import { Pieces } from '../internal/pieces.ts';
import type { U64 } from '../internal/u64.ts';
import { compareU64, normalizeU64, u64ToString } from '../internal/u64.ts';
import { type ProtocolParameters, readParameters } from '../protocol/constants.ts';
import { syntheticRequestHash, withAttesterLeaf } from '../protocol/proofs.ts';
import { addUsage, type RequestRecord } from '../protocol/usage.ts';
import type {
  ClaimPath,
  NodeSubscription,
  Stack,
  StackAttestationDispute,
  StackSettlementTicket,
  Task,
} from '../schemas/model.ts';
import { StoreError } from './errors.ts';
import { fillEvents, type NewNodeEvent, type NodeEventRow, type NodeEventType } from './node-events.ts';
import type {
  Attestation,
  AttestationRequest,
  AttesterReward,
  AutopilotAction,
  AutopilotActionKind,
  AutopilotActionStatus,
  ChainState,
  ClaimableTicket,
  ClaimableTicketOf,
  CursorState,
  Dispute,
  JsonRows,
  LedgerRow,
  OpenStack,
  Page,
  StackTerms,
  UsageOutcome,
  UsageReport,
} from './store.ts';

/**
 * Rows to the store's types, for both engines: the only engine-specific part is how a u64 column comes
 * back (SQLite: a number or 20-digit text; PostgreSQL: NUMERIC text), which the caller's `dec` decodes.
 * Booleans arrive as 1/0 (SQLite) or true/false (PostgreSQL).
 */

type Row = Record<string, unknown>;

/** The columns of each listed row type, in the order both engines select them. */
export const STACK_COLUMNS = `owner_address, stack_small_id, stack_id, task_small_id, selected_node_id, num_compute_units,
  price_per_one_million_compute_units, already_computed_units, in_settle_period, num_total_messages, is_claimed,
  is_locked_for_claim, is_confidential, user_refund_amount`;
/** What the autopilot and the earnings read of a stack besides its listing. */
export const TERMS_COLUMNS =
  'price_per_one_million_compute_units, num_compute_units, security_level, already_computed_units, last_usage_at';
export const TICKET_COLUMNS = `stack_small_id, selected_node_id, num_claimed_compute_units, requested_attestation_nodes,
  committed_stack_proofs, stack_merkle_leaves, dispute_settled_at_epoch, already_attested_nodes, is_in_dispute,
  user_refund_amount, is_claimed, claim_path, claimable_from_epoch, node_fee_amount`;
export const DISPUTE_COLUMNS =
  'stack_small_id, attestation_commitment, attestation_node_id, original_node_id, original_commitment';

/** A JSON array of small ids, as upstream keeps them in text columns: exact digits. */
export function idList(ids: readonly U64[]): string {
  return `[${ids.map(u64ToString).join(',')}]`;
}

/** The fee parameters as chain_state keeps them: JSON of decimal strings. */
export function encodeParameters(parameters: ProtocolParameters): string {
  return JSON.stringify(
    Object.fromEntries(Object.entries(parameters).map(([key, value]) => [key, String(value)])),
  );
}

export function decodeParameters(text: string): ProtocolParameters {
  const parameters = readParameters(JSON.parse(text) as Record<string, unknown>);
  if ('missing' in parameters) {
    throw new StoreError('store_corrupt', `chain_state.parameters has no ${parameters.missing}`, false);
  }
  return parameters;
}

/** floor(used x 1e6 / capacity), at most 1e6; a stack without capacity counts as full. */
export function fillPpm(used: U64, capacity: U64): number {
  const total = BigInt(capacity);
  if (total === 0n) return 1_000_000;
  const ppm = (BigInt(used) * 1_000_000n) / total;
  return ppm > 1_000_000n ? 1_000_000 : Number(ppm);
}

export function parseIdList(text: string): string[] {
  const inner = text.trim().slice(1, -1).trim();
  return inner === '' ? [] : inner.split(',').map((s) => s.trim());
}

function bytes(value: unknown): number[] {
  return value instanceof Uint8Array ? Array.from(value) : [];
}

const flag = (value: unknown): boolean => value === true || value === 1;

export function rowMappers(dec: (value: unknown) => U64) {
  const decNullable = (value: unknown): U64 | null =>
    value === null || value === undefined ? null : dec(value);
  const terms = (r: Row): StackTerms | undefined =>
    r.price_per_one_million_compute_units === null || r.price_per_one_million_compute_units === undefined
      ? undefined
      : {
          price_per_one_million_compute_units: dec(r.price_per_one_million_compute_units),
          num_compute_units: dec(r.num_compute_units),
          security_level: r.security_level === null ? null : Number(r.security_level),
        };
  return {
    task: (r: Row): Task => ({
      task_small_id: dec(r.task_small_id),
      task_id: r.task_id as string,
      role: Number(r.role),
      model_name: (r.model_name as string | null) ?? null,
      is_deprecated: flag(r.is_deprecated),
      valid_until_epoch: decNullable(r.valid_until_epoch),
      deprecated_at_epoch: decNullable(r.deprecated_at_epoch),
      security_level: Number(r.security_level),
      minimum_reputation_score:
        r.minimum_reputation_score === null ? null : Number(r.minimum_reputation_score),
      is_removed: flag(r.is_removed),
      removed_at_epoch: decNullable(r.removed_at_epoch),
    }),
    subscription: (r: Row): NodeSubscription => ({
      node_small_id: dec(r.node_small_id),
      task_small_id: dec(r.task_small_id),
      price_per_one_million_compute_units: dec(r.price_per_one_million_compute_units),
      max_num_compute_units: dec(r.max_num_compute_units),
      valid: flag(r.valid),
    }),
    stack: (r: Row): Stack => ({
      owner_address: r.owner_address as string,
      stack_small_id: dec(r.stack_small_id),
      stack_id: r.stack_id as string,
      task_small_id: dec(r.task_small_id),
      selected_node_id: dec(r.selected_node_id),
      num_compute_units: dec(r.num_compute_units),
      price_per_one_million_compute_units: dec(r.price_per_one_million_compute_units),
      already_computed_units: dec(r.already_computed_units),
      in_settle_period: flag(r.in_settle_period),
      num_total_messages: dec(r.num_total_messages),
      is_claimed: flag(r.is_claimed),
      is_locked_for_claim: flag(r.is_locked_for_claim),
      is_confidential: flag(r.is_confidential),
      user_refund_amount: decNullable(r.user_refund_amount),
    }),
    ticket: (r: Row): StackSettlementTicket => ({
      stack_small_id: dec(r.stack_small_id),
      selected_node_id: dec(r.selected_node_id),
      num_claimed_compute_units: dec(r.num_claimed_compute_units),
      requested_attestation_nodes: r.requested_attestation_nodes as string,
      committed_stack_proofs: bytes(r.committed_stack_proofs),
      stack_merkle_leaves: bytes(r.stack_merkle_leaves),
      dispute_settled_at_epoch: decNullable(r.dispute_settled_at_epoch),
      already_attested_nodes: r.already_attested_nodes as string,
      is_in_dispute: flag(r.is_in_dispute),
      user_refund_amount: dec(r.user_refund_amount),
      is_claimed: flag(r.is_claimed),
      claim_path: (r.claim_path as ClaimPath | null) ?? null,
      claimable_from_epoch: decNullable(r.claimable_from_epoch),
      node_fee_amount: decNullable(r.node_fee_amount),
    }),
    dispute: (r: Row): StackAttestationDispute => ({
      stack_small_id: dec(r.stack_small_id),
      attestation_commitment: bytes(r.attestation_commitment),
      attestation_node_id: dec(r.attestation_node_id),
      original_node_id: dec(r.original_node_id),
      original_commitment: bytes(r.original_commitment),
    }),
    terms,
    openStack: (r: Row): OpenStack => ({
      stack_small_id: dec(r.stack_small_id),
      terms: terms(r)!,
      already_computed_units: dec(r.already_computed_units),
      last_usage_at: r.last_usage_at === null ? null : Number(r.last_usage_at),
    }),
    ledger: (r: Row): LedgerRow => ({
      stack_small_id: dec(r.stack_small_id),
      terms: terms(r),
      already_computed_units: decNullable(r.already_computed_units),
      stack_claimed: flag(r.stack_claimed),
      ticket:
        r.t_stack_small_id === null
          ? undefined
          : {
              num_claimed_compute_units: dec(r.num_claimed_compute_units),
              is_in_dispute: flag(r.is_in_dispute),
              is_claimed: flag(r.t_claimed),
              claimable_from_epoch: decNullable(r.claimable_from_epoch),
              claimed_epoch: decNullable(r.claimed_epoch),
              node_fee_amount: decNullable(r.node_fee_amount),
              user_refund_amount: dec(r.user_refund_amount),
            },
    }),
    claimable: (r: Row): ClaimableTicket => ({
      stack_small_id: dec(r.stack_small_id),
      num_claimed_compute_units: dec(r.num_claimed_compute_units),
      claimable_from_epoch: dec(r.claimable_from_epoch),
      terms: terms(r),
    }),
    claimableOf: (r: Row): ClaimableTicketOf => ({
      stack_small_id: dec(r.stack_small_id),
      selected_node_id: dec(r.selected_node_id),
      num_claimed_compute_units: dec(r.num_claimed_compute_units),
      claimable_from_epoch: dec(r.claimable_from_epoch),
      terms: terms(r),
    }),
    attestationRequest: (r: Row): AttestationRequest => ({
      stack_small_id: dec(r.stack_small_id),
      slot: Number(r.slot),
      until_epoch: decNullable(r.until_epoch),
      is_in_dispute: flag(r.is_in_dispute),
      has_record: flag(r.has_record),
    }),
    attesterReward: (r: Row): AttesterReward => ({
      stack_small_id: dec(r.stack_small_id),
      slot: Number(r.slot),
      node_small_id: dec(r.node_small_id),
      amount: dec(r.amount),
      epoch: decNullable(r.epoch),
    }),
    chainState: (r: Row | undefined): ChainState => ({
      epoch: r ? decNullable(r.epoch) : null,
      parameters: r && typeof r.parameters === 'string' ? decodeParameters(r.parameters) : null,
    }),
    autopilotAction: (r: Row): AutopilotAction => ({
      id: Number(r.id),
      at: Number(r.at),
      updated_at: Number(r.updated_at),
      kind: r.kind as AutopilotActionKind,
      node_small_id: dec(r.node_small_id),
      stack_small_ids: parseIdList(r.stack_small_ids as string).map((id) => dec(id)),
      status: r.status as AutopilotActionStatus,
      reason: r.reason as string,
      node_fee_amount: decNullable(r.node_fee_amount),
      gas_estimate: decNullable(r.gas_estimate),
      tx_digests: JSON.parse(r.tx_digests as string) as string[],
      error: (r.error as string | null) ?? null,
    }),
    nodeEvent: (r: Row): NodeEventRow => ({
      id: Number(r.id),
      at: Number(r.at),
      type: r.type as NodeEventType,
      node_small_id: decNullable(r.node_small_id),
      other_node_small_id: decNullable(r.other_node_small_id),
      data: r.data as string,
    }),
    cursor: (r: Row): CursorState => ({
      source: r.source as string,
      cursor: (r.cursor as string | null) ?? null,
      applied: Number(r.applied),
      duplicate: Number(r.duplicate),
      ignored: Number(r.ignored),
      unknown: Number(r.unknown),
      malformed: Number(r.malformed),
      orphaned: Number(r.orphaned),
      updatedAt: String(r.updated_at),
    }),
  };
}

/**
 * An attestation applied to its ticket row (requested_attestation_nodes, stack_merkle_leaves,
 * already_attested_nodes): the attester's leaf in its slot and its id appended; 'not_requested' when the
 * ticket did not ask it.
 */
export function attestedRow(
  row: Row,
  attestation: Attestation,
): 'not_requested' | { leaves: Uint8Array; attested: string } {
  const node = u64ToString(attestation.attestation_node_id);
  const index = parseIdList(row.requested_attestation_nodes as string).indexOf(node);
  if (index === -1) return 'not_requested';
  const leaves = withAttesterLeaf(
    row.stack_merkle_leaves as Uint8Array,
    index,
    attestation.stack_merkle_leaf,
  );
  const attested = [...parseIdList(row.already_attested_nodes as string), node];
  return { leaves, attested: `[${attested.join(',')}]` };
}

/**
 * The ticket row (requested_attestation_nodes, already_attested_nodes, is_in_dispute,
 * claimable_from_epoch) after a dispute, when the dispute is the failed final check of an attestation:
 * the chain records that attester in already_attested_nodes and emits only the dispute (contracts.md
 * §2.7; db:1790-1805). Told from a start_attestation_dispute called directly (§2.8) by what only the
 * final check produces together:
 * - the attestation's proof matched the ticket's (else §2.7 disputes with the attester's own proof), and
 *   the final check disputes with that proof: attestation_commitment equals original_commitment;
 * - the disputing node is a requested attester, and the ticket lacked exactly its attestation: one fewer
 *   recorded than listed (a node listed twice, or attesting twice, counts each time, as on chain);
 * - the ticket was not in dispute (start_attestation_dispute aborts otherwise);
 * - no later than the last epoch that accepts attestations, the ticket's claimable_from_epoch, when the
 *   event's epoch and that one are known.
 * Only that last attester calling start_attestation_dispute itself, in the window, with the settler's own
 * proof makes the same event; it is then counted as its attestation (the ticket is disputed for good
 * either way). Its leaf is not in the event, so its slot keeps its zeros. undefined: a plain dispute.
 */
export function disputedAttestationRow(
  row: Row,
  dec: (value: unknown) => U64,
  dispute: Dispute,
  epoch: U64 | undefined,
): { attested: string } | undefined {
  if (flag(row.is_in_dispute)) return undefined;
  if (!sameBytes(dispute.attestation_commitment, dispute.original_commitment)) return undefined;
  const node = u64ToString(dispute.attestation_node_id);
  const requested = parseIdList(row.requested_attestation_nodes as string);
  const attested = parseIdList(row.already_attested_nodes as string);
  if (!requested.includes(node) || attested.length + 1 !== requested.length) return undefined;
  const until = row.claimable_from_epoch;
  if (epoch !== undefined && until !== null && until !== undefined && BigInt(epoch) > BigInt(dec(until))) {
    return undefined;
  }
  return { attested: `[${[...attested, node].join(',')}]` };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/**
 * A usage report applied to a stack's row (selected_node_id, num_compute_units, already_computed_units,
 * num_total_messages) and its request record row (total_hash, num_requests), if any: the outcome to
 * answer, and the values to write when it is recorded. A stack assigned to a node outside the report's
 * ownNodes is not_ours; a report without a request hash gets the synthetic one of the stack's next message.
 */
export function usageChange(
  dec: (value: unknown) => U64,
  stack: Row,
  record: Row | undefined,
  report: UsageReport,
): {
  outcome: UsageOutcome;
  write?: { already: U64; messages: U64; fillPpm: number; record: RequestRecord; events: NewNodeEvent[] };
} {
  const { computeUnits: units, nowMs, ownNodes } = report;
  const node = dec(stack.selected_node_id);
  if (ownNodes !== undefined && !ownNodes.some((own) => compareU64(own, node) === 0)) {
    return { outcome: { status: 'not_ours', selected_node_id: node } };
  }
  const usage = {
    num_compute_units: dec(stack.num_compute_units),
    already_computed_units: dec(stack.already_computed_units),
    num_total_messages: dec(stack.num_total_messages),
  };
  const previous = record && {
    total_hash: record.total_hash as Uint8Array,
    num_requests: dec(record.num_requests),
  };
  const requestHash =
    report.requestHash ??
    syntheticRequestHash(
      u64ToString(report.stackSmallId),
      u64ToString(units),
      u64ToString(usage.num_total_messages),
    );
  const change = addUsage(usage, previous, units, requestHash);
  if (change.status === 'over_capacity') {
    const { num_compute_units, already_computed_units } = usage;
    return { outcome: { status: 'over_capacity', already_computed_units, num_compute_units } };
  }
  const after = fillPpm(change.already_computed_units, usage.num_compute_units);
  const before = fillPpm(usage.already_computed_units, usage.num_compute_units);
  const identity = {
    stack_small_id: dec(stack.stack_small_id),
    selected_node_id: node,
    num_compute_units: usage.num_compute_units,
  };
  return {
    outcome: {
      status: 'recorded',
      already_computed_units: change.already_computed_units,
      num_compute_units: usage.num_compute_units,
      num_total_messages: change.num_total_messages,
    },
    write: {
      already: change.already_computed_units,
      messages: change.num_total_messages,
      fillPpm: after,
      record: change.record,
      events: fillEvents(identity, before, after, change.already_computed_units, nowMs),
    },
  };
}

/**
 * A u64 column as JSON digits: SQLite gives a number, or 20-digit TEXT above 2^53; PostgreSQL NUMERIC text
 * (a U64 value gives its digits too). KeptStacks keys stacks by it.
 */
export function digitsOf(value: unknown): string {
  if (typeof value === 'string')
    return value.length > 1 && value[0] === '0' ? value.replace(/^0+(?=\d)/, '') : value;
  return String(value);
}
const flagOf = (value: unknown) => (value === true || value === 1 || value === 1n ? 'true' : 'false');

/**
 * The columns of a stack that change after it is created (usage, settlement, claim), in the order
 * stateSuffix writes them, then num_compute_units: it never changes, but a list filtered by fill is chosen
 * from these rows alone (listSlice). The other columns (owner, ids, task, node, price, confidential) are
 * only ever shown, and KeptStacks and the kept lists keep them encoded.
 */
export const STACK_STATE_COLUMNS = `stack_small_id, already_computed_units, in_settle_period, num_total_messages,
  is_claimed, is_locked_for_claim, user_refund_amount, num_compute_units`;

/** What KeptStacks keeps of one stack: its JSON, encoded, and where its fixed fields end. */
interface KeptStack {
  /** The stack's JSON object as bytes (ASCII: hex ids, digits, booleans). */
  fragment: Buffer;
  /** Bytes of `fragment` that hold the fixed fields. */
  headLength: number;
  confidential: string;
  /** The stack's row of STACK_STATE_COLUMNS that `fragment` shows. */
  state: readonly unknown[];
}

/** The JSON of a stack's changing fields, from its values (STACK_STATE_COLUMNS order, without the id). */
function stateSuffix(
  already: unknown,
  settling: unknown,
  messages: unknown,
  claimed: unknown,
  locked: unknown,
  confidential: string,
  refund: unknown,
): string {
  return (
    `"already_computed_units":${digitsOf(already)},"in_settle_period":${flagOf(settling)},` +
    `"num_total_messages":${digitsOf(messages)},"is_claimed":${flagOf(claimed)},` +
    `"is_locked_for_claim":${flagOf(locked)},"is_confidential":${confidential},` +
    `"user_refund_amount":${refund === null || refund === undefined ? 'null' : digitsOf(refund)}}`
  );
}

/** A stack's row of STACK_STATE_COLUMNS from its whole row (STACK_COLUMNS, as an array). */
export function stateOf(r: readonly unknown[]): unknown[] {
  return [r[1], r[7], r[8], r[9], r[10], r[11], r[13], r[5]];
}

/** A stack's JSON from its whole row (STACK_COLUMNS, as an array), with what KeptStacks keeps of it. */
function keptStack(r: readonly unknown[]): KeptStack {
  const head =
    `{"owner_address":"${r[0]}","stack_small_id":${digitsOf(r[1])},"stack_id":"${r[2]}",` +
    `"task_small_id":${digitsOf(r[3])},"selected_node_id":${digitsOf(r[4])},` +
    `"num_compute_units":${digitsOf(r[5])},"price_per_one_million_compute_units":${digitsOf(r[6])},`;
  const confidential = flagOf(r[12]);
  const suffix = stateSuffix(r[7], r[8], r[9], r[10], r[11], confidential, r[13]);
  return {
    fragment: Buffer.from(head + suffix, 'latin1'),
    headLength: head.length,
    confidential,
    state: stateOf(r),
  };
}

/**
 * A stack's JSON with its changing fields set from a row of STACK_STATE_COLUMNS: the first `headLength`
 * bytes of `fragment` (its fixed fields) and the changing ones encoded again.
 */
function withState(
  fragment: Buffer,
  headLength: number,
  confidential: string,
  r: readonly unknown[],
): Buffer {
  const suffix = stateSuffix(r[1], r[2], r[3], r[4], r[5], confidential, r[6]);
  const out = Buffer.allocUnsafe(headLength + suffix.length);
  fragment.copy(out, 0, 0, headLength);
  out.write(suffix, headLength, 'latin1');
  return out;
}

/** Each stack's place in a list of STACK_STATE_COLUMNS rows, by its small id's digits. */
export function listIndex(state: readonly unknown[][]): Map<string, number> {
  return new Map(state.map((r, i) => [digitsOf(r[0]), i]));
}

/**
 * Nodes' whole stack lists kept between reads, by topic, bounded by their stacks over all nodes (about
 * 100 MB at NODE_LIST_STACKS): past the bound the ones kept longest ago are dropped first.
 */
export class KeptLists<L extends { state: readonly unknown[] }> {
  readonly #lists = new Map<string, L>();
  #stacks = 0;

  get(topic: string): L | undefined {
    return this.#lists.get(topic);
  }

  /** Keeps (or keeps again, as the newest) a topic's list, dropping the oldest past the bound. */
  keep(topic: string, list: L): void {
    this.forget(topic);
    this.#lists.set(topic, list);
    this.#stacks += list.state.length;
    for (const oldest of this.#lists.keys()) {
      if (this.#stacks <= NODE_LIST_STACKS || oldest === topic) break;
      this.forget(oldest);
    }
  }

  forget(topic: string): void {
    const old = this.#lists.get(topic);
    if (old === undefined) return;
    this.#lists.delete(topic);
    this.#stacks -= old.state.length;
  }
}

/** Stacks of the whole lists kept between reads, over all nodes (KeptLists): about 100 MB at most. */
const NODE_LIST_STACKS = 200_000;

/** The small id of a list's last row (STACK_STATE_COLUMNS rows, `count` of them listed), or null. */
export function lastIdOf(state: readonly unknown[][], count: number): U64 | null {
  const last = count > 0 ? state[count - 1]![0] : null;
  return last === null ? null : normalizeU64(BigInt(last as string | number));
}

/**
 * Each listed stack's JSON, kept encoded, so that a node's list rebuilt after a usage report reads only
 * the columns that change (half the cost of whole rows), re-encodes only the stacks whose values moved,
 * and is one copy of bytes already encoded (turning a 1,000-piece string into a Buffer costs more than
 * building it). The fixed fields (owner, ids, task, node, units, price, confidential) never change once
 * StackCreatedEvent made the stack, and the changing ones are compared on every build, so nothing can
 * make what is kept wrong and nothing has to invalidate it. Bounded; starts over when full.
 */
export class KeptStacks {
  readonly #max: number;
  readonly #entries = new Map<string, KeptStack>();

  constructor(max = 100_000) {
    this.#max = max;
  }

  /** Keeps whole rows (STACK_COLUMNS, as arrays). */
  keep(found: readonly unknown[][]): void {
    if (this.#entries.size + found.length > this.#max) this.#entries.clear();
    for (const r of found) this.#entries.set(digitsOf(r[1]), keptStack(r));
  }

  /**
   * The list from rows of STACK_STATE_COLUMNS, or undefined when a stack is not kept (the caller then
   * reads whole rows and keeps them).
   */
  json(state: readonly unknown[][], limit: number | undefined): JsonRows | undefined {
    const count = limit === undefined ? state.length : Math.min(limit, state.length);
    const parts: Buffer[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const r = state[i]!;
      const kept = this.#entries.get(digitsOf(r[0]));
      if (kept === undefined) return undefined;
      // Any change of the values as read re-encodes.
      if (!sameState(kept.state, r)) {
        kept.fragment = withState(kept.fragment, kept.headLength, kept.confidential, r);
        kept.state = r;
      }
      parts[i] = kept.fragment;
    }
    return {
      body: joinFragments(parts).body,
      count,
      last: lastIdOf(state, count),
      more: state.length > count,
    };
  }
}

/**
 * A list from whole rows (STACK_COLUMNS, as arrays), its stacks kept in `prefixes` for the next time.
 */
export function stacksJson(found: unknown[][], limit: number | undefined, prefixes: KeptStacks): JsonRows {
  prefixes.keep(found);
  return prefixes.json(found.map(stateOf), limit)!;
}

/**
 * Objects per piece of a kept list's body (about 60 KB of stacks): a usage report copies the one piece
 * that holds its stack, not the whole body. A whole-body copy per report was 237 MB/s of new buffers at
 * 500 reports a second, and a full collection every 150 ms (docs/PERFORMANCE.md, fifth pass). Pieces of
 * this size cost a send no more than one buffer does; 32-stack pieces cost 3 to 4 % more CPU per request.
 */
export const PIECE_OBJECTS = 128;

/**
 * A node's whole stack list as its encoded JSON array, in pieces of PIECE_OBJECTS objects, and where each
 * stack's object is in its piece: kept between reads, it is answered as it is while nothing changed, and
 * patched, not rebuilt, when a few stacks did (a usage report changes one). Piece 0 starts with `[`, every
 * object but the first follows a `,` in its own piece, and the last piece ends with `]`.
 */
export interface ListBody {
  body: Pieces;
  /** Where stack i's object starts in its piece (piece i / PIECE_OBJECTS). */
  starts: Int32Array;
  /** Where it ends (exclusive). */
  ends: Int32Array;
}

/**
 * The piece of objects [from, to) of a list of `count`, as new bytes, with where each object lands written
 * into starts and ends.
 */
function piece(
  object: (i: number) => Buffer,
  from: number,
  to: number,
  count: number,
  starts: Int32Array,
  ends: Int32Array,
): Buffer {
  const objects: Buffer[] = [];
  let length = (from === 0 ? 1 : 0) + (to === count ? 1 : 0);
  for (let i = from; i < to; i++) {
    const o = object(i);
    objects.push(o);
    length += o.length + (i > 0 ? 1 : 0);
  }
  // Memory of its own, not a slice of Node's shared pool: a kept piece lives long, and a piece under 4 KB
  // would keep the pool's 8 KB with it (and be counted so: Pieces.retained).
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  if (from === 0) out[at++] = 0x5b; // [
  for (let i = from; i < to; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    starts[i] = at;
    at += objects[i - from]!.copy(out, at);
    ends[i] = at;
  }
  if (to === count) out[at++] = 0x5d; // ]
  return out;
}

/** The JSON array of these objects, in pieces, and where each is. */
export function joinFragments(parts: readonly Buffer[]): ListBody {
  const count = parts.length;
  const starts = new Int32Array(count);
  const ends = new Int32Array(count);
  const buffers: Buffer[] = [];
  const object = (i: number) => parts[i]!;
  // An empty list is one piece, `[]`.
  for (let from = 0; from === 0 || from < count; from += PIECE_OBJECTS) {
    buffers.push(piece(object, from, Math.min(from + PIECE_OBJECTS, count), count, starts, ends));
  }
  return { body: new Pieces(buffers), starts, ends };
}

/**
 * The list with these objects after its last, as a new list (the old one may be in a response cache or still
 * being sent): its last piece is made again, as it ends with `]` and may have room; the pieces before it are
 * shared.
 */
export function appendedBody(list: ListBody, parts: readonly Buffer[]): ListBody {
  const kept = list.starts.length;
  const count = kept + parts.length;
  const starts = new Int32Array(count);
  const ends = new Int32Array(count);
  starts.set(list.starts);
  ends.set(list.ends);
  const lastPiece = kept === 0 ? 0 : ((kept - 1) / PIECE_OBJECTS) | 0;
  const buffers = list.body.buffers.slice(0, lastPiece);
  const object = (i: number) => (i < kept ? fragmentAt(list, i) : parts[i - kept]!);
  for (let from = lastPiece * PIECE_OBJECTS; from < count; from += PIECE_OBJECTS) {
    buffers.push(piece(object, from, Math.min(from + PIECE_OBJECTS, count), count, starts, ends));
  }
  return { body: new Pieces(buffers), starts, ends };
}

/** Stack i's object in the list (a view: no copy). */
export function fragmentAt(list: ListBody, i: number): Buffer {
  return list.body.buffers[(i / PIECE_OBJECTS) | 0]!.subarray(list.starts[i]!, list.ends[i]!);
}

/**
 * The list with some stacks' objects replaced, by index, as a new list: the old one may be in a response
 * cache or still being sent. Only the pieces that hold a changed object are new; the others are shared.
 */
export function patchBody(list: ListBody, changes: ReadonlyMap<number, Buffer>): ListBody {
  const count = list.starts.length;
  const starts = list.starts.slice();
  const ends = list.ends.slice();
  const buffers = list.body.buffers.slice();
  // The changed stacks of each piece, in order.
  const byPiece = new Map<number, number[]>();
  for (const i of changes.keys()) {
    const p = (i / PIECE_OBJECTS) | 0;
    const changed = byPiece.get(p);
    if (changed === undefined) byPiece.set(p, [i]);
    else changed.push(i);
  }
  for (const [p, changed] of byPiece) {
    changed.sort((a, b) => a - b);
    buffers[p] = splice(
      buffers[p]!,
      changed,
      changes,
      Math.min((p + 1) * PIECE_OBJECTS, count),
      starts,
      ends,
    );
  }
  return { body: new Pieces(buffers), starts, ends };
}

/**
 * A piece with the objects `changed` (its stacks, in order) replaced: the bytes between them copied as runs,
 * not object by object, and the places of the piece's stacks from the first changed one to `to` moved by what
 * the new objects added. A usage report changes one object of 128; rebuilding the piece whole cost a view and
 * a copy per object (docs/PERFORMANCE.md, fourteenth pass).
 */
function splice(
  old: Buffer,
  changed: readonly number[],
  changes: ReadonlyMap<number, Buffer>,
  to: number,
  starts: Int32Array,
  ends: Int32Array,
): Buffer {
  let length = old.length;
  for (const i of changed) length += changes.get(i)!.length - (ends[i]! - starts[i]!);
  // Memory of its own, as piece() explains.
  const out = Buffer.allocUnsafeSlow(length);
  let from = 0; // where the next run of unchanged bytes starts in `old`
  let at = 0; // where it goes in `out`
  for (let k = 0; k < changed.length; k++) {
    const i = changed[k]!;
    const o = changes.get(i)!;
    const start = starts[i]!;
    const end = ends[i]!;
    at += old.copy(out, at, from, start);
    const next = k + 1 < changed.length ? changed[k + 1]! : to;
    starts[i] = at;
    at += o.copy(out, at);
    ends[i] = at;
    from = end;
    // The unchanged stacks up to the next changed one move by what the changes so far added.
    const shift = at - end;
    for (let j = i + 1; j < next; j++) {
      starts[j]! += shift;
      ends[j]! += shift;
    }
  }
  old.copy(out, at, from);
  return out;
}

/**
 * Each stack's fill in a kept list, by the list's body: its used units over its units in double
 * arithmetic, a stack of no units counting as full (Infinity). The stores' filtered queries compare the
 * same way (SQLite's REAL, PostgreSQL's float8), so the stacks chosen by it are the ones they select.
 * Worked out once per body, not per request: PostgreSQL's values are text, and parsing a thousand of them
 * cost as much as the rest of a filtered read. A body is never changed in place (a change makes a new
 * one), so a body's fills never go stale.
 */
const fills = new WeakMap<ListBody, Float64Array>();

function fillsOf(state: readonly unknown[][], list: ListBody): Float64Array {
  let out = fills.get(list);
  if (out === undefined) {
    out = new Float64Array(state.length);
    for (let i = 0; i < state.length; i++) {
      const units = Number(state[i]![7]);
      out[i] = units === 0 ? Number.POSITIVE_INFINITY : Number(state[i]![1]) / units;
    }
    fills.set(list, out);
  }
  return out;
}

/** A row's small id (its first column) as a U64. */
function idOf(r: readonly unknown[]): U64 {
  return normalizeU64(BigInt(r[0] as string | number | bigint));
}

/**
 * A node's kept list, whole, filtered or a page, from its rows of STACK_STATE_COLUMNS and its body: the
 * stacks filled to `minFill` (all of them when undefined) after `page.after`, at most `page.limit`, as views
 * of the body's pieces. What the stores' list queries would answer, without a query and without a copy: a
 * filtered list reads its node's whole range (no index narrows it), and copying what it showed was 400 MB/s
 * of new buffers under uncached reads (docs/PERFORMANCE.md, twelfth pass).
 */
export function listSlice(
  state: readonly unknown[][],
  list: ListBody,
  minFill: number | undefined,
  page: Page,
): JsonRows {
  // The whole list: its kept body as it is.
  if (minFill === undefined && page.after === undefined && page.limit === undefined) {
    return { body: list.body, count: state.length, last: lastIdOf(state, state.length), more: false };
  }
  // The first row after page.after: the rows are in id order.
  let lo = 0;
  if (page.after !== undefined) {
    let hi = state.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareU64(idOf(state[mid]!), page.after) <= 0) lo = mid + 1;
      else hi = mid;
    }
  }
  const limit = page.limit ?? Number.POSITIVE_INFINITY;
  const fill = minFill === undefined ? undefined : fillsOf(state, list);
  const chosen: number[] = [];
  let more = false;
  for (let i = lo; i < state.length; i++) {
    if (fill !== undefined && !(fill[i]! >= minFill!)) continue;
    if (chosen.length === limit) {
      more = true;
      break;
    }
    chosen.push(i);
  }
  const last = chosen.at(-1);
  return {
    body: viewsOf(list, chosen),
    count: chosen.length,
    last: last === undefined ? null : idOf(state[last]!),
    more,
  };
}

// Each in memory of its own (Buffer.from would take a slice of a shared pool, which a body holding it keeps).
const OPEN = Buffer.alloc(1, '[');
const CLOSE = Buffer.alloc(1, ']');
const EMPTY = Buffer.alloc(2, '[]');

/**
 * The JSON array of some of a list's objects (indexes, ascending), as views of its pieces: no copy. Each
 * object is preceded in its piece by its separator (`[` before the list's first, `,` before the others), so
 * a run of consecutive objects in one piece is one view with the separator before it.
 */
function viewsOf(list: ListBody, chosen: readonly number[]): Pieces {
  if (chosen.length === 0) return new Pieces([EMPTY]);
  const count = list.starts.length;
  const out: Buffer[] = [];
  const flush = (from: number, to: number) => {
    let start = list.starts[from]! - 1;
    if (out.length === 0 && from > 0) {
      out.push(OPEN);
      start += 1;
    }
    const end = list.ends[to]! + (to === count - 1 ? 1 : 0);
    out.push(list.body.buffers[(from / PIECE_OBJECTS) | 0]!.subarray(start, end));
  };
  let from = chosen[0]!;
  let to = from;
  for (let k = 1; k < chosen.length; k++) {
    const i = chosen[k]!;
    if (i === to + 1 && i % PIECE_OBJECTS !== 0) to = i;
    else {
      flush(from, to);
      from = to = i;
    }
  }
  flush(from, to);
  if (to !== count - 1) out.push(CLOSE);
  return new Pieces(out);
}

const STATE_START = Buffer.from('"already_computed_units":');
const CONFIDENTIAL = Buffer.from('"is_confidential":true');

/**
 * A stack's object with its changing fields set from a row of STACK_STATE_COLUMNS. The fixed fields are
 * the object's own bytes up to the first changing one (they are hex ids and digits: the name cannot occur
 * in them), and is_confidential, which never changes, is read from the object too.
 */
export function restated(fragment: Buffer, r: readonly unknown[]): Buffer {
  const head = fragment.indexOf(STATE_START);
  return withState(fragment, head, fragment.includes(CONFIDENTIAL, head) ? 'true' : 'false', r);
}

/**
 * Whether two rows of STACK_STATE_COLUMNS show the same values: the values as read compare exactly (the
 * same driver gives the same types).
 */
export function sameState(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a[1] === b[1] && a[2] === b[2] && a[3] === b[3] && a[4] === b[4] && a[5] === b[5] && a[6] === b[6];
}

/** A stack's object from its whole row (STACK_COLUMNS, as an array). */
export function stackFragment(r: readonly unknown[]): Buffer {
  return keptStack(r).fragment;
}

/**
 * A kept list's state and body with some of its stacks' rows of STACK_STATE_COLUMNS written in, by index:
 * a new state array and new copies of the pieces that hold them (the kept list is not changed).
 */
export function restatedList(
  kept: { state: readonly unknown[][]; list: ListBody },
  changed: ReadonlyMap<number, unknown[]>,
): { state: unknown[][]; list: ListBody } {
  const state = kept.state.slice();
  if (changed.size === 0) return { state, list: kept.list };
  const changes = new Map<number, Buffer>();
  for (const [at, r] of changed) {
    state[at] = r;
    changes.set(at, restated(fragmentAt(kept.list, at), r));
  }
  return { state, list: patchBody(kept.list, changes) };
}

/** Orders small ids by their digits (digitsOf: no leading zeros), as numbers. */
export function compareDigits(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * A kept list with some of its stacks changed (rows of STACK_STATE_COLUMNS, by index) and new stacks added
 * (whole rows, STACK_COLUMNS as arrays, in id order): a new state, index and body, the kept stacks' objects
 * reused (restated when changed). New stacks after the list's last, as the chain numbers them, are appended
 * to the body (appendedBody); others are merged in id order and the body joined again. The kept list is not
 * changed: its body may be in a response cache or still being sent.
 */
export function mergedList(
  kept: { state: readonly unknown[][]; index: ReadonlyMap<string, number>; list: ListBody },
  changed: ReadonlyMap<number, unknown[]>,
  added: readonly unknown[][],
): { state: unknown[][]; index: Map<string, number>; list: ListBody } {
  const last = kept.state.at(-1);
  if (
    added.length === 0 ||
    last === undefined ||
    compareDigits(digitsOf(added[0]![1]), digitsOf(last[0])) > 0
  ) {
    const { state, list } = restatedList(kept, changed);
    const index = new Map(kept.index);
    for (const row of added) {
      index.set(digitsOf(row[1]), state.length);
      state.push(stateOf(row));
    }
    return { state, index, list: added.length > 0 ? appendedBody(list, added.map(stackFragment)) : list };
  }
  const state: unknown[][] = [];
  const parts: Buffer[] = [];
  let next = 0;
  for (let at = 0; at <= kept.state.length; at++) {
    const id = at < kept.state.length ? digitsOf(kept.state[at]![0]) : undefined;
    for (; next < added.length; next++) {
      const row = added[next]!;
      if (id !== undefined && compareDigits(digitsOf(row[1]), id) > 0) break;
      state.push(stateOf(row));
      parts.push(stackFragment(row));
    }
    if (id === undefined) break;
    const r = changed.get(at);
    state.push(r ?? kept.state[at]!);
    parts.push(r === undefined ? fragmentAt(kept.list, at) : restated(fragmentAt(kept.list, at), r));
  }
  return { state, index: listIndex(state), list: joinFragments(parts) };
}
