-- Reads at full speed while the node works (docs/ARCHITECTURE.md, "The response cache").
--
-- 1. Each stack row keeps its API JSON ready: a stored generated column, recomputed by SQLite whenever the
-- row changes (an insert, usage, a settlement, a claim), so no write path can forget it. A node's stack
-- list is then its rows' json joined, with no per-value decoding. u64 values are exact: INTEGER up to
-- 2^53 - 1 as digits, larger ones stored as 20-digit TEXT with their leading zeros trimmed. The text
-- columns are hex ids and addresses, checked when indexed: nothing to escape. A stored column cannot be
-- added to a table: the table is rebuilt, keeping its columns, key and indexes.
CREATE TABLE stacks_rebuilt (
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
  security_level INTEGER,
  last_usage_at INTEGER,
  fill_ppm INTEGER NOT NULL DEFAULT 0,
  json TEXT GENERATED ALWAYS AS (
    '{"owner_address":"' || owner_address
    || '","stack_small_id":' || CASE WHEN typeof(stack_small_id) = 'text' THEN ltrim(stack_small_id, '0') ELSE stack_small_id END
    || ',"stack_id":"' || stack_id
    || '","task_small_id":' || CASE WHEN typeof(task_small_id) = 'text' THEN ltrim(task_small_id, '0') ELSE task_small_id END
    || ',"selected_node_id":' || CASE WHEN typeof(selected_node_id) = 'text' THEN ltrim(selected_node_id, '0') ELSE selected_node_id END
    || ',"num_compute_units":' || CASE WHEN typeof(num_compute_units) = 'text' THEN ltrim(num_compute_units, '0') ELSE num_compute_units END
    || ',"price_per_one_million_compute_units":' || CASE WHEN typeof(price_per_one_million_compute_units) = 'text' THEN ltrim(price_per_one_million_compute_units, '0') ELSE price_per_one_million_compute_units END
    || ',"already_computed_units":' || CASE WHEN typeof(already_computed_units) = 'text' THEN ltrim(already_computed_units, '0') ELSE already_computed_units END
    || ',"in_settle_period":' || CASE in_settle_period WHEN 0 THEN 'false' ELSE 'true' END
    || ',"num_total_messages":' || CASE WHEN typeof(num_total_messages) = 'text' THEN ltrim(num_total_messages, '0') ELSE num_total_messages END
    || ',"is_claimed":' || CASE is_claimed WHEN 0 THEN 'false' ELSE 'true' END
    || ',"is_locked_for_claim":' || CASE is_locked_for_claim WHEN 0 THEN 'false' ELSE 'true' END
    || ',"is_confidential":' || CASE is_confidential WHEN 0 THEN 'false' ELSE 'true' END
    || ',"user_refund_amount":' || CASE WHEN user_refund_amount IS NULL THEN 'null' WHEN typeof(user_refund_amount) = 'text' THEN ltrim(user_refund_amount, '0') ELSE user_refund_amount END
    || '}'
  ) STORED,
  PRIMARY KEY (selected_node_id, stack_small_id)
) STRICT, WITHOUT ROWID;
INSERT INTO stacks_rebuilt (selected_node_id, stack_small_id, stack_id, owner_address, task_small_id,
    num_compute_units, price_per_one_million_compute_units, already_computed_units, in_settle_period,
    num_total_messages, is_claimed, is_locked_for_claim, is_confidential, user_refund_amount, security_level,
    last_usage_at, fill_ppm)
  SELECT selected_node_id, stack_small_id, stack_id, owner_address, task_small_id, num_compute_units,
    price_per_one_million_compute_units, already_computed_units, in_settle_period, num_total_messages,
    is_claimed, is_locked_for_claim, is_confidential, user_refund_amount, security_level, last_usage_at, fill_ppm
  FROM stacks;
DROP TABLE stacks;
ALTER TABLE stacks_rebuilt RENAME TO stacks;
CREATE UNIQUE INDEX stacks_by_id ON stacks (stack_small_id);
CREATE INDEX stacks_open_by_fill ON stacks (selected_node_id, fill_ppm)
  WHERE in_settle_period = 0 AND is_claimed = 0;
CREATE INDEX stacks_open_by_last_usage ON stacks (selected_node_id, last_usage_at)
  WHERE in_settle_period = 0 AND is_claimed = 0 AND last_usage_at IS NOT NULL;

-- 2. What each cached read depends on, versioned: a topic (the task list; node N's subscriptions, stacks,
-- tickets, disputes, attester rewards; the chain's epoch) gets a new version in the transaction of every
-- change to it, so a cached response is kept until one of its own topics changes, by any process.
CREATE TABLE topic_versions (
  topic TEXT NOT NULL PRIMARY KEY,
  version INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- 3. This store's identity, in the ETags: versions of another store (or of this one rebuilt) never match.
CREATE TABLE store_identity (
  id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
  store_id TEXT NOT NULL
) STRICT;
INSERT INTO store_identity (id, store_id) VALUES (1, lower(hex(randomblob(8))));
