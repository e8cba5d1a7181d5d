import { type Static, Type } from 'typebox';
import { Bytes, Nullable, SmallId, Strict, StringEnum, U64, U64In } from './common.ts';

/**
 * The read model as the API serves it, wire-compatible with upstream (fields marked "Addition" are ours),
 * and the parameters of the read routes. The store's row types are these.
 */

export const NodeIdParamsSchema = Type.Object(
  {
    node_id: SmallId("The node's small id, a non-negative integer up to 2^53 - 1."),
  },
  Strict,
);

/** The most rows one page of a list answers. */
export const MAX_PAGE = 10_000;

/**
 * Optional paging of a list: without them a route answers the whole list, as upstream does. With them it
 * answers the rows after `after`, at most `limit`, and a `Link: <...>; rel="next"` header while more remain.
 */
export const PageQueryProperties = {
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE,
      description: `At most this many rows (1 to ${MAX_PAGE}); the Link header names the next page while more remain.`,
      examples: [100],
    }),
  ),
  after: Type.Optional(
    U64In('Only the rows after this small id (the last one of the previous page), in small-id order'),
  ),
};
export const PageQuerySchema = Type.Object(PageQueryProperties, Strict);

export const StacksQuerySchema = Type.Object(
  {
    ...PageQueryProperties,
    min_fill_fraction: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description:
          'Lists only stacks whose already_computed_units / num_compute_units is at least this fraction (0 to 1). ' +
          'A stack with zero capacity counts as full. Absent: every stack of the node.',
      }),
    ),
  },
  Strict,
);

/** A node of the network, as its NodeRegisteredEvent describes it (GET /network/nodes/{node_id}). */
export const NodeSchema = Type.Object({
  node_small_id: U64('Sequential node id'),
  badge_id: Nullable(
    Type.String(),
    "The NodeBadge's object id; null when the daemon knows the node only from its subscriptions or stacks (its registration came before the events it indexed)",
  ),
  sui_address: Nullable(Type.String(), 'The address that registered the node; null as badge_id'),
});
export type NodeRecord = Static<typeof NodeSchema>;

export const TaskSchema = Type.Object(
  {
    task_small_id: U64('Sequential task id'),
    task_id: Type.String({ description: 'Object id from TaskRegisteredEvent (the TaskBadge id)' }),
    role: Type.Integer({
      description:
        '0 chat completion, 1 embedding, 2 vision, 3 image generation, 4 text to speech, 5 speech to text, 6 fine-tuning, 7 training',
    }),
    model_name: Nullable(Type.String()),
    is_deprecated: Type.Boolean(),
    valid_until_epoch: Nullable(U64(), 'Always null: the contract has no expiry'),
    deprecated_at_epoch: Nullable(U64()),
    security_level: Type.Integer({
      description: '0 no security, 1 confidential compute, 2 sampling consensus',
    }),
    minimum_reputation_score: Nullable(Type.Integer()),
    is_removed: Type.Boolean({ description: 'Addition: the task was removed on chain' }),
    removed_at_epoch: Nullable(U64(), 'Addition: the epoch of TaskRemovedEvent'),
  },
  Strict,
);

export const NodeSubscriptionSchema = Type.Object(
  {
    node_small_id: U64(),
    task_small_id: U64(),
    price_per_one_million_compute_units: U64('Asking price per 1,000,000 compute units, smallest USDC unit'),
    max_num_compute_units: U64(),
    valid: Type.Boolean({ description: 'False once the task is removed on chain' }),
  },
  Strict,
);

export const StackSchema = Type.Object(
  {
    owner_address: Type.String(),
    stack_small_id: U64(),
    stack_id: Type.String({ description: 'Object id of the StackBadge' }),
    task_small_id: U64(),
    selected_node_id: U64(),
    num_compute_units: U64('Compute units bought'),
    price_per_one_million_compute_units: U64("The buyer's price per 1,000,000 compute units"),
    already_computed_units: U64('Units the node reports as served (off-chain)'),
    in_settle_period: Type.Boolean({ description: 'The stack was try-settled' }),
    num_total_messages: U64(),
    is_claimed: Type.Boolean(),
    is_locked_for_claim: Type.Boolean(),
    is_confidential: Type.Boolean({
      description: "Addition: the task's security level is confidential compute",
    }),
    user_refund_amount: Nullable(U64(), 'Addition: refund paid to the buyer at claim time'),
  },
  Strict,
);

export const StackSettlementTicketSchema = Type.Object(
  {
    stack_small_id: U64(),
    selected_node_id: U64(),
    num_claimed_compute_units: U64(),
    requested_attestation_nodes: Type.String({ description: 'A JSON array of node small ids, as a string' }),
    committed_stack_proofs: Bytes('The committed stack proof (32 bytes)'),
    stack_merkle_leaves: Bytes("32 bytes for the settling node's leaf, then 32 per requested attester"),
    dispute_settled_at_epoch: Nullable(
      U64(),
      'As upstream: the epoch that StackSettlementTicketEvent reports, the epoch of the last attestation ' +
        '(null when no attester was asked). It is not when the stack can be claimed: see claimable_from_epoch.',
    ),
    already_attested_nodes: Type.String({ description: 'A JSON array of node small ids, as a string' }),
    is_in_dispute: Type.Boolean(),
    user_refund_amount: U64(),
    is_claimed: Type.Boolean(),
    claim_path: Nullable(
      StringEnum(['settlement_ticket', 'confidential_compute']),
      'Addition: how the stack was claimed',
    ),
    claimable_from_epoch: Nullable(
      U64(),
      'Addition: the epoch from which the ticket can be claimed (its try-settle epoch + 1); null when the ' +
        'event source did not say the try-settle epoch',
    ),
    node_fee_amount: Nullable(
      U64(),
      "Addition: what the claim paid the node, by the contract's formula; null where the daemon never saw " +
        "the stack's price or task",
    ),
  },
  Strict,
);

export const StackAttestationDisputeSchema = Type.Object(
  {
    stack_small_id: U64(),
    attestation_commitment: Bytes('The commitment the attesting node submitted'),
    attestation_node_id: U64('The node that raised the dispute'),
    original_node_id: U64('The node whose settlement is disputed'),
    original_commitment: Bytes('The commitment of the settling node'),
  },
  Strict,
);

export type Task = Static<typeof TaskSchema>;
export type NodeSubscription = Static<typeof NodeSubscriptionSchema>;
export type Stack = Static<typeof StackSchema>;
export type StackSettlementTicket = Static<typeof StackSettlementTicketSchema>;
export type StackAttestationDispute = Static<typeof StackAttestationDisputeSchema>;
export type ClaimPath = NonNullable<StackSettlementTicket['claim_path']>;
