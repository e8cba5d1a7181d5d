import type { ProtocolParameters } from '../../protocol/constants.ts';
/**
 * The dev network's state objects. Each is one JSON row of the `objects` table, keyed as below; u64 values
 * are bigints in memory and `{ "$u64": "…" }` in JSON. The shapes follow contracts.md §1, keeping only the
 * fields the db module's stack flow reads or writes.
 */

/** A model echelon (contracts.md §1.6). Only add_node_to_model touches echelons in the dev network. */
export interface ModelEchelon {
  id: bigint;
  settlement_timeout_ms: bigint;
  input_fee_per_token: bigint;
  output_fee_per_token: bigint;
  relative_performance: bigint;
  nodes: bigint[];
}

export interface ModelEntry {
  id: string;
  name: string;
  modality: bigint;
  is_disabled: boolean;
  echelons: ModelEchelon[];
}

/** The AtomaDb singleton without its tables (contracts.md §1.3); the tables are rows of their own. */
export interface AtomaDbObject extends ProtocolParameters {
  id: string;
  next_node_small_id: bigint;
  next_task_small_id: bigint;
  next_stack_small_id: bigint;
  fee_treasury: bigint;
  communal_treasury: bigint;
  is_registration_disabled: boolean;
  /** AtomaDb.models; an array, not a map, so that a model name can never collide with an object key. */
  models: ModelEntry[];
}

/** The chain's clock: Sui keeps the epoch in its system state, outside AtomaDb. */
export interface SystemObject {
  epoch: bigint;
}

/** A node: its NodeEntry in AtomaDb.nodes (§1.4) and its owned NodeBadge with dynamic fields (§1.9). */
export interface NodeObject {
  small_id: bigint;
  entry: {
    was_disabled_in_epoch: bigint | null;
    collateral: bigint;
    last_fee_epoch: bigint;
    last_fee_epoch_amount: bigint;
    available_fee_amount: bigint;
    reputation_score: number;
  };
  badge: {
    id: string;
    owner: string;
    /** The TaskSmallId -> true dynamic fields. */
    task_subscriptions: bigint[];
    /** The model name -> EchelonId dynamic fields. */
    model_subscriptions: { model_name: string; echelon_id: bigint }[];
  };
}

export interface NodePriceData {
  node_id: bigint;
  price_per_one_million_compute_units: bigint;
  max_num_compute_units: bigint;
}

/** A Task (§1.5) and the TaskBadge that authorises its deprecation and removal. */
export interface TaskObject {
  id: string;
  badge_id: string;
  badge_owner: string;
  small_id: bigint;
  role: number;
  model_name: string | null;
  is_deprecated: boolean;
  deprecated_at_epoch: bigint | null;
  security_level: number;
  /** Table<NodeSmallId, NodePriceData>, keyed by the node id in decimal. */
  subscribed_nodes: Record<string, NodePriceData>;
  /** The iteration list, cleaned lazily (§2.5, §3.3): it may hold ids no longer in subscribed_nodes. */
  subscribed_nodes_small_ids: bigint[];
  minimum_reputation_score: number;
  is_public: boolean;
  whitelisted_nodes: bigint[];
}

/** A Stack (§1.7) and the id of the StackBadge sent to its buyer. */
export interface StackObject {
  small_id: bigint;
  badge_id: string;
  owner: string;
  price_per_one_million_compute_units: bigint;
  num_compute_units: bigint;
  selected_node_id: bigint;
  task_small_id: bigint;
  is_claimed: boolean;
}

/** A StackSettlementTicket (§1.8); byte vectors as lower-case hex. */
export interface TicketObject {
  id: string;
  stack_small_id: bigint;
  selected_node_id: bigint;
  num_claimed_compute_units: bigint;
  requested_attestation_nodes: bigint[];
  dispute_settled_at_epoch: bigint;
  committed_stack_proof: string;
  stack_merkle_leaves_vector: string;
  already_attested_nodes: bigint[];
  is_in_dispute: boolean;
}

/** An address's USDC, all its coins merged into one balance. */
export interface CoinObject {
  balance: bigint;
}

/** The dev network's own bookkeeping: who is who, and the seed every digest and id derives from. */
export interface WorldObject {
  seed: string;
  package_id: string;
  db_id: string;
  manager_badge_id: string;
  admin_address: string;
  user_address: string;
}

export const key = {
  world: 'world',
  system: 'system',
  db: 'db',
  node: (id: bigint) => `node/${id}`,
  task: (id: bigint) => `task/${id}`,
  stack: (id: bigint) => `stack/${id}`,
  ticket: (stackId: bigint) => `ticket/${stackId}`,
  coin: (address: string) => `coin/${address}`,
  /** An address's SUI for gas (a CoinObject, in MIST): the signer's, which pays its transactions. */
  gas: (address: string) => `gas/${address}`,
};

// --- JSON with bigints -----------------------------------------------------------------------------------

/** JSON of a state object (or a transaction's input): bigint as { $u64 }, bytes as { $bytes: hex }. */
export function encodeState(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return { $u64: v.toString() };
    if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString('hex') };
    return v;
  });
}

/**
 * Undoes encodeState's { $u64 } (bytes stay { $bytes: hex }: unhex reads them). A plain JSON.parse and one
 * walk over the result: a reviver, called for every value, made this half of what a dev transaction cost
 * (each buy reads every subscriber of its task).
 */
export function decodeState<T>(text: string): T {
  return untag(JSON.parse(text)) as T;
}

/** The value with each object that holds only a string $u64 made that bigint; in place. */
function untag(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = untag(value[i]);
      if (item !== value[i]) value[i] = item;
    }
    return value;
  }
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  if (keys.length === 1 && keys[0] === '$u64' && typeof object.$u64 === 'string') return BigInt(object.$u64);
  for (const key of keys) {
    const field = untag(object[key]);
    if (field !== object[key]) object[key] = field;
  }
  return object;
}

export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
export const unhex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'hex'));
