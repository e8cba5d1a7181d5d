import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type LightMyRequestResponse } from 'fastify';
import type { App } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { buildDaemonApp } from '../src/daemon.ts';
import { ResponseCache, sendCached } from '../src/http/response-cache.ts';
import { stringifyJson } from '../src/internal/json.ts';
import { createLogger } from '../src/internal/logger.ts';
import { Pieces } from '../src/internal/pieces.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { PIECE_OBJECTS } from '../src/store/stack-list/body.ts';
import { topics } from '../src/store/store.ts';
import { type DevDaemon, devDaemon, nodeWithStacks } from './helpers/dev-daemon.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * The response cache keeps a read until one of its own topics changes. Proof by comparison: a daemon with
 * the cache and an app on the same store without it answer the same bodies after every kind of write,
 * a write to one node leaves what it does not touch cached, and a 304 never stands for a changed body.
 */

type Json = Record<string, unknown>;

const STACK = {
  stack_small_id: 1,
  stack_id: `0x${'a'.repeat(64)}`,
  owner_address: `0x${'b'.repeat(64)}`,
  task_small_id: 1,
  num_compute_units: 10,
  price_per_one_million_compute_units: 1,
};

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
  assert.ok(check(), 'timed out');
}

function ok(res: LightMyRequestResponse): Json {
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Json;
}

/** Every cached read of nodes 1 to 3 (2 is ours), whole and paged. */
const READS = [
  '/tasks',
  '/tasks?limit=2',
  ...[1, 2, 3].flatMap((n) => [
    `/subscriptions/nodes/${n}`,
    `/stacks/nodes/${n}`,
    `/stacks/nodes/${n}?min_fill_fraction=0.5`,
    `/stacks/nodes/${n}?limit=2`,
    `/claimed-stacks/nodes/${n}`,
    `/attestation_disputes/against/nodes/${n}`,
    `/attestation_disputes/own/nodes/${n}`,
    `/earnings/nodes/${n}`,
  ]),
];

async function lookups(d: DevDaemon): Promise<Record<string, number>> {
  const { values } = await d.services.metrics.httpCacheLookups.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.outcome), v.value]));
}

