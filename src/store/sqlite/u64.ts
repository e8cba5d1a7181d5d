import { normalizeU64, type U64 } from '../../internal/u64.ts';
import { StoreError } from '../errors.ts';
import { paramBuilders } from '../params.ts';
import { rowMappers } from '../rows.ts';
import type { Page } from '../store.ts';

/**
 * The one place where SQLite's 64-bit signed integers meet the chain's u64. u64 columns are typed ANY in
 * STRICT tables: a value up to 2^53 - 1 is stored as INTEGER, a larger one as 20-digit zero-padded TEXT.
 * SQLite orders every INTEGER before every TEXT, and the fixed width orders the TEXT values numerically,
 * so sorting and equality stay exact.
 */

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A safe integer is bound as a bigint (so SQLite stores INTEGER); a larger value as 20-digit TEXT. */
export function enc(value: U64): bigint | string {
  const big = BigInt(value);
  return big <= MAX_SAFE ? big : big.toString().padStart(20, '0');
}

export function dec(value: unknown): U64 {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return normalizeU64(value);
  if (typeof value === 'string') return normalizeU64(BigInt(value));
  throw new StoreError('store_corrupt', `unexpected u64 column value ${String(value)}`, false);
}

/** Rows to the store's types. */
export const rows = rowMappers(dec);
/** The values each write binds. */
export const params = paramBuilders(enc);

/** A page's bind values: after an id (-1: from the first), at most `limit` rows (-1: all). */
export function pageArgs(page: Page): [bigint | string, number] {
  return [page.after === undefined ? -1n : enc(page.after), page.limit ?? -1];
}
