import type { ReadStore, VersionStore } from '../store.ts';
import type { PostgresDatabase } from './database.ts';
import { S, TOPIC_VERSIONS_IN } from './statements.ts';
import { dec, enc, pageArgs, rows } from './u64.ts';

/**
 * The read model on PostgreSQL: each read one named statement on any pooled connection, answered from an
 * index (store-postgres.test.ts checks the plans); a node's stack list comes from its kept list
 * (stack-list/, stack-source.ts).
 */
export function postgresReads(db: PostgresDatabase): ReadStore & VersionStore {
  let storeId: Promise<string> | undefined;
  /** The topics asked for in this event-loop turn, and their versions once read (topicVersions). */
  let batch: { names: Set<string>; found: Promise<Map<string, number>> } | undefined;
  return {
    listTasks: async (page = {}) => (await db.rows(S.tasks, pageArgs(page))).map(rows.task),
    listSubscriptions: async (node, page = {}) =>
      (await db.rows(S.subscriptions, [enc(node), ...pageArgs(page)])).map(rows.subscription),
    listStacks: async (node, minFillFraction, page = {}) => {
      const found =
        minFillFraction === undefined
          ? await db.rows(S.stacks, [enc(node), ...pageArgs(page)])
          : await db.rows(S.stacksFilled, [enc(node), minFillFraction, ...pageArgs(page)]);
      return found.map(rows.stack);
    },
    listStacksJson: (node, minFillFraction, page, seen) =>
      db.op(() => db.stackLists.list(node, minFillFraction, page, seen)),
    listClaimedStacks: async (node, page = {}) =>
      (await db.rows(S.claimed, [enc(node), ...pageArgs(page)])).map(rows.ticket),
    listDisputesAgainst: async (node, page = {}) =>
      (await db.rows(S.disputesAgainst, [enc(node), ...pageArgs(page)])).map(rows.dispute),
    listDisputesOwn: async (node, page = {}) =>
      (await db.rows(S.disputesOwn, [enc(node), ...pageArgs(page)])).map(rows.dispute),
    getTask: async (id) => {
      const [row] = await db.rows(S.getTask, [enc(id)]);
      return row ? rows.task(row) : undefined;
    },
    getNode: async (id) => {
      const [row] = await db.rows(S.getNode, [enc(id)]);
      if (row) {
        return {
          node_small_id: dec(row.node_small_id),
          badge_id: row.badge_id as string,
          sui_address: row.sui_address as string,
        };
      }
      const [named] = await db.rows(S.nodeNamed, [enc(id)]);
      return named ? { node_small_id: id, badge_id: null, sui_address: null } : undefined;
    },
    getStack: async (id) => {
      const [row] = await db.rows(S.getStack, [enc(id)]);
      return row ? rows.stack(row) : undefined;
    },
    getStackTerms: async (id) => {
      const [row] = await db.rows(S.stackTerms, [enc(id)]);
      return row ? rows.terms(row) : undefined;
    },
    getSubscription: async (node, task) => {
      const [row] = await db.rows(S.getSubscription, [enc(node), enc(task)]);
      return row ? rows.subscription(row) : undefined;
    },
    countEligibleSubscribers: async (task, price, units) => {
      const [row] = await db.rows(S.eligibleSubscribers, [enc(task), enc(price), enc(units)]);
      return Number(row?.n ?? 0);
    },
    getTicket: async (id) => {
      const [row] = await db.rows(S.getTicket, [enc(id)]);
      return row ? rows.ticket(row) : undefined;
    },
    getChainState: async () => {
      const [row] = await db.rows(S.chainState, []);
      return rows.chainState(row);
    },
    listLedger: async (node) => (await db.rows(S.ledger, [enc(node)])).map(rows.ledger),
    listAttesterRewards: async (node) => (await db.rows(S.rewards, [enc(node)])).map(rows.attesterReward),

    checkBy: 'topics',
    /**
     * Every topic asked for in one event-loop turn is read with one statement, sent after the turn's I/O
     * (setImmediate): under 50 readers that is one round trip a turn instead of one a request. The batch is
     * closed before its statement is sent, so a caller is never answered by a read that began before it
     * asked (the versions are read after the call, as the response cache needs).
     */
    topicVersions: (names) => {
      let current = batch;
      if (current === undefined) {
        const asked = new Set<string>();
        const found = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
          if (batch?.names === asked) batch = undefined;
          const names = [...asked];
          if (names.length === 0) return new Map<string, number>();
          const read =
            names.length <= TOPIC_VERSIONS_IN.length
              ? await db.rows(TOPIC_VERSIONS_IN[names.length - 1]!, names)
              : await db.rows(S.topicVersions, [names]);
          return new Map(read.map((r) => [r.topic as string, Number(r.version)]));
        });
        current = { names: asked, found };
        batch = current;
      }
      for (const name of names) current.names.add(name);
      return current.found.then((found) => names.map((name) => found.get(name) ?? 0));
    },
    dataVersion: () => db.dataVersion(),
    storeId: async () => {
      storeId ??= db.rows(S.storeId, []).then(([row]) => String(row?.store_id));
      return storeId;
    },
  };
}
