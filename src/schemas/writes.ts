import { type Static, Type } from 'typebox';
import { Hash32, Nullable, ObjectId, SmallId, Strict, StringEnum, U64, U64In } from './common.ts';

/**
 * The write API: upstream's request bodies (plus the additions marked so) and our responses. The
 * operations take and return these types.
 */

// --- write requests (upstream request bodies) -------------------------------------------------------------

const Gas = {
  gas: Type.Optional(ObjectId('Gas coin to pay with; default: chosen by the daemon')),
  gas_budget: Type.Optional(U64In('Gas budget in MIST; default: estimated')),
  gas_price: Type.Optional(U64In('Gas price in MIST; default: the reference gas price')),
};
const Badge = {
  node_badge_id: Type.Optional(ObjectId("NodeBadge object id; default: the signer's first badge")),
};
const StackIds = Type.Array(SmallId('Stack small id'), { minItems: 1, maxItems: 1000, uniqueItems: true });

export const RegisterRequestSchema = Type.Object({ ...Gas }, Strict);
export const ModelSubscribeRequestSchema = Type.Object(
  {
    model_name: Type.String({ minLength: 1, maxLength: 256 }),
    echelon_id: U64In('Echelon id'),
    ...Badge,
    ...Gas,
  },
  Strict,
);
export const TaskSubscribeRequestSchema = Type.Object(
  {
    task_small_id: SmallId('Task small id'),
    price_per_one_million_compute_units: U64In('Asking price per 1,000,000 compute units, greater than 0'),
    ...Badge,
    ...Gas,
  },
  Strict,
);
export const TaskUnsubscribeRequestSchema = Type.Object(
  { task_small_id: SmallId('Task small id'), ...Badge, ...Gas },
  Strict,
);
export const TrySettleRequestSchema = Type.Object(
  {
    stack_small_ids: StackIds,
    num_claimed_compute_units: Type.Optional(
      U64In("Claimed units for every listed stack; default: each stack's recorded usage"),
    ),
    num_claimed_compute_units_by_stack: Type.Optional(
      Type.Record(Type.String({ pattern: '^[0-9]+$' }), U64In('Claimed units'), {
        description: 'Addition: claimed units per stack small id, overriding the default for those stacks',
      }),
    ),
    ...Badge,
    ...Gas,
  },
  Strict,
);
export const SubmitAttestationsRequestSchema = Type.Object(
  {
    stack_small_ids: StackIds,
    node_small_id: Type.Optional(
      SmallId("The attesting node; default: any of the signer's nodes that was asked"),
    ),
    ...Gas,
  },
  Strict,
);
export const ClaimFundsRequestSchema = Type.Object({ stack_small_ids: StackIds, ...Badge, ...Gas }, Strict);
export const UsageParamsSchema = Type.Object({ stack_small_id: SmallId('Stack small id') }, Strict);
export const UsageRequestSchema = Type.Object(
  {
    compute_units: U64In('Compute units the request used'),
    request_hash: Type.Optional(
      Hash32('32-byte hash of the request and its response (hex); default: derived from the stack and units'),
    ),
  },
  Strict,
);

// --- write responses ------------------------------------------------------------------------------------

export const GasUsedSchema = Type.Object({
  computation_cost: U64(),
  storage_cost: U64(),
  storage_rebate: U64(),
});
const Indexed = Type.Boolean({ description: "Whether the daemon's reads already reflect the transaction" });
export const AbortSchema = Type.Object({
  name: Type.String({ description: "The contract's error name, e.g. ETaskNotFound, or a framework name" }),
  code: Type.Integer({ description: 'The numeric abort code' }),
  module: Type.String({ description: 'The module that aborted, e.g. db or dynamic_field' }),
});

export const TxResultSchema = Type.Object({
  tx_digest: Type.String({ description: 'Base58 transaction digest' }),
  status: Type.Literal('success'),
  gas_used: GasUsedSchema,
  indexed: Indexed,
});
export const RegisterResultSchema = Type.Object({
  ...TxResultSchema.properties,
  node_small_id: Nullable(U64(), 'The new node small id'),
  badge_id: Nullable(Type.String(), 'The new NodeBadge object id'),
});
const ClaimPathSchema = StringEnum(['settlement_ticket', 'confidential_compute'], {
  description: 'claim_funds (a settled stack) or claim_funds_for_stacks (confidential compute)',
});
const NodeFee = () =>
  Nullable(U64(), "The node's fee, by the contract's formula; null where the stack's price was never seen");

