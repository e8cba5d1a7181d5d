import { autopilotEvent } from '../node-events.ts';
import type { AutopilotStore } from '../store.ts';
import type { PostgresDatabase } from './database.ts';
import { S } from './statements.ts';
import { enc, params, rows } from './u64.ts';

/** What the autopilot asks PostgreSQL (each one index range: statements.ts), and the actions it records. */
export function postgresAutopilot(db: PostgresDatabase): AutopilotStore {
  return {
    listSettleCandidates: async (node, minFillPpm, idleBefore) =>
      (await db.rows(S.settleCandidates, [enc(node), minFillPpm, idleBefore])).map(rows.openStack),
    oldestUsageAt: async (node) => {
      const [row] = await db.rows(S.oldestUsage, [enc(node)]);
      return row?.at === null || row?.at === undefined ? null : Number(row.at);
    },
    listClaimable: async (node, epoch) =>
      (await db.rows(S.claimable, [enc(node), enc(epoch)])).map(rows.claimable),
    listAttestationRequests: async (node) =>
      (await db.rows(S.requests, [enc(node)])).map(rows.attestationRequest),
    retireAttestationRequests: (node, stacks) =>
      db.op(async () => {
        for (const stack of stacks) await db.rows(S.retireRequests, [enc(node), enc(stack)]);
      }),
    // Each action is recorded with its node event, in one transaction.
    insertAutopilotAction: (action) =>
      db.op(async () => {
        const id = await db.transaction(
          async (client) => {
            const [row] = (await db.exec(client, S.insertAction, params.action(action))).rows;
            await db.appendOn(client, [autopilotEvent(rows.autopilotAction(row!))]);
            return Number(row!.id);
          },
          () => false,
        );
        db.nodeEvents.emit();
        return id;
      }),
    updateAutopilotAction: (id, change) =>
      db.op(async () => {
        const appended = await db.transaction(
          async (client) => {
            const [row] = (await db.exec(client, S.updateAction, params.actionChange(id, change))).rows;
            return row ? db.appendOn(client, [autopilotEvent(rows.autopilotAction(row))]) : false;
          },
          () => false,
        );
        if (appended) db.nodeEvents.emit();
      }),
    listAutopilotActions: async (options) =>
      (await db.rows(options.pending ? S.pendingActions : S.actions, [options.limit])).map(
        rows.autopilotAction,
      ),
    listAutopilotSpending: async (since) => (await db.rows(S.spending, [since])).map(rows.autopilotSpending),
  };
}
