/**
 * Unsigned 64-bit integers as they travel through the daemon: a `number` while it is a safe integer,
 * a `bigint` above 2^53 - 1. Every u64 from the chain round-trips exactly.
 */
export type U64 = number | bigint;

export const U64_MAX = 18446744073709551615n;
const DECIMAL = /^[0-9]{1,20}$/;

/** Parses a decimal u64 (no sign, no exponent, no spaces); undefined when it is not one. */
export function parseU64(text: string): U64 | undefined {
  if (!DECIMAL.test(text)) return undefined;
  if (text.length < 16) return Number(text);
  const big = BigInt(text);
  if (big > U64_MAX) return undefined;
  return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
}

/** Accepts a safe non-negative integer, a bigint in range, or a decimal string. */
export function toU64(value: unknown): U64 | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  if (typeof value === 'bigint') {
    if (value < 0n || value > U64_MAX) return undefined;
    return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  }
  if (typeof value === 'string') return parseU64(value);
  return undefined;
}

/** Normalises to the smallest representation: number when safe. */
export function normalizeU64(value: bigint): U64 {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

export function u64ToString(value: U64): string {
  return typeof value === 'bigint' ? value.toString() : String(value);
}

export function compareU64(a: U64, b: U64): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
