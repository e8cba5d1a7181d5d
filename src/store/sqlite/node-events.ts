import type { StatementSync } from 'node:sqlite';
import type { NodeEventQuery } from '../node-events.ts';
import type { NodeEventStore } from '../store.ts';
import type { SqliteDatabase } from './database.ts';
import { enc, rows } from './u64.ts';

/** The node events of GET /events on SQLite: recorded in the transactions of the changes they report. */
export function sqliteNodeEvents(db: SqliteDatabase): NodeEventStore {
  const { w, r } = db;
  // The newest events of a filter, read backwards by id until enough match (the filter of r.nodeEvents).
  let recent: StatementSync | undefined;
  const recentStatement = () => {
    recent ??= db.reader.prepare(`SELECT min(id) AS id FROM (SELECT id FROM node_events
        WHERE (? IS NULL OR node_small_id IS NULL
          OR node_small_id IN (SELECT CASE WHEN length(value) < 20 THEN CAST(value AS INTEGER) ELSE value END FROM json_each(?))
          OR other_node_small_id IN (SELECT CASE WHEN length(value) < 20 THEN CAST(value AS INTEGER) ELSE value END FROM json_each(?)))
        AND (? IS NULL OR type IN (SELECT value FROM json_each(?)))
      ORDER BY id DESC LIMIT ?)`);
    return recent;
  };
  const nodesParam = (nodes: NodeEventQuery['nodes']) =>
    nodes === null ? null : `[${nodes.map((n) => JSON.stringify(enc(n).toString())).join(',')}]`;
  return {
    scopeNodeEvents: async (nodes) => {
      db.scope = nodes === null ? null : new Set(nodes.map(String));
    },
    appendNodeEvents: (events) => db.transaction(async () => db.append(events)),
    listNodeEvents: async (query) => {
      // Node ids go as a JSON array of decimal strings, matched as the column stores them (statements.ts).
      const nodes = nodesParam(query.nodes);
      const types = query.types === null ? null : JSON.stringify(query.types);
      return db.guard(() =>
        r.nodeEvents.all(query.after, nodes, nodes, nodes, types, types, query.limit).map(rows.nodeEvent),
      );
    },
    recentNodeEventsStart: async (query) => {
      const nodes = nodesParam(query.nodes);
      const types = query.types === null ? null : JSON.stringify(query.types);
      const row = db.guard(() => recentStatement().get(nodes, nodes, nodes, types, types, query.count));
      return row?.id === null || row?.id === undefined ? null : Number(row.id) - 1;
    },
    nodeEventBounds: async () => {
      const row = db.guard(() => r.nodeEventBounds.get());
      return {
        oldest: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
        newest: Number(row?.newest ?? 0),
      };
    },
    pruneNodeEvents: (before, keep) =>
      db.transaction(async () =>
        db.guard(() => {
          // The first event to keep by age: a scan from the oldest that stops there (ids follow time).
          const young = w.firstEventSince.get(before)?.id;
          const newest = Number(w.newestEventId.get()?.id ?? 0);
          const cutoff = Math.max(young === undefined ? newest + 1 : Number(young), newest - keep + 1);
          return Number(w.pruneEvents.run(cutoff).changes);
        }),
      ),
    onNodeEvents: (listener) => db.nodeEvents.on(listener),
  };
}
