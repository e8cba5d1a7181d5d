import { randomBytes } from 'node:crypto';
import { blake2b } from '@noble/hashes/blake2.js';
import { DEFAULT_PARAMETERS } from '../../protocol/constants.ts';
import type { GasUsed } from '../chain.ts';
import type { Ledger } from './ledger.ts';
import {
  type AtomaDbObject,
  type CoinObject,
  hex,
  key,
  type ModelEntry,
  type SystemObject,
  type WorldObject,
} from './state.ts';

/** The dev network's first transaction: the package published, its objects, the genesis balances. */

/**
 * The user's USDC at genesis: 10^7 USDC at 6 decimals. Plenty, yet below the largest possible stack fee
 * (u64::MAX / 10^6, about 1.8e13), so EInsufficientBalance stays reachable.
 */
export const GENESIS_USER_USDC = 10_000_000_000_000n;

/**
 * The signer's SUI for gas until it has spent any: 100 SUI, in MIST (about 25,000 transactions at the dev
 * network's prices). The dev actors' transactions cost nobody anything.
 */
export const GENESIS_SIGNER_SUI = 100_000_000_000n;

/** The models in the genesis AtomaDb (add_node_to_model needs an existing model) and their echelons. */
export const GENESIS_MODELS: readonly { name: string; echelons: readonly number[] }[] = [
  { name: 'meta-llama/Llama-3.3-70B-Instruct', echelons: [1, 2] },
  { name: 'Qwen/QwQ-32B', echelons: [1] },
];

/** The echelons' settlement timeout at genesis (legacy prompt flow; contracts.md §6). */
const SETTLEMENT_TIMEOUT_MS = 60_000n;

const ZERO_GAS: GasUsed = { computation_cost: 0, storage_cost: 0, storage_rebate: 0 };

/** An address (or object id) derived from the world's seed: the same on every open. */
export function deriveAddress(seed: string, label: string): string {
  return `0x${hex(blake2b(new TextEncoder().encode(`${seed}:${label}`), { dkLen: 32 }))}`;
}

/** Publishes the package: the AtomaDb, the admin's AtomaManagerBadge, the models, the user's USDC. */
export function genesis(ledger: Ledger, random: (bound: number) => number): WorldObject {
  const seed = randomBytes(32).toString('hex');
  const world: WorldObject = {
    seed,
    package_id: deriveAddress(seed, 'package'),
    db_id: '',
    manager_badge_id: '',
    admin_address: deriveAddress(seed, 'admin'),
    user_address: deriveAddress(seed, 'user'),
  };
  const { submission } = ledger.execute({
    sender: world.admin_address,
    kind: 'publish',
    input: {},
    seed,
    packageId: world.package_id,
    gas: ZERO_GAS,
    random,
    body: (tx) => {
      world.db_id = tx.newId();
      world.manager_badge_id = tx.newId();
      const models: ModelEntry[] = GENESIS_MODELS.map((m) => ({
        id: tx.newId(),
        name: m.name,
        modality: 0n,
        is_disabled: false,
        echelons: m.echelons.map((e) => ({
          id: BigInt(e),
          settlement_timeout_ms: SETTLEMENT_TIMEOUT_MS,
          input_fee_per_token: 1n,
          output_fee_per_token: 1n,
          relative_performance: 1n,
          nodes: [],
        })),
      }));
      const db: AtomaDbObject = {
        id: world.db_id,
        next_node_small_id: 1n,
        next_task_small_id: 1n,
        next_stack_small_id: 1n,
        fee_treasury: 0n,
        communal_treasury: 0n,
        ...DEFAULT_PARAMETERS,
        is_registration_disabled: false,
        models,
      };
      tx.put(key.world, world);
      tx.put(key.system, { epoch: 0n } satisfies SystemObject);
      tx.put(key.db, db);
      tx.put(key.coin(world.user_address), { balance: GENESIS_USER_USDC } satisfies CoinObject);
      tx.emit('PublishedEvent', { db: world.db_id, manager_badge: world.manager_badge_id });
    },
  });
  if (submission.status !== 'success') throw new Error('dev network genesis failed');
  return world;
}
