// @ts-check
/**
 * Amounts and other figures as the operator reads them. Amounts are u64 integers in a coin's smallest
 * unit (a number, or a BigInt above 2^53 - 1: see json.js); they are formatted with integer arithmetic
 * only, so 18446744073709551615 prints every digit.
 */

/** Decimals of the coins the daemon reports (USDC: 1,000,000 is 1 USDC; SUI: 1e9 MIST is 1 SUI). */
export const DECIMALS = /** @type {Record<string, number>} */ ({ USDC: 6, SUI: 9 });

/**
 * @param {number | bigint | string | null | undefined} value
 * @returns {bigint | null}
 */
export function toBig(value) {
  if (value === null || value === undefined || value === '') return null;
  return BigInt(value);
}

/**
 * An integer with thousands separators: 1234567 -> "1,234,567".
 * @param {number | bigint | string | null | undefined} value
 */
export function formatInt(value) {
  const big = toBig(value);
  if (big === null) return '—';
  const digits = (big < 0n ? -big : big).toString();
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return big < 0n ? `-${grouped}` : grouped;
}

/**
 * An amount in a coin's smallest unit with all its decimals: 1101900 USDC units -> "1.101900".
 * @param {number | bigint | string | null | undefined} value
 * @param {number} [decimals] 6 (USDC) by default
 */
export function formatUnits(value, decimals = 6) {
  const big = toBig(value);
  if (big === null) return '—';
  const negative = big < 0n;
  const abs = negative ? -big : big;
  const scale = 10n ** BigInt(decimals);
  const whole = formatInt(abs / scale);
  const fraction = decimals > 0 ? `.${(abs % scale).toString().padStart(decimals, '0')}` : '';
  return `${negative ? '-' : ''}${whole}${fraction}`;
}

/**
 * USDC with its unit: "1.101900 USDC".
 * @param {number | bigint | string | null | undefined} value
 */
export function formatUsdc(value) {
  return value === null || value === undefined ? '—' : `${formatUnits(value, 6)} USDC`;
}

/**
 * A balance of a coin the daemon names (USDC, SUI), or the raw integer for another coin.
 * @param {string} coin
 * @param {number | bigint | string} value
 */
export function formatCoin(coin, value) {
  const decimals = DECIMALS[coin];
  return decimals === undefined
    ? `${formatInt(value)} (smallest unit)`
    : `${formatUnits(value, decimals)} ${coin}`;
}

/**
 * Parses an amount typed in a coin's whole units ("1.5", "0.000001") into its smallest unit, exactly;
 * null when the text is not such an amount.
 * @param {string} text
 * @param {number} [decimals]
 * @returns {bigint | null}
 */
export function parseUnits(text, decimals = 6) {
  const match = /^\s*(\d*)(?:\.(\d*))?\s*$/.exec(text.replaceAll(',', ''));
  if (!match) return null;
  const [, whole = '', fraction = ''] = match;
  if (whole === '' && fraction === '') return null;
  if (fraction.length > decimals) return null;
  return BigInt(whole || '0') * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
}

/** The largest u64. */
export const U64_MAX = 2n ** 64n - 1n;

/**
 * A BigInt as the JSON value to send: a number while exact, else the BigInt (json.js writes its digits).
 * @param {bigint} big
 * @returns {number | bigint}
 */
export function toWire(big) {
  return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
}

/**
 * used / total as a percentage with one decimal, rounded down, from integers: "95.0 %". A stack of no
 * capacity counts as full, as the API does.
 * @param {number | bigint} used
 * @param {number | bigint} total
 */
export function formatFill(used, total) {
  const u = BigInt(used);
  const t = BigInt(total);
  if (t === 0n) return '100.0 %';
  const tenths = (u * 1000n) / t;
  return `${tenths / 10n}.${tenths % 10n} %`;
}

/**
 * used / total as a fraction for drawing (a bar's width); exactness does not matter here.
 * @param {number | bigint} used
 * @param {number | bigint} total
 */
export function fillRatio(used, total) {
  const t = BigInt(total);
  if (t === 0n) return 1;
  return Math.min(1, Number((BigInt(used) * 1_000_000n) / t) / 1_000_000);
}

/**
 * A long identifier shortened for a table, the whole of it kept for a tooltip: 0x6d13…1da6.
 * @param {string | null | undefined} id
 */
export function shortId(id) {
  if (!id) return '—';
  return id.length > 14 ? `${id.slice(0, 6)}…${id.slice(-4)}` : id;
}

/**
 * A byte vector (the API's arrays of 0..255) as hex.
 * @param {readonly number[] | null | undefined} bytes
 */
export function hex(bytes) {
  if (!bytes || bytes.length === 0) return '—';
  return `0x${bytes.map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

const TIME = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/**
 * @param {string | null | undefined} iso
 * @param {boolean} [withDate]
 */
export function formatTime(iso, withDate = false) {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return (withDate ? DATE_TIME : TIME).format(date);
}

/**
 * Seconds as "3 h 12 min", "42 s", "0.2 s".
 * @param {number | null | undefined} seconds
 */
export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 10) return `${Math.round(seconds * 10) / 10} s`;
  if (seconds < 120) return `${Math.round(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

const SECURITY = ['no security', 'confidential compute', 'sampling consensus'];
const ROLES = [
  'chat completion',
  'embedding',
  'vision',
  'image generation',
  'text to speech',
  'speech to text',
  'fine-tuning',
  'training',
];

/** @param {number} level */
export function securityName(level) {
  return SECURITY[level] ?? `security level ${level}`;
}

/** @param {number} role */
export function roleName(role) {
  return ROLES[role] ?? `role ${role}`;
}

/**
 * "12" / "12, 13" / "12, 13 and 5 more".
 * @param {readonly (number | bigint | string)[] | null | undefined} ids
 */
export function idList(ids) {
  if (!ids || ids.length === 0) return '—';
  const head = ids.slice(0, 6).map(String).join(', ');
  return ids.length > 6 ? `${head} and ${ids.length - 6} more` : head;
}
