import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type App, buildApp } from '../src/app.ts';
import { loadOrCreateToken } from '../src/http/security.ts';
import { createLogger } from '../src/internal/logger.ts';
import { WebhookSender, Webhooks } from '../src/operations/webhooks.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { openSecurity, TEST_APP_CONFIG } from './helpers/app-options.ts';
import { tempDir } from './helpers/tmp.ts';
import { Receiver } from './helpers/webhook-receiver.ts';

/** The /webhooks routes, through the app (auth writes: their GETs need the token all the same). */
describe('webhook routes', () => {
  const tmp = tempDir();
  let app: App;
  let store: SqliteStore;
  let sender: WebhookSender;
  let token: string;
  const receiver = new Receiver();
  const auth = () => ({ authorization: `Bearer ${token}` });
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, headers = auth()) =>
    app.inject({
      method,
      url,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  before(async () => {
    await receiver.listen();
    token = readFileSync(loadOrCreateToken(tmp.dir).file, 'utf8').trim();
    store = new SqliteStore({ dataDir: tmp.dir });
    const logger = createLogger('silent');
    sender = new WebhookSender({ store, engine: 'sqlite', log: logger, scheduleMs: [0, 100] });
    sender.start();
    app = await buildApp({
      config: TEST_APP_CONFIG,
      store,
      logger,
      security: openSecurity(tmp.dir, { auth: 'writes' }),
      webhooks: new Webhooks({ store, poke: () => sender.poke() }),
    });
  });
  after(async () => {
    await app.close();
    await sender.stop();
    await store.close();
    await receiver.down();
    await tmp.remove();
  });

  it('needs the token for every route, reads included', async () => {
    for (const [method, url] of [
      ['GET', '/webhooks'],
      ['GET', '/webhooks/1'],
      ['GET', '/webhooks/1/deliveries'],
      ['POST', '/webhooks'],
      ['DELETE', '/webhooks/1'],
      ['POST', '/webhooks/1/test'],
      ['POST', '/webhooks/1/enable'],
      ['POST', '/webhooks/1/deliveries/1/retry'],
    ] as const) {
      const res = await call(method, url, method === 'POST' ? {} : undefined, {} as ReturnType<typeof auth>);
      assert.equal(res.statusCode, 401, `${method} ${url}`);
      assert.equal(res.json().code, 'unauthorized');
    }
    // Other reads stay open under --auth writes.
    assert.equal((await call('GET', '/tasks', undefined, {} as ReturnType<typeof auth>)).statusCode, 200);
  });

  it('refuses a bad URL or an unknown type with a 400 that names it', async () => {
    const ftp = await call('POST', '/webhooks', { url: 'ftp://example.com/x' });
    assert.equal(ftp.statusCode, 400);
    assert.match(String(ftp.headers['content-type']), /^application\/problem\+json/);
    assert.match(ftp.json().detail, /url "ftp:\/\/example.com\/x" uses ftp: only http:\/\/ and https:\/\//);
    const junk = await call('POST', '/webhooks', { url: 'not a url' });
    assert.equal(junk.statusCode, 400);
    assert.match(junk.json().detail, /url "not a url" is not a URL/);
    const type = await call('POST', '/webhooks', {
      url: 'https://example.com',
      types: ['dispute_opened', 'stack_flied'],
    });
    assert.equal(type.statusCode, 400);
    assert.match(type.json().detail, /unknown event type "stack_flied" in types/);
    const extra = await call('POST', '/webhooks', { url: 'https://example.com', secret: 'mine' });
    assert.equal(extra.statusCode, 400);
  });

  it('adds an endpoint (secret shown once), lists, tests, pages deliveries, replays and removes it', async () => {
    const created = await call('POST', '/webhooks', {
      url: receiver.url,
      types: ['dispute_opened'],
      description: 'phone',
    });
    assert.equal(created.statusCode, 201, created.body);
    const endpoint = created.json();
    assert.match(endpoint.secret, /^whsec_/);
    assert.deepEqual(
      { ...endpoint, secret: undefined, created_at: undefined },
      {
        id: endpoint.id,
        url: receiver.url,
        types: ['dispute_opened'],
        description: 'phone',
        state: 'enabled',
        created_at: undefined,
        disabled_at: null,
        disabled_reason: null,
        failing_since: null,
        secret: undefined,
      },
    );
    receiver.secret = endpoint.secret;
    const list = await call('GET', '/webhooks');
    assert.equal(list.statusCode, 200);
    assert.ok(!list.body.includes(endpoint.secret), 'the list never shows the secret');
    assert.equal(list.json().endpoints.length, 1);
    const one = await call('GET', `/webhooks/${endpoint.id}`);
    assert.ok(!one.body.includes('whsec_'));

    const test = await call('POST', `/webhooks/${endpoint.id}/test`);
    assert.equal(test.statusCode, 202, test.body);
    const [got] = await receiver.waitFor(1);
    assert.ok(got!.verified, got!.problem);
    assert.equal(got!.json.type, 'webhook.test');

    for (let i = 0; i < 3; i++) {
      await store.appendNodeEvents([{ type: 'dispute_opened', node_small_id: 1, data: { i } }]);
    }
    await receiver.waitFor(4);
    let page1 = (await call('GET', `/webhooks/${endpoint.id}/deliveries?limit=2`)).json();
    // The receiver has answered; the attempt is recorded just after.
    for (let i = 0; i < 100 && page1.deliveries[0].state !== 'delivered'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      page1 = (await call('GET', `/webhooks/${endpoint.id}/deliveries?limit=2`)).json();
    }
    assert.equal(page1.deliveries.length, 2);
    assert.deepEqual(page1.deliveries[0].attempts.length, 1);
    assert.equal(page1.deliveries[0].attempts[0].status, 200);
    const page2 = (
      await call('GET', `/webhooks/${endpoint.id}/deliveries?limit=2&before=${page1.next_before}`)
    ).json();
    assert.equal(page2.deliveries.length, 2);
    assert.equal(page2.deliveries[1].type, 'webhook.test');
    assert.ok(page2.deliveries[0].id < page1.deliveries[1].id);

    const first = page2.deliveries[1];
    const replay = await call('POST', `/webhooks/${endpoint.id}/deliveries/${first.id}/retry`);
    assert.equal(replay.statusCode, 202, replay.body);
    const all = await receiver.waitFor(5);
    assert.equal(all[4]!.id, first.webhook_id, 'a replay keeps its webhook-id');

    const missing = await call('POST', `/webhooks/${endpoint.id}/deliveries/999999/retry`);
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'webhook_delivery_not_found');
    assert.equal((await call('POST', `/webhooks/${endpoint.id}/enable`)).json().state, 'enabled');

    const removed = await call('DELETE', `/webhooks/${endpoint.id}`);
    assert.equal(removed.statusCode, 200);
    const gone = await call('GET', `/webhooks/${endpoint.id}`);
    assert.equal(gone.statusCode, 404);
    assert.equal(gone.json().code, 'webhook_not_found');
    assert.match(gone.json().detail, /node-daemon webhooks list/);
  });
});
