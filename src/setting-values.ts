import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { isObjectId, isU64Decimal, normalizeObjectId, parseFraction } from './internal/formats.ts';
import { parseU64 } from './internal/u64.ts';

/**
 * How each setting's value is read (config.ts's SETTINGS): from a flag's or an environment variable's text,
 * or a config file's JSON value, to the value the daemon uses, or what would have been accepted (the one
 * line that refuses it names the setting and quotes this).
 */

export type Parsed = { ok: true; value: unknown } | { ok: false; accepted: string };

export const ok = (value: unknown): Parsed => ({ ok: true, value });
export const no = (accepted: string): Parsed => ({ ok: false, accepted });

export function integer(min: number, max: number) {
  return (raw: unknown): Parsed => {
    const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
    if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
      return no(`an integer from ${min} to ${max}`);
    }
    return ok(Number(text));
  };
}

export function oneOf<T extends string>(values: readonly T[]) {
  return (raw: unknown): Parsed =>
    typeof raw === 'string' && (values as readonly string[]).includes(raw)
      ? ok(raw)
      : no(`one of ${values.join(', ')}`);
}

const HOSTNAME =
  /^(?=.{1,253}$)[a-zA-Z0-9]([a-zA-Z0-9-]{0,62}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,62}[a-zA-Z0-9])?)*$/;

export function fraction(raw: unknown): Parsed {
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
  const value = parseFraction(text);
  return value === undefined ? no('a number from 0 to 1, like 0.01') : ok(value);
}

/** A fraction above 0, at most 1. */
export function positiveFraction(raw: unknown): Parsed {
  const parsed = fraction(raw);
  return parsed.ok && (parsed.value as number) > 0 ? parsed : no('a number above 0, at most 1, like 0.95');
}

/** A u64 in decimal digits, kept exact (a bigint). */
export function u64Setting(what: string) {
  return (raw: unknown): Parsed => {
    const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
    return isU64Decimal(text) ? ok(BigInt(text)) : no(`${what}: an integer from 0 to 2^64 - 1, digits only`);
  };
}

export function boolean(raw: unknown): Parsed {
  if (raw === true || raw === 'true' || raw === '1') return ok(true);
  if (raw === false || raw === 'false' || raw === '0') return ok(false);
  return no('true or false');
}

export function list(what: string, item: (text: string) => boolean) {
  return (raw: unknown): Parsed => {
    if (typeof raw !== 'string' && !Array.isArray(raw)) return no(`a comma-separated list of ${what}`);
    const items = (Array.isArray(raw) ? raw.map(String) : raw.split(','))
      .map((s) => s.trim())
      .filter(Boolean);
    return items.every(item) ? ok(Object.freeze(items)) : no(`a comma-separated list of ${what}`);
  };
}

export function origin(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text;
  } catch {
    return false;
  }
}

export function objectId(raw: unknown): Parsed {
  const text = typeof raw === 'string' ? raw.trim() : raw;
  return isObjectId(text) ? ok(normalizeObjectId(text)) : no('a 0x-prefixed hex object id');
}

export function httpUrl(raw: unknown): Parsed {
  try {
    const url = new URL(String(raw).trim());
    if (url.protocol === 'http:' || url.protocol === 'https:')
      return ok(String(raw).trim().replace(/\/+$/, ''));
  } catch {
    // Falls through to the refusal.
  }
  return no('an http:// or https:// URL');
}

/** An IP address or a DNS host name. */
export function hostName(text: string): boolean {
  return isIP(text) !== 0 || HOSTNAME.test(text);
}

export function host(raw: unknown): Parsed {
  if (typeof raw !== 'string') return no('an IP address or a host name');
  const text = raw.trim();
  return hostName(text) ? ok(text) : no('an IP address or a host name');
}

export function path(raw: unknown): Parsed {
  return typeof raw === 'string' && raw.trim() !== '' ? ok(resolve(raw.trim())) : no('a directory path');
}

export function file(raw: unknown): Parsed {
  return typeof raw === 'string' && raw.trim() !== '' ? ok(resolve(raw.trim())) : no('a file path');
}

/** Seconds, a decimal number from 0.1 to 3600. */
export function seconds(raw: unknown): Parsed {
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
  const value = Number(text);
  return /^[0-9]+(\.[0-9]+)?$/.test(text) && value >= 0.1 && value <= 3600
    ? ok(value)
    : no('a number of seconds from 0.1 to 3600, like 1 or 0.5');
}

/** Node small ids: a comma-separated list (or an array, from a file), each a u64 in decimal digits. */
export function nodeIds(raw: unknown): Parsed {
  const parsed = list('node small ids', (text) => parseU64(text) !== undefined)(raw);
  return parsed.ok ? ok(Object.freeze((parsed.value as string[]).map((text) => parseU64(text)!))) : parsed;
}

/** A schema name the store can use unquoted: lower case letters, digits and underscores. */
export function schemaName(raw: unknown): Parsed {
  return typeof raw === 'string' && /^[a-z_][a-z0-9_]{0,62}$/.test(raw) && !raw.startsWith('pg_')
    ? ok(raw)
    : no(
        'a schema name of lower case letters, digits and underscores, not starting with pg_, like node_daemon',
      );
}

export function databaseUrl(raw: unknown): Parsed {
  if (typeof raw !== 'string') return no('a postgres:// or postgresql:// URL');
  if (raw.trim() === '') return ok(undefined);
  try {
    const url = new URL(raw.trim());
    if (url.protocol === 'postgres:' || url.protocol === 'postgresql:') return ok(raw.trim());
  } catch {
    // Falls through to the refusal below.
  }
  return no('a postgres:// or postgresql:// URL');
}
