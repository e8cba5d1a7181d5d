import { type Static, type TSchema, Type } from 'typebox';
import { ERRORS } from '../problems/catalog.ts';

/**
 * Request and response schemas: one definition gives validation, the TypeScript types and the OpenAPI
 * document. Field names and types follow the upstream daemon (snake_case, integers as JSON numbers, byte
 * vectors as arrays of 0..255); fields marked "addition" are ours.
 */

export const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** A u64 on the wire: a JSON number with exact digits, even above 2^53. */
const U64 = (description?: string) =>
  Type.Integer({
    minimum: 0,
    ...(description ? { description: `${description} (u64)` } : { description: 'u64' }),
  });

/**
 * `T | null`. Written with the OpenAPI 3.0 `nullable` keyword because the serializer then still writes a
 * bigint u64 as exact digits; the published OpenAPI 3.1 document rewrites it as a type array.
 */
function Nullable<T extends TSchema>(schema: T, description?: string) {
  return Type.Unsafe<Static<T> | null>({
    ...schema,
    nullable: true,
    ...(description ? { description } : {}),
  });
}

/** Rewrites `nullable: true` (see Nullable) into OpenAPI 3.1's `type: [T, "null"]`, in place. */
export function toOpenApi31(node: unknown): void {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const item of node) toOpenApi31(item);
    return;
  }
  const record = node as Record<string, unknown>;
  if (record.u64 === true) {
    delete record.u64;
    Object.assign(record, { type: 'integer', minimum: 0, format: 'uint64' });
  }
  if (record.nullable === true && typeof record.type === 'string') {
    record.type = [record.type, 'null'];
    delete record.nullable;
  }
  for (const value of Object.values(record)) toOpenApi31(value);
}

const Bytes = (description: string) =>
  Type.Array(Type.Integer({ minimum: 0, maximum: 255 }), { description });

export const NodeIdParamsSchema = Type.Object(
  {
    node_id: Type.Integer({
      minimum: 0,
      maximum: MAX_SAFE,
      description: "The node's small id, a non-negative integer up to 2^53 - 1.",
    }),
  },
  { additionalProperties: false },
);

export const StacksQuerySchema = Type.Object(
  {
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
  { additionalProperties: false },
);

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
  { additionalProperties: false },
);

export const NodeSubscriptionSchema = Type.Object(
  {
    node_small_id: U64(),
    task_small_id: U64(),
    price_per_one_million_compute_units: U64('Asking price per 1,000,000 compute units, smallest USDC unit'),
    max_num_compute_units: U64(),
    valid: Type.Boolean({ description: 'False once the task is removed on chain' }),
  },
  { additionalProperties: false },
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
  { additionalProperties: false },
);

export const StackSettlementTicketSchema = Type.Object(
  {
    stack_small_id: U64(),
    selected_node_id: U64(),
    num_claimed_compute_units: U64(),
    requested_attestation_nodes: Type.String({ description: 'A JSON array of node small ids, as a string' }),
    committed_stack_proofs: Bytes('The committed stack proof (32 bytes)'),
    stack_merkle_leaves: Bytes("32 bytes for the settling node's leaf, then 32 per requested attester"),
    dispute_settled_at_epoch: Nullable(U64()),
    already_attested_nodes: Type.String({ description: 'A JSON array of node small ids, as a string' }),
    is_in_dispute: Type.Boolean(),
    user_refund_amount: U64(),
    is_claimed: Type.Boolean(),
    claim_path: Nullable(
      Type.String({ enum: ['settlement_ticket', 'confidential_compute'] }),
      'Addition: how the stack was claimed',
    ),
  },
  { additionalProperties: false },
);

export const StackAttestationDisputeSchema = Type.Object(
  {
    stack_small_id: U64(),
    attestation_commitment: Bytes('The commitment the attesting node submitted'),
    attestation_node_id: U64('The node that raised the dispute'),
    original_node_id: U64('The node whose settlement is disputed'),
    original_commitment: Bytes('The commitment of the settling node'),
  },
  { additionalProperties: false },
);

export const HealthSchema = Type.Object({ status: Type.Literal('ok') });

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'urn:node-daemon:problem:<code>' }),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String({ enum: Object.keys(ERRORS), description: 'Stable machine-readable error code' }),
    detail: Type.String({ description: 'What went wrong and what to change' }),
    instance: Type.String({ description: 'The request path' }),
    parameter: Type.Optional(Type.String({ description: 'The offending parameter or field' })),
    request_id: Type.String(),
  },
  { description: 'RFC 9457 problem details (application/problem+json)' },
);

// --- write requests (upstream request bodies) -------------------------------------------------------------

