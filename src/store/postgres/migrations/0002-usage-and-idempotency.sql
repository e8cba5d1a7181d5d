-- The running hash of the requests a node served (or, as an attester, re-ran) for a stack: the proofs
-- of try-settle and of attestations are built from it. One row per stack this daemon has a record of.
CREATE TABLE stack_hashes (
  stack_small_id u64 NOT NULL PRIMARY KEY,
  total_hash BYTEA NOT NULL,
  num_requests u64 NOT NULL DEFAULT 0
);

-- Results of writes by Idempotency-Key, kept 24 hours: the same key and body answer the first result
-- without a second submission. A row with status 0 is a submission whose outcome was never recorded.
CREATE TABLE idempotency_keys (
  key TEXT COLLATE "C" NOT NULL PRIMARY KEY,
  request_hash TEXT NOT NULL,
  status INTEGER NOT NULL,
  response TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
