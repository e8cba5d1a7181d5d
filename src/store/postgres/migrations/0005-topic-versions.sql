-- The same as migrations/sqlite/0005-topic-versions.sql: topic versions for the response cache, and this
-- store's identity for the ETags.
CREATE TABLE topic_versions (
  topic TEXT NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL
);

CREATE TABLE store_identity (
  id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
  store_id TEXT NOT NULL
);
INSERT INTO store_identity (id, store_id) VALUES (1, substr(md5(random()::text || clock_timestamp()::text), 1, 16));
