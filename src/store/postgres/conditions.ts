import type { ConditionStore } from '../store.ts';
import type { PostgresDatabase } from './database.ts';
import type { Statement } from './statements.ts';

/**
 * The announced conditions on PostgreSQL (0012-node-conditions.sql): a change and its node event in one
 * transaction. The row's lock orders two daemons that see the same change: the second finds it made and
 * records nothing.
 */
const START: Statement = {
  name: 'node_daemon_startCondition',
  text: `INSERT INTO node_conditions AS c (condition, holds, since) VALUES ($1, true, $2)
    ON CONFLICT (condition) DO UPDATE SET holds = true, since = excluded.since WHERE NOT c.holds
    RETURNING condition`,
};
const END: Statement = {
  name: 'node_daemon_endCondition',
  text: 'UPDATE node_conditions SET holds = false, since = $2 WHERE condition = $1 AND holds RETURNING condition',
};
const LIST: Statement = {
  name: 'node_daemon_listConditions',
  text: 'SELECT condition, holds, since FROM node_conditions ORDER BY condition',
};

export function postgresConditions(db: PostgresDatabase): ConditionStore {
  return {
    setCondition: (key, holds, event, nowMs) =>
      db.op(async () => {
        const changed = await db.transaction(
          async (client) => {
            const { rowCount } = await db.exec(client, holds ? START : END, [key, nowMs]);
            if (!rowCount) return false;
            return db.appendOn(client, [event]);
          },
          () => false,
        );
        if (changed) db.nodeEvents.emit();
        return changed;
      }),
    listConditions: async () =>
      (await db.rows(LIST, [])).map((row) => ({
        key: String(row.condition),
        holds: row.holds === true,
        since: Number(row.since),
      })),
  };
}
