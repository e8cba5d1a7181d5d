/**
 * Unsigned 64-bit integers, the chain's amounts and ids, as the daemon holds them in memory: a `number`
 * while the value is a safe integer, a `bigint` above 2^53 - 1. That is the one representation, from the
 * request or the event that brings a value in to the response or the row that takes it out: the read
 * path serializes it without conversion (most values are small), and every u64 round-trips exactly.
 *
 * A U64 is always normalized (a number when it fits, a bigint only when it does not), so two equal values
 * have the same type: `===` compares them, and they work as Map keys. `<` and `>` compare a number with a
 * bigint correctly. Arithmetic converts with BigInt() and normalizes the result with normalizeU64().
 * Values are converted only at the edges: JSON (json.ts), the stores' columns, and the chain's BCS.
 */
export type U64 = number | bigint;

export const U64_MAX = 18446744073709551615n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const DECIMAL = /^[0-9]{1,20}$/;

/** Parses a decimal u64 (no sign, no exponent, no spaces); undefined when it is not one. */
export function parseU64(text: string): U64 | undefined {
  if (!DECIMAL.test(text)) return undefined;
  if (text.length < 16) return Number(text);
  const big = BigInt(text);
  if (big > U64_MAX) return undefined;
  return big <= MAX_SAFE ? Number(big) : big;
}

/** Accepts a safe non-negative integer, a bigint in range, or a decimal string: data from outside. */
export function toU64(value: unknown): U64 | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  if (typeof value === 'bigint') {
    if (value < 0n || value > U64_MAX) return undefined;
    return value <= MAX_SAFE ? Number(value) : value;
  }
  if (typeof value === 'string') return parseU64(value);
  return undefined;
}

/** Normalises a bigint in range to the smallest representation: number when safe. */
export function normalizeU64(value: bigint): U64 {
  return value <= MAX_SAFE ? Number(value) : value;
}

export function u64ToString(value: U64): string {
  return String(value);
}

/** -1, 0 or 1, like a sort comparator; no conversion (number and bigint compare by value). */
export function compareU64(a: U64, b: U64): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
