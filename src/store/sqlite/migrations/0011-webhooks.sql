-- Signed webhooks (docs/WEBHOOKS.md). The operator's endpoints; an outbox of deliveries, one per event and
-- endpoint, written by a trigger in the transaction that inserts the event (so no path that records a node
-- event can forget its deliveries, and a rolled-back event has none); each delivery's attempts.
-- types: a JSON array of event types, NULL for every type. Times are ms since the epoch.
CREATE TABLE webhook_endpoints (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  url TEXT NOT NULL,
  types TEXT,
  description TEXT NOT NULL DEFAULT '',
  secret TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  disabled_at INTEGER,
  disabled_reason TEXT,
  failing_since INTEGER,
  -- One delivery in flight per endpoint, across daemons: the lease of the one sending to it.
  lease_until INTEGER,
  lease_owner TEXT
) STRICT;

-- webhook_id: the Standard Webhooks message id, the same on every attempt. event_id: the node event it
-- carries (NULL: a test). The event's fields are copied, so pruning old events loses no pending delivery.
-- state: pending, delivered or failed; step: the back-off schedule's position (a replay starts it over).
CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_id TEXT NOT NULL,
  endpoint_id INTEGER NOT NULL,
  event_id INTEGER,
  type TEXT NOT NULL,
  at INTEGER NOT NULL,
  node_small_id ANY,
  data TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  attempts INTEGER NOT NULL DEFAULT 0,
  step INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  finished_at INTEGER
) STRICT;
CREATE UNIQUE INDEX webhook_deliveries_by_webhook_id ON webhook_deliveries (webhook_id);
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

CREATE TABLE webhook_attempts (
  delivery_id INTEGER NOT NULL,
  n INTEGER NOT NULL,
  at INTEGER NOT NULL,
  status INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  PRIMARY KEY (delivery_id, n)
) STRICT;

CREATE TRIGGER node_events_webhook_deliveries AFTER INSERT ON node_events
BEGIN
  INSERT INTO webhook_deliveries (webhook_id, endpoint_id, event_id, type, at, node_small_id, data)
  SELECT 'msg_' || lower(hex(randomblob(16))), e.id, NEW.id, NEW.type, NEW.at, NEW.node_small_id, NEW.data
  FROM webhook_endpoints e
  WHERE e.disabled_at IS NULL
    AND (e.types IS NULL OR EXISTS (SELECT 1 FROM json_each(e.types) WHERE value = NEW.type))
  ORDER BY e.id;
END;
