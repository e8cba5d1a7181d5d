import type { GasUsed } from '../chain.ts';

/**
 * The dev network's gas model: deterministic, so that a caller can be told the exact minimum budget before
 * anything runs. It follows Sui's shape without its detail:
 * - computation_cost = computation units of the call × the gas price. A call costs BASE_UNITS (2 000 for
 *   the calls that draw randomness or create a stack), and a batch (claim_funds, claim_funds_for_stacks)
 *   500 more per stack id;
 * - storage_cost = STORAGE_COST, a flat 2 × 988 000 MIST (the shared AtomaDb and one more object
 *   rewritten), and storage_rebate = STORAGE_REBATE, 99 % of one object's storage;
 * - the budget must cover computation_cost + storage_cost (the rebate is not counted, as on Sui);
 * - the gas price must be at least the reference price, 1 000 MIST.
 * A failed transaction costs the same as a successful one. SUI balances are not modelled: the signer's
 * gas coin never runs dry.
 */

export const REFERENCE_GAS_PRICE = 1000n;
const BASE_UNITS = 1_000n;
const RANDOM_UNITS = 2_000n;
const PER_ITEM_UNITS = 500n;
const STORAGE_COST = 1_976_000n;
const STORAGE_REBATE = 978_120n;

const USES_RANDOM = new Set(['try_settle_stack', 'acquire_new_stack_entry']);

/** The gas one call uses at the given price; `items` is the batch length for the claim calls. */
export function gasFor(kind: string, items: number, gasPrice: bigint): GasUsed & { total: bigint } {
  const units = (USES_RANDOM.has(kind) ? RANDOM_UNITS : BASE_UNITS) + PER_ITEM_UNITS * BigInt(items);
  const computation = units * gasPrice;
  return {
    computation_cost: computation,
    storage_cost: STORAGE_COST,
    storage_rebate: STORAGE_REBATE,
    total: computation + STORAGE_COST,
  };
}
