import type { NodeEventStore } from '../store.ts';
import type { PostgresDatabase } from './database.ts';
import { S, type Statement } from './statements.ts';
import { enc, rows } from './u64.ts';

/** The newest events of a filter (the filter of S.nodeEvents), read backwards by id until enough match. */
const RECENT_START: Statement = {
  name: 'node_daemon_recentNodeEventsStart',
  text: `SELECT min(id) AS id FROM (SELECT id FROM node_events
      WHERE ($1::numeric[] IS NULL OR node_small_id IS NULL OR node_small_id = ANY($1) OR other_node_small_id = ANY($1))
        AND ($2::text[] IS NULL OR type = ANY($2))
      ORDER BY id DESC LIMIT $3) recent`,
};

/**
 * The node events of GET /events on PostgreSQL: recorded in the transactions of the changes they report,
 * with gap-free ids in commit order across every process (0004-node-events.sql), and notified at COMMIT.
 */
export function postgresNodeEvents(db: PostgresDatabase): NodeEventStore {
  /** Whether a session LISTENs for other processes' node events (from the first listener on). */
  let listening = false;

  /**
   * LISTEN on a session of its own, reopened with back-off when it drops; each reopening tells the
   * listeners, who read what they may have missed.
   */
  const listen = async (failures: number): Promise<void> => {
    if (db.closing) return;
    try {
      const session = await db.session();
      session.on('notification', () => db.nodeEvents.emit());
      await session.query(`LISTEN ${db.eventsChannel}`);
      if (failures > 0) db.nodeEvents.emit();
      session.once('end', () => {
        if (!db.closing) void listen(1);
      });
    } catch {
      const delay = Math.min(30_000, 500 * 2 ** Math.min(failures, 6));
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
      void listen(failures + 1);
    }
  };

  return {
    scopeNodeEvents: async (nodes) => {
      db.scope = nodes === null ? null : new Set(nodes.map(String));
    },
    appendNodeEvents: (events) =>
      db.op(async () => {
        const appended = await db.transaction(
          (client) => db.appendOn(client, events),
          () => false,
        );
        if (appended) db.nodeEvents.emit();
      }),
    listNodeEvents: async (query) =>
      (
        await db.rows(S.nodeEvents, [
          query.after,
          query.nodes === null ? null : query.nodes.map(enc),
          query.types,
          query.limit,
        ])
      ).map(rows.nodeEvent),
    recentNodeEventsStart: async (query) => {
      const [row] = await db.rows(RECENT_START, [
        query.nodes === null ? null : query.nodes.map(enc),
        query.types,
        query.count,
      ]);
      return row?.id === null || row?.id === undefined ? null : Number(row.id) - 1;
    },
    nodeEventBounds: async () => {
      const [row] = await db.rows(S.nodeEventBounds, []);
      return {
        oldest: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
        newest: Number(row?.newest ?? 0),
      };
    },
    pruneNodeEvents: async (before, keep) => (await db.query(S.pruneEvents, [before, keep])).rowCount ?? 0,
    /**
     * Listeners hear this process's commits at once, and other processes' through LISTEN (opened with the
     * first listener).
     */
    onNodeEvents: (callback) => {
      const off = db.nodeEvents.on(callback);
      if (!listening) {
        listening = true;
        void listen(0);
      }
      return off;
    },
  };
}
