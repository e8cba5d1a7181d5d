import { CliError } from '../internal/exit-codes.ts';
import {
  DECIMAL_PATTERN,
  isHash32,
  isIdempotencyKey,
  isObjectId,
  parseFraction,
  parseSmallId,
} from '../internal/formats.ts';
import { parseU64, toU64, type U64 } from '../internal/u64.ts';

/**
 * Argument checks of the client commands: a bad argument is a usage error (exit 2) naming the command.
 * The formats are the daemon's own (src/internal/formats.ts), so the client refuses exactly what the
 * daemon would; surrounding spaces are trimmed from values the client converts (ids, amounts).
 */

const DECIMAL = new RegExp(DECIMAL_PATTERN);
/** The client's own notation for prices, USDC with its unit (the daemon takes integers only). */
const USDC_AMOUNT = /^([0-9]+)(?:\.([0-9]{1,6}))?\s*usdc$/i;

/** A usage error: one line, then where to read more (the command's help, or the overview's). */
export function usageError(command: string, message: string): CliError {
  return new CliError(`${message}; see node-daemon ${command === '' ? '' : `${command} `}--help`);
}

/** A value the parser took as given although it starts with a dash: a negative number (`-5`, `-0.5`). */
const NEGATIVE = /^\s*-\s*\.?[0-9]/;

/**
 * "WHAT must be RULE; got "RAW"", or for a negative number "WHAT cannot be negative: it must be RULE;
 * got "-5"", since what a sign says is the mistake there, not the rest of the rule.
 */
function mustBe(what: string, rule: string, raw: string): string {
  return NEGATIVE.test(raw)
    ? `${what} cannot be negative: it must be ${rule}; got ${JSON.stringify(raw)}`
    : `${what} must be ${rule}; got ${JSON.stringify(raw)}`;
}

/** A small id (node, task, stack): an integer from 0 to 2^53 - 1, digits only. */
export function smallId(command: string, raw: string, what: string): number {
  const id = parseSmallId(raw.trim());
  if (id === undefined) {
    throw usageError(command, mustBe(what, 'an integer from 0 to 2^53 - 1', raw));
  }
  return id;
}

/** A u64 (units, amounts): an integer from 0 to 2^64 - 1, exact. */
export function u64(command: string, raw: string, what: string): U64 {
  const value = parseU64(raw.trim());
  if (value === undefined) {
    throw usageError(command, mustBe(what, 'an integer from 0 to 2^64 - 1', raw));
  }
  return value;
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
  const value = parseSmallId(text);
  if (value !== undefined && value <= max) return value;
  const named = Object.keys(names);
  const rule = `an integer from 0 to ${max}${named.length > 0 ? ` or one of ${named.join(', ')}` : ''}`;
  throw usageError(command, mustBe(what, rule, raw));
}

/**
 * A price per one million compute units, in USDC's smallest unit (6 decimals): raw digits ("1000000"),
 * or a USDC amount with its unit ("1usdc", "0.25USDC", at most 6 decimals).
 */
export function priceArg(command: string, raw: string, what = '--price'): U64 {
  const text = raw.trim();
  const usdc = USDC_AMOUNT.exec(text);
  const value = usdc
    ? toU64(BigInt(usdc[1]!) * 1_000_000n + BigInt((usdc[2] ?? '').padEnd(6, '0')))
    : parseU64(text);
  const rule =
    "an integer amount in USDC's smallest unit (1000000 is 1 USDC; at most 2^64 - 1) or an amount like 1.5usdc";
  if (value === undefined) throw usageError(command, mustBe(what, rule, raw));
  // The contract takes no free price: said here in the option's name, not the API's field's.
  if (BigInt(value) === 0n) {
    throw usageError(command, `${what} must be greater than 0: ${rule}; got ${JSON.stringify(raw)}`);
  }
  return value;
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
  if (parseFraction(decimal) === undefined) {
    const rule = 'a fraction from 0 to 1 (like 0.9) or a percentage (like 90%)';
    throw usageError(command, mustBe('--min-fill', rule, raw));
  }
  return decimal;
}

/** The text, trimmed, when `valid` takes it; else a usage error saying what it must be. */
function checked(command: string, raw: string, what: string, valid: (text: string) => boolean, rule: string) {
  const text = raw.trim();
  if (!valid(text)) throw usageError(command, `${what} must be ${rule}; got ${JSON.stringify(raw)}`);
  return text;
}

/** A 32-byte hex hash, with or without 0x. */
export function hash32(command: string, raw: string, what: string): string {
  return checked(command, raw, what, isHash32, '32 bytes in hex (64 hex digits, 0x optional)');
}

/** An object id (a badge or a gas coin): 0x and up to 64 hex digits. */
export function objectId(command: string, raw: string, what: string): string {
  return checked(command, raw, what, isObjectId, 'an object id (0x and up to 64 hex digits)');
}

/** Seconds for --timeout: a positive decimal, at most a day. */
export function seconds(command: string, raw: string): number {
  const text = raw.trim();
  const value = Number(text);
  if (!DECIMAL.test(text) || !(value > 0 && value <= 86_400)) {
    throw usageError(command, mustBe('--timeout', 'a number of seconds above 0 (at most 86400)', raw));
  }
  return value;
}

/**
 * An Idempotency-Key as the daemon takes it: 1 to 255 printable ASCII characters, no spaces. Leading and
 * trailing whitespace goes first, as HTTP drops it from a header on the way to the daemon.
 */
export function idempotencyKey(command: string, raw: string): string {
  const key = raw.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  if (!isIdempotencyKey(key)) {
    throw usageError(
      command,
      `--idempotency-key must be 1 to 255 printable ASCII characters without spaces; got ${JSON.stringify(raw)}`,
    );
  }
  return key;
}