function scenario(engine: 'sqlite' | 'postgres', flags: () => Record<string, string>) {
  it(`answers what the store holds after every kind of write, on ${engine}`, async () => {
    const dir = tempDir();
    const settings = { 'dev-sampling-probability': '1', ...flags() };
    const d = await devDaemon(settings, dir);
    // The same store and services, no cache: the reference answer for every read.
    const config = loadConfig({ 'data-dir': dir.dir, demo: false, ...settings, 'cache-mb': '0' }, {});
    const plain: App = await buildDaemonApp(config, d.services, createLogger('silent'));
    // On PostgreSQL, a second daemon's reads: its own store (its own kept lists) and its own cache, on the
    // same database, while every write goes through the first.
    const secondStore =
      engine === 'postgres'
        ? await PostgresStore.open({ url: flags()['database-url']!, poolSize: 2 })
        : undefined;
    const second: App | undefined =
      secondStore &&
      (await buildDaemonApp(
        loadConfig({ 'data-dir': dir.dir, demo: false, ...settings }, {}),
        { ...d.services, store: secondStore },
        createLogger('silent'),
      ));
    const readers: [string, App][] = [
      ['', d.app],
      ...(second ? [['second daemon: ', second] as [string, App]] : []),
    ];
    /** ETag and body last seen per daemon and read, to check every 304 against. */
    const seen = new Map<string, { etag: string; body: string }>();
    const check = async (step: string) => {
      for (const url of READS) {
        const reference = await plain.inject({ url });
        for (const [who, reader] of readers) {
          const cached = await reader.inject({ url });
          assert.equal(cached.statusCode, reference.statusCode, `${who}${step}: ${url}`);
          assert.equal(cached.body, reference.body, `${who}${step}: ${url} is stale`);
          assert.equal(cached.headers.link, reference.headers.link, `${who}${step}: ${url} Link`);
          const last = seen.get(who + url);
          if (last) {
            const conditional = await reader.inject({ url, headers: { 'if-none-match': last.etag } });
            if (conditional.statusCode === 304) {
              assert.equal(conditional.body, '');
              assert.equal(
                reference.body,
                last.body,
                `${who}${step}: ${url} answered 304 for a changed body`,
              );
            } else {
              assert.equal(conditional.statusCode, 200);
              assert.notEqual(conditional.headers.etag, last.etag);
            }
          }
          seen.set(who + url, { etag: String(cached.headers.etag), body: cached.body });
        }
      }
      // The stack lists also against the store's rows as objects, a path that keeps nothing between reads
      // (both apps above share the store, and so whatever it keeps).
      for (const n of [1, 2, 3]) {
        const rows = await d.services.store.listStacks(n);
        assert.equal(
          (await d.get(`/stacks/nodes/${n}`)).body,
          stringifyJson(rows),
          `${step}: node ${n}'s stacks`,
        );
      }
    };
    try {
      const steps: [string, () => Promise<unknown>][] = [
        [
          'tasks',
          async () => {
            for (const security_level of [0, 1, 2]) {
              ok(
                await d.post('/dev/tasks', {
                  role: 0,
                  model_name: 'meta-llama/Llama-3.3-70B-Instruct',
                  security_level,
                }),
              );
            }
          },
        ],
        [
          'a peer',
          () =>
            d.post('/dev/nodes', {
              subscriptions: [1, 2, 3].map((task_small_id) => ({
                task_small_id,
                price_per_one_million_compute_units: 1,
              })),
            }),
        ],
        ['register', () => d.post('/nodes/register')],
        [
          'subscribe',
          async () => {
            for (const task_small_id of [1, 2, 3])
              ok(
                await d.post('/nodes/task-subscribe', {
                  task_small_id,
                  price_per_one_million_compute_units: 1,
                }),
              );
          },
        ],
        [
          'update a price',
          () =>
            d.post('/nodes/task-update-subscription', {
              task_small_id: 1,
              price_per_one_million_compute_units: 2,
            }),
        ],
        [
          'another peer',
          () =>
            d.post('/dev/nodes', {
              subscriptions: [{ task_small_id: 3, price_per_one_million_compute_units: 1 }],
            }),
        ],
        [
          'stacks bought',
          async () => {
            for (const [task, node] of [
              [1, 2],
              [1, 2],
              [2, 2],
              [3, 2],
              [3, 1],
              [1, 1],
              [3, 3],
            ]) {
              ok(
                await d.post('/dev/stacks', {
                  task_small_id: task,
                  num_compute_units: 1000,
                  price_per_one_million_compute_units: 2_000_000,
                  selected_node_id: node,
                }),
              );
            }
          },
        ],
        [
          'usage',
          async () => {
            for (const stack of [1, 2, 3, 4])
              ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 600 + stack * 50 }));
          },
        ],
        ['settle', () => d.post('/nodes/try-settle-stacks', { stack_small_ids: [1, 4] })],
        [
          'peers settle',
          async () => {
            for (const stack of [5, 7]) ok(await d.post(`/dev/stacks/${stack}/try-settle`, {}));
          },
        ],
        // The sampled attesters are random: attest what was asked of us, if anything (a skip is fine).
        [
          'attest what we were asked',
          async () => {
            await d.post('/nodes/submit-attestations', { stack_small_ids: [4, 5, 7] });
          },
        ],
        ['a dispute', () => d.post('/dev/disputes', { stack_small_id: 4, node_small_id: 3 })],
        ['an epoch', () => d.post('/dev/epoch')],
        ['claim', () => d.post('/nodes/claim-funds', { stack_small_ids: [1, 3] })],
        ['a peer claims', () => d.post('/dev/claims', { node_small_id: 3, stack_small_ids: [7] })],
        ['unsubscribe', () => d.del('/nodes/task-unsubscribe', { task_small_id: 2 })],
        ['deprecate', () => d.post('/dev/tasks/3/deprecate')],
        ['another epoch', () => d.post('/dev/epoch')],
        ['remove', () => d.post('/dev/tasks/3/remove')],
      ];
      await check('empty');
      for (const [name, step] of steps) {
        const res = await step();
        if (res && typeof res === 'object' && 'statusCode' in res) ok(res as LightMyRequestResponse);
        await check(name);
      }

      // A usage report on our node's stack: its reads change, the others stay cached.
      const before = await lookups(d);
      for (const url of ['/tasks', '/stacks/nodes/1', '/stacks/nodes/2', '/earnings/nodes/1'])
        await d.get(url);
      ok(await d.post('/stacks/2/usage', { compute_units: 1 }));
      const after1 = await lookups(d);
      for (const url of ['/tasks', '/stacks/nodes/1', '/earnings/nodes/1']) await d.get(url);
      const afterOthers = await lookups(d);
      assert.equal((afterOthers.miss ?? 0) - (after1.miss ?? 0), 0, 'unaffected reads stay cached');
      assert.equal((afterOthers.hit ?? 0) - (after1.hit ?? 0), 3);
      await d.get('/stacks/nodes/2');
      assert.equal((await lookups(d)).miss! - afterOthers.miss!, 1, "the node's stacks were reloaded");
      assert.ok(before.hit! > 0);
    } finally {
      await plain.close();
      await second?.close();
      await secondStore?.close();
      await d.close();
    }
  });
}

