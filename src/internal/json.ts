/**
 * JSON with exact u64 values both ways, for every edge where JSON meets the daemon (request bodies, stored
 * responses, the client). Parsing turns an integer literal that a double cannot hold into a bigint (the
 * reviver sees the literal's source text); serializing writes a bigint as its exact digits.
 */

type Reviver = (this: unknown, key: string, value: unknown, context?: { source?: string }) => unknown;
const parseWithSource = JSON.parse as (text: string, reviver: Reviver) => unknown;
const rawJson = (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON;

const INTEGER = /^-?[0-9]+$/;
/**
 * An integer literal beyond 2^53 - 1 has at least 16 digits, so a text without a run of 16 holds none, and
 * the plain parse gives what the reviver would: about a quarter of the time for a report's body.
 */
const LONG_DIGITS = /[0-9]{16}/;

/** JSON.parse that keeps integers beyond Number.MAX_SAFE_INTEGER exact, as bigints. */
export function parseJson(text: string): unknown {
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  return parseWithSource(text, (_key, value, context) => {
    if (typeof value !== 'number' || Number.isSafeInteger(value)) return value;
    const source = context?.source;
    return source !== undefined && INTEGER.test(source) ? BigInt(source) : value;
  });
}

/** JSON.stringify that writes bigints as exact JSON numbers. */
export function stringifyJson(value: unknown, space?: number): string {
  // Most values hold no bigint: the plain call is several times faster than one with a replacer, and it
  // throws a TypeError on the first bigint it meets.
  try {
    return JSON.stringify(value, null, space);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
  }
  return JSON.stringify(value, bigintReplacer, space);
}

const bigintReplacer = (_key: string, v: unknown) => (typeof v === 'bigint' ? rawJson(v.toString()) : v);
