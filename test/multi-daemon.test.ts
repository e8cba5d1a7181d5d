import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeSuiPrivateKey } from '@mysten/sui/cryptography';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { toBase64 } from '@mysten/sui/utils';
import { Client } from 'pg';
import { SuiNetwork } from '../src/chain/sui/sui-network.ts';
import { TOKEN_FILE } from '../src/http/security.ts';
import { catchUp } from '../src/indexer/run.ts';
import { createLogger } from '../src/internal/logger.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase, withClient } from './helpers/postgres.ts';
import { type Finished, startDaemon } from './helpers/process.ts';
import { openEvents } from './helpers/sse.ts';
import { tempDir } from './helpers/tmp.ts';
import { FullnodeDouble } from './sui/fullnode-double.ts';

// Two real daemons on one PostgreSQL database and one chain (the loopback fullnode double): one indexes
// at a time and the other takes over when it dies; writes of the shared signer and Idempotency-Keys are
// shared between them.

const TABLES = {
  tasks: 'task_small_id',
  nodes: 'node_small_id',
  node_subscriptions: 'node_small_id, task_small_id',
  stacks: 'stack_small_id',
  stack_settlement_tickets: 'stack_small_id',
  applied_events: 'event_key',
} as const;

async function snapshot(url: string): Promise<Record<string, unknown[]>> {
  return withClient(url, async (client) => {
    const out: Record<string, unknown[]> = {};
    for (const [table, order] of Object.entries(TABLES)) {
      const rows = (await client.query(`SELECT * FROM ${table} ORDER BY ${order}`)).rows;
      // Which transaction wrote a stack last is bookkeeping for the kept lists, not data.
      for (const row of rows) delete row.written_xid;
      out[table] = rows;
    }
    return out;
  });
}

interface Running {
  url: string;
  token: string;
  child: import('node:child_process').ChildProcess;
  exited: Promise<Finished>;
}

