import { autopilotEvent } from '../node-events.ts';
import type { AutopilotStore } from '../store.ts';
import type { SqliteDatabase } from './database.ts';
import { enc, params, rows } from './u64.ts';

/** What the autopilot asks SQLite (each one index range: statements.ts), and the actions it records. */
export function sqliteAutopilot(db: SqliteDatabase): AutopilotStore {
  const { w, r } = db;
  return {
    listSettleCandidates: async (node, minFillPpm, idleBefore) =>
      db.guard(() => r.settleCandidates.all(enc(node), minFillPpm, idleBefore).map(rows.openStack)),
    oldestUsageAt: async (node) => {
      const at = db.guard(() => r.oldestUsage.get(enc(node)))?.at;
      return at === null || at === undefined ? null : Number(at);
    },
    listClaimable: async (node, epoch) =>
      db.guard(() => r.claimable.all(enc(node), enc(epoch)).map(rows.claimable)),
    listAttestationRequests: async (node) =>
      db.guard(() => r.requests.all(enc(node)).map(rows.attestationRequest)),
    retireAttestationRequests: (node, stacks) =>
      db.transaction(async () =>
        db.guard(() => {
          for (const stack of stacks) w.retireRequests.run(enc(node), enc(stack));
        }),
      ),
    // Each action is recorded with its node event, in one transaction.
    insertAutopilotAction: (action) =>
      db.transaction(async () =>
        db.guard(() => {
          const row = w.insertAction.get(...params.action(action))!;
          db.append([autopilotEvent(rows.autopilotAction(row))]);
          return Number(row.id);
        }),
      ),
    updateAutopilotAction: (id, change) =>
      db.transaction(async () => {
        const row = db.guard(() => w.updateAction.get(...params.actionChange(id, change)));
        if (row) db.append([autopilotEvent(rows.autopilotAction(row))]);
      }),
    listAutopilotActions: async (options) => {
      const statement = options.pending ? r.pendingActions : r.actions;
      return db.guard(() => statement.all(options.limit).map(rows.autopilotAction));
    },
    listAutopilotSpending: async (since) => db.guard(() => r.spending.all(since).map(rows.autopilotSpending)),
  };
}
