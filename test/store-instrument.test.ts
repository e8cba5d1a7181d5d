import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMetrics } from '../src/internal/metrics.ts';
import { instrumentStore } from '../src/store/instrument.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { tempDir } from './helpers/tmp.ts';

/** node_daemon_store_query_duration_seconds_count, by query label. */
async function counts(metrics: ReturnType<typeof createMetrics>): Promise<Map<string, number>> {
  const { values } = await metrics.storeQueryDuration.get();
  return new Map(
    values
      .filter((v) => v.metricName?.endsWith('_count'))
      .map((v) => [String(v.labels.query), v.value] as const),
  );
}

describe('the instrumented store', () => {
  it('times each call by name, an indexer transaction as a whole, and passes results and failures through', async () => {
    const tmp = tempDir();
    const metrics = createMetrics();
    const store = instrumentStore(new SqliteStore({ dataDir: tmp.dir }), metrics);
    try {
      const result = await store.indexerTransaction(async (tx) => {
        await tx.putTask({
          task_small_id: 1,
          task_id: `0x${'01'.repeat(32)}`,
          role: 0,
          model_name: 'llama',
          security_level: 0,
          minimum_reputation_score: null,
        });
        await tx.putNode(1, `0x${'02'.repeat(32)}`, `0x${'03'.repeat(32)}`);
        return 'committed';
      });
      assert.equal(result, 'committed');
      assert.deepEqual(
        (await store.listTasks()).map((t) => t.task_small_id),
        [1],
      );
      await store.listTasks();
      const failure = new Error('rolled back on purpose');
      await assert.rejects(
        store.indexerTransaction(async () => {
          throw failure;
        }),
        (error) => error === failure,
      );

      const seen = await counts(metrics);
      assert.equal(seen.get('listTasks'), 2);
      // Both transactions, the one that failed included; the calls inside them are not series of their own.
      assert.equal(seen.get('indexerTransaction'), 2);
      assert.deepEqual(
        [...seen.keys()].filter((query) => query.startsWith('tx.')),
        [],
      );
      // A method read twice is the same function: its wrapper is made once.
      assert.equal(store.listTasks, store.listTasks);
    } finally {
      await store.close();
      await tmp.remove();
    }
  });
});
