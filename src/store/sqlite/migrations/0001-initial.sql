-- The read model built from the Atoma db module's events, plus the indexer's own bookkeeping.
-- u64 columns are ANY: a value up to 2^53 - 1 is stored as INTEGER, a larger one as 20-digit TEXT,
-- so every u64 round-trips exactly and ordering still holds (SQLite sorts INTEGER before TEXT).

CREATE TABLE tasks (
  task_small_id ANY NOT NULL PRIMARY KEY,
  task_id TEXT NOT NULL,
  role INTEGER NOT NULL,
  model_name TEXT,
  is_deprecated INTEGER NOT NULL DEFAULT 0,
  valid_until_epoch ANY,
  deprecated_at_epoch ANY,
  security_level INTEGER NOT NULL,
  minimum_reputation_score INTEGER,
  is_removed INTEGER NOT NULL DEFAULT 0,
  removed_at_epoch ANY
) STRICT, WITHOUT ROWID;

CREATE TABLE nodes (
  node_small_id ANY NOT NULL PRIMARY KEY,
  badge_id TEXT NOT NULL,
  sui_address TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE node_models (
  node_small_id ANY NOT NULL,
  model_name TEXT NOT NULL,
  echelon_id ANY NOT NULL,
  PRIMARY KEY (node_small_id, model_name)
) STRICT, WITHOUT ROWID;

-- Keyed by node first: GET /subscriptions/nodes/{id} is one range scan, already in task order.
CREATE TABLE node_subscriptions (
  node_small_id ANY NOT NULL,
  task_small_id ANY NOT NULL,
  price_per_one_million_compute_units ANY NOT NULL,
  max_num_compute_units ANY NOT NULL,
  valid INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (node_small_id, task_small_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX node_subscriptions_by_task ON node_subscriptions (task_small_id);

-- Clustered by the selected node (it never changes for a stack): GET /stacks/nodes/{id} reads one
-- contiguous range in stack order. The unique index keeps lookups by stack id cheap.
CREATE TABLE stacks (
  selected_node_id ANY NOT NULL,
  stack_small_id ANY NOT NULL,
  stack_id TEXT NOT NULL,
  owner_address TEXT NOT NULL,
  task_small_id ANY NOT NULL,
  num_compute_units ANY NOT NULL,
  price_per_one_million_compute_units ANY NOT NULL,
  already_computed_units ANY NOT NULL DEFAULT 0,
  in_settle_period INTEGER NOT NULL DEFAULT 0,
  num_total_messages ANY NOT NULL DEFAULT 0,
  is_claimed INTEGER NOT NULL DEFAULT 0,
  is_locked_for_claim INTEGER NOT NULL DEFAULT 0,
  is_confidential INTEGER NOT NULL DEFAULT 0,
  user_refund_amount ANY,
  PRIMARY KEY (selected_node_id, stack_small_id)
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX stacks_by_id ON stacks (stack_small_id);

CREATE TABLE stack_settlement_tickets (
  stack_small_id ANY NOT NULL PRIMARY KEY,
  selected_node_id ANY NOT NULL,
  num_claimed_compute_units ANY NOT NULL,
  requested_attestation_nodes TEXT NOT NULL DEFAULT '[]',
  committed_stack_proofs BLOB NOT NULL DEFAULT x'',
  stack_merkle_leaves BLOB NOT NULL DEFAULT x'',
  dispute_settled_at_epoch ANY,
  already_attested_nodes TEXT NOT NULL DEFAULT '[]',
  is_in_dispute INTEGER NOT NULL DEFAULT 0,
  user_refund_amount ANY NOT NULL DEFAULT 0,
  is_claimed INTEGER NOT NULL DEFAULT 0,
  claim_path TEXT
) STRICT, WITHOUT ROWID;
CREATE INDEX stack_settlement_tickets_claimed_by_node
  ON stack_settlement_tickets (selected_node_id, stack_small_id) WHERE is_claimed = 1;

CREATE TABLE stack_attestation_disputes (
  stack_small_id ANY NOT NULL,
  attestation_node_id ANY NOT NULL,
  attestation_commitment BLOB NOT NULL,
  original_node_id ANY NOT NULL,
  original_commitment BLOB NOT NULL,
  PRIMARY KEY (stack_small_id, attestation_node_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX stack_attestation_disputes_against ON stack_attestation_disputes (original_node_id, stack_small_id);
CREATE INDEX stack_attestation_disputes_own ON stack_attestation_disputes (attestation_node_id, stack_small_id);

-- One row per event source: where it stands and what it has done so far.
CREATE TABLE indexer_cursors (
  source TEXT NOT NULL PRIMARY KEY,
  cursor TEXT,
  applied INTEGER NOT NULL DEFAULT 0,
  duplicate INTEGER NOT NULL DEFAULT 0,
  ignored INTEGER NOT NULL DEFAULT 0,
  unknown INTEGER NOT NULL DEFAULT 0,
  malformed INTEGER NOT NULL DEFAULT 0,
  orphaned INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- Every event ever applied, by txDigest:eventSeq: re-applying one is a no-op.
CREATE TABLE applied_events (
  event_key TEXT NOT NULL PRIMARY KEY
) STRICT, WITHOUT ROWID;
