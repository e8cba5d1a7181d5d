import { createHash } from 'node:crypto';
import { statementError } from '../errors.ts';
import type { Coordination } from '../store.ts';
import { ignore, type PostgresDatabase } from './database.ts';

/** How often a lease's session is pinged, so a connection that silently died is noticed. */
const LEASE_HEARTBEAT_MS = 5000;

/** The session advisory-lock key of a lease or lock name: the first 8 bytes of its sha256, signed. */
function advisoryKey(name: string): string {
  return createHash('sha256').update(`node-daemon ${name}`).digest().readBigInt64BE(0).toString();
}

/**
 * Leases and locks among the daemons that share the database: session advisory locks, each on a
 * connection of its own (PostgresDatabase.session), so a process that dies frees its locks at once.
 */
export function postgresCoordination(db: PostgresDatabase): Coordination {
  return {
    tryLease: async (name) => {
      const client = await db.session();
      let held: boolean;
      try {
        const { rows } = await client.query<{ held: boolean }>(
          `SELECT pg_try_advisory_lock(${advisoryKey(db.lockName(name))}) AS held`,
        );
        held = rows[0]?.held === true;
      } catch (error) {
        await client.end().catch(ignore);
        throw statementError(error);
      }
      if (!held) {
        await client.end().catch(ignore);
        return undefined;
      }
      let released = false;
      const heartbeat = setInterval(() => {
        client.query('SELECT 1').catch(() => client.end().catch(ignore));
      }, LEASE_HEARTBEAT_MS);
      heartbeat.unref();
      const lost = new Promise<void>((resolve) => {
        const gone = () => {
          clearInterval(heartbeat);
          if (!released) resolve();
        };
        client.once('end', gone);
        client.once('error', gone);
      });
      return {
        lost,
        release: async () => {
          released = true;
          clearInterval(heartbeat);
          // Ending the session releases its advisory locks.
          await client.end().catch(ignore);
        },
      };
    },
    withLock: async (name, fn) => {
      const client = await db.session();
      try {
        try {
          await client.query(`SELECT pg_advisory_lock(${advisoryKey(db.lockName(name))})`);
        } catch (error) {
          throw statementError(error);
        }
        return await fn();
      } finally {
        await client.end().catch(ignore);
      }
    },
  };
}
