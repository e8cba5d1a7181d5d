import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createMetrics } from '../src/internal/metrics.ts';
import type { U64 } from '../src/internal/u64.ts';
import { Conditions } from '../src/operations/conditions.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';
import { AtomaState, READ_STACKS } from '../src/usage/atoma-state.ts';
import { UsageMirror } from '../src/usage/mirror.ts';
import { ATOMA_STATE_SCHEMA, type AtomaStateDatabase, createAtomaState } from './helpers/atoma-state.ts';
import { captureLogger } from './helpers/capture-log.ts';
import { createTestDatabase, postgresAvailable, withClient } from './helpers/postgres.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * The atoma-state usage source against a real PostgreSQL database laid out like atoma-node's, the
 * inference service played by the SQL its statements run (reserve, then correct), on both of this
 * daemon's stores. The daemon-level parts (the 409, /status, the autopilot) are in daemon-usage-source.test.ts.
 */

const OUR_NODE = 3;
const OTHER_NODE = 4;

/** Waits until check() holds (polling), or fails with what it last saw. */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string, ms = 5000) {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!check(value)) {
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
    value = await read();
  }
  return value;
}

/** The stacks the chain created: ours (1, 2, 5), another node's (3); atoma-state also has 99, never on chain. */
async function seed(store: Store): Promise<void> {
  await store.indexerTransaction(async (tx) => {
    await tx.putTask({
      task_small_id: 1,
      task_id: `0x${'1'.padStart(64, '0')}`,
      role: 0,
      model_name: 'llama',
      security_level: 0,
      minimum_reputation_score: null,
    });
    for (const [id, node] of [
      [1, OUR_NODE],
      [2, OUR_NODE],
      [3, OTHER_NODE],
      [5, OUR_NODE],
    ] as const) {
      await tx.putStack({
        stack_small_id: id,
        stack_id: `0x${String(id).padStart(64, '0')}`,
        owner_address: `0x${'ab'.repeat(32)}`,
        task_small_id: 1,
        selected_node_id: node,
        num_compute_units: 1000,
        price_per_one_million_compute_units: 2_000_000,
      });
    }
  });
}

const usage = async (store: Store, id: U64) => {
  const stack = await store.getStack(id);
  return [stack?.already_computed_units, stack?.num_total_messages];
};

function mirror(store: Store, url: string, pollIntervalMs = 30) {
  const log = captureLogger('info');
  const metrics = createMetrics();
  const changes: number[] = [];
  const source = new UsageMirror({
    store,
    source: new AtomaState(url),
    location: url,
    conditions: new Conditions({ store, log: log.logger }),
    nodes: async () => [OUR_NODE],
    pollIntervalMs,
    log: log.logger,
    metrics,
    onChange: () => changes.push(Date.now()),
  });
  return { source, log, metrics, changes };
}

const engines: [string, () => Promise<{ store: Store; cleanup: () => Promise<void> }>][] = [
  [
    'sqlite',
    async () => {
      const dir = tempDir();
      return { store: new SqliteStore({ dataDir: dir.dir }), cleanup: async () => dir.remove() };
    },
  ],
  [
    'postgres',
    async () => {
      const db = (await createTestDatabase())!;
      return { store: await PostgresStore.open({ url: db.url }), cleanup: () => db.drop() };
    },
  ],
];

