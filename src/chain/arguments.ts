import type { U64 } from '../internal/u64.ts';
import { U64_MAX } from '../internal/u64.ts';
import { ChainRejectedError } from './chain.ts';

/**
 * The one conversion of an Operation's typed arguments to what a Move call takes, shared by every
 * network. The values were validated where they entered the daemon (request schemas, the command line,
 * event decoding); these checks only keep a caller that bypasses them (a test, a bug) from building a
 * transaction the Move call cannot take: it is refused (ChainRejectedError 'invalid_argument') and nothing
 * is signed.
 */

/** A u64 argument as the bigint BCS serializes. */
export function u64Arg(value: U64, name: string): bigint {
  const big = typeof value === 'bigint' ? value : Number.isSafeInteger(value) ? BigInt(value) : -1n;
  if (big < 0n || big > U64_MAX) throw new ChainRejectedError('invalid_argument', `${name} must be a u64`);
  return big;
}

export function u64List(values: readonly U64[], name: string): bigint[] {
  return values.map((v, i) => u64Arg(v, `${name}[${i}]`));
}

export function uintArg(value: number, name: string, bits: 8 | 16): number {
  if (!Number.isInteger(value) || value < 0 || value >= 2 ** bits) {
    throw new ChainRejectedError('invalid_argument', `${name} must be a u${bits}`);
  }
  return value;
}

/** Move's ascii::String holds bytes 0 to 127. */
export function asciiArg(value: string, name: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range is the definition of ASCII.
  if (!/^[\x00-\x7f]*$/.test(value)) {
    throw new ChainRejectedError('invalid_argument', `${name} must be an ASCII string`);
  }
  return value;
}