/** The parts of GET /status this test reads. */
interface Status {
  indexer: { leader: boolean; events: { applied: number } };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

if (await postgresAvailable('several daemons on one database')) {
  describe('several daemons on one database', () => {
    const tmp = tempDir('multi-daemon-');
    const kp = Ed25519Keypair.generate();
    const keystore = join(tmp.dir, 'sui.keystore');
    const silent = createLogger('silent');
    let double: FullnodeDouble;
    let db: TestDatabase;
    let reference: TestDatabase;
    const daemons: Running[] = [];
    let source = '';

    const status = async (d: Running) => (await (await fetch(`${d.url}/status`)).json()) as Status;
    // One connection for the frequent polls: a new one each time is slow to open on a loaded machine.
    let poller: Client;
    const cursorOf = async () => {
      const { rows } = await poller.query(
        'SELECT applied::int, duplicate::int FROM indexer_cursors WHERE source = $1',
        [source],
      );
      return rows[0] as { applied: number; duplicate: number } | undefined;
    };

    before(async () => {
      writeFileSync(
        keystore,
        JSON.stringify([toBase64(new Uint8Array([0, ...decodeSuiPrivateKey(kp.getSecretKey()).secretKey]))]),
      );
      double = await FullnodeDouble.start({
        dataDir: join(tmp.dir, 'chain'),
        signerAddress: kp.toSuiAddress(),
      });
      source = `sui:${double.packageId}`;
      const [a, b] = [await createTestDatabase(), await createTestDatabase()];
      assert.ok(a && b);
      db = a;
      reference = b;
      poller = new Client({ connectionString: db.url });
      await poller.connect();
    });

    after(async () => {
      await poller?.end();
      for (const d of daemons) d.child.kill('SIGKILL');
      await Promise.all(daemons.map((d) => d.exited.catch(() => undefined)));
      await double?.close();
      await db?.drop();
      await reference?.drop();
      await tmp.remove();
    });

    const start = async (name: string): Promise<Running> => {
      const dataDir = join(tmp.dir, name);
      const started = await startDaemon([
        '--network',
        'sui',
        '--sui-url',
        double.url,
        '--sui-package-id',
        double.packageId,
        '--sui-atoma-db-id',
        double.atomaDbId,
        '--sui-keystore',
        keystore,
        '--database-url',
        db.url,
        '--data-dir',
        dataDir,
        '--no-demo',
        // Small transactions, so that the leader can be killed between two of them mid-stream.
        '--indexer-batch-events',
        '50',
      ]);
      const running = { ...started, token: readFileSync(join(dataDir, TOKEN_FILE), 'utf8').trim() };
      daemons.push(running);
      return running;
    };

    /** The last two daemons started, starting what is missing (a failed test before may have left one). */
    const lastTwo = async (): Promise<[Running, Running]> => {
      while (daemons.length < 2) await start(`extra-${daemons.length}-${Date.now()}`);
      return daemons.slice(-2) as [Running, Running];
    };

    /** A long stream: tasks, peer nodes subscribed to them, and many stacks bought on them. */
    const populate = async () => {
      const tasks: bigint[] = [];
      for (let t = 0; t < 4; t += 1) {
        const task = await double.dev.createTask({ role: 0, model_name: `m${t}`, security_level: 0 });
        tasks.push(BigInt(task.task_small_id!));
      }
      for (let n = 0; n < 20; n += 1) {
        await double.dev.createPeerNode({
          subscriptions: tasks.map((id) => ({
            task_small_id: id,
            price_per_one_million_compute_units: 1000,
          })),
        });
      }
      for (let s = 0; s < 2000; s += 1) {
        const bought = await double.dev.buyStack({
          task_small_id: tasks[s % tasks.length]!,
          num_compute_units: 1000 + s,
          price_per_one_million_compute_units: 1000,
        });
        assert.equal(bought.submission.status, 'success');
        // A trickle, as a chain produces it: the indexer reaches the head between bursts and commits
        // (while catching up it gathers pages into transactions of up to 10,000 events).
        if (s % 50 === 49) await sleep(20);
      }
    };

    it('hands the indexer over when its holder dies, applying every event once', async () => {
      const first = await start('a');
      const second = await start('b');
      // Exactly one takes the lease.
      let leaders: boolean[] = [];
      for (let i = 0; i < 50; i += 1) {
        leaders = [(await status(first)).indexer.leader, (await status(second)).indexer.leader];
        if (leaders.includes(true)) break;
        await sleep(100);
      }
      assert.equal(leaders.filter(Boolean).length, 1, `leaders: ${leaders}`);
      const leader = leaders[0] ? first : second;
      const other = leaders[0] ? second : first;

      // The chain produces a long stream; the leader is killed while it indexes it.
      const produced = populate();
      const deadline = Date.now() + 15_000;
      while (((await cursorOf())?.applied ?? 0) < 500) {
        assert.ok(Date.now() < deadline, 'the leader did not index');
        await sleep(10);
      }
      leader.child.kill('SIGKILL');
      await leader.exited;
      daemons.splice(daemons.indexOf(leader), 1);
      const killedAt = (await cursorOf())?.applied ?? 0;
      const takeover = Date.now();
      await produced;

      // The uninterrupted run: the same Sui event source, indexed into another database in one go.
      const sui = await SuiNetwork.open(
        {
          url: double.url,
          packageId: double.packageId,
          atomaDbId: double.atomaDbId,
          atomaDbInitialSharedVersion: undefined,
          keystore,
          address: undefined,
          gasBudgetCap: 1_000_000_000n,
        },
        silent,
      );
      const refStore = await PostgresStore.open({ url: reference.url });
      try {
        await catchUp(refStore, sui.events, silent);
      } finally {
        await refStore.close();
        await sui.close();
      }
      const expected = await snapshot(reference.url);
      // Every applied event's key, but a stack's creation, which its row records.
      const total = expected.applied_events!.length + expected.stacks!.length;
      assert.ok(killedAt < total, `killed after ${killedAt} of ${total} events: not mid-stream`);

      // The other takes over within seconds and finishes.
      while (!(await status(other)).indexer.leader) {
        assert.ok(Date.now() - takeover < 5000, 'the other daemon did not take the lease within 5 s');
        await sleep(100);
      }
      while (((await cursorOf())?.applied ?? 0) < total) {
        assert.ok(Date.now() - takeover < 30_000, 'the other daemon did not finish indexing');
        await sleep(100);
      }
      const cursor = (await cursorOf())!;
      assert.equal(cursor.applied, total);
      assert.equal(cursor.duplicate, 0);
      assert.deepEqual(await snapshot(db.url), expected);
      assert.equal((await status(other)).indexer.events.applied, total);
      daemons.push(await start('c'));
    });

    it('submits a request sent to both daemons with one Idempotency-Key once', async () => {
      const [a, b] = await lastTwo();
      const post = (d: Running, key: string) =>
        fetch(`${d.url}/nodes/register`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${d.token}`,
            'content-type': 'application/json',
            'idempotency-key': key,
          },
          body: '{}',
        });
      const executed = double.executed.length;
      const [ra, rb] = await Promise.all([post(a, 'same-key'), post(b, 'same-key')]);
      const [ta, tb] = [await ra.text(), await rb.text()];
      assert.equal(ra.status, 200, ta);
      assert.equal(rb.status, 200, tb);
      assert.equal(ta, tb);
      assert.deepEqual(
        [ra.headers.get('idempotent-replayed'), rb.headers.get('idempotent-replayed')].sort(),
        ['true', null].sort(),
      );
      assert.equal(double.executed.length, executed + 1);

      // Different keys: both submit, one after the other (the signer's lock), never racing for its coins.
      const [rc, rd] = await Promise.all([post(a, 'key-c'), post(b, 'key-d')]);
      assert.equal(rc.status, 200, await rc.text());
      assert.equal(rd.status, 200, await rd.text());
      assert.equal(double.executed.length, executed + 3);
      assert.equal(double.equivocations, 0);
      assert.deepEqual(double.refused, [], 'no transaction carried a stale object version');

      // A read cached by one daemon changes when the other writes.
      const node = JSON.parse(ta) as { node_small_id: number; badge_id: string };
      const subscriptions = async (d: Running) =>
        (await (await fetch(`${d.url}/subscriptions/nodes/${node.node_small_id}`)).json()) as unknown[];
      assert.deepEqual(await subscriptions(b), []);
      const subscribed = await fetch(`${a.url}/nodes/task-subscribe`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          task_small_id: 1,
          price_per_one_million_compute_units: 1000,
          node_badge_id: node.badge_id,
        }),
      });
      assert.equal(subscribed.status, 200, await subscribed.text());
      assert.equal((await subscriptions(b)).length, 1);
    });

    it('streams every node event on both daemons, with the same ids in the same order', async () => {
      const [a, b] = await lastTwo();
      const streams = await Promise.all([a, b].map((d) => openEvents(`${d.url}/events?node_id=all&after=0`)));
      try {
        // Events from the chain (applied by whichever daemon indexes), and from a usage report that the
        // other daemon, or this one, records: each stream gets them all, through PostgreSQL's notifications.
        const node = (
          (await poller.query('SELECT max(node_small_id)::int AS id FROM node_subscriptions')).rows[0] as {
            id: number;
          }
        ).id;
        const bought = await double.dev.buyStack({
          task_small_id: 1n,
          num_compute_units: 1000,
          price_per_one_million_compute_units: 1000,
          selected_node_id: BigInt(node),
        });
        assert.equal(bought.submission.status, 'success');
        const stack = Number(bought.stack_small_id);
        let usage: Response | undefined;
        for (let i = 0; i < 100; i += 1) {
          usage = await fetch(`${b.url}/stacks/${stack}/usage`, {
            method: 'POST',
            headers: { authorization: `Bearer ${b.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ compute_units: 600 }),
          });
          if (usage.status !== 404) break;
          await sleep(50);
        }
        assert.equal(usage?.status, 200, await usage?.text());
        const newest = Number(
          ((await poller.query('SELECT last FROM node_event_counter')).rows[0] as { last: string }).last,
        );
        const read = await Promise.all(streams.map((s) => s.until((m) => Number(m.id) === newest, 30_000)));
        const frames = read.map((messages) => messages.map((m) => [m.id, m.event, m.data]));
        assert.deepEqual(frames[0], frames[1], 'both daemons stream the same events');
        assert.deepEqual(
          frames[0]!.map(([id]) => Number(id)),
          Array.from({ length: newest }, (_, i) => i + 1),
          'gap-free ids from the first',
        );
        assert.ok(
          frames[0]!.some(
            ([, event, data]) => event === 'stack_filled' && JSON.parse(data!).stack_small_id === stack,
          ),
        );
      } finally {
        for (const s of streams) s.close();
      }
    });
  });
}
