/** Text output for people: aligned tables, "key: value" blocks, USDC amounts, fractions and short ids. */

export type Align = 'left' | 'right';

export interface Column<Row> {
  header: string;
  /** Numbers (and amounts) align right. */
  align?: Align;
  value: (row: Row) => string;
}

/** A header row and one line per row, columns two spaces apart, no trailing spaces. */
export function table<Row>(rows: readonly Row[], columns: readonly Column<Row>[]): string {
  const cells = rows.map((row) => columns.map((c) => c.value(row)));
  const widths = columns.map((c, i) => Math.max(width(c.header), ...cells.map((r) => width(r[i]!))));
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => {
        const pad = ' '.repeat(widths[i]! - width(v));
        return columns[i]!.align === 'right' ? pad + v : v + pad;
      })
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}

/** Lines of "key: value" with the values aligned. */
export function keyValues(entries: readonly (readonly [string, string])[]): string {
  const keyWidth = Math.max(0, ...entries.map(([k]) => width(k) + 1));
  return entries.map(([k, v]) => `${`${k}:`.padEnd(keyWidth)} ${v}`.trimEnd()).join('\n');
}

/** Display width: code points (the tables only hold ASCII and the ellipsis). */
function width(text: string): number {
  return [...text].length;
}

/** A u64 as it arrived (number below 2^53, bigint above), or a decimal string, as exact digits. */
export function digits(value: unknown): string {
  if (value === null || value === undefined) return '-';
  return String(value);
}

function big(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^-?[0-9]+$/.test(value)) return BigInt(value);
  return undefined;
}

/** USDC has 6 decimals: 1500000 -> "1.500000". Exact for any u64. */
export function usdc(value: unknown): string {
  const amount = big(value);
  if (amount === undefined) return digits(value);
  const sign = amount < 0n ? '-' : '';
  const abs = amount < 0n ? -amount : amount;
  return `${sign}${abs / 1_000_000n}.${String(abs % 1_000_000n).padStart(6, '0')}`;
}

/** SUI has 9 decimals (MIST): 1500000000 -> "1.500000000 SUI". Exact for any u64. */
export function sui(value: unknown): string {
  const mist = big(value);
  if (mist === undefined) return digits(value);
  return `${mist / 1_000_000_000n}.${String(mist % 1_000_000_000n).padStart(9, '0')} SUI`;
}

/** The chain's epoch as the daemon indexed it; null until the event source said. */
export function epochText(value: unknown): string {
  return value === null ? 'unknown (the chain has not said yet)' : digits(value);
}

/** A price per one million compute units, in USDC: "1.000000 USDC/M". */
export function price(value: unknown): string {
  return value === null || value === undefined ? '-' : `${usdc(value)} USDC/M`;
}

/** An amount in USDC: "0.950000 USDC". */
export function amount(value: unknown): string {
  return value === null || value === undefined ? '-' : `${usdc(value)} USDC`;
}

/** used / total as a percentage with one decimal, rounded down so that 100.0% means full: "95.0%". */
export function percent(used: unknown, total: unknown): string {
  const u = big(used);
  const t = big(total);
  if (u === undefined || t === undefined || t === 0n) return '-';
  const tenths = (u * 1000n) / t;
  return `${tenths / 10n}.${tenths % 10n}%`;
}

/** A fraction from 0 to 1 as a percentage: 0.95 -> "95.0%". */
export function fractionPercent(value: unknown): string {
  return typeof value === 'number' && Number.isFinite(value)
    ? `${(Math.floor(value * 1000) / 10).toFixed(1)}%`
    : '-';
}

/**
 * A long object id, address or digest shortened for a table: `0x1a2b…9f0e` for hex, `43vp…DNXH` for a
 * base58 digest. Short values stay as they are.
 */
export function shortId(value: unknown): string {
  if (typeof value !== 'string' || value === '') return '-';
  if (value.startsWith('0x')) return value.length > 14 ? `${value.slice(0, 6)}…${value.slice(-4)}` : value;
  return value.length > 12 ? `${value.slice(0, 4)}…${value.slice(-4)}` : value;
}

/** Bytes (a JSON array of 0..255) as shortened hex. */
export function bytesHex(value: unknown): string {
  if (!Array.isArray(value) || value.length === 0) return '-';
  const hex = value.map((b) => Number(b).toString(16).padStart(2, '0')).join('');
  return shortId(`0x${hex}`);
}

export function yesNo(value: unknown): string {
  return value === true ? 'yes' : value === false ? 'no' : '-';
}

/** "1 stack", "3 stacks". */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** Seconds as "2d 3h 4m 5s" (largest units first, zero units left out). */
export function duration(seconds: number): string {
  let rest = Math.max(0, Math.floor(seconds));
  const parts: string[] = [];
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  if (rest > 0 || parts.length === 0) parts.push(`${rest}s`);
  return parts.join(' ');
}

/** Ids in a table cell: "10, 11, 12", or the first few and how many more: "10, 11, 12, 13, 14 +495 more". */
export function idList(ids: readonly unknown[], max = 5): string {
  if (ids.length === 0) return '-';
  const shown = ids.slice(0, max).map(digits).join(', ');
  return ids.length > max ? `${shown} +${ids.length - max} more` : shown;
}

/** An ISO 8601 time to the second, in UTC: "2026-11-24T22:26:47Z". */
export function timestamp(iso: unknown): string {
  if (typeof iso !== 'string') return '-';
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A time and how far it is from now: "2026-11-24T22:26:47Z (12s ago)", "(in 3s)", "(now)". */
export function when(iso: unknown, now = Date.now()): string {
  const at = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
  if (Number.isNaN(at)) return timestamp(iso);
  const ms = now - at;
  const far =
    Math.abs(ms) < 1000 ? 'now' : ms > 0 ? `${duration(ms / 1000)} ago` : `in ${duration(-ms / 1000)}`;
  return `${timestamp(iso)} (${far})`;
}

/** Text from elsewhere (a problem's detail, an error) on one line. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
