import type { ClaimedDelivery, WebhookStore } from '../store.ts';
import { attemptOf, deliveryOf, endpointOf } from '../webhook-rows.ts';
import type { PostgresDatabase } from './database.ts';
import type { Statement } from './statements.ts';
import { dec } from './u64.ts';

function named(texts: Record<string, string>): Record<string, Statement> {
  const out: Record<string, Statement> = {};
  for (const [key, text] of Object.entries(texts)) out[key] = { name: `node_daemon_webhooks_${key}`, text };
  return out;
}

const S = named({
  insertEndpoint: `INSERT INTO webhook_endpoints (url, types, description, secret, created_at)
    VALUES ($1, $2::text[], $3, $4, $5) RETURNING *`,
  endpoints: 'SELECT * FROM webhook_endpoints ORDER BY id',
  endpoint: 'SELECT * FROM webhook_endpoints WHERE id = $1',
  deleteEndpoint: 'DELETE FROM webhook_endpoints WHERE id = $1',
  enable: `UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL
    WHERE id = $1`,
  insertDelivery: `INSERT INTO webhook_deliveries (webhook_id, endpoint_id, type, at, data)
    VALUES ($1, $2, $3, $4, $5) RETURNING *`,
  deliveries: `SELECT d.*, coalesce((SELECT json_agg(a ORDER BY a.n) FROM webhook_attempts a WHERE a.delivery_id = d.id),
      '[]') AS attempts_list
    FROM webhook_deliveries d WHERE endpoint_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
  delivery: 'SELECT * FROM webhook_deliveries WHERE id = $1',
  retry: `UPDATE webhook_deliveries SET state = 'pending', step = 0, next_attempt_at = 0, finished_at = NULL
    WHERE id = $1 AND state <> 'pending'`,
  // The endpoints' rows are the leases: a daemon skips those another is leasing (SKIP LOCKED), and one
  // whose lease committed meanwhile fails the re-check of lease_until, so two never lease one endpoint.
  leaseEndpoints: `WITH picked AS (
      SELECT e.id FROM webhook_endpoints e
      WHERE e.disabled_at IS NULL AND (e.lease_until IS NULL OR e.lease_until < $1)
        AND EXISTS (SELECT 1 FROM webhook_deliveries d
          WHERE d.endpoint_id = e.id AND d.state = 'pending' AND d.next_attempt_at <= $1)
      ORDER BY e.id LIMIT $2 FOR UPDATE SKIP LOCKED)
    UPDATE webhook_endpoints e SET lease_until = $3, lease_owner = $4 FROM picked WHERE e.id = picked.id
    RETURNING e.id, e.url, e.secret, e.failing_since`,
  firstDue: `SELECT DISTINCT ON (endpoint_id) * FROM webhook_deliveries
    WHERE endpoint_id = ANY ($1::bigint[]) AND state = 'pending' AND next_attempt_at <= $2
    ORDER BY endpoint_id, id`,
  insertAttempt: `INSERT INTO webhook_attempts (delivery_id, n, at, status, error, duration_ms)
    VALUES ($1, (SELECT attempts + 1 FROM webhook_deliveries WHERE id = $1), $2, $3, $4, $5)`,
  updateDelivery: `UPDATE webhook_deliveries SET attempts = attempts + 1, state = $1, step = $2,
    next_attempt_at = $3, finished_at = $4 WHERE id = $5`,
  updateEndpoint: `UPDATE webhook_endpoints SET failing_since = $1,
    lease_until = CASE WHEN lease_owner = $2 THEN NULL ELSE lease_until END,
    lease_owner = CASE WHEN lease_owner = $2 THEN NULL ELSE lease_owner END WHERE id = $3`,
  disable: `UPDATE webhook_endpoints SET disabled_at = $1, disabled_reason = $2
    WHERE id = $3 AND disabled_at IS NULL RETURNING id`,
  prune: "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < $1",
  releaseOwner: 'UPDATE webhook_endpoints SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = $1',
  releaseAll: `UPDATE webhook_endpoints SET lease_until = NULL, lease_owner = NULL
    WHERE lease_owner IS NOT NULL`,
  nextDue: `SELECT least(
      (SELECT d.next_attempt_at FROM webhook_deliveries d WHERE d.state = 'pending'
        AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.endpoint_id AND e.disabled_at IS NULL)
        ORDER BY d.next_attempt_at LIMIT 1),
      (SELECT min(lease_until) FROM webhook_endpoints)) AS t`,
  stats: `SELECT
      (SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.state = 'pending' AND e.disabled_at IS NULL) AS pending,
      (SELECT min(d.at) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.state = 'pending' AND e.disabled_at IS NULL) AS oldest,
      (SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NOT NULL) AS disabled`,
}) as Record<
  | 'insertEndpoint'
  | 'endpoints'
  | 'endpoint'
  | 'deleteEndpoint'
  | 'enable'
  | 'insertDelivery'
  | 'deliveries'
  | 'delivery'
  | 'retry'
  | 'leaseEndpoints'
  | 'firstDue'
  | 'insertAttempt'
  | 'updateDelivery'
  | 'updateEndpoint'
  | 'disable'
  | 'prune'
  | 'releaseOwner'
  | 'releaseAll'
  | 'nextDue'
  | 'stats',
  Statement
>;

const NO_CHANGE = () => false;

/**
 * The webhook endpoints and their outbox on PostgreSQL (0013-webhooks.sql): the deliveries of node events
 * are written by the statement trigger on node_events, in the event's transaction. None of these writes
 * moves a cached read's version.
 */
export function postgresWebhooks(db: PostgresDatabase): WebhookStore {
  const one = async (statement: Statement, values: unknown[]) => (await db.rows(statement, values))[0];
  return {
    createWebhookEndpoint: async (e) =>
      endpointOf((await one(S.insertEndpoint, [e.url, e.types, e.description, e.secret, e.created_at]))!),
    listWebhookEndpoints: async () => (await db.rows(S.endpoints, [])).map(endpointOf),
    getWebhookEndpoint: async (id) => {
      const row = await one(S.endpoint, [id]);
      return row ? endpointOf(row) : undefined;
    },
    deleteWebhookEndpoint: async (id) => ((await db.query(S.deleteEndpoint, [id])).rowCount ?? 0) > 0,
    enableWebhookEndpoint: async (id) => ((await db.query(S.enable, [id])).rowCount ?? 0) > 0,
    addWebhookDelivery: async (endpointId, d) =>
      deliveryOf((await one(S.insertDelivery, [d.webhook_id, endpointId, d.type, d.at, d.data]))!, dec),
    listWebhookDeliveries: async (endpointId, page) =>
      (await db.rows(S.deliveries, [endpointId, page.before ?? Number.MAX_SAFE_INTEGER, page.limit])).map(
        (row) => ({
          ...deliveryOf(row, dec),
          attempts_list: (row.attempts_list as Record<string, unknown>[]).map(attemptOf),
        }),
      ),
    getWebhookDelivery: async (id) => {
      const row = await one(S.delivery, [id]);
      return row ? deliveryOf(row, dec) : undefined;
    },
    retryWebhookDelivery: async (id) => ((await db.query(S.retry, [id])).rowCount ?? 0) > 0,
    claimWebhookDeliveries: (now, limit, leaseUntil, owner) =>
      db.op(() =>
        db.transaction(async (client) => {
          const leased = (await db.exec(client, S.leaseEndpoints, [now, limit, leaseUntil, owner])).rows;
          if (leased.length === 0) return [];
          const where = new Map(leased.map((e) => [Number(e.id), e]));
          const due = (await db.exec(client, S.firstDue, [[...where.keys()], now])).rows;
          const claimed: ClaimedDelivery[] = due.map((row) => {
            const endpoint = where.get(Number(row.endpoint_id))!;
            return {
              ...deliveryOf(row, dec),
              url: String(endpoint.url),
              secret: String(endpoint.secret),
              failing_since: endpoint.failing_since === null ? null : Number(endpoint.failing_since),
            };
          });
          return claimed.sort((a, b) => a.id - b.id);
        }, NO_CHANGE),
      ),
    recordWebhookAttempt: (delivery, outcome, owner) =>
      db.op(async () => {
        const disabled = await db.transaction(async (client) => {
          const a = outcome.attempt;
          await db.exec(client, S.insertAttempt, [delivery.id, a.at, a.status, a.error, a.duration_ms]);
          await db.exec(client, S.updateDelivery, [
            outcome.state,
            outcome.step,
            outcome.next_attempt_at,
            outcome.state === 'pending' ? null : a.at,
            delivery.id,
          ]);
          await db.exec(client, S.updateEndpoint, [outcome.failing_since, owner, delivery.endpoint_id]);
          if (!outcome.disable) return false;
          const { rowCount } = await db.exec(client, S.disable, [
            a.at,
            outcome.disable.reason,
            delivery.endpoint_id,
          ]);
          return rowCount ? db.appendOn(client, [outcome.disable.event]) : false;
        }, NO_CHANGE);
        if (disabled) db.nodeEvents.emit();
      }),
    releaseWebhookLeases: async (owner) => {
      await (owner === null ? db.query(S.releaseAll, []) : db.query(S.releaseOwner, [owner]));
    },
    pruneWebhookDeliveries: async (before) => (await db.query(S.prune, [before])).rowCount ?? 0,
    nextWebhookDue: async () => {
      const row = await one(S.nextDue, []);
      return row?.t === null || row?.t === undefined ? null : Number(row.t);
    },
    webhookStats: async () => {
      const row = (await one(S.stats, []))!;
      return {
        pending: Number(row.pending),
        oldest_pending_at: row.oldest === null ? null : Number(row.oldest),
        disabled_endpoints: Number(row.disabled),
      };
    },
  };
}
