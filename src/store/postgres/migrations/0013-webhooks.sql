-- Signed webhooks; the same tables as sqlite/migrations/0011-webhooks.sql. The deliveries of a statement's
-- node events are written by one statement-level trigger, in the transaction that inserts them.
CREATE TABLE webhook_endpoints (
  id BIGSERIAL PRIMARY KEY,
  url TEXT NOT NULL,
  types TEXT[],
  description TEXT NOT NULL DEFAULT '',
  secret TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  disabled_at BIGINT,
  disabled_reason TEXT,
  failing_since BIGINT,
  lease_until BIGINT,
  lease_owner TEXT
);

CREATE TABLE webhook_deliveries (
  id BIGSERIAL PRIMARY KEY,
  webhook_id TEXT NOT NULL,
  endpoint_id BIGINT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id BIGINT,
  type TEXT NOT NULL,
  at BIGINT NOT NULL,
  node_small_id u64,
  data TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  attempts INTEGER NOT NULL DEFAULT 0,
  step INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL DEFAULT 0,
  finished_at BIGINT
);
CREATE UNIQUE INDEX webhook_deliveries_by_webhook_id ON webhook_deliveries (webhook_id);
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

CREATE TABLE webhook_attempts (
  delivery_id BIGINT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  n INTEGER NOT NULL,
  at BIGINT NOT NULL,
  status INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  PRIMARY KEY (delivery_id, n)
);

-- Unqualified names: the function runs with the session's search path, the store's schema.
CREATE FUNCTION webhook_deliveries_of_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_deliveries (webhook_id, endpoint_id, event_id, type, at, node_small_id, data)
  SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, n.id, n.type, n.at, n.node_small_id, n.data
  FROM new_events n JOIN webhook_endpoints e
    ON e.disabled_at IS NULL AND (e.types IS NULL OR n.type = ANY (e.types))
  ORDER BY n.id, e.id;
  RETURN NULL;
END
$$;
CREATE TRIGGER node_events_webhook_deliveries AFTER INSERT ON node_events
  REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_of_events();
