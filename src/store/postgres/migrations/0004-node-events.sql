-- What happened to the nodes (GET /events); the same table as migrations/sqlite/0004-node-events.sql.
-- Ids come from one counter row, taken with a row lock in the transaction that writes the events: two
-- transactions cannot interleave their ids, so ids are gap-free and in commit order, which a sequence
-- does not give (a reader could see id 11 committed before id 10, and a client resuming after 11 would
-- miss 10). Every daemon on the database streams the same ids in the same order.
CREATE TABLE node_events (
  id BIGINT PRIMARY KEY,
  at BIGINT NOT NULL,
  type TEXT NOT NULL,
  node_small_id u64,
  other_node_small_id u64,
  data TEXT NOT NULL
);
CREATE TABLE node_event_counter (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last BIGINT NOT NULL
);
INSERT INTO node_event_counter (id, last) VALUES (1, 0);

CREATE INDEX stack_settlement_tickets_by_claimable_epoch ON stack_settlement_tickets (claimable_from_epoch)
  WHERE NOT is_claimed AND NOT is_in_dispute;