if (await postgresAvailable('the atoma-state usage source')) {
  for (const [engine, open] of engines) {
    describe(`the atoma-state usage source, on ${engine}`, () => {
      let atoma: AtomaStateDatabase;
      before(async () => {
        atoma = (await createAtomaState())!;
        for (const id of [1, 2, 5, 99]) await atoma.addStack({ id, node: OUR_NODE, units: 1000 });
        await atoma.addStack({ id: 3, node: OTHER_NODE, units: 1000 });
      });
      after(() => atoma.drop());

      it('mirrors what the inference service holds, down as well as up, and writes nothing in atoma-state', async () => {
        const { store, cleanup } = await open();
        const { source, changes, metrics } = mirror(store, atoma.url);
        try {
          await seed(store);
          source.start();
          await until(
            async () => source.status(),
            (s) => s.state === 'connected' && s.stacks_followed === 3,
            'connected',
          );
          // A request on stack 1: its estimate reserved, then corrected by estimated minus actual.
          await atoma.reserve(1, 500);
          await until(
            () => usage(store, 1),
            ([u]) => u === 500,
            'the reservation mirrored',
          );
          await atoma.correct(1, 500, 420);
          assert.deepEqual(
            await until(
              () => usage(store, 1),
              ([u]) => u === 420,
              'the correction mirrored',
            ),
            [420, 1],
          );
          // Two requests at once on stack 2, one corrected up, one down.
          await atoma.reserve(2, 100);
          await atoma.reserve(2, 200);
          await atoma.correct(2, 100, 150);
          await atoma.correct(2, 200, 50);
          await until(
            () => usage(store, 2),
            ([u, m]) => u === 200 && m === 2,
            'both requests mirrored',
          );
          // Another node's stack and a stack never seen on chain: nothing changes here, nothing breaks.
          await atoma.reserve(3, 300);
          await atoma.reserve(99, 300);
          const before = await atoma.snapshot();
          const polls = Number(
            (await metrics.usageSourcePolls.get()).values.find((v) => v.labels.outcome === 'ok')?.value,
          );
          await until(
            async () =>
              Number(
                (await metrics.usageSourcePolls.get()).values.find((v) => v.labels.outcome === 'ok')?.value,
              ),
            (n) => n >= polls + 5,
            'five more polls',
          );
          assert.deepEqual(await usage(store, 3), [0, 0]);
          assert.equal(await store.getStack(99), undefined);
          assert.deepEqual(await usage(store, 1), [420, 1], 'polled again: nothing counted twice');
          // Five polls read atoma-state and wrote nothing there: no row, table, index or trigger changed.
          assert.equal(await atoma.snapshot(), before);
          assert.ok(changes.length >= 3, 'the autopilot heard of each change');
          const status = source.status();
          assert.equal(status.state, 'connected');
          assert.equal(status.error, null);
          assert.ok(status.behind_seconds !== null && status.behind_seconds < 2, `${status.behind_seconds}`);
        } finally {
          await source.stop();
          await store.close();
          await cleanup();
        }
      });

      it('takes a change made while it was down, and a restart counts nothing twice', async () => {
        const { store, cleanup } = await open();
        try {
          await seed(store);
          const first = mirror(store, atoma.url);
          first.source.start();
          await until(
            () => usage(store, 5),
            ([u]) => u === 0,
            'following',
          );
          await atoma.reserve(5, 100);
          await atoma.correct(5, 100, 100);
          await until(
            () => usage(store, 5),
            ([u]) => u === 100,
            'mirrored',
          );
          await first.source.stop();
          // While the daemon is down, the node serves two more requests.
          await atoma.reserve(5, 300);
          await atoma.correct(5, 300, 250);
          await atoma.reserve(5, 50);
          const second = mirror(store, atoma.url);
          second.source.start();
          try {
            assert.deepEqual(
              await until(
                () => usage(store, 5),
                ([u]) => u === 400,
                'the change made while down',
              ),
              [400, 2],
            );
          } finally {
            await second.source.stop();
          }
        } finally {
          await store.close();
          await cleanup();
        }
      });

      it('keeps the last values while atoma-state has no table or cannot be reached, says so once, and comes back', async () => {
        const { store, cleanup } = await open();
        const empty = (await createTestDatabase())!;
        try {
          await seed(store);
          await store.mirrorStackUsage(
            [
              {
                stack_small_id: 1,
                selected_node_id: OUR_NODE,
                already_computed_units: 77,
                num_total_messages: 1,
              },
            ],
            1,
          );
          // A database without atoma-node's tables (not migrated yet).
          const first = mirror(store, empty.url);
          const { log, metrics } = first;
          let source = first.source;
          source.start();
          try {
            const lost = await until(
              async () => source.status(),
              (s) => s.state === 'lost',
              'lost',
            );
            assert.match(lost.error ?? '', /no table stacks/);
            assert.equal((await metrics.usageSourceUp.get()).values[0]?.value, 0);
            // Several failed polls later: one event, a warning per reason (not per poll), the last values kept.
            const failedPolls = async () =>
              Number(
                (await metrics.usageSourcePolls.get()).values.find((v) => v.labels.outcome === 'failed')
                  ?.value,
              );
            const failed = await until(failedPolls, (n) => n >= 3, 'three failed polls', 15_000);
            const events = async () =>
              (await store.listNodeEvents({ after: 0, limit: 100, nodes: null, types: null }))
                .filter((e) => e.type.startsWith('usage_source'))
                .map((e) => [e.type, JSON.parse(e.data).reason ?? null]);
            assert.deepEqual(await events(), [['usage_source_lost', 'no_table']]);
            const warnings = log.lines().filter((l) => l.level === 40);
            assert.equal(
              warnings.length,
              new Set(warnings.map((l) => l.msg)).size,
              'each reason is logged once while it holds',
            );
            assert.ok(warnings.length < failed, `${warnings.length} warnings for ${failed} failed polls`);
            assert.deepEqual(await usage(store, 1), [77, 1]);
            // A restart while it is still lost announces nothing new: the store knows it was said.
            await source.stop();
            source = mirror(store, empty.url).source;
            source.start();
            await until(
              async () => source.status(),
              (s) => s.state === 'lost',
              'lost after the restart',
            );
            assert.deepEqual(await events(), [['usage_source_lost', 'no_table']]);
            // atoma-node creates its tables: the source comes back, and says so once.
            await withClient(empty.url, async (client) => {
              await client.query(ATOMA_STATE_SCHEMA);
              await client.query(`INSERT INTO stacks (stack_small_id, owner_address, stack_id, task_small_id,
                selected_node_id, num_compute_units, price_per_one_million_compute_units, already_computed_units,
                in_settle_period, num_total_messages) VALUES (1, '0xo', '0x1', 1, ${OUR_NODE}, 1000, 1000000, 90, false, 3)`);
            });
            await until(
              () => usage(store, 1),
              ([u]) => u === 90,
              'mirrored after coming back',
              35_000,
            );
            assert.deepEqual(await events(), [
              ['usage_source_lost', 'no_table'],
              ['usage_source_restored', null],
            ]);
            assert.equal(source.status().state, 'connected');
          } finally {
            await source.stop();
          }
          // Credentials the server refuses (a role it does not know): lost, saying so.
          const refused = new URL(atoma.url);
          refused.username = 'no_such_role_for_node_daemon';
          const denied = mirror(store, refused.toString());
          denied.source.start();
          try {
            const lost = await until(
              async () => denied.source.status(),
              (s) => s.state === 'lost',
              'lost',
            );
            assert.match(lost.error ?? '', /refused the credentials/);
          } finally {
            await denied.source.stop();
          }
          // A server that cannot be reached: lost with a reason, never a crash.
          const down = mirror(store, 'postgres://postgres@127.0.0.1:1/atoma');
          down.source.start();
          try {
            const unreachable = await until(
              async () => down.source.status(),
              (s) => s.state === 'lost',
              'lost',
            );
            assert.match(unreachable.error ?? '', /cannot be reached/);
          } finally {
            await down.source.stop();
          }
        } finally {
          await store.close();
          await cleanup();
          await empty.drop();
        }
      });
    });
  }

  describe('the atoma-state usage source, at scale', () => {
    it('reads a poll by primary key: an index scan of atoma-state at 200,000 stacks, never a sequential one', async () => {
      const atoma = (await createAtomaState())!;
      try {
        const plan = await atoma.node(async (client) => {
          await client.query(`INSERT INTO stacks (stack_small_id, owner_address, stack_id, task_small_id,
              selected_node_id, num_compute_units, price_per_one_million_compute_units, already_computed_units,
              in_settle_period, num_total_messages)
            SELECT i, '0xowner', '0x' || i, 1, i % 50, 1000, 1000000, i % 1000, false, 1
            FROM generate_series(1, 200000) AS i`);
          await client.query('ANALYZE stacks');
          const ids = Array.from({ length: 500 }, (_, i) => String(1 + i * 397));
          const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${READ_STACKS}`, [ids]);
          return JSON.stringify(rows[0]['QUERY PLAN']);
        });
        assert.match(plan, /"Index Name":"stacks_pkey"/);
        assert.doesNotMatch(plan, /Seq Scan/);
      } finally {
        await atoma.drop();
      }
    });
  });
}
