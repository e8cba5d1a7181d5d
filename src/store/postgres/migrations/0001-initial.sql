-- The read model built from the Atoma db module's events, plus the indexer's own bookkeeping: the same
-- tables, keys and indexes as migrations/sqlite/0001-initial.sql, in PostgreSQL types.
-- u64 columns use the domain u64: NUMERIC(20,0) held to 0 .. 2^64 - 1, exact at every size and ordered
-- numerically. Flags are BOOLEAN, byte strings BYTEA. Keys that are only ever compared for equality use
-- the C collation: byte order, independent of the server's locale.

CREATE DOMAIN u64 AS NUMERIC(20, 0) CHECK (VALUE >= 0 AND VALUE <= 18446744073709551615);

CREATE TABLE tasks (
  task_small_id u64 NOT NULL PRIMARY KEY,
  task_id TEXT NOT NULL,
  role INTEGER NOT NULL,
  model_name TEXT,
  is_deprecated BOOLEAN NOT NULL DEFAULT false,
  valid_until_epoch u64,
  deprecated_at_epoch u64,
  security_level INTEGER NOT NULL,
  minimum_reputation_score INTEGER,
  is_removed BOOLEAN NOT NULL DEFAULT false,
  removed_at_epoch u64
);

CREATE TABLE nodes (
  node_small_id u64 NOT NULL PRIMARY KEY,
  badge_id TEXT NOT NULL,
  sui_address TEXT NOT NULL
);

CREATE TABLE node_models (
  node_small_id u64 NOT NULL,
  model_name TEXT NOT NULL,
  echelon_id u64 NOT NULL,
  PRIMARY KEY (node_small_id, model_name)
);

-- Keyed by node first: GET /subscriptions/nodes/{id} is one range scan, already in task order.
CREATE TABLE node_subscriptions (
  node_small_id u64 NOT NULL,
  task_small_id u64 NOT NULL,
  price_per_one_million_compute_units u64 NOT NULL,
  max_num_compute_units u64 NOT NULL,
  valid BOOLEAN NOT NULL DEFAULT true,
  PRIMARY KEY (node_small_id, task_small_id)
);
CREATE INDEX node_subscriptions_by_task ON node_subscriptions (task_small_id);

-- Keyed by the selected node (it never changes for a stack): GET /stacks/nodes/{id} is one range scan of
-- the primary key in stack order. The unique index keeps lookups by stack id cheap.
CREATE TABLE stacks (
  selected_node_id u64 NOT NULL,
  stack_small_id u64 NOT NULL,
  stack_id TEXT NOT NULL,
  owner_address TEXT NOT NULL,
  task_small_id u64 NOT NULL,
  num_compute_units u64 NOT NULL,
  price_per_one_million_compute_units u64 NOT NULL,
  already_computed_units u64 NOT NULL DEFAULT 0,
  in_settle_period BOOLEAN NOT NULL DEFAULT false,
  num_total_messages u64 NOT NULL DEFAULT 0,
  is_claimed BOOLEAN NOT NULL DEFAULT false,
  is_locked_for_claim BOOLEAN NOT NULL DEFAULT false,
  is_confidential BOOLEAN NOT NULL DEFAULT false,
  user_refund_amount u64,
  PRIMARY KEY (selected_node_id, stack_small_id)
);
CREATE UNIQUE INDEX stacks_by_id ON stacks (stack_small_id);

CREATE TABLE stack_settlement_tickets (
  stack_small_id u64 NOT NULL PRIMARY KEY,
  selected_node_id u64 NOT NULL,
  num_claimed_compute_units u64 NOT NULL,
  requested_attestation_nodes TEXT NOT NULL DEFAULT '[]',
  committed_stack_proofs BYTEA NOT NULL DEFAULT '\x',
  stack_merkle_leaves BYTEA NOT NULL DEFAULT '\x',
  dispute_settled_at_epoch u64,
  already_attested_nodes TEXT NOT NULL DEFAULT '[]',
  is_in_dispute BOOLEAN NOT NULL DEFAULT false,
  user_refund_amount u64 NOT NULL DEFAULT 0,
  is_claimed BOOLEAN NOT NULL DEFAULT false,
  claim_path TEXT
);
CREATE INDEX stack_settlement_tickets_claimed_by_node
  ON stack_settlement_tickets (selected_node_id, stack_small_id) WHERE is_claimed;

-- SQLite's secondary indexes of a WITHOUT ROWID table end with the primary key; here the columns the
-- listings order by are spelled out, so the index alone yields the order.
CREATE TABLE stack_attestation_disputes (
  stack_small_id u64 NOT NULL,
  attestation_node_id u64 NOT NULL,
  attestation_commitment BYTEA NOT NULL,
  original_node_id u64 NOT NULL,
  original_commitment BYTEA NOT NULL,
  PRIMARY KEY (stack_small_id, attestation_node_id)
);
CREATE INDEX stack_attestation_disputes_against
  ON stack_attestation_disputes (original_node_id, stack_small_id, attestation_node_id);
CREATE INDEX stack_attestation_disputes_own
  ON stack_attestation_disputes (attestation_node_id, stack_small_id);

-- One row per event source: where it stands and what it has done so far.
CREATE TABLE indexer_cursors (
  source TEXT COLLATE "C" NOT NULL PRIMARY KEY,
  cursor TEXT,
  applied BIGINT NOT NULL DEFAULT 0,
  duplicate BIGINT NOT NULL DEFAULT 0,
  ignored BIGINT NOT NULL DEFAULT 0,
  unknown BIGINT NOT NULL DEFAULT 0,
  malformed BIGINT NOT NULL DEFAULT 0,
  orphaned BIGINT NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL
);

-- Every event ever applied, by txDigest:eventSeq: re-applying one is a no-op.
CREATE TABLE applied_events (
  event_key TEXT COLLATE "C" NOT NULL PRIMARY KEY
);

-- The token of dataVersion(): one row, bumped by every transaction that changes data, as its last
-- statement (so the row lock is held only while it commits). Daemons sharing the database key their
-- response caches by it. PostgreSQL only: SQLite has PRAGMA data_version.
CREATE TABLE store_version (
  id BOOLEAN NOT NULL PRIMARY KEY DEFAULT true CHECK (id),
  version BIGINT NOT NULL
);
INSERT INTO store_version (id, version) VALUES (true, 0);
