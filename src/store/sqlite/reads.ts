import type { ReadStore, VersionStore } from '../store.ts';
import type { SqliteDatabase } from './database.ts';
import { dec, enc, pageArgs, rows } from './u64.ts';

/**
 * The read model on SQLite, from the reader connection: each read is one statement, answered from an
 * index (store-sqlite.test.ts checks the plans); a node's stack list comes from its kept list
 * (stack-list/).
 */
export function sqliteReads(db: SqliteDatabase): ReadStore & VersionStore {
  const { r } = db;
  let storeId: string | undefined;
  return {
    listTasks: async (page = {}) => db.guard(() => r.tasks.all(...pageArgs(page)).map(rows.task)),
    listSubscriptions: async (node, page = {}) =>
      db.guard(() => r.subscriptions.all(enc(node), ...pageArgs(page)).map(rows.subscription)),
    listStacks: async (node, minFillFraction, page = {}) =>
      db.guard(() =>
        minFillFraction === undefined
          ? r.stacks.all(enc(node), ...pageArgs(page)).map(rows.stack)
          : r.stacksFilled.all(enc(node), minFillFraction, ...pageArgs(page)).map(rows.stack),
      ),
    listStacksJson: async (node, minFillFraction, page, seen) => {
      db.usable();
      return db.stackLists.list(node, minFillFraction, page, seen);
    },
    listClaimedStacks: async (node, page = {}) =>
      db.guard(() => r.claimed.all(enc(node), ...pageArgs(page)).map(rows.ticket)),
    listDisputesAgainst: async (node, page = {}) =>
      db.guard(() => r.disputesAgainst.all(enc(node), ...pageArgs(page)).map(rows.dispute)),
    listDisputesOwn: async (node, page = {}) =>
      db.guard(() => r.disputesOwn.all(enc(node), ...pageArgs(page)).map(rows.dispute)),
    getTask: async (id) => {
      const row = db.guard(() => r.getTask.get(enc(id)));
      return row ? rows.task(row) : undefined;
    },
    getNode: async (id) => {
      const row = db.guard(() => r.getNode.get(enc(id)));
      if (row) {
        return {
          node_small_id: dec(row.node_small_id),
          badge_id: row.badge_id as string,
          sui_address: row.sui_address as string,
        };
      }
      const named = db.guard(() => r.nodeNamed.get(enc(id), enc(id)));
      return named ? { node_small_id: id, badge_id: null, sui_address: null } : undefined;
    },
    getStack: async (id) => {
      const row = db.guard(() => r.getStack.get(enc(id)));
      return row ? rows.stack(row) : undefined;
    },
    getStackTerms: async (id) => {
      const row = db.guard(() => r.stackTerms.get(enc(id)));
      return row ? rows.terms(row) : undefined;
    },
    getSubscription: async (node, task) => {
      const row = db.guard(() => r.getSubscription.get(enc(node), enc(task)));
      return row ? rows.subscription(row) : undefined;
    },
    countEligibleSubscribers: async (task, price, units) => {
      const row = db.guard(() => r.eligibleSubscribers.get(enc(task), enc(price), enc(units)));
      return Number(row?.n ?? 0);
    },
    getTicket: async (id) => {
      const row = db.guard(() => r.getTicket.get(enc(id)));
      return row ? rows.ticket(row) : undefined;
    },
    getChainState: async () => rows.chainState(db.guard(() => r.chainState.get())),
    listLedger: async (node) => db.guard(() => r.ledger.all(enc(node)).map(rows.ledger)),
    listAttesterRewards: async (node) => db.guard(() => r.rewards.all(enc(node)).map(rows.attesterReward)),

    checkBy: 'data version',
    topicVersions: async (names) =>
      db.guard(() => names.map((topic) => Number(r.topicVersion.get(topic)?.version ?? 0))),
    dataVersion: async () => db.dataVersion(),
    storeId: async () => {
      storeId ??= db.guard(() => String(r.storeId.get()?.store_id));
      return storeId;
    },
  };
}
