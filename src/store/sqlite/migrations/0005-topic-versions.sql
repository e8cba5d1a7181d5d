-- Reads at full speed while the node works (docs/ARCHITECTURE.md, "The response cache").
--
-- 1. What each cached read depends on, versioned: a topic (the task list; node N's subscriptions, stacks,
-- tickets, disputes, attester rewards; the chain's epoch) gets a new version in the transaction of every
-- change to it, so a cached response is kept until one of its own topics changes, by any process.
CREATE TABLE topic_versions (
  topic TEXT NOT NULL PRIMARY KEY,
  version INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- 2. This store's identity, in the ETags: versions of another store (or of this one rebuilt) never match.
CREATE TABLE store_identity (
  id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
  store_id TEXT NOT NULL
) STRICT;
INSERT INTO store_identity (id, store_id) VALUES (1, lower(hex(randomblob(8))));
