import { normalizeU64, type U64 } from '../../internal/u64.ts';
import { StoreError } from '../errors.ts';
import { paramBuilders } from '../params.ts';
import { rowMappers } from '../rows.ts';
import type { Page } from '../store.ts';

/** u64 on PostgreSQL: NUMERIC(20,0) in the database, bound and read as decimal text. */

/** A u64 as the decimal string bound to a NUMERIC parameter; a non-integer throws as it does for SQLite. */
export function enc(value: U64): string {
  if (typeof value === 'bigint') return value.toString();
  return Number.isSafeInteger(value) ? String(value) : BigInt(value).toString();
}

/** pg hands NUMERIC (and BIGINT) columns over as strings, untouched by any process-wide type parser. */
export function dec(value: unknown): U64 {
  if (typeof value === 'string' && /^[0-9]{1,20}$/.test(value)) {
    return value.length < 16 ? Number(value) : normalizeU64(BigInt(value));
  }
  if (typeof value === 'number') return value;
  throw new StoreError('store_corrupt', `unexpected u64 column value ${String(value)}`, false);
}

/** Rows to the store's types. */
export const rows = rowMappers(dec);
/** The values each write binds. */
export const params = paramBuilders(enc);

/** A page's bind values: after an id (-1: from the first), at most `limit` rows (null: all). */
export function pageArgs(page: Page): [string, number | null] {
  return [page.after === undefined ? '-1' : enc(page.after), page.limit ?? null];
}
