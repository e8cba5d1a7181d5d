import type { U64 } from '../internal/u64.ts';
import { compareU64, u64ToString } from '../internal/u64.ts';
import { syntheticRequestHash, withAttesterLeaf } from '../protocol/proofs.ts';
import { addUsage, type RequestRecord } from '../protocol/usage.ts';
import { fillEvents, type NewNodeEvent } from './node-events.ts';
import { parseIdList } from './rows.ts';
import type {
  Attestation,
  Dispute,
  MirroredUsage,
  MirrorOutcome,
  UsageOutcome,
  UsageReport,
} from './store.ts';

/**
 * How an event or a usage report changes the rows it touches, for both engines: each takes the rows as
 * read (the caller's `dec` decodes a u64 column) and says what to write.
 */

type Row = Record<string, unknown>;

const flag = (value: unknown): boolean => value === true || value === 1;

/** floor(used x 1e6 / capacity), at most 1e6; a stack without capacity counts as full. */
export function fillPpm(used: U64, capacity: U64): number {
  const total = BigInt(capacity);
  if (total === 0n) return 1_000_000;
  const ppm = (BigInt(used) * 1_000_000n) / total;
  return ppm > 1_000_000n ? 1_000_000 : Number(ppm);
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
 * A usage the source holds, applied to the stack's row (selected_node_id, num_compute_units,
 * already_computed_units, num_total_messages, in_settle_period, is_claimed, fill_ppm, fill_peak_ppm): what
 * to write, when anything. A stack that is another node's, settled or claimed is closed. stack_filled
 * fires for each threshold the fill reaches above the stack's highest fill before (fill_peak_ppm, or its
 * fill now, written before the column existed), so usage that goes down and up again reports it once.
 */
export function mirrorChange(
  dec: (value: unknown) => U64,
  stack: Row,
  usage: MirroredUsage,
  nowMs: number,
): {
  outcome: MirrorOutcome;
  write?: { already: U64; messages: U64; fillPpm: number; peakPpm: number; events: NewNodeEvent[] };
} {
  const node = dec(stack.selected_node_id);
  if (
    compareU64(node, usage.selected_node_id) !== 0 ||
    flag(stack.in_settle_period) ||
    flag(stack.is_claimed)
  ) {
    return { outcome: 'closed' };
  }
  const units = dec(stack.num_compute_units);
  const already = compareU64(usage.already_computed_units, units) > 0 ? units : usage.already_computed_units;
  const messages = usage.num_total_messages;
  if (
    compareU64(already, dec(stack.already_computed_units)) === 0 &&
    compareU64(messages, dec(stack.num_total_messages)) === 0
  ) {
    return { outcome: 'unchanged' };
  }
  const fill = fillPpm(already, units);
  const peak = Math.max(Number(stack.fill_peak_ppm), Number(stack.fill_ppm));
  const identity = {
    stack_small_id: dec(stack.stack_small_id),
    selected_node_id: node,
    num_compute_units: units,
  };
  return {
    outcome: 'set',
    write: {
      already,
      messages,
      fillPpm: fill,
      peakPpm: Math.max(peak, fill),
      events: fillEvents(identity, peak, fill, already, nowMs),
    },
  };
}
