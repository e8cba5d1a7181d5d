-- The same as migrations/sqlite/0005-ready-json-and-topic-versions.sql: each stack row's API JSON kept
-- ready by a stored generated column (u64 NUMERIC as its exact digits), topic versions for the response
-- cache, and this store's identity for the ETags.
ALTER TABLE stacks ADD COLUMN json text GENERATED ALWAYS AS (
  '{"owner_address":"' || owner_address
  || '","stack_small_id":' || stack_small_id::numeric::text
  || ',"stack_id":"' || stack_id
  || '","task_small_id":' || task_small_id::numeric::text
  || ',"selected_node_id":' || selected_node_id::numeric::text
  || ',"num_compute_units":' || num_compute_units::numeric::text
  || ',"price_per_one_million_compute_units":' || price_per_one_million_compute_units::numeric::text
  || ',"already_computed_units":' || already_computed_units::numeric::text
  || ',"in_settle_period":' || CASE WHEN in_settle_period THEN 'true' ELSE 'false' END
  || ',"num_total_messages":' || num_total_messages::numeric::text
  || ',"is_claimed":' || CASE WHEN is_claimed THEN 'true' ELSE 'false' END
  || ',"is_locked_for_claim":' || CASE WHEN is_locked_for_claim THEN 'true' ELSE 'false' END
  || ',"is_confidential":' || CASE WHEN is_confidential THEN 'true' ELSE 'false' END
  || ',"user_refund_amount":' || coalesce(user_refund_amount::numeric::text, 'null')
  || '}'
) STORED;

CREATE TABLE topic_versions (
  topic TEXT NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL
);

CREATE TABLE store_identity (
  id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
  store_id TEXT NOT NULL
);
INSERT INTO store_identity (id, store_id) VALUES (1, substr(md5(random()::text || clock_timestamp()::text), 1, 16));
