import { CliError } from '../internal/exit-codes.ts';

/** Argument checks of the client commands: a bad argument is a usage error (exit 2) naming the command. */

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const U64_MAX = 18446744073709551615n;
const DIGITS = /^[0-9]+$/;

export type U64 = number | bigint;

function normalize(value: bigint): U64 {
  return value <= MAX_SAFE ? Number(value) : value;
}

/** A usage error: one line, then where to read more. */
export function usageError(command: string, message: string): CliError {
  return new CliError(`${message}; see node-daemon ${command} --help`);
}

/** A small id (node, task, stack): an integer from 0 to 2^53 - 1, digits only. */
export function smallId(command: string, raw: string, what: string): number {
  const text = raw.trim();
  if (!DIGITS.test(text) || BigInt(text) > MAX_SAFE) {
    throw usageError(command, `${what} must be an integer from 0 to 2^53 - 1; got ${JSON.stringify(raw)}`);
  }
  return Number(text);
}

/** A u64 (units, amounts): an integer from 0 to 2^64 - 1, exact. */
export function u64(command: string, raw: string, what: string): U64 {
  const text = raw.trim();
  if (!DIGITS.test(text) || BigInt(text) > U64_MAX) {
    throw usageError(command, `${what} must be an integer from 0 to 2^64 - 1; got ${JSON.stringify(raw)}`);
  }
  return normalize(BigInt(text));
}

/** A u8/u16-sized integer, or one of the names given. */
export function smallEnum(
  command: string,
  raw: string,
  what: string,
  names: Record<string, number>,
  max: number,
): number {
  const text = raw.trim().toLowerCase();
  if (Object.hasOwn(names, text)) return names[text]!;
  if (DIGITS.test(text) && Number(text) <= max) return Number(text);
  const named = Object.keys(names);
  throw usageError(
    command,
    `${what} must be an integer from 0 to ${max}${named.length > 0 ? ` or one of ${named.join(', ')}` : ''}; got ${JSON.stringify(raw)}`,
  );
}

/**
 * A price per one million compute units, in USDC's smallest unit (6 decimals): raw digits ("1000000"),
 * or a USDC amount with its unit ("1usdc", "0.25USDC", at most 6 decimals).
 */
export function priceArg(command: string, raw: string, what = '--price'): U64 {
  const text = raw.trim();
  const usdc = /^([0-9]+)(?:\.([0-9]{1,6}))?\s*usdc$/i.exec(text);
  let value: bigint;
  if (usdc) value = BigInt(usdc[1]!) * 1_000_000n + BigInt((usdc[2] ?? '').padEnd(6, '0'));
  else if (DIGITS.test(text)) value = BigInt(text);
  else {
    throw usageError(
      command,
      `${what} must be an integer amount in USDC's smallest unit (1000000 is 1 USDC) or an amount like 1.5usdc; got ${JSON.stringify(raw)}`,
    );
  }
  if (value > U64_MAX) throw usageError(command, `${what} is above 2^64 - 1; got ${JSON.stringify(raw)}`);
  return normalize(value);
}

/** Stack ids: each argument one id or a comma-separated list; at least one, no repeats. */
export function stackIds(command: string, args: readonly string[]): number[] {
  const ids: number[] = [];
  for (const arg of args) {
    for (const part of arg.split(',')) {
      if (part.trim() === '') continue;
      const id = smallId(command, part, 'a stack id');
      if (ids.includes(id)) throw usageError(command, `stack ${id} is listed twice`);
      ids.push(id);
    }
  }
  if (ids.length === 0) throw usageError(command, 'name at least one STACK');
  return ids;
}

/**
 * A fill fraction for --min-fill: a decimal from 0 to 1 ("0.9") or a percentage ("90%"). Answers the
 * decimal text the daemon's min_fill_fraction accepts.
 */
export function fillFraction(command: string, raw: string): string {
  const text = raw.trim();
  const percent = /^([0-9]+)(?:\.([0-9]+))?%$/.exec(text);
  let decimal: string;
  if (percent) {
    const whole = percent[1]!.replace(/^0+(?=.)/, '').padStart(3, '0');
    decimal = `${whole.slice(0, -2)}.${whole.slice(-2)}${percent[2] ?? ''}`.replace(/^0+(?=[0-9])/, '');
  } else decimal = text;
  const value = Number(decimal);
  if (!/^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$/.test(decimal) || !(value >= 0 && value <= 1)) {
    throw usageError(
      command,
      `--min-fill must be a fraction from 0 to 1 (like 0.9) or a percentage (like 90%); got ${JSON.stringify(raw)}`,
    );
  }
  return decimal;
}

/** A 32-byte hex hash, with or without 0x. */
export function hash32(command: string, raw: string, what: string): string {
  const text = raw.trim();
  if (!/^(0x)?[0-9a-fA-F]{64}$/.test(text)) {
    throw usageError(
      command,
      `${what} must be 32 bytes in hex (64 hex digits, 0x optional); got ${JSON.stringify(raw)}`,
    );
  }
  return text;
}

/** An object id (a badge or a gas coin): 0x and up to 64 hex digits. */
export function objectId(command: string, raw: string, what: string): string {
  const text = raw.trim();
  if (!/^0x[0-9a-fA-F]{1,64}$/.test(text)) {
    throw usageError(
      command,
      `${what} must be an object id (0x and up to 64 hex digits); got ${JSON.stringify(raw)}`,
    );
  }
  return text;
}

/** Seconds for --timeout: a positive decimal, at most a day. */
export function seconds(command: string, raw: string): number {
  const text = raw.trim();
  const value = Number(text);
  if (!/^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$/.test(text) || !(value > 0 && value <= 86_400)) {
    throw usageError(
      command,
      `--timeout must be a number of seconds above 0 (at most 86400); got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}
