import type { U64 } from '../internal/u64.ts';
import { u64ToString } from '../internal/u64.ts';
import { type ProtocolParameters, readParameters } from '../protocol/constants.ts';
import type {
  ClaimPath,
  NodeSubscription,
  Stack,
  StackAttestationDispute,
  StackSettlementTicket,
  Task,
} from '../schemas/model.ts';
import type {
  AutopilotAction,
  AutopilotActionKind,
  AutopilotActionStatus,
  AutopilotSpending,
} from './autopilot-actions.ts';
import { StoreError } from './errors.ts';
import type { NodeEventRow, NodeEventType } from './node-events.ts';
import type {
  AttestationRequest,
  AttesterReward,
  ChainState,
  ClaimableTicket,
  ClaimableTicketOf,
  CursorState,
  FollowedStack,
  LedgerRow,
  OpenStack,
  StackTerms,
} from './store.ts';

/**
 * Rows to the store's types, for both engines: the only engine-specific part is how a u64 column comes
 * back (SQLite: a number or 20-digit text; PostgreSQL: NUMERIC text), which the caller's `dec` decodes.
 * Booleans arrive as 1/0 (SQLite) or true/false (PostgreSQL).
 */

type Row = Record<string, unknown>;

/** The columns of each listed row type, in the order both engines select them (stacks: stack-list/columns.ts). */
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
    followedStack: (r: Row): FollowedStack => ({
      stack_small_id: dec(r.stack_small_id),
      already_computed_units: dec(r.already_computed_units),
      num_total_messages: dec(r.num_total_messages),
      num_compute_units: dec(r.num_compute_units),
    }),
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
      gas_used: decNullable(r.gas_used),
      tx_digests: JSON.parse(r.tx_digests as string) as string[],
      error: (r.error as string | null) ?? null,
    }),
    autopilotSpending: (r: Row): AutopilotSpending => ({
      at: Number(r.at),
      node_small_id: dec(r.node_small_id),
      status: r.status as AutopilotActionStatus,
      gas_estimate: decNullable(r.gas_estimate),
      gas_used: decNullable(r.gas_used),
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