/** A u64 in a request body: exact up to 2^64 - 1 (see json-body.ts); OpenAPI shows integer/uint64. */
const U64In = (description: string) =>
  Type.Unsafe<UInt64>({ u64: true, description: `${description} (u64)` });
type UInt64 = number | bigint;

const ObjectId = (description: string) => Type.String({ pattern: '^0x[0-9a-fA-F]{1,64}$', description });
const Gas = {
  gas: Type.Optional(ObjectId('Gas coin to pay with; default: chosen by the daemon')),
  gas_budget: Type.Optional(U64In('Gas budget in MIST; default: estimated')),
  gas_price: Type.Optional(U64In('Gas price in MIST; default: the reference gas price')),
};
const Badge = {
  node_badge_id: Type.Optional(ObjectId("NodeBadge object id; default: the signer's first badge")),
};
const SmallId = (description: string) => Type.Integer({ minimum: 0, maximum: MAX_SAFE, description });
const StackIds = Type.Array(SmallId('Stack small id'), { minItems: 1, maxItems: 1000, uniqueItems: true });

export const RegisterRequestSchema = Type.Object({ ...Gas }, { additionalProperties: false });
export const ModelSubscribeRequestSchema = Type.Object(
  {
    model_name: Type.String({ minLength: 1, maxLength: 256 }),
    echelon_id: U64In('Echelon id'),
    ...Badge,
    ...Gas,
  },
  { additionalProperties: false },
);
export const TaskSubscribeRequestSchema = Type.Object(
  {
    task_small_id: SmallId('Task small id'),
    price_per_one_million_compute_units: U64In('Asking price per 1,000,000 compute units, greater than 0'),
    ...Badge,
    ...Gas,
  },
  { additionalProperties: false },
);
export const TaskUnsubscribeRequestSchema = Type.Object(
  { task_small_id: SmallId('Task small id'), ...Badge, ...Gas },
  { additionalProperties: false },
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
  { additionalProperties: false },
);
export const SubmitAttestationsRequestSchema = Type.Object(
  {
    stack_small_ids: StackIds,
    node_small_id: Type.Optional(
      SmallId("The attesting node; default: any of the signer's nodes that was asked"),
    ),
    ...Gas,
  },
  { additionalProperties: false },
);
export const ClaimFundsRequestSchema = Type.Object(
  { stack_small_ids: StackIds, ...Badge, ...Gas },
  { additionalProperties: false },
);
export const UsageParamsSchema = Type.Object(
  { stack_small_id: SmallId('Stack small id') },
  { additionalProperties: false },
);
export const UsageRequestSchema = Type.Object(
  {
    compute_units: U64In('Compute units the request used'),
    request_hash: Type.Optional(
      Type.String({
        pattern: '^(0x)?[0-9a-fA-F]{64}$',
        description:
          '32-byte hash of the request and its response (hex); default: derived from the stack and units',
      }),
    ),
  },
  { additionalProperties: false },
);

// --- write responses ------------------------------------------------------------------------------------

const GasUsedSchema = Type.Object({ computation_cost: U64(), storage_cost: U64(), storage_rebate: U64() });
const Indexed = Type.Boolean({ description: "Whether the daemon's reads already reflect the transaction" });
const AbortSchema = Type.Object({ name: Type.String(), code: Type.Integer(), module: Type.String() });

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
const StackResultSchema = Type.Object({
  stack_small_id: U64(),
  status: Type.String({ enum: ['success', 'failed', 'skipped'] }),
  tx_digest: Type.Optional(Type.String()),
  num_claimed_compute_units: Type.Optional(U64()),
  error: Type.Optional(
    Type.Object({ code: Type.String(), detail: Type.String(), abort: Type.Optional(AbortSchema) }),
  ),
});
export const MultiTxResultSchema = Type.Object({
  tx_digests: Type.Array(Type.String()),
  results: Type.Array(StackResultSchema),
  indexed: Indexed,
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
      path: Type.String({ enum: ['settlement_ticket', 'confidential_compute'] }),
      num_claimed_compute_units: Type.Optional(U64()),
    }),
  ),
  not_claimable: Type.Array(
    Type.Object({
      stack_small_id: U64(),
      reason: Type.String({ enum: ['not_settled', 'dispute_period', 'in_dispute', 'already_claimed'] }),
      detail: Type.String(),
      claimable_from_epoch: Type.Optional(U64()),
    }),
  ),
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
export const BadgesSchema = Type.Object({
  signer_address: Type.String(),
  badges: Type.Array(Type.Object({ badge_id: Type.String(), node_small_id: U64() })),
});
