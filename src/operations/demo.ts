import type { Logger } from 'pino';
import type { DevNetwork } from '../chain/dev/dev-network.ts';
import type { LiveIndexer } from '../indexer/run.ts';
import { compareU64, type U64 } from '../internal/u64.ts';
import type { ReadStore } from '../store/store.ts';
import type { Writes } from './writes.ts';

/**
 * The demo world of `npm start`: on a fresh dev network, three tasks and three peer nodes with stacks of
 * their own; then, whenever the operator's node subscribes to a task, users buy a few stacks from it, so
 * a newcomer sees real-looking data at once. `--no-demo` starts empty.
 */

const TASKS = [
  { role: 0, model_name: 'meta-llama/Llama-3.3-70B-Instruct', security_level: 0 },
  { role: 1, model_name: 'intfloat/multilingual-e5-large-instruct', security_level: 1 },
  { role: 0, model_name: 'Qwen/QwQ-32B', security_level: 2 },
];
const STACK_UNITS = [1_000, 20_000, 250_000];

export interface DemoDeps {
  dev: DevNetwork;
  store: ReadStore;
  writes: Writes;
  indexer: LiveIndexer;
  log: Logger;
}

/** Builds the world when the dev network is new, and starts following the operator's subscriptions. */
export async function startDemo({ dev, store, writes, indexer, log }: DemoDeps): Promise<() => void> {
  const first = await dev.events.readPage(null);
  const fresh = !first.events.some((e) =>
    String((e.raw as { type?: string }).type).endsWith('::db::TaskRegisteredEvent'),
  );
  if (fresh) {
    const taskIds: U64[] = [];
    for (const task of TASKS) {
      const created = await dev.createTask({ ...task, minimum_reputation_score: null, is_public: true });
      if (created.task_small_id !== undefined) taskIds.push(created.task_small_id);
    }
    for (const [i, price] of [800_000, 1_000_000, 1_200_000].entries()) {
      const peer = await dev.createPeerNode({
        subscriptions: taskIds.map((task_small_id) => ({
          task_small_id,
          price_per_one_million_compute_units: price,
        })),
      });
      if (peer.node_small_id === undefined) continue;
      for (const task_small_id of taskIds) {
        await dev.buyStack({
          task_small_id,
          num_compute_units: STACK_UNITS[i]!,
          price_per_one_million_compute_units: 2_000_000,
          selected_node_id: peer.node_small_id,
        });
      }
    }
    log.info(
      { tasks: taskIds.length, peers: 3 },
      'demo world created; subscribe your node to a task to receive stacks',
    );
  }

  // Stacks for the operator's node, once per task it subscribes to.
  let running = false;
  let again = false;
  const seed = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        for (const badge of await writes.badges(true)) {
          const stacks = await store.listStacks(badge.node_small_id);
          for (const sub of await store.listSubscriptions(badge.node_small_id)) {
            if (!sub.valid || stacks.some((s) => compareU64(s.task_small_id, sub.task_small_id) === 0))
              continue;
            const price = BigInt(sub.price_per_one_million_compute_units) * 2n;
            for (const units of STACK_UNITS) {
              await dev.buyStack({
                task_small_id: sub.task_small_id,
                num_compute_units: units,
                price_per_one_million_compute_units: price,
                selected_node_id: badge.node_small_id,
              });
            }
            log.info(
              { task: sub.task_small_id, node: badge.node_small_id },
              'demo users bought stacks from your node',
            );
          }
        }
      } while (again);
    } catch (error) {
      log.warn({ err: error }, 'demo could not buy stacks');
    } finally {
      running = false;
    }
  };
  // React once the indexer has applied new events: the store is what the check reads.
  const stop = indexer.onApplied(() => {
    seed().catch(() => undefined);
  });
  await seed();
  return stop;
}
