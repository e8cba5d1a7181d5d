import { IDEMPOTENCY_TTL_MS, type IdempotencyStore } from '../store.ts';
import type { SqliteDatabase } from './database.ts';

/** The writes' Idempotency-Keys on SQLite: each reservation a transaction of its own on the writer. */
export function sqliteIdempotency(db: SqliteDatabase): IdempotencyStore {
  const { w } = db;
  return {
    reserveIdempotencyKey: (key, requestHash, nowMs) =>
      db.transaction(async () =>
        db.guard(() => {
          w.expireIdempotency.run(nowMs - IDEMPOTENCY_TTL_MS);
          const row = w.getIdempotency.get(key);
          if (row) {
            return {
              request_hash: row.request_hash as string,
              status: row.status as number,
              response: (row.response as string | null) ?? null,
              created_at: row.created_at as number,
            };
          }
          w.reserveIdempotency.run(key, requestHash, nowMs);
          return 'reserved' as const;
        }),
      ),
    completeIdempotencyKey: (key, status, response) =>
      db.transaction(async () => {
        db.guard(() => w.completeIdempotency.run(status, response, key));
      }),
    releaseIdempotencyKey: (key) =>
      db.transaction(async () => {
        db.guard(() => w.releaseIdempotency.run(key));
      }),
  };
}
