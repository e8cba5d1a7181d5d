import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createMetrics, type Metrics } from '../src/internal/metrics.ts';
import { WebhookSender, Webhooks } from '../src/operations/webhooks.ts';
import type { NewNodeEvent } from '../src/store/node-events.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';
import { captureLogger } from './helpers/capture-log.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';
import { tempDir } from './helpers/tmp.ts';
import { Receiver } from './helpers/webhook-receiver.ts';

/**
 * The sender against a real store (SQLite, and PostgreSQL when it is reachable) and a local receiver that
 * verifies every signature twice (its own HMAC code and the standardwebhooks package). The schedule is
 * shortened (the production one is hours); everything else is as the daemon runs it.
 */
const SHORT = [0, 100, 200, 200, 200];

interface Harness {
  store: Store;
  webhooks: Webhooks;
  sender: WebhookSender;
  metrics: Metrics;
  close(): Promise<void>;
}

type Opener = () => Promise<{ store: Store; cleanup: () => Promise<void> }>;

async function harness(
  open: Opener,
  options: { scheduleMs?: number[]; timeoutMs?: number; disableAfterMs?: number } = {},
): Promise<Harness> {
  const { store, cleanup } = await open();
  const metrics = createMetrics();
  const sender = new WebhookSender({
    store,
    engine: store.engine,
    log: captureLogger('warn').logger,
    metrics,
    scheduleMs: options.scheduleMs ?? SHORT,
    timeoutMs: options.timeoutMs ?? 2000,
    disableAfterMs: options.disableAfterMs ?? 3 * 24 * 3600_000,
  });
  const webhooks = new Webhooks({ store, poke: () => sender.poke() });
  sender.start();
  return {
    store,
    webhooks,
    sender,
    metrics,
    async close() {
      await sender.stop();
      await store.close();
      await cleanup();
    },
  };
}

const event = (type: NewNodeEvent['type'], data: Record<string, unknown> = {}): NewNodeEvent => ({
  type,
  node_small_id: 7,
  data,
});

