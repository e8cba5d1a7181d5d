import { toU64 } from '../internal/u64.ts';
import { ChainRejectedError } from './chain.ts';

/**
 * Checks of an Operation's arguments before a transaction is built, shared by every network: a value the
 * Move call cannot take is refused (ChainRejectedError 'invalid_argument') and nothing is signed.
 */

export function u64Arg(value: unknown, name: string): bigint {
  const parsed = toU64(value);
  if (parsed === undefined) throw new ChainRejectedError('invalid_argument', `${name} must be a u64`);
  return BigInt(parsed);
}

export function uintArg(value: unknown, name: string, bits: 8 | 16): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value >= 2 ** bits) {
    throw new ChainRejectedError('invalid_argument', `${name} must be a u${bits}`);
  }
  return value;
}

export function bytesArg(value: unknown, name: string): Uint8Array {
  if (!(value instanceof Uint8Array))
    throw new ChainRejectedError('invalid_argument', `${name} must be bytes`);
  return value;
}

export function asciiArg(value: unknown, name: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range is the definition of ASCII.
  if (typeof value !== 'string' || !/^[\x00-\x7f]*$/.test(value)) {
    throw new ChainRejectedError('invalid_argument', `${name} must be an ASCII string`);
  }
  return value;
}
