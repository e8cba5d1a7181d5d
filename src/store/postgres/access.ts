import { hash } from 'node:crypto';
import { AUDIT_COLUMNS, auditRow, auditValues, auditWhere, tokenRow } from '../access-query.ts';
import type { AuditStore, TokenStore } from '../store.ts';
import type { PostgresDatabase } from './database.ts';
import type { Statement } from './statements.ts';

/**
 * The named API tokens and the audit trail on PostgreSQL (0014-api-tokens-and-audit.sql), shared by every
 * daemon on the database: a token is looked up by its hash on each request that presents it (one
 * primary-key read), so a revocation by any of them holds at the next request. None of these writes moves
 * the store's version: no cached read shows them.
 */
const CREATE: Statement = {
  name: 'node_daemon_createToken',
  text: `INSERT INTO api_tokens AS t (name, token_hash, scope, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (name) DO UPDATE SET token_hash = excluded.token_hash, scope = excluded.scope,
      created_at = excluded.created_at, expires_at = excluded.expires_at, last_used_at = NULL, revoked_at = NULL
    WHERE t.revoked_at IS NOT NULL
    RETURNING name`,
};
const FIND: Statement = {
  name: 'node_daemon_findToken',
  text: 'SELECT * FROM api_tokens WHERE token_hash = $1',
};
const LIST: Statement = { name: 'node_daemon_listTokens', text: 'SELECT * FROM api_tokens ORDER BY name' };
const REVOKE: Statement = {
  name: 'node_daemon_revokeToken',
  text: 'UPDATE api_tokens SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL RETURNING name',
};
const TOUCH: Statement = {
  name: 'node_daemon_touchToken',
  text: 'UPDATE api_tokens SET last_used_at = GREATEST(COALESCE(last_used_at, 0), $2) WHERE name = $1',
};
const PRUNE: Statement = { name: 'node_daemon_pruneAudit', text: 'DELETE FROM audit_log WHERE at < $1' };

/** The INSERT of n entries in one statement (one named statement per batch size in use). */
function appendStatement(n: number): Statement {
  const rows = Array.from({ length: n }, (_, i) => {
    const base = i * 10;
    return `(${Array.from({ length: 10 }, (_, j) => `$${base + j + 1}`).join(', ')})`;
  });
  return {
    name: `node_daemon_appendAudit${n}`,
    text: `INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES ${rows.join(', ')}`,
  };
}

/** Rows per INSERT (10 parameters each, far below PostgreSQL's 65535). */
const BATCH = 500;

export function postgresAccess(db: PostgresDatabase): TokenStore & AuditStore {
  return {
    createToken: async (token) => {
      const { rowCount } = await db.query(CREATE, [
        token.name,
        token.hash,
        token.scope,
        token.createdAt,
        token.expiresAt,
      ]);
      return rowCount === 1 ? 'created' : 'exists';
    },
    findToken: async (hash) => {
      const [row] = await db.rows(FIND, [hash]);
      return row === undefined ? undefined : tokenRow(row);
    },
    listTokens: async () => (await db.rows(LIST, [])).map(tokenRow),
    revokeToken: async (name, nowMs) => (await db.query(REVOKE, [name, nowMs])).rowCount === 1,
    touchToken: async (name, nowMs) => {
      await db.query(TOUCH, [name, nowMs]);
    },
    appendAudit: async (entries) => {
      for (let i = 0; i < entries.length; i += BATCH) {
        const batch = entries.slice(i, i + BATCH);
        await db.query(
          appendStatement(batch.length),
          batch.flatMap((entry) => auditValues(entry, (b) => b)),
        );
      }
    },
    listAudit: async (query) => {
      const { sql, values } = auditWhere(query, (n) => `$${n}`);
      // One named statement per combination of filters (a name stands for one text on a connection).
      const text = `SELECT id, ${AUDIT_COLUMNS} FROM audit_log ${sql}`;
      const name = `node_daemon_listAudit_${hash('sha1', text).slice(0, 12)}`;
      return (await db.rows({ name, text }, values)).map(auditRow);
    },
    pruneAudit: async (beforeMs) => (await db.query(PRUNE, [beforeMs])).rowCount ?? 0,
  };
}