describe('the response cache', () => {
  scenario('sqlite', () => ({}));

  it('answers 304 to a current ETag without loading the data, and pages with Link headers', async () => {
    const d = await devDaemon({});
    try {
      const ids = await nodeWithStacks(d, 7);
      const first = await d.get('/stacks/nodes/1');
      assert.match(String(first.headers.etag), /^"[\w-]{27}"$/);
      assert.equal(first.headers['cache-control'], 'no-cache');
      const queries = async () =>
        (await d.services.metrics.storeQueryDuration.get()).values.find(
          (v) => v.metricName?.endsWith('_count') && v.labels.query === 'listStacksJson',
        )?.value ?? 0;
      const loads = await queries();
      const again = await d.app.inject({
        url: '/stacks/nodes/1',
        headers: { 'if-none-match': String(first.headers.etag) },
      });
      assert.equal(again.statusCode, 304);
      assert.equal(again.headers.etag, first.headers.etag);
      // No Content-Length on a 304, HEAD's included (RFC 9110 8.6 allows only the 200's).
      for (const method of ['GET', 'HEAD'] as const) {
        const res = await d.app.inject({
          method,
          url: '/tasks',
          headers: { 'if-none-match': String((await d.get('/tasks')).headers.etag) },
        });
        assert.equal(res.statusCode, 304, method);
        assert.equal(res.headers['content-length'], undefined, `${method} 304: no Content-Length`);
        assert.equal(res.body, '', method);
      }
      // A new daemon app on the same store, empty cache: still 304, and the data is not even read.
      const config = loadConfig({ 'data-dir': d.dir, demo: false, 'cache-mb': '0' }, {});
      const fresh = await buildDaemonApp(config, d.services, createLogger('silent'));
      try {
        const cold = await fresh.inject({
          url: '/stacks/nodes/1',
          headers: { 'if-none-match': `W/${first.headers.etag}, "x"` },
        });
        assert.equal(cold.statusCode, 304);
      } finally {
        await fresh.close();
      }
      assert.equal(await queries(), loads, 'no 304 read the stacks');

      // Pages: following the Link headers gives the whole list, in order.
      const pages: unknown[] = [];
      let url: string | undefined = '/stacks/nodes/1?limit=3';
      while (url) {
        const res = await d.get(url);
        pages.push(...(res.json() as unknown[]));
        const link = res.headers.link as string | undefined;
        url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
      }
      assert.deepEqual(pages, first.json());
      assert.equal(
        (await d.get('/stacks/nodes/1?limit=7')).headers.link,
        undefined,
        'no next page after the last',
      );
      const page2 = await d.get(`/stacks/nodes/1?after=${ids[2]}&limit=3`);
      assert.deepEqual(
        (page2.json() as { stack_small_id: number }[]).map((s) => s.stack_small_id),
        ids.slice(3, 6),
      );
      assert.equal(page2.headers.link, `</stacks/nodes/1?limit=3&after=${ids[5]}>; rel="next"`);
      // Other spellings of one page share its cache entry; each Link goes on from the request's own URL.
      for (const url of [
        '/stacks/stacks/nodes/1?limit=2',
        '/stacks/nodes/1?limit=02',
        '/stacks/nodes/1/?limit=2',
        '/stacks/nodes/1?limit=2',
      ]) {
        const res = await d.get(url);
        assert.equal(res.headers.link, `<${url}&after=${ids[1]}>; rel="next"`, url);
      }
      const bad = await d.get('/stacks/nodes/1?limit=0');
      assert.equal(bad.statusCode, 400);
      assert.equal((bad.json() as Json).code, 'invalid_parameter');
      // `after` is a small id, so a u64: past 2^53 it is exact (nothing is there), past 2^64 - 1 refused.
      for (const after of ['9007199254740993', '18446744073709551615']) {
        const res = await d.get(`/stacks/nodes/1?limit=2&after=${after}`);
        assert.equal(res.statusCode, 200, after);
        assert.deepEqual(res.json(), [], after);
      }
      const tooBig = await d.get('/tasks?after=18446744073709551616');
      assert.equal(tooBig.statusCode, 400);
      assert.match(
        String((tooBig.json() as Json).detail),
        /from 0 to 18446744073709551615; got "18446744073709551616"/,
      );
    } finally {
      await d.close();
    }
  });

  it("sends a node's list, kept in pieces, as its rows with the headers Fastify sends, on a real socket", async () => {
    const d = await devDaemon({});
    try {
      // More stacks than one piece holds (PIECE_OBJECTS), so that the body is several.
      await nodeWithStacks(d, 2 * PIECE_OBJECTS + 3);
      const origin = await d.app.listen({ host: '127.0.0.1', port: 0 });
      const served = async () =>
        (await d.services.metrics.httpRequests.get()).values
          .filter((v) => v.labels.route === '/stacks/nodes/:node_id' && v.labels.status === 200)
          .reduce((sum, v) => sum + v.value, 0);
      const before = await served();
      // The reference: the stacks as the store lists them, and the headers Fastify sends with a body it
      // sends itself (the task list, one buffer).
      const expected = stringifyJson(await d.services.store.listStacks(1));
      const names = (res: Response) => [...res.headers.keys()];
      const tasks = await fetch(`${origin}/tasks`);
      assert.equal(tasks.status, 200);
      const get = await fetch(`${origin}/stacks/nodes/1`);
      assert.equal(get.status, 200);
      assert.equal(await get.text(), expected);
      assert.equal((JSON.parse(expected) as unknown[]).length, 2 * PIECE_OBJECTS + 3);
      assert.deepEqual(names(get), names(tasks));
      for (const name of ['content-type', 'cache-control', 'connection', 'keep-alive']) {
        assert.equal(get.headers.get(name), tasks.headers.get(name), name);
      }
      assert.equal(get.headers.get('content-length'), String(Buffer.byteLength(expected)));
      assert.match(String(get.headers.get('etag')), /^"[\w-]{27}"$/);
      // HEAD: the same headers, no body (a keep-alive client would otherwise read it as the next answer).
      const head = await fetch(`${origin}/stacks/nodes/1`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), '');
      for (const name of ['content-type', 'cache-control', 'content-length', 'etag']) {
        assert.equal(head.headers.get(name), get.headers.get(name), name);
      }
      const again = await fetch(`${origin}/stacks/nodes/1`);
      assert.equal(await again.text(), expected);
      // Fastify's onResponse hooks ran for each (the request counter).
      assert.equal((await served()) - before, 3);
    } finally {
      await d.close();
    }
  });
});

