import { parseJson } from '../internal/json.ts';
import { digits, keyValues } from './format.ts';
import type { GasUsed, Json } from './replies.ts';

/** What more than one group of commands prints: a transaction's result lines, role and security names. */

function gasLine(gas: GasUsed | undefined): string | undefined {
  if (!gas) return undefined;
  const n = (v: unknown) => (typeof v === 'number' || typeof v === 'bigint' ? BigInt(v) : 0n);
  const net = n(gas.computation_cost) + n(gas.storage_cost) - n(gas.storage_rebate);
  return `${net} MIST (computation ${digits(gas.computation_cost)}, storage ${digits(gas.storage_cost)}, rebate ${digits(gas.storage_rebate)})`;
}

/** A one-line outcome, then the transaction's digest(s), gas and whether reads reflect it yet. */
export function txResult(headline: string, body: Json, extra: [string, string][] = []): string {
  const entries: [string, string][] = [...extra];
  if (typeof body.tx_digest === 'string') entries.push(['transaction', body.tx_digest]);
  else if (Array.isArray(body.tx_digests) && body.tx_digests.length > 0) {
    entries.push([body.tx_digests.length === 1 ? 'transaction' : 'transactions', body.tx_digests.join(', ')]);
  }
  const gas = gasLine(body.gas_used as GasUsed | undefined);
  if (gas !== undefined) entries.push(['gas', gas]);
  if (body.indexed === false) entries.push(['indexed', 'not yet: reads may not show it for a few seconds']);
  return entries.length === 0 ? headline : `${headline}\n${keyValues(entries)}`;
}

/** Task roles by name, as `dev task create --role` takes them and `tasks` prints them. */
export const ROLES: Record<string, number> = { chat: 0, embeddings: 1, image: 2 };

/** Security levels by name (and their long names), as `dev task create --security-level` takes them. */
export const SECURITY: Record<string, number> = {
  none: 0,
  confidential: 1,
  'confidential-compute': 1,
  sampling: 2,
  'sampling-consensus': 2,
};

export function roleName(role: unknown): string {
  const name = Object.entries(ROLES).find(([, v]) => v === role)?.[0];
  return name === undefined ? digits(role) : `${name} (${digits(role)})`;
}

export function securityName(level: unknown): string {
  const names = ['none', 'confidential', 'sampling'];
  return typeof level === 'number' && names[level] !== undefined
    ? `${names[level]} (${level})`
    : digits(level);
}

/** A claim's path in a table: `ticket` (claim_funds of a settled stack) or `confidential` (claim_funds_for_stacks). */
export function claimPath(path: unknown): string {
  if (path === 'settlement_ticket') return 'ticket';
  if (path === 'confidential_compute') return 'confidential';
  return digits(path);
}

/** requested_attestation_nodes and already_attested_nodes are JSON text ("[3, 5]") on the wire. */
export function nodeList(value: unknown): string {
  let items: unknown = value;
  if (typeof value === 'string') {
    try {
      items = parseJson(value);
    } catch {
      return value;
    }
  }
  return Array.isArray(items) ? (items.length === 0 ? '-' : items.map(digits).join(', ')) : digits(value);
}