/** One listed stack's outcome: done, failed on chain, or skipped before signing (with the reason). */
export const StackResultSchema = Type.Object({
  stack_small_id: U64(),
  status: StringEnum(['success', 'failed', 'skipped']),
  tx_digest: Type.Optional(Type.String()),
  num_claimed_compute_units: Type.Optional(U64()),
  path: Type.Optional(ClaimPathSchema),
  node_fee_amount: Type.Optional(NodeFee()),
  user_refund_amount: Type.Optional(
    U64("The buyer's refund for the units not claimed, as the chain paid it"),
  ),
  error: Type.Optional(
    Type.Object({
      code: Type.String({ description: 'Why: a catalog code, or a reason like dispute_period' }),
      detail: Type.String(),
      abort: Type.Optional(AbortSchema),
    }),
  ),
});
export const MultiTxResultSchema = Type.Object({
  tx_digests: Type.Array(Type.String()),
  results: Type.Array(StackResultSchema, { description: 'One per listed stack, in the order listed' }),
  indexed: Indexed,
});
export const SettleEstimateSchema = Type.Object({
  results: Type.Array(
    Type.Object({
      stack_small_id: U64(),
      status: StringEnum(['ready', 'would_abort', 'skipped'], {
        description:
          'ready: it would settle; would_abort: the chain would refuse it now; skipped: not sent (error says why)',
      }),
      num_claimed_compute_units: Type.Optional(U64('The units it would claim')),
      node_fee_amount: Type.Optional(NodeFee()),
      user_refund_amount: Type.Optional(
        Nullable(
          U64(),
          "The buyer's refund at the claim, for the units not claimed; null where the price was never seen",
        ),
      ),
      gas_estimate: Type.Optional(
        Nullable(
          U64(),
          'The gas of its transaction as the chain simulates it, MIST; null when it cannot simulate now',
        ),
      ),
      error: StackResultSchema.properties.error,
    }),
    { description: 'One per listed stack, in the order listed' },
  ),
  total: Type.Object({
    node_fee_amount: U64('The node fees of the stacks it would settle (those of unknown price left out)'),
    gas_estimate: U64('Their gas, MIST (those the chain could not simulate left out)'),
  }),
});
export const NotClaimableSchema = Type.Object({
  stack_small_id: U64(),
  reason: StringEnum(['not_settled', 'dispute_period', 'in_dispute', 'already_claimed', 'no_usage']),
  detail: Type.String(),
  claimable_from_epoch: Type.Optional(U64()),
});
export const ClaimResultSchema = Type.Object({
  tx_digest: Type.String({ description: 'The first transaction (upstream field)' }),
  tx_digests: Type.Array(Type.String(), {
    description: 'claim_funds and, for confidential-compute stacks, claim_funds_for_stacks',
  }),
  status: Type.Literal('success'),
  claimed: Type.Array(
    Type.Object({
      stack_small_id: U64(),
      path: ClaimPathSchema,
      num_claimed_compute_units: U64(),
      node_fee_amount: NodeFee(),
      user_refund_amount: U64(),
    }),
  ),
  not_claimable: Type.Array(NotClaimableSchema),
  results: Type.Array(StackResultSchema, { description: 'One per listed stack, in the order listed' }),
  total: Type.Object({
    node_fee_amount: U64('The node fees of the stacks claimed (those of unknown price left out)'),
    user_refund_amount: U64('The refunds paid to the buyers'),
    unpriced_stacks: Type.Integer({ description: 'Claimed stacks whose fee is not known' }),
  }),
  indexed: Indexed,
});
export const UsageResultSchema = Type.Object({
  stack_small_id: U64(),
  already_computed_units: U64(),
  num_compute_units: U64(),
  num_total_messages: U64(),
  fill_fraction: Type.Number({
    description: 'already_computed_units / num_compute_units (1 for zero capacity)',
  }),
});

export type GasOptions = Static<typeof RegisterRequestSchema>;
export type ModelSubscribeRequest = Static<typeof ModelSubscribeRequestSchema>;
export type TaskSubscribeRequest = Static<typeof TaskSubscribeRequestSchema>;
export type TaskUnsubscribeRequest = Static<typeof TaskUnsubscribeRequestSchema>;
export type TrySettleRequest = Static<typeof TrySettleRequestSchema>;
export type SubmitAttestationsRequest = Static<typeof SubmitAttestationsRequestSchema>;
export type ClaimFundsRequest = Static<typeof ClaimFundsRequestSchema>;
export type UsageRequest = Static<typeof UsageRequestSchema>;
export type GasUsed = Static<typeof GasUsedSchema>;
export type Abort = Static<typeof AbortSchema>;
export type TxResult = Static<typeof TxResultSchema>;
export type RegisterResult = Static<typeof RegisterResultSchema>;
export type StackResult = Static<typeof StackResultSchema>;
export type MultiTxResult = Static<typeof MultiTxResultSchema>;
export type SettleEstimate = Static<typeof SettleEstimateSchema>;
export type ClaimResult = Static<typeof ClaimResultSchema>;
export type NotClaimable = Static<typeof NotClaimableSchema>;
export type UsageResult = Static<typeof UsageResultSchema>;
