-- What happened to the nodes, in the operator's terms (GET /events): one row per event, written in the
-- transaction of the change it reports, so the ids are a gap-free sequence in commit order (AUTOINCREMENT
-- never reuses an id, also after old rows are pruned). node_small_id: the node the event is about (null:
-- everyone's, like a new task); other_node_small_id: a second node it concerns (an attester, a disputer).
-- data: the event's JSON, u64 values exact.
CREATE TABLE node_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  type TEXT NOT NULL,
  node_small_id ANY,
  other_node_small_id ANY,
  data TEXT NOT NULL
) STRICT;

-- Tickets that become claimable when an epoch passes, across all nodes: one index range per epoch.
CREATE INDEX stack_settlement_tickets_by_claimable_epoch ON stack_settlement_tickets (claimable_from_epoch)
  WHERE is_claimed = 0 AND is_in_dispute = 0;