describe('the response cache budget', () => {
  const entry = (name: string) => ({
    body: Buffer.alloc(100, name),
    etag: `"${name}"`,
    versions: [],
    checked: '0',
    next: undefined,
  });
  const kept = (cache: ResponseCache) =>
    ['a', 'b', 'c', 'd', 'e'].filter((key) => cache.get(key) !== undefined).join('');

  it('evicts the entry used least recently, and never the one it is keeping', () => {
    const cache = new ResponseCache(300);
    for (const key of ['a', 'b', 'c']) cache.set(key, entry(key));
    cache.set('d', entry('d')); // nothing read yet: the oldest, a, goes
    cache.get('b');
    cache.set('e', entry('e')); // b was read since: c goes, not b
    // (get marks what it finds, so the keys are looked at only now)
    assert.equal(kept(cache), 'bde');

    const small = new ResponseCache(250);
    small.set('a', entry('a'));
    small.get('a');
    small.set('b', entry('b'));
    small.get('b');
    small.set('c', entry('c'));
    assert.equal(kept(small), 'bc', 'within 250 bytes: the two newest, and c itself always');
  });

  it("replaces a key's body and counts only the new one against the budget", () => {
    const cache = new ResponseCache(200);
    cache.set('a', entry('a'));
    cache.set('b', entry('b'));
    const newer = { ...entry('a'), etag: '"a2"' };
    cache.set('a', newer);
    assert.equal(cache.get('a'), newer);
    assert.equal(cache.get('b')?.etag, '"b"', 'replacing a did not count its old body twice');
  });

  it('counts a body of views by the memory it keeps, not by its length', () => {
    // A filtered list is a few bytes of each of its node's pieces, and keeps the pieces alive.
    const piece = Buffer.alloc(200, 'x');
    const views = { ...entry('v'), body: new Pieces([piece.subarray(0, 10), piece.subarray(50, 60)]) };
    assert.deepEqual([views.body.length, views.body.retained], [20, 200]);
    const cache = new ResponseCache(250);
    cache.set('a', entry('a'));
    cache.get('a');
    cache.set('v', views);
    assert.equal(kept(cache) + (cache.get('v') ? 'v' : ''), 'v', '100 + 200 bytes kept do not fit in 250');
    const alone = new ResponseCache(150);
    alone.set('v', views);
    assert.equal(alone.get('v'), undefined, 'a body that keeps more than the whole budget is not kept');
  });
});

