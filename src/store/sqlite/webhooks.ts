import type { ClaimedDelivery, WebhookStore } from '../store.ts';
import { attemptOf, deliveryOf, endpointOf } from '../webhook-rows.ts';
import type { SqliteDatabase } from './database.ts';
import { dec } from './u64.ts';

/**
 * The webhook endpoints and their outbox on SQLite (0011-webhooks.sql). The deliveries of node events are
 * written by the trigger on node_events, in the event's transaction. One process per file: a lease here
 * only orders this process's own senders.
 */
export function sqliteWebhooks(db: SqliteDatabase): WebhookStore {
  const statements = () => ({
    insertEndpoint:
      db.writer.prepare(`INSERT INTO webhook_endpoints (url, types, description, secret, created_at)
      VALUES (?, ?, ?, ?, ?) RETURNING *`),
    endpoints: db.reader.prepare('SELECT * FROM webhook_endpoints ORDER BY id'),
    endpoint: db.reader.prepare('SELECT * FROM webhook_endpoints WHERE id = ?'),
    deleteEndpoint: db.writer.prepare('DELETE FROM webhook_endpoints WHERE id = ?'),
    deleteAttempts: db.writer.prepare(
      'DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = ?)',
    ),
    deleteDeliveries: db.writer.prepare('DELETE FROM webhook_deliveries WHERE endpoint_id = ?'),
    enable: db.writer.prepare(`UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL,
      failing_since = NULL WHERE id = ?`),
    insertDelivery:
      db.writer.prepare(`INSERT INTO webhook_deliveries (webhook_id, endpoint_id, type, at, data)
      VALUES (?, ?, ?, ?, ?) RETURNING *`),
    deliveries: db.reader.prepare(`SELECT * FROM webhook_deliveries WHERE endpoint_id = ? AND id < ?
      ORDER BY id DESC LIMIT ?`),
    attempts: db.reader.prepare('SELECT * FROM webhook_attempts WHERE delivery_id = ? ORDER BY n'),
    delivery: db.reader.prepare('SELECT * FROM webhook_deliveries WHERE id = ?'),
    retry: db.writer.prepare(`UPDATE webhook_deliveries SET state = 'pending', step = 0, next_attempt_at = 0,
      finished_at = NULL WHERE id = ? AND state <> 'pending'`),
    leaseEndpoints: db.writer.prepare(`UPDATE webhook_endpoints SET lease_until = ?, lease_owner = ?
      WHERE id IN (SELECT e.id FROM webhook_endpoints e
        WHERE e.disabled_at IS NULL AND (e.lease_until IS NULL OR e.lease_until < ?)
          AND EXISTS (SELECT 1 FROM webhook_deliveries d
            WHERE d.endpoint_id = e.id AND d.state = 'pending' AND d.next_attempt_at <= ?)
        ORDER BY e.id LIMIT ?)
      RETURNING id, url, secret, failing_since`),
    firstDue: db.writer.prepare(`SELECT * FROM webhook_deliveries
      WHERE endpoint_id = ? AND state = 'pending' AND next_attempt_at <= ? ORDER BY id LIMIT 1`),
    insertAttempt:
      db.writer.prepare(`INSERT INTO webhook_attempts (delivery_id, n, at, status, error, duration_ms)
      VALUES (?, (SELECT attempts + 1 FROM webhook_deliveries WHERE id = ?), ?, ?, ?, ?)`),
    updateDelivery:
      db.writer.prepare(`UPDATE webhook_deliveries SET attempts = attempts + 1, state = ?, step = ?,
      next_attempt_at = ?, finished_at = ? WHERE id = ?`),
    updateEndpoint: db.writer.prepare(`UPDATE webhook_endpoints SET failing_since = ?,
      lease_until = CASE WHEN lease_owner = ? THEN NULL ELSE lease_until END,
      lease_owner = CASE WHEN lease_owner = ? THEN NULL ELSE lease_owner END WHERE id = ?`),
    disable: db.writer.prepare(`UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ?
      WHERE id = ? AND disabled_at IS NULL`),
    pruneAttempts: db.writer.prepare(`DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id
      FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < ?)`),
    pruneDeliveries: db.writer.prepare(
      "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < ?",
    ),
    releaseOwner: db.writer.prepare(
      'UPDATE webhook_endpoints SET lease_until = NULL, lease_owner = NULL WHERE lease_owner = ?',
    ),
    releaseAll: db.writer.prepare(
      'UPDATE webhook_endpoints SET lease_until = NULL, lease_owner = NULL WHERE lease_owner IS NOT NULL',
    ),
    // In next_attempt_at order (webhook_deliveries_due): the first pending one of an enabled endpoint.
    nextDue: db.reader.prepare(`SELECT min(t) AS t FROM (
        SELECT (SELECT d.next_attempt_at FROM webhook_deliveries d WHERE d.state = 'pending'
          AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.endpoint_id AND e.disabled_at IS NULL)
          ORDER BY d.next_attempt_at LIMIT 1) AS t
        UNION ALL SELECT min(lease_until) FROM webhook_endpoints WHERE lease_until IS NOT NULL)`),
    stats: db.reader.prepare(`SELECT
        (SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.state = 'pending' AND e.disabled_at IS NULL) AS pending,
        (SELECT min(d.at) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.state = 'pending' AND e.disabled_at IS NULL) AS oldest,
        (SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NOT NULL) AS disabled`),
  });
  let prepared: ReturnType<typeof statements> | undefined;
  const s = () => {
    prepared ??= db.guard(statements);
    return prepared;
  };
  return {
    createWebhookEndpoint: (endpoint) =>
      db.transaction(async () =>
        endpointOf(
          db.guard(() =>
            s().insertEndpoint.get(
              endpoint.url,
              endpoint.types === null ? null : JSON.stringify(endpoint.types),
              endpoint.description,
              endpoint.secret,
              endpoint.created_at,
            ),
          )!,
        ),
      ),
    listWebhookEndpoints: async () => db.guard(() => s().endpoints.all().map(endpointOf)),
    getWebhookEndpoint: async (id) => {
      const row = db.guard(() => s().endpoint.get(id));
      return row ? endpointOf(row) : undefined;
    },
    deleteWebhookEndpoint: (id) =>
      db.transaction(async () =>
        db.guard(() => {
          s().deleteAttempts.run(id);
          s().deleteDeliveries.run(id);
          return Number(s().deleteEndpoint.run(id).changes) > 0;
        }),
      ),
    enableWebhookEndpoint: (id) =>
      db.transaction(async () => db.guard(() => Number(s().enable.run(id).changes) > 0)),
    addWebhookDelivery: (endpointId, d) =>
      db.transaction(async () =>
        deliveryOf(
          db.guard(() => s().insertDelivery.get(d.webhook_id, endpointId, d.type, d.at, d.data))!,
          dec,
        ),
      ),
    listWebhookDeliveries: async (endpointId, page) =>
      db.guard(() =>
        s()
          .deliveries.all(endpointId, page.before ?? Number.MAX_SAFE_INTEGER, page.limit)
          .map((row) => ({
            ...deliveryOf(row, dec),
            attempts_list: s().attempts.all(Number(row.id)).map(attemptOf),
          })),
      ),
    getWebhookDelivery: async (id) => {
      const row = db.guard(() => s().delivery.get(id));
      return row ? deliveryOf(row, dec) : undefined;
    },
    retryWebhookDelivery: (id) =>
      db.transaction(async () => db.guard(() => Number(s().retry.run(id).changes) > 0)),
    claimWebhookDeliveries: (now, limit, leaseUntil, owner) =>
      db.transaction(async () =>
        db.guard(() => {
          const claimed: ClaimedDelivery[] = [];
          for (const endpoint of s().leaseEndpoints.all(leaseUntil, owner, now, now, limit)) {
            const row = s().firstDue.get(Number(endpoint.id), now);
            if (row)
              claimed.push({
                ...deliveryOf(row, dec),
                url: String(endpoint.url),
                secret: String(endpoint.secret),
                failing_since: endpoint.failing_since === null ? null : Number(endpoint.failing_since),
              });
          }
          return claimed.sort((a, b) => a.id - b.id);
        }),
      ),
    recordWebhookAttempt: (delivery, outcome, owner) =>
      db.transaction(async () => {
        db.guard(() => {
          const a = outcome.attempt;
          s().insertAttempt.run(delivery.id, delivery.id, a.at, a.status, a.error, a.duration_ms);
          s().updateDelivery.run(
            outcome.state,
            outcome.step,
            outcome.next_attempt_at,
            outcome.state === 'pending' ? null : a.at,
            delivery.id,
          );
          s().updateEndpoint.run(outcome.failing_since, owner, owner, delivery.endpoint_id);
        });
        if (outcome.disable) {
          const { reason, event } = outcome.disable;
          const changed = db.guard(
            () => Number(s().disable.run(outcome.attempt.at, reason, delivery.endpoint_id).changes) > 0,
          );
          if (changed) db.append([event]);
        }
      }),
    releaseWebhookLeases: (owner) =>
      db.transaction(async () => {
        db.guard(() => (owner === null ? s().releaseAll.run() : s().releaseOwner.run(owner)));
      }),
    pruneWebhookDeliveries: (before) =>
      db.transaction(async () =>
        db.guard(() => {
          s().pruneAttempts.run(before);
          return Number(s().pruneDeliveries.run(before).changes);
        }),
      ),
    nextWebhookDue: async () => {
      const row = db.guard(() => s().nextDue.get());
      return row?.t === null || row?.t === undefined ? null : Number(row.t);
    },
    webhookStats: async () => {
      const row = db.guard(() => s().stats.get())!;
      return {
        pending: Number(row.pending),
        oldest_pending_at: row.oldest === null ? null : Number(row.oldest),
        disabled_endpoints: Number(row.disabled),
      };
    },
  };
}
