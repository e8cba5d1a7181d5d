import { AUDIT_COLUMNS, auditRow, auditValues, auditWhere, tokenRow } from '../access-query.ts';
import type { AuditStore, TokenStore } from '../store.ts';
import type { SqliteDatabase } from './database.ts';

/**
 * The named API tokens and the audit trail on SQLite (0012-api-tokens-and-audit.sql). A token's lookup is
 * one primary-key read on the reader connection (it runs on every request that presents a named token);
 * the writes are transactions of their own on the writer.
 */
export function sqliteAccess(db: SqliteDatabase): TokenStore & AuditStore {
  const statements = () => ({
    // A revoked token's name is taken again; a live one's is not (no row comes back).
    create: db.writer.prepare(`INSERT INTO api_tokens AS t (name, token_hash, scope, created_at, expires_at)
      VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (name) DO UPDATE SET token_hash = excluded.token_hash, scope = excluded.scope,
        created_at = excluded.created_at, expires_at = excluded.expires_at, last_used_at = NULL, revoked_at = NULL
      WHERE t.revoked_at IS NOT NULL
      RETURNING name`),
    find: db.reader.prepare('SELECT * FROM api_tokens WHERE token_hash = ?'),
    list: db.reader.prepare('SELECT * FROM api_tokens ORDER BY name'),
    revoke: db.writer.prepare(
      'UPDATE api_tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL RETURNING name',
    ),
    touch: db.writer.prepare('UPDATE api_tokens SET last_used_at = ? WHERE name = ?'),
    append: db.writer.prepare(
      `INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    prune: db.writer.prepare('DELETE FROM audit_log WHERE at < ?'),
  });
  let prepared: ReturnType<typeof statements> | undefined;
  const s = () => {
    prepared ??= db.guard(statements);
    return prepared;
  };
  return {
    createToken: (token) =>
      db.transaction(async () =>
        db.guard(() =>
          s().create.get(token.name, token.hash, token.scope, token.createdAt, token.expiresAt) === undefined
            ? ('exists' as const)
            : ('created' as const),
        ),
      ),
    findToken: async (hash) =>
      db.guard(() => {
        const row = s().find.get(hash);
        return row === undefined ? undefined : tokenRow(row);
      }),
    listTokens: async () => db.guard(() => s().list.all().map(tokenRow)),
    revokeToken: (name, nowMs) =>
      db.transaction(async () => db.guard(() => s().revoke.get(nowMs, name) !== undefined)),
    touchToken: (name, nowMs) =>
      db.transaction(async () => {
        db.guard(() => s().touch.run(nowMs, name));
      }),
    appendAudit: (entries) =>
      db.transaction(async () => {
        db.guard(() => {
          for (const entry of entries) s().append.run(...(auditValues(entry, (b) => (b ? 1 : 0)) as never[]));
        });
      }),
    listAudit: async (query) =>
      db.guard(() => {
        const { sql, values } = auditWhere(query, () => '?');
        return db.reader
          .prepare(`SELECT id, ${AUDIT_COLUMNS} FROM audit_log ${sql}`)
          .all(...(values as never[]))
          .map(auditRow);
      }),
    pruneAudit: (beforeMs) =>
      db.transaction(async () => db.guard(() => Number(s().prune.run(beforeMs).changes))),
  };
}