async function counter(metrics: Metrics, outcome: string): Promise<number> {
  const metric = await metrics.webhookDeliveries.get();
  return metric.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function senderSuite(engine: string, open: Opener) {
  describe(`webhook sender: ${engine}`, () => {
    const receivers: Receiver[] = [];
    const receiver = async () => {
      const r = await new Receiver().listen();
      receivers.push(r);
      return r;
    };
    after(async () => {
      for (const r of receivers) await r.down().catch(() => undefined);
    });

    it('delivers each event as GET /events shows it, signed, in event order per endpoint', async (t) => {
      const h = await harness(open);
      t.after(() => h.close());
      const r = await receiver();
      const created = await h.webhooks.create({ url: r.url });
      r.secret = created.secret;
      assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.ok(Buffer.from(created.secret.slice(6), 'base64').length >= 24);
      for (let i = 0; i < 20; i++)
        await h.store.appendNodeEvents([event('stack_filled', { n: i, big: 2n ** 64n - 1n })]);
      const got = await r.waitFor(20);
      assert.ok(
        got.every((g) => g.verified),
        got.find((g) => !g.verified)?.problem,
      );
      assert.deepEqual(
        got.map((g) => g.json.data.n),
        Array.from({ length: 20 }, (_, i) => i),
      );
      const [first] = got;
      const events = await h.store.listNodeEvents({ after: 0, limit: 1, nodes: null, types: null });
      assert.equal(first!.json.type, 'stack_filled');
      assert.equal(first!.json.timestamp, new Date(events[0]!.at).toISOString());
      assert.deepEqual(Object.keys(first!.json.data), ['id', 'at', 'type', 'node_small_id', 'n', 'big']);
      assert.equal(first!.json.data.id, events[0]!.id);
      // u64 stays exact in the body.
      assert.match(first!.body, /"big":18446744073709551615/);
      assert.equal(first!.headers['content-type'], 'application/json');
      await until('the metric', async () =>
        (await counter(h.metrics, 'delivered')) === 20 ? true : undefined,
      );
    });

    it('retries a 500 with the same webhook-id, a fresh timestamp and signature, until a 200', async (t) => {
      const h = await harness(open);
      t.after(() => h.close());
      const r = await receiver();
      const { id, secret } = await h.webhooks.create({ url: r.url, types: ['dispute_opened'] });
      r.secret = secret;
      r.script = (n) => ({ status: n < 2 ? 500 : 200 });
      await h.store.appendNodeEvents([event('task_added'), event('dispute_opened')]);
      const got = await r.waitFor(3);
      assert.ok(got.every((g) => g.verified));
      assert.equal(new Set(got.map((g) => g.id)).size, 1, 'one webhook-id on every attempt');
      assert.equal(got[0]!.json.type, 'dispute_opened');
      assert.ok(got[1]!.receivedAt - got[0]!.receivedAt >= 90, 'the second attempt waits its back-off');
      const page = await until('delivered', async () => {
        const p = await h.webhooks.deliveries(id, { before: null, limit: 10 });
        return p.deliveries[0]?.state === 'delivered' ? p : undefined;
      });
      assert.equal(page.deliveries.length, 1);
      assert.deepEqual(
        page.deliveries[0]!.attempts.map((a) => a.status),
        [500, 500, 200],
      );
      assert.equal(page.deliveries[0]!.webhook_id, got[0]!.id);
      assert.equal(await counter(h.metrics, 'retried'), 2);
      assert.equal(await counter(h.metrics, 'delivered'), 1);
      assert.equal((await h.webhooks.get(id)).state, 'enabled');
    });

    it('honours Retry-After on 429 and 503', async (t) => {
      const h = await harness(open);
      t.after(() => h.close());
      const r = await receiver();
      const { secret } = await h.webhooks.create({ url: r.url });
      r.secret = secret;
      r.script = (n) =>
        n === 0
          ? { status: 429, headers: { 'retry-after': '1' } }
          : n === 1
            ? { status: 503, headers: { 'retry-after': new Date(Date.now() + 2000).toUTCString() } }
            : { status: 200 };
      await h.store.appendNodeEvents([event('task_added')]);
      const got = await r.waitFor(3, 15_000);
      // The schedule alone would have retried after 100 ms, then 200 ms.
      assert.ok(got[1]!.receivedAt - got[0]!.receivedAt >= 950, 'waited for Retry-After: 1');
      assert.ok(got[2]!.receivedAt - got[1]!.receivedAt >= 950, 'waited for the Retry-After date');
      assert.equal(new Set(got.map((g) => g.id)).size, 1);
    });

    it('retries a receiver that is down until it is back, then delivers everything', async (t) => {
      const h = await harness(open, { scheduleMs: [0, 200, 300, 300, 300, 300, 300, 300, 300, 300] });
      t.after(() => h.close());
      const r = await receiver();
      const { id, secret } = await h.webhooks.create({ url: r.url });
      r.secret = secret;
      await r.down();
      await h.store.appendNodeEvents([event('task_added', { n: 1 }), event('task_added', { n: 2 })]);
      const failing = await until('a failed attempt', async () => {
        const e = await h.webhooks.get(id);
        return e.state === 'failing' ? e : undefined;
      });
      assert.notEqual(failing.failing_since, null);
      const { deliveries } = await h.webhooks.deliveries(id, { before: null, limit: 10 });
      const attempt = deliveries.flatMap((d) => d.attempts)[0]!;
      assert.equal(attempt.status, null);
      assert.match(attempt.error!, /ECONNREFUSED/);
      await r.listen();
      const got = await r.waitFor(2);
      assert.deepEqual(got.map((g) => g.json.data.n).sort(), [1, 2]);
      assert.ok(got.every((g) => g.verified));
      await until('enabled again', async () =>
        (await h.webhooks.get(id)).state === 'enabled' ? true : undefined,
      );
    });

    it('disables an endpoint at once on 410, with a node event the other endpoints receive', async (t) => {
      const h = await harness(open);
      t.after(() => h.close());
      const gone = await receiver();
      const watcher = await receiver();
      const g = await h.webhooks.create({ url: gone.url, description: 'gone' });
      gone.secret = g.secret;
      gone.script = () => ({ status: 410 });
      const w = await h.webhooks.create({ url: watcher.url, types: ['webhook_endpoint_disabled'] });
      watcher.secret = w.secret;
      await h.store.appendNodeEvents([event('task_added'), event('task_added')]);
      const [notice] = await watcher.waitFor(1);
      assert.ok(notice!.verified);
      assert.equal(notice!.json.type, 'webhook_endpoint_disabled');
      assert.equal(notice!.json.data.endpoint_id, g.id);
      assert.equal(notice!.json.data.reason, 'the receiver answered 410 Gone');
      assert.equal(notice!.json.data.origin, `http://127.0.0.1:${gone.port}`);
      const endpoint = await h.webhooks.get(g.id);
      assert.equal(endpoint.state, 'disabled');
      assert.equal(gone.received.length, 1, 'nothing more is sent to a disabled endpoint');
      assert.equal(await counter(h.metrics, 'failed'), 1);
      // Enabled, its pending delivery goes; the failed one is replayed on request, with its id.
      gone.script = () => ({ status: 204 });
      await h.webhooks.enable(g.id);
      await gone.waitFor(2);
      const { deliveries } = await h.webhooks.deliveries(g.id, { before: null, limit: 10 });
      const failed = deliveries.find((d) => d.state === 'failed')!;
      await assert.rejects(h.webhooks.retry(g.id, deliveries.find((d) => d.state !== 'failed')!.id + 1000), {
        code: 'webhook_delivery_not_found',
      });
      await h.webhooks.retry(g.id, failed.id);
      const all = await gone.waitFor(3);
      assert.equal(all[2]!.id, failed.webhook_id);
      await until('stats', async () => {
        await h.sender.poke();
        const v = (await h.metrics.webhookEndpointsDisabled.get()).values[0]?.value;
        return v === 0 ? true : undefined;
      });
    });

    it('disables an endpoint that keeps failing past the limit', async (t) => {
      const h = await harness(open, {
        scheduleMs: [0, 100, 100, 100, 100, 100, 100, 100],
        disableAfterMs: 250,
      });
      t.after(() => h.close());
      const r = await receiver();
      const { id, secret } = await h.webhooks.create({ url: r.url });
      r.secret = secret;
      r.script = () => ({ status: 502 });
      await h.store.appendNodeEvents([event('task_added')]);
      const endpoint = await until('disabled', async () => {
        const e = await h.webhooks.get(id);
        return e.state === 'disabled' ? e : undefined;
      });
      assert.match(endpoint.disabled_reason!, /failed since/);
      assert.ok(r.received.length >= 3 && r.received.length <= 5, `${r.received.length} attempts`);
      const events = await h.store.listNodeEvents({
        after: 0,
        limit: 10,
        nodes: null,
        types: ['webhook_endpoint_disabled'],
      });
      assert.equal(events.length, 1);
    });

    it('gives up an attempt after its timeout, and sends a test event to one endpoint only', async (t) => {
      const h = await harness(open, { timeoutMs: 300 });
      t.after(() => h.close());
      const silent = await receiver();
      const other = await receiver();
      const s = await h.webhooks.create({ url: silent.url });
      silent.secret = s.secret;
      silent.script = (n) => (n === 0 ? 'hang' : { status: 200 });
      const o = await h.webhooks.create({ url: other.url });
      other.secret = o.secret;
      const test = await h.webhooks.test(s.id);
      assert.equal(test.type, 'webhook.test');
      const got = await silent.waitFor(2);
      assert.equal(got[0]!.json.type, 'webhook.test');
      assert.equal(got[0]!.json.data.endpoint_id, s.id);
      assert.equal(got[1]!.id, got[0]!.id);
      const { deliveries } = await h.webhooks.deliveries(s.id, { before: null, limit: 10 });
      assert.match(deliveries[0]!.attempts[0]!.error!, /no answer within 0.3 s/);
      assert.ok(deliveries[0]!.attempts[0]!.duration_ms >= 250);
      assert.equal(other.received.length, 0, 'a test goes to its endpoint only');
    });
  });
}

senderSuite('sqlite', async () => {
  const { dir, remove } = tempDir();
  return { store: new SqliteStore({ dataDir: dir }), cleanup: remove };
});

if (await postgresAvailable('webhook sender: postgres')) {
  senderSuite('postgres', async () => {
    const db = (await createTestDatabase()) as TestDatabase;
    const store = await PostgresStore.open({ url: db.url, poolSize: 4 });
    return { store, cleanup: () => db.drop() };
  });

  describe('webhook senders: two daemons on one PostgreSQL database', () => {
    it('send each delivery once, in order per endpoint', async (t) => {
      const db = (await createTestDatabase()) as TestDatabase;
      t.after(() => db.drop());
      const a = await harness(async () => ({
        store: await PostgresStore.open({ url: db.url, poolSize: 4 }),
        cleanup: async () => undefined,
      }));
      const b = await harness(async () => ({
        store: await PostgresStore.open({ url: db.url, poolSize: 4 }),
        cleanup: async () => undefined,
      }));
      t.after(async () => {
        await a.close();
        await b.close();
      });
      const receivers = await Promise.all([1, 2, 3].map(() => new Receiver().listen()));
      t.after(async () => {
        for (const r of receivers) await r.down();
      });
      for (const r of receivers) {
        r.secret = (await a.webhooks.create({ url: r.url })).secret;
        r.script = () => ({ status: 200 });
      }
      // Events written through both daemons; each wakes its own sender (and the other by NOTIFY).
      for (let i = 0; i < 30; i++)
        await (i % 2 ? a : b).store.appendNodeEvents([event('task_added', { n: i })]);
      for (const r of receivers) {
        const got = await r.waitFor(30, 20_000);
        assert.ok(got.every((g) => g.verified));
        assert.deepEqual(
          got.map((g) => g.json.data.n),
          Array.from({ length: 30 }, (_, i) => i),
        );
      }
      await new Promise((r) => setTimeout(r, 500));
      for (const r of receivers) assert.equal(r.received.length, 30, 'none sent twice');
      const sent = (await counter(a.metrics, 'delivered')) + (await counter(b.metrics, 'delivered'));
      assert.equal(sent, 90);
    });
  });
}
