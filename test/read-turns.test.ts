import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildApp } from '../src/app.ts';
import { ReadTurns } from '../src/http/read-turns.ts';
import { TOKEN_FILE } from '../src/http/security.ts';
import { createLogger } from '../src/internal/logger.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { openSecurity, TEST_APP_CONFIG } from './helpers/app-options.ts';
import { devDaemon } from './helpers/dev-daemon.ts';
import { tempDir } from './helpers/tmp.ts';

/** Turns of the event loop, counted by a chain of setImmediate callbacks while `until` is pending. */
function loopTurns(until: Promise<unknown>): { now(): number } {
  let turns = 0;
  let done = false;
  void until.finally(() => {
    done = true;
  });
  const tick = () => {
    turns += 1;
    if (!done) setImmediate(tick);
  };
  setImmediate(tick);
  return { now: () => turns };
}

/** Lets `reads` reads wait for their turns at once: the loop turn each was let through in, as they went. */
async function turnsTaken(turns: ReadTurns, reads: number): Promise<number[]> {
  const seen: number[] = [];
  const all = Promise.all(
    Array.from({ length: reads }, async () => {
      await turns.turn();
      seen.push(clock.now());
    }),
  );
  const clock = loopTurns(all);
  await all;
  return seen;
}

describe('read turns', () => {
  it('gives turns in arrival order, one per turn of the loop when the slice is spent at once', async () => {
    const turns = new ReadTurns({ sliceMs: 0 });
    const seen: [number, number][] = [];
    const all = Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        await turns.turn();
        seen.push([i, clock.now()]);
      }),
    );
    const clock = loopTurns(all);
    assert.equal(turns.waiting, 4);
    await all;
    assert.deepEqual(
      seen.map(([i]) => i),
      [0, 1, 2, 3],
    );
    const at = seen.map(([, turn]) => turn);
    assert.equal(new Set(at).size, 4, `each read in a turn of its own: ${at}`);
    assert.equal(turns.waiting, 0);
  });

  it('lets every waiting read through in one turn of the loop while the slice lasts', async () => {
    const seen = await turnsTaken(new ReadTurns({ sliceMs: 10_000 }), 5);
    assert.equal(new Set(seen).size, 1, `all in one turn: ${seen}`);
  });

  it('gives short slices for a while after a write arrived, then long ones again', async () => {
    const turns = new ReadTurns({ sliceMs: 10_000, busySliceMs: 0, busyForMs: 50 });
    /** How many loop turns five reads waiting at once were let through in. */
    const spread = async () => new Set(await turnsTaken(turns, 5)).size;
    assert.equal(await spread(), 1, 'no write yet: one long slice');
    turns.writeArrived();
    assert.equal(await spread(), 5, 'just after a write: a read per slice');
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(await spread(), 1, 'busyForMs after the write: long slices again');
  });

  it('are told of every request that writes, and of no read', async () => {
    const { dir, remove } = tempDir();
    const store = new SqliteStore({ dataDir: dir });
    const turns = new ReadTurns({ busyForMs: 60_000 });
    const app = await buildApp({
      config: TEST_APP_CONFIG,
      store,
      logger: createLogger('silent'),
      security: openSecurity(dir),
      turns,
    });
    try {
      for (const url of ['/tasks', '/stacks/nodes/1', '/health', '/nowhere']) {
        await app.inject({ method: 'GET', url });
        await app.inject({ method: 'HEAD', url });
      }
      assert.equal(turns.busy, false, 'reads only');
      // Refused (no token, no network), but a write all the same: it came in on the read load.
      const res = await app.inject({ method: 'POST', url: '/nodes/register', payload: {} });
      assert.notEqual(res.statusCode, 200);
      assert.equal(turns.busy, true, 'after a POST');
    } finally {
      await app.close();
      await store.close();
      await remove();
    }
  });

  it('answers a usage report before the reads that arrived with it', async () => {
    const d = await devDaemon();
    try {
      assert.equal(
        (await d.post('/dev/tasks', { role: 0, model_name: 'm', security_level: 0 })).statusCode,
        200,
      );
      const node = (await d.post('/nodes/register')).json().node_small_id as number;
      const price = 1_000_000;
      const subscription = { task_small_id: 1, price_per_one_million_compute_units: price };
      assert.equal((await d.post('/nodes/task-subscribe', subscription)).statusCode, 200);
      const stack = (
        await d.post('/dev/stacks', {
          task_small_id: 1,
          num_compute_units: 1000,
          price_per_one_million_compute_units: price,
          selected_node_id: node,
        })
      ).json().stack_small_id as number;
      await d.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = d.app.server.address() as AddressInfo;
      const token = readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim();
      const head = `Host: 127.0.0.1:${port}\r\nConnection: close\r\n`;
      const reads = Array.from({ length: 20 }, () => `GET /stacks/nodes/${node} HTTP/1.1\r\n${head}\r\n`);
      const body = '{"compute_units":7}';
      const report =
        `POST /stacks/${stack}/usage HTTP/1.1\r\n${head}Authorization: Bearer ${token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      const sockets = await Promise.all(
        [...reads, report].map(
          () =>
            new Promise<Socket>((resolve, reject) => {
              const socket = connect(port, '127.0.0.1', () => resolve(socket));
              socket.once('error', reject);
            }),
        ),
      );
      // The order in which answers start to arrive (the kernel reports ready sockets in the order they
      // became ready, so this is the order in which the daemon wrote them).
      const arrived: string[] = [];
      const answers = sockets.map(
        (socket, i) =>
          new Promise<string>((resolve) => {
            let text = '';
            socket.setEncoding('latin1');
            socket.on('data', (chunk: string) => {
              if (text === '') arrived.push(i === reads.length ? 'report' : 'read');
              text += chunk;
            });
            socket.on('end', () => resolve(text));
          }),
      );
      // The daemon accepts the connections (kept-alive connections, as a load generator's), then everything
      // is written, the report last, and arrives while the loop is held: one turn of the loop
      // then parses all of it, as under load.
      await new Promise((resolve) => setTimeout(resolve, 50));
      [...reads, report].forEach((request, i) => {
        sockets[i]!.write(request);
      });
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
      const texts = await Promise.all(answers);
      for (const text of texts) assert.match(text, /^HTTP\/1\.1 200 /);
      assert.equal(arrived[0], 'report', arrived.join(', '));
      // And a read after it shows it.
      const after = (await d.get(`/stacks/nodes/${node}`)).json() as { already_computed_units: number }[];
      assert.equal(after[0]!.already_computed_units, 7);
    } finally {
      await d.close();
    }
  });
});
