import { StoreError } from '../errors.ts';
import { IDEMPOTENCY_TTL_MS, type IdempotencyRecord, type IdempotencyStore } from '../store.ts';
import type { PostgresDatabase } from './database.ts';
import { S } from './statements.ts';

/** The writes' Idempotency-Keys on PostgreSQL, shared by every daemon on the database. */
export function postgresIdempotency(db: PostgresDatabase): IdempotencyStore {
  return {
    reserveIdempotencyKey: (key, requestHash, nowMs) => {
      let changed = false;
      return db.op(() =>
        db.transaction(
          async (client): Promise<'reserved' | IdempotencyRecord> => {
            const reserve = () => db.exec(client, S.reserveIdempotency, [key, requestHash, nowMs]);
            // Pipelined: the expiry runs first, then the insert, in one round trip.
            const [expired, inserted] = await Promise.all([
              db.exec(client, S.expireIdempotency, [nowMs - IDEMPOTENCY_TTL_MS]),
              reserve(),
            ]);
            changed = (expired.rowCount ?? 0) > 0;
            // ON CONFLICT waits for a concurrent reservation of the key to commit or roll back. A holder
            // released between the insert and the read is rare: try again, a few times.
            let reserved = inserted.rowCount === 1;
            for (let attempt = 0; !reserved && attempt < 3; attempt += 1) {
              const [row] = (await db.exec(client, S.getIdempotency, [key])).rows;
              if (row) {
                return {
                  request_hash: row.request_hash as string,
                  status: row.status as number,
                  response: (row.response as string | null) ?? null,
                  created_at: Number(row.created_at),
                };
              }
              reserved = (await reserve()).rowCount === 1;
            }
            if (reserved) {
              changed = true;
              return 'reserved';
            }
            throw new StoreError('store_busy', `the Idempotency-Key ${key} keeps changing hands`, true);
          },
          () => changed,
        ),
      );
    },
    // Single statements that also bump the store's version: atomic without BEGIN and COMMIT.
    completeIdempotencyKey: async (key, status, response) => {
      await db.query(S.completeIdempotency, [status, response, key]);
      db.forgetVersion();
    },
    releaseIdempotencyKey: async (key) => {
      await db.query(S.releaseIdempotency, [key]);
      db.forgetVersion();
    },
  };
}
