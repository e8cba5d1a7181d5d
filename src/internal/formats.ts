import { U64_MAX } from './u64.ts';

/**
 * The value formats the daemon accepts from anyone (settings, request bodies and parameters, the command
 * line, chain data), each defined once. The patterns are exported as source text too, for the JSON
 * schemas of the HTTP API, so that the schema, the server and the client agree to the character.
 */

/** An object id or address: 0x and 1 to 64 hex digits (Sui pads it to 64). */
export const OBJECT_ID_PATTERN = '^0x[0-9a-fA-F]{1,64}$';
const OBJECT_ID = new RegExp(OBJECT_ID_PATTERN);

export function isObjectId(text: unknown): text is string {
  return typeof text === 'string' && OBJECT_ID.test(text);
}

/** An object id as Sui prints it: 0x and 64 lower-case hex digits. The input must pass isObjectId. */
export function normalizeObjectId(text: string): string {
  return `0x${text.slice(2).toLowerCase().padStart(64, '0')}`;
}

/** A u64 in decimal: digits only (no sign, exponent, spaces or separators), at most 2^64 - 1. */
export const U64_DECIMAL_PATTERN = '^[0-9]{1,20}$';
const U64_DECIMAL = new RegExp(U64_DECIMAL_PATTERN);

export function isU64Decimal(text: string): boolean {
  return U64_DECIMAL.test(text) && BigInt(text) <= U64_MAX;
}

/**
 * A small id (node, task, stack) as the API takes it: an integer from 0 to 2^53 - 1. The contract's ids
 * are u64 counters that start at 1; 2^53 - 1 of them is more than any network will ever create.
 */
export const MAX_SMALL_ID = Number.MAX_SAFE_INTEGER;
const DIGITS = /^[0-9]+$/;

export function parseSmallId(text: string): number | undefined {
  if (!DIGITS.test(text) || text.length > 16) return undefined;
  const value = Number(text);
  return value <= MAX_SMALL_ID ? value : undefined;
}

/** An Idempotency-Key: 1 to 255 printable ASCII characters without spaces. */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7e]{1,255}$';
const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN);

export function isIdempotencyKey(text: unknown): text is string {
  return typeof text === 'string' && IDEMPOTENCY_KEY.test(text);
}

/** A 32-byte hash in hex, with or without 0x (a request hash). */
export const HASH32_PATTERN = '^(0x)?[0-9a-fA-F]{64}$';
const HASH32 = new RegExp(HASH32_PATTERN);

export function isHash32(text: unknown): text is string {
  return typeof text === 'string' && HASH32.test(text);
}

export function hash32Bytes(text: string): Uint8Array {
  return Uint8Array.from(Buffer.from(text.replace(/^0x/, ''), 'hex'));
}

/** A plain decimal number, like 0.9 or 1 (no sign, no exponent), as fractions are given. */
export const DECIMAL_PATTERN = '^(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)$';
const DECIMAL = new RegExp(DECIMAL_PATTERN);

/** A fraction from 0 to 1 in plain decimal; undefined when the text is not one. */
export function parseFraction(text: string): number | undefined {
  if (!DECIMAL.test(text)) return undefined;
  const value = Number(text);
  return value >= 0 && value <= 1 ? value : undefined;
}
