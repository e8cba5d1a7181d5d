import type { ConditionStore } from '../store.ts';
import type { SqliteDatabase } from './database.ts';

/**
 * The announced conditions on SQLite (0010-node-conditions.sql): a change and its node event in one
 * transaction. A condition starts by an upsert that changes only a row that does not hold, and ends by an
 * update of one that does; the event is recorded only when a row changed.
 */
export function sqliteConditions(db: SqliteDatabase): ConditionStore {
  const statements = () => ({
    start: db.writer.prepare(`INSERT INTO node_conditions AS c (condition, holds, since) VALUES (?, 1, ?)
      ON CONFLICT (condition) DO UPDATE SET holds = 1, since = excluded.since WHERE c.holds = 0
      RETURNING condition`),
    end: db.writer.prepare(
      'UPDATE node_conditions SET holds = 0, since = ? WHERE condition = ? AND holds = 1 RETURNING condition',
    ),
    list: db.reader.prepare('SELECT condition, holds, since FROM node_conditions ORDER BY condition'),
  });
  let prepared: ReturnType<typeof statements> | undefined;
  const s = () => {
    prepared ??= db.guard(statements);
    return prepared;
  };
  return {
    setCondition: (key, holds, event, nowMs) =>
      db.transaction(async () => {
        const changed = db.guard(() =>
          holds ? s().start.get(key, nowMs) !== undefined : s().end.get(nowMs, key) !== undefined,
        );
        if (changed) db.append([event]);
        return changed;
      }),
    listConditions: async () =>
      db.guard(() =>
        s()
          .list.all()
          .map((row) => ({ key: String(row.condition), holds: row.holds === 1, since: Number(row.since) })),
      ),
  };
}
