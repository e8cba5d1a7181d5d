-- Named API tokens with a scope (http/scopes.ts), and the audit trail of writes and admin requests
-- (http/audit.ts). A token is kept as the sha256 of its text, never the text: the lookup is by that hash.
-- A revoked token's row stays (it is listed, and its name is taken again only by a new create).
CREATE TABLE api_tokens (
  name TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  scope TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  last_used_at INTEGER,
  revoked_at INTEGER
) STRICT;

-- One row per audited request. The token's name, never the token. Read newest first, by id.
CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  token_name TEXT,
  method TEXT NOT NULL,
  route TEXT NOT NULL,
  request_id TEXT NOT NULL,
  status INTEGER NOT NULL,
  problem_code TEXT,
  tx_digest TEXT,
  gas_used TEXT,
  idempotent_replay INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_log_at ON audit_log (at);
