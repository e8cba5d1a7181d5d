import { normalizeU64, type U64 } from '../../internal/u64.ts';
import type { ChainTicket } from '../chain.ts';
import type { Ledger } from './ledger.ts';
import { key, type NodeObject, type StackObject, type TicketObject, unhex } from './state.ts';

/** The dev read helpers: the committed state of a ticket, a stack or a node, as tests and /dev routes see it. */

/** A settlement ticket as the dev read helper shows it: the chain's view and the proof material. */
export interface DevTicket extends ChainTicket {
  num_claimed_compute_units: U64;
  committed_stack_proof: Uint8Array;
  stack_merkle_leaves_vector: Uint8Array;
}

export interface DevStack {
  stack_small_id: U64;
  owner: string;
  task_small_id: U64;
  selected_node_id: U64;
  num_compute_units: U64;
  price_per_one_million_compute_units: U64;
  is_claimed: boolean;
}

/** A node's NodeEntry accounting and its badge. */
export interface DevNodeAccount {
  node_small_id: U64;
  badge_id: string;
  owner: string;
  reputation_score: number;
  available_fee_amount: U64;
  last_fee_epoch: U64;
  last_fee_epoch_amount: U64;
  task_subscriptions: U64[];
  model_subscriptions: { model_name: string; echelon_id: U64 }[];
}

const big = (value: bigint): U64 => normalizeU64(value);

export function readTicket(ledger: Ledger, stackSmallId: U64): DevTicket | undefined {
  const t = ledger.read<TicketObject>(key.ticket(BigInt(stackSmallId)));
  if (!t) return undefined;
  return {
    stack_small_id: big(t.stack_small_id),
    selected_node_id: big(t.selected_node_id),
    num_claimed_compute_units: big(t.num_claimed_compute_units),
    requested_attestation_nodes: t.requested_attestation_nodes.map(big),
    already_attested_nodes: t.already_attested_nodes.map(big),
    dispute_settled_at_epoch: big(t.dispute_settled_at_epoch),
    committed_stack_proof: unhex(t.committed_stack_proof),
    stack_merkle_leaves_vector: unhex(t.stack_merkle_leaves_vector),
    is_in_dispute: t.is_in_dispute,
  };
}

export function readStack(ledger: Ledger, stackSmallId: U64): DevStack | undefined {
  const s = ledger.read<StackObject>(key.stack(BigInt(stackSmallId)));
  if (!s) return undefined;
  return {
    stack_small_id: big(s.small_id),
    owner: s.owner,
    task_small_id: big(s.task_small_id),
    selected_node_id: big(s.selected_node_id),
    num_compute_units: big(s.num_compute_units),
    price_per_one_million_compute_units: big(s.price_per_one_million_compute_units),
    is_claimed: s.is_claimed,
  };
}

export function readNodeAccount(ledger: Ledger, nodeSmallId: U64): DevNodeAccount | undefined {
  const n = ledger.read<NodeObject>(key.node(BigInt(nodeSmallId)));
  if (!n) return undefined;
  return {
    node_small_id: big(n.small_id),
    badge_id: n.badge.id,
    owner: n.badge.owner,
    reputation_score: n.entry.reputation_score,
    available_fee_amount: big(n.entry.available_fee_amount),
    last_fee_epoch: big(n.entry.last_fee_epoch),
    last_fee_epoch_amount: big(n.entry.last_fee_epoch_amount),
    task_subscriptions: n.badge.task_subscriptions.map(big),
    model_subscriptions: n.badge.model_subscriptions.map((s) => ({
      model_name: s.model_name,
      echelon_id: big(s.echelon_id),
    })),
  };
}
