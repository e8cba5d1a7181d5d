import type { U64 } from '../internal/u64.ts';
import type { ProtocolParameters } from '../protocol/constants.ts';
import { claimableFromEpoch } from '../protocol/epochs.ts';
import { ticketLeaves } from '../protocol/proofs.ts';
import type { ClaimPath, NodeSubscription } from '../schemas/model.ts';
import type { AutopilotAction } from './autopilot-actions.ts';
import { eventData, type NewNodeEvent } from './node-events.ts';
import { encodeParameters, idList } from './rows.ts';
import type {
  AttesterReward,
  ClaimRecord,
  Dispute,
  IndexerCounts,
  NewStack,
  NewTask,
  StackClaimed,
  TicketSettled,
  TrySettle,
} from './store.ts';

/**
 * The values each write binds, in the order of its statement's columns, for both engines: the engines
 * differ only in how a u64 is bound (`enc`: SQLite, a bigint or 20-digit text; PostgreSQL, decimal text).
 * PostgreSQL's statements of many rows take one array per column (columns()).
 */

/** A claim through either path: the ticket (created when never seen) claimed, and its stack. */
export interface Claim {
  claim: StackClaimed;
  /** The ticket's requested attesters as stored (idList). */
  attesters: string;
  path: ClaimPath;
  record: ClaimRecord;
}

/** Rows of values as one array per column (for `unnest`), in row order. */
export function columns(rows: readonly (readonly unknown[])[], width: number): unknown[][] {
  const out: unknown[][] = Array.from({ length: width }, () => new Array(rows.length));
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    for (let c = 0; c < width; c++) out[c]![r] = row[c];
  }
  return out;
}

export function paramBuilders<E>(enc: (value: U64) => E) {
  const nullable = (value: U64 | null | undefined): E | null =>
    value === undefined || value === null ? null : enc(value);
  return {
    nullable,
    task: (t: NewTask) => [
      enc(t.task_small_id),
      t.task_id,
      t.role,
      t.model_name,
      t.security_level,
      t.minimum_reputation_score,
    ],
    subscription: (s: Omit<NodeSubscription, 'valid'>) => [
      enc(s.node_small_id),
      enc(s.task_small_id),
      enc(s.price_per_one_million_compute_units),
      enc(s.max_num_compute_units),
    ],
    stack: (s: NewStack) => [
      enc(s.selected_node_id),
      enc(s.stack_small_id),
      s.stack_id,
      s.owner_address,
      enc(s.task_small_id),
      enc(s.num_compute_units),
      enc(s.price_per_one_million_compute_units),
    ],
    /** A try-settle's ticket, claimable from the epoch after its own when that is known. */
    ticket: (t: TrySettle, epoch: U64 | undefined) => [
      enc(t.stack_small_id),
      enc(t.selected_node_id),
      enc(t.num_claimed_compute_units),
      idList(t.requested_attestation_nodes),
      t.committed_stack_proof,
      ticketLeaves(t.stack_merkle_leaf, t.requested_attestation_nodes.length),
      nullable(epoch),
      nullable(epoch === undefined ? undefined : claimableFromEpoch(epoch)),
    ],
    /** A try-settle's attestation requests: one per requested slot. */
    requests: (t: TrySettle) =>
      t.requested_attestation_nodes.map((node, slot) => [enc(t.stack_small_id), slot, enc(node)]),
    settledTicket: (t: TicketSettled) => [
      enc(t.stack_small_id),
      enc(t.selected_node_id),
      enc(t.num_claimed_compute_units),
      idList(t.requested_attestation_nodes),
      t.committed_stack_proof,
      enc(t.dispute_settled_at_epoch),
    ],
    claim: (c: Claim) => [
      enc(c.claim.stack_small_id),
      enc(c.claim.selected_node_id),
      enc(c.claim.num_claimed_compute_units),
      c.attesters,
      enc(c.claim.user_refund_amount),
      c.path,
      nullable(c.record.epoch),
      nullable(c.record.node_fee_amount),
    ],
    dispute: (d: Dispute) => [
      enc(d.stack_small_id),
      enc(d.attestation_node_id),
      d.attestation_commitment,
      enc(d.original_node_id),
      d.original_commitment,
    ],
    reward: (r: AttesterReward) => [
      enc(r.stack_small_id),
      r.slot,
      enc(r.node_small_id),
      enc(r.amount),
      nullable(r.epoch),
    ],
    chainState: (state: { epoch?: U64 | undefined; parameters?: ProtocolParameters | undefined }) => [
      nullable(state.epoch),
      state.parameters === undefined ? null : encodeParameters(state.parameters),
      new Date().toISOString(),
    ],
    cursor: (source: string, cursor: string | null, n: IndexerCounts) => [
      source,
      cursor,
      n.applied,
      n.duplicate,
      n.ignored,
      n.unknown,
      n.malformed,
      n.orphaned,
      new Date().toISOString(),
    ],
    action: (a: Omit<AutopilotAction, 'id'>) => [
      a.at,
      a.updated_at,
      a.kind,
      enc(a.node_small_id),
      idList(a.stack_small_ids),
      a.status,
      a.reason,
      nullable(a.node_fee_amount),
      nullable(a.gas_estimate),
      JSON.stringify(a.tx_digests),
      a.error,
      nullable(a.gas_used),
    ],
    actionChange: (
      id: number,
      change: Pick<AutopilotAction, 'status' | 'tx_digests' | 'error' | 'updated_at'> &
        Partial<Pick<AutopilotAction, 'node_fee_amount' | 'gas_used'>>,
    ) => [
      change.status,
      JSON.stringify(change.tx_digests),
      change.error,
      change.updated_at,
      nullable(change.node_fee_amount),
      nullable(change.gas_used),
      id,
    ],
    /** A node event, recorded at `now` unless it says when it happened. */
    nodeEvent: (event: NewNodeEvent, now: number) => [
      event.at ?? now,
      event.type,
      nullable(event.node_small_id),
      nullable(event.other_node_small_id),
      eventData(event),
    ],
  };
}
