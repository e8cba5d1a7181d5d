import type { Store } from '../../src/store/store.ts';

/**
 * One task and `count` stacks of one node (small ids 1 to count), in one indexer transaction: the store of a
 * probe that measures usage reports on stacks it owns (report-floor-server.ts, kept-list-probe.ts).
 */
export async function seedNodeStacks(
  store: Store,
  count: number,
  stack: { node: number; units: number; price: number; model: string },
): Promise<void> {
  await store.indexerTransaction(async (tx) => {
    await tx.putTask({
      task_small_id: 1,
      task_id: `0x${'1'.padStart(64, '0')}`,
      role: 0,
      model_name: stack.model,
      security_level: 0,
      minimum_reputation_score: null,
    });
    for (let id = 1; id <= count; id++) {
      await tx.putStack({
        stack_small_id: id,
        stack_id: `0x${String(id).padStart(64, '0')}`,
        owner_address: `0x${'ab'.repeat(32)}`,
        task_small_id: 1,
        selected_node_id: stack.node,
        num_compute_units: stack.units,
        price_per_one_million_compute_units: stack.price,
      });
    }
  });
}
