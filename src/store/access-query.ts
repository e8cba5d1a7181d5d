import type { ApiTokenRow, AuditEntry, AuditQuery, AuditRow } from './store.ts';

/**
 * What both engines share for the tokens and the audit trail: the audit query's WHERE clause (each engine
 * numbers its placeholders its own way) and the rows as the store's types.
 */
export function auditWhere(
  query: AuditQuery,
  placeholder: (n: number) => string,
): { sql: string; values: unknown[] } {
  const clauses: string[] = [];
  const values: unknown[] = [];
  const add = (clause: (p: string) => string, value: unknown) => {
    values.push(value);
    clauses.push(clause(placeholder(values.length)));
  };
  if (query.token !== undefined) add((p) => `token_name = ${p}`, query.token);
  if (query.route !== undefined) add((p) => `route = ${p}`, query.route);
  if (query.method !== undefined) add((p) => `method = ${p}`, query.method);
  if (query.since !== undefined) add((p) => `at >= ${p}`, query.since);
  if (query.until !== undefined) add((p) => `at < ${p}`, query.until);
  if (query.before !== undefined) add((p) => `id < ${p}`, query.before);
  if (query.outcome === 'ok') clauses.push('status < 400');
  if (query.outcome === 'denied') clauses.push('status IN (401, 403)');
  if (query.outcome === 'failed') clauses.push('status >= 400 AND status NOT IN (401, 403)');
  values.push(query.limit);
  const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
  return { sql: `${where} ORDER BY id DESC LIMIT ${placeholder(values.length)}`, values };
}

const orNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value);

export function tokenRow(row: Record<string, unknown>): ApiTokenRow {
  return {
    name: String(row.name),
    scope: String(row.scope),
    created_at: Number(row.created_at),
    expires_at: orNull(row.expires_at),
    last_used_at: orNull(row.last_used_at),
    revoked_at: orNull(row.revoked_at),
  };
}

export function auditRow(row: Record<string, unknown>): AuditRow {
  return {
    id: Number(row.id),
    at: Number(row.at),
    token_name: (row.token_name as string | null) ?? null,
    method: String(row.method),
    route: String(row.route),
    request_id: String(row.request_id),
    status: Number(row.status),
    problem_code: (row.problem_code as string | null) ?? null,
    tx_digest: (row.tx_digest as string | null) ?? null,
    gas_used: (row.gas_used as string | null) ?? null,
    idempotent_replay: row.idempotent_replay === true || row.idempotent_replay === 1,
  };
}

/** An entry's columns in the order of the INSERTs (the replay flag as the engine stores a boolean). */
export function auditValues(entry: AuditEntry, flag: (b: boolean) => unknown): unknown[] {
  return [
    entry.at,
    entry.token_name,
    entry.method,
    entry.route,
    entry.request_id,
    entry.status,
    entry.problem_code,
    entry.tx_digest,
    entry.gas_used,
    flag(entry.idempotent_replay),
  ];
}

export const AUDIT_COLUMNS =
  'at, token_name, method, route, request_id, status, problem_code, tx_digest, gas_used, idempotent_replay';