describe('one load shared by concurrent misses', () => {
  it('is shared while it is out, and a load that settled (or failed) is not handed out again', async () => {
    const cache = new ResponseCache(1 << 20);
    let loads = 0;
    let release = () => {};
    const load = async () => {
      loads += 1;
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return { body: Buffer.from(`${loads}`), etag: '"e"', versions: [1], checked: '', next: undefined };
    };
    const a = cache.loadOnce('k', '"e"', load);
    const b = cache.loadOnce('k', '"e"', load);
    assert.equal(a, b, 'a second miss while the first load is out shares it');
    release();
    assert.equal((await a).body.toString(), '1');
    const c = cache.loadOnce('k', '"e"', load);
    assert.notEqual(c, a, 'a miss after the load settled starts its own');
    release();
    assert.equal((await c).body.toString(), '2');
    const failing = cache.loadOnce('f', '"e"', async () => {
      throw new Error('store down');
    });
    await assert.rejects(failing, /store down/);
    const retried = cache.loadOnce('f', '"e"', load);
    release();
    assert.equal((await retried).body.toString(), '3', 'a failed load is not handed to the next miss');
    // Another ETag (versions moved): a load of its own, and the older one settling does not empty its slot.
    const older = cache.loadOnce('k', '"e"', load);
    const releaseOlder = release;
    const newer = cache.loadOnce('k', '"e2"', load);
    assert.notEqual(newer, older, 'a miss under other versions is not handed the load of the earlier ones');
    releaseOlder();
    await older;
    assert.equal(cache.loadOnce('k', '"e2"', load), newer, 'the newer load is still shared');
    release();
    assert.equal((await newer).body.toString(), '5');
    assert.equal(loads, 5);
  });

  it('is never handed to a request that saw a commit the load may not have seen', async () => {
    const dir = tempDir();
    const store = new SqliteStore({ dataDir: dir.dir });
    const app = Fastify();
    const cache = new ResponseCache(1 << 20);
    // The loads are the test's: the first is held until the test lets it finish, as a slow PostgreSQL
    // read would be while another request commits.
    const loads: { release: () => void; done: Promise<void> }[] = [];
    let loaded = 0;
    app.get('/list', (request, reply) =>
      sendCached(request, reply, { cache, store }, 'list', [topics.stacks(1)], async () => {
        const n = ++loaded;
        if (n === 1) {
          let release = () => {};
          const done = new Promise<void>((resolve) => {
            release = resolve;
          });
          loads.push({ release, done });
          await done;
        }
        return { body: JSON.stringify({ load: n }) };
      }),
    );
    try {
      const first = app.inject({ url: '/list' });
      await until(() => loads.length === 1);
      // A commit that changes what /list shows, while the first load is still out.
      await store.indexerTransaction((tx) => tx.putStack({ ...STACK, selected_node_id: 1 }));
      const second = app.inject({ url: '/list' });
      await until(() => loaded === 2);
      loads[0]!.release();
      const [a, b] = await Promise.all([first, second]);
      assert.deepEqual(a.json(), { load: 1 });
      assert.deepEqual(b.json(), { load: 2 }, 'the request after the commit got a load of its own');
      assert.notEqual(a.headers.etag, b.headers.etag);
    } finally {
      await app.close();
      await store.close();
      await dir.remove();
    }
  });
});

describe('the response cache on PostgreSQL', async () => {
  if (!(await postgresAvailable('the response cache on PostgreSQL'))) return;
  let db: TestDatabase;
  before(async () => {
    db = (await createTestDatabase())!;
  });
  after(() => db.drop());
  scenario('postgres', () => ({ 'database-url': db.url }));
});
