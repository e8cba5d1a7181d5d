import { type Static, Type } from 'typebox';
import { SmallId, Strict, U64, U64In } from './common.ts';

/** The embedded dev network's other actors (the /dev routes): an admin, peer nodes, users, epochs. */

export const TaskParamsSchema = Type.Object({ task_small_id: SmallId('Task small id') }, Strict);
export const StackParamsSchema = Type.Object({ stack_small_id: SmallId('Stack small id') }, Strict);

export const CreateTaskRequestSchema = Type.Object(
  {
    role: Type.Integer({ minimum: 0, maximum: 65535, description: '0..7 are valid roles' }),
    model_name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    security_level: Type.Integer({ minimum: 0, maximum: 65535, description: '0, 1 or 2 are valid' }),
    minimum_reputation_score: Type.Optional(
      Type.Union([Type.Integer({ minimum: 0, maximum: 255 }), Type.Null()]),
    ),
    is_public: Type.Optional(Type.Boolean()),
  },
  Strict,
);

export const CreatePeerRequestSchema = Type.Object(
  {
    subscriptions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            task_small_id: SmallId('Task small id'),
            price_per_one_million_compute_units: U64In('Asking price'),
          },
          Strict,
        ),
      ),
    ),
  },
  Strict,
);

export const BuyStackRequestSchema = Type.Object(
  {
    task_small_id: SmallId('Task small id'),
    num_compute_units: U64In('Compute units'),
    price_per_one_million_compute_units: U64In("The buyer's price cap"),
    selected_node_id: Type.Optional(SmallId('Force this node (it must be eligible)')),
  },
  Strict,
);

export const PeerTrySettleRequestSchema = Type.Object(
  { num_claimed_compute_units: Type.Optional(U64In('Claimed units; default: all')) },
  Strict,
);

export const PeerAttestRequestSchema = Type.Object(
  { node_small_id: SmallId('The attesting peer node') },
  Strict,
);

export const PeerDisputeRequestSchema = Type.Object(
  { stack_small_id: SmallId('Stack small id'), node_small_id: SmallId('The disputing node') },
  Strict,
);

export const PeerClaimRequestSchema = Type.Object(
  {
    node_small_id: SmallId('The peer node that claims'),
    stack_small_ids: Type.Array(SmallId('Stack small id'), {
      minItems: 1,
      maxItems: 1000,
      uniqueItems: true,
    }),
  },
  Strict,
);

const TxDigest = Type.String({ description: 'Base58 transaction digest' });
const Indexed = Type.Boolean({ description: "Whether the daemon's reads already reflect it" });

export const DevTxResultSchema = Type.Object({ tx_digest: TxDigest, indexed: Indexed });
export const CreateTaskResultSchema = Type.Object({
  task_small_id: U64('The new task small id'),
  tx_digest: TxDigest,
  indexed: Indexed,
});
export const CreatePeerResultSchema = Type.Object({
  node_small_id: U64('The new peer node small id'),
  tx_digests: Type.Array(TxDigest, { description: 'register_node_entry, then one per subscription' }),
  indexed: Indexed,
});
export const BuyStackResultSchema = Type.Object({
  stack_small_id: U64('The new stack small id'),
  selected_node_id: U64('The node the stack was assigned to'),
  tx_digest: TxDigest,
  indexed: Indexed,
});
export const PeerTrySettleResultSchema = Type.Object({
  tx_digest: TxDigest,
  requested_attestation_nodes: Type.Array(U64(), { description: 'The attesters the chain sampled' }),
  indexed: Indexed,
});
export const EpochResultSchema = Type.Object({ epoch: U64('The dev network epoch, now'), indexed: Indexed });
export const SetGasRequestSchema = Type.Object(
  { balance_mist: U64In("The signer's SUI for gas from now on, in MIST (1000000000 is 1 SUI)") },
  Strict,
);
export const SetGasResultSchema = Type.Object({
  address: Type.String({ description: 'The signer' }),
  balance_mist: U64("The signer's SUI for gas, in MIST"),
});

export type CreateTaskRequest = Static<typeof CreateTaskRequestSchema>;
export type CreatePeerRequest = Static<typeof CreatePeerRequestSchema>;
export type BuyStackRequest = Static<typeof BuyStackRequestSchema>;
export type PeerTrySettleRequest = Static<typeof PeerTrySettleRequestSchema>;
export type SetGasRequest = Static<typeof SetGasRequestSchema>;
