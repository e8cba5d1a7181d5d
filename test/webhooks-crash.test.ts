import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { NodeEventRow } from '../src/store/node-events.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';
import { startDaemon } from './helpers/process.ts';
import { mulberry32 } from './helpers/random.ts';
import { tempDir } from './helpers/tmp.ts';
import { Receiver } from './helpers/webhook-receiver.ts';

/**
 * kill -9 of the daemon between node events and their deliveries, again and again, on both stores: after
 * the last restart every event is delivered, each under one webhook-id (a delivery cut off mid-attempt may
 * arrive twice, with the same id, which receivers dedupe), and nothing arrives for a refused write.
 */
type Running = Awaited<ReturnType<typeof startDaemon>>;

async function call(d: Running, method: string, path: string, body?: unknown) {
  const res = await fetch(`${d.url}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

function crashSuite(
  engine: 'sqlite' | 'postgres',
  setup: () => Promise<{
    args: string[];
    env: Record<string, string>;
    events: () => Promise<NodeEventRow[]>;
    cleanup: () => Promise<void>;
  }>,
) {
  it(`loses no delivery and invents none across kill -9 (${engine})`, { timeout: 120_000 }, async (t) => {
    const seed = Number(process.env.NODE_DAEMON_TEST_SEED ?? Date.now() % 1_000_000);
    const random = mulberry32(seed);
    t.diagnostic(`seed ${seed} (NODE_DAEMON_TEST_SEED runs it again)`);
    const { args, env, events, cleanup } = await setup();
    t.after(cleanup);
    const receiver = await new Receiver().listen();
    t.after(() => receiver.down());
    const flags = ['--auth', 'none', '--no-demo', ...args];

    let d = await startDaemon(flags, env, 110_000);
    const created = await call(d, 'POST', '/webhooks', { url: receiver.url, description: 'crash test' });
    assert.equal(created.status, 201);
    receiver.secret = String(created.json.secret);
    let tasks = 0;
    for (let round = 0; round < 4; round++) {
      // Up (a kill may cut an attempt off after the receiver saw it: it comes again, same id), never
      // answering (attempts in flight at the kill go again after the restart), and down in the last round
      // (the attempts fail and the retry 5 s later, after the restart, delivers).
      const mode = round === 3 ? 'down' : round % 2 === 1 ? 'hang' : 'up';
      if (mode === 'down') await receiver.down();
      receiver.script = () => (mode === 'hang' ? 'hang' : { status: 200 });
      for (let i = 0; i < 3; i++) {
        const res = await call(d, 'POST', '/dev/tasks', {
          role: 0,
          model_name: `m${round}-${i}`,
          security_level: 0,
        });
        assert.equal(res.status, 200, JSON.stringify(res.json));
        tasks += 1;
      }
      // A refused write: no event, so no delivery.
      const refused = await call(d, 'POST', '/dev/tasks/999999/deprecate');
      assert.equal(refused.status >= 400, true);
      await new Promise((r) => setTimeout(r, Math.floor(random() * 400)));
      d.child.kill('SIGKILL');
      await d.exited.catch(() => undefined);
      if (mode === 'down') await receiver.listen();
      if (mode === 'hang') await receiver.releaseHanging();
      receiver.script = () => ({ status: 200 });
      d = await startDaemon(flags, env, 110_000);
    }
    // Every task's event, and the others the daemon recorded, arrive.
    // On PostgreSQL an endpoint leased by the killed daemon waits for the lease to run out (20 s).
    const deadline = Date.now() + 45_000;
    let recorded: NodeEventRow[] = [];
    for (;;) {
      const page = await call(d, 'GET', '/webhooks/1/deliveries?limit=500');
      const deliveries = page.json.deliveries as { state: string; event_id: number | null }[];
      if (deliveries.length > 0 && deliveries.every((x) => x.state === 'delivered')) break;
      assert.ok(
        Date.now() < deadline,
        `still pending: ${JSON.stringify(deliveries.filter((x) => x.state !== 'delivered'))}`,
      );
      await new Promise((r) => setTimeout(r, 250));
    }
    d.child.kill('SIGTERM');
    await d.exited;
    recorded = await events();
    const taskEvents = recorded.filter((e) => e.type === 'task_added');
    assert.equal(taskEvents.length, tasks, 'every task made its event');
    const idsByEvent = new Map<number, Set<string>>();
    for (const got of receiver.received) {
      assert.ok(got.verified, got.problem);
      const id = Number(got.json.data.id);
      const ids = idsByEvent.get(id) ?? new Set();
      ids.add(got.id);
      idsByEvent.set(id, ids);
    }
    for (const e of recorded) {
      assert.ok(idsByEvent.has(e.id), `event ${e.id} (${e.type}) was delivered`);
      assert.equal(idsByEvent.get(e.id)!.size, 1, `event ${e.id} always came with one webhook-id`);
    }
    const known = new Set(recorded.map((e) => e.id));
    for (const id of idsByEvent.keys())
      assert.ok(known.has(id), `event ${id} that was delivered was recorded`);
    assert.ok(
      !receiver.received.some((g) => JSON.stringify(g.json).includes('999999')),
      'nothing for the refused write',
    );
    t.diagnostic(`${recorded.length} events, ${receiver.received.length} requests`);
  });
}

const withPostgres = await postgresAvailable('webhooks under kill -9: postgres');

describe('webhooks under kill -9', () => {
  const dirs: { remove: () => Promise<void> }[] = [];
  after(async () => {
    for (const d of dirs) await d.remove();
  });

  crashSuite('sqlite', async () => {
    const dir = tempDir();
    dirs.push(dir);
    return {
      args: ['--data-dir', dir.dir],
      env: {},
      events: async () => {
        const store = new SqliteStore({ dataDir: dir.dir });
        try {
          return await store.listNodeEvents({ after: 0, limit: 10_000, nodes: null, types: null });
        } finally {
          await store.close();
        }
      },
      cleanup: async () => undefined,
    };
  });

  if (withPostgres) {
    crashSuite('postgres', async () => {
      const dir = tempDir();
      dirs.push(dir);
      const db = (await createTestDatabase()) as TestDatabase;
      return {
        args: ['--data-dir', dir.dir],
        env: { DATABASE_URL: db.url },
        events: async () => {
          const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
          try {
            return await store.listNodeEvents({ after: 0, limit: 10_000, nodes: null, types: null });
          } finally {
            await store.close();
          }
        },
        cleanup: () => db.drop(),
      };
    });
  }
});
