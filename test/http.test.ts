import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type App, BODY_LIMIT, buildApp } from '../src/app.ts';
import { applyPage } from '../src/indexer/apply.ts';
import { createLogger } from '../src/internal/logger.ts';
import { ERRORS } from '../src/problems/catalog.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { openSecurity, TEST_APP_CONFIG } from './helpers/app-options.ts';
import { bytes, event, hexId, inner, node, stack, subscribe, task, trySettle } from './helpers/sui-events.ts';
import { tempDir } from './helpers/tmp.ts';

const REQUEST = new Uint8Array(32).fill(3);

const U64_MAX = '18446744073709551615';

async function setup(cacheMb = 64) {
  const tmp = tempDir();
  const store = new SqliteStore({ dataDir: tmp.dir });
  const logger = createLogger('silent');
  const app = await buildApp({
    config: { ...TEST_APP_CONFIG, cacheMb },
    store,
    logger,
    security: openSecurity(tmp.dir),
  });
  const seed = async (events: unknown[]) =>
    applyPage(
      store,
      'test',
      { events: events.map((raw, i) => ({ position: String(i), raw })), nextCursor: null, hasMore: false },
      logger,
    );
  return {
    app,
    store,
    seed,
    dir: tmp.dir,
    close: async () => {
      await app.close();
      await store.close();
      await tmp.remove();
    },
  };
}

function assertProblem(
  res: { statusCode: number; headers: Record<string, unknown>; json: () => unknown },
  status: number,
  code: string,
  parameter?: string,
) {
  assert.equal(res.statusCode, status);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.equal(body.type, `urn:node-daemon:problem:${code}`);
  assert.equal(typeof body.detail, 'string');
  assert.ok((body.detail as string).length > 10);
  assert.equal(typeof body.request_id, 'string');
  if (parameter !== undefined) assert.equal(body.parameter, parameter);
  return body;
}

describe('read API', () => {
  let ctx: Awaited<ReturnType<typeof setup>>;
  let app: App;
  before(async () => {
    ctx = await setup();
    app = ctx.app;
    await ctx.seed([
      task(2, 2),
      task(1, 1),
      node(1),
      node(2),
      subscribe(1, 2, U64_MAX),
      subscribe(1, 1, 3),
      subscribe(2, 1, 4),
      stack(7, 1, 1, 1000),
      stack(3, 1, 2, 0),
      stack(5, 1, 2, 1000),
      stack(4, 2, 1, 1000),
      trySettle(5, 1, [2], 600),
      event('StackSettlementTicketClaimedEvent', {
        stack_small_id: inner(5),
        selected_node_id: inner(1),
        attestation_nodes: [inner(2)],
        num_claimed_compute_units: '600',
        user_refund_amount: U64_MAX,
      }),
      event('ClaimedStackEvent', {
        stack_small_id: inner(7),
        selected_node_id: inner(1),
        num_claimed_compute_units: '10',
        user_refund_amount: '990',
      }),
      event('StackAttestationDisputeEvent', {
        stack_small_id: inner(5),
        attestation_commitment: bytes(32, 3),
        attestation_node_id: inner(2),
        original_node_id: inner(1),
        original_commitment: bytes(32, 7),
      }),
    ]);
    await ctx.store.addStackUsage(7, 900, REQUEST, Date.now());
    await ctx.store.addStackUsage(5, 500, REQUEST, Date.now());
  });
  after(() => ctx.close());

  it('GET /tasks and /tasks/ list tasks in small-id order with upstream field names', async () => {
    for (const url of ['/tasks', '/tasks/']) {
      const res = await app.inject({ url });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      const body = res.json() as Record<string, unknown>[];
      assert.deepEqual(
        body.map((t) => t.task_small_id),
        [1, 2],
      );
      assert.deepEqual(body[0], {
        task_small_id: 1,
        task_id: hexId('task-1'),
        role: 0,
        model_name: 'meta-llama/Llama-3.3-70B-Instruct',
        is_deprecated: false,
        valid_until_epoch: null,
        deprecated_at_epoch: null,
        security_level: 1,
        minimum_reputation_score: null,
        is_removed: false,
        removed_at_epoch: null,
      });
    }
  });

  it('HEAD /tasks answers without a body', async () => {
    const res = await app.inject({ method: 'HEAD', url: '/tasks' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, '');
  });

  it('GET /subscriptions/nodes/{id} sends u64 values as exact JSON digits', async () => {
    const res = await app.inject({ url: '/subscriptions/nodes/1' });
    assert.equal(res.statusCode, 200);
    assert.equal(
      res.body,
      `[{"node_small_id":1,"task_small_id":1,"price_per_one_million_compute_units":3,"max_num_compute_units":1000000,"valid":true},` +
        `{"node_small_id":1,"task_small_id":2,"price_per_one_million_compute_units":${U64_MAX},"max_num_compute_units":1000000,"valid":true}]`,
    );
    assert.deepEqual((await app.inject({ url: '/subscriptions/nodes/3' })).json(), []);
  });

  it('GET /stacks/nodes/{id} lists the node stacks, filtered by min_fill_fraction inclusively', async () => {
    const ids = async (query = '') => {
      const res = await app.inject({ url: `/stacks/nodes/1${query}` });
      assert.equal(res.statusCode, 200, res.body);
      return (res.json() as { stack_small_id: number }[]).map((s) => s.stack_small_id);
    };
    assert.deepEqual(await ids(), [3, 5, 7]);
    assert.deepEqual(
      await ids('?min_fill_fraction=0.9'),
      [3, 7],
      'zero capacity counts as full; 900/1000 >= 0.9',
    );
    assert.deepEqual(await ids('?min_fill_fraction=0.5'), [3, 5, 7]);
    assert.deepEqual(await ids('?min_fill_fraction=.51'), [3, 7]);
    assert.deepEqual(await ids('?min_fill_fraction=1'), [3]);
    assert.deepEqual(await ids('?min_fill_fraction=0'), [3, 5, 7]);
    assert.deepEqual(await ids('?min_fill_fraction=9e-1'), [3, 7]);
    const [first] = (await app.inject({ url: '/stacks/nodes/1' })).json() as Record<string, unknown>[];
    assert.deepEqual(Object.keys(first ?? {}), [
      'owner_address',
      'stack_small_id',
      'stack_id',
      'task_small_id',
      'selected_node_id',
      'num_compute_units',
      'price_per_one_million_compute_units',
      'already_computed_units',
      'in_settle_period',
      'num_total_messages',
      'is_claimed',
      'is_locked_for_claim',
      'is_confidential',
      'user_refund_amount',
    ]);
    const stack5 = ((await app.inject({ url: '/stacks/nodes/1' })).json() as Record<string, unknown>[])[1];
    assert.equal(stack5?.in_settle_period, true);
    assert.equal(stack5?.already_computed_units, 500);
    assert.equal(stack5?.num_total_messages, 1);
    assert.match(
      (await app.inject({ url: '/stacks/nodes/1' })).body,
      new RegExp(`"user_refund_amount":${U64_MAX}`),
    );
  });

  it('GET /claimed-stacks/nodes/{id} includes both claim paths, in the upstream ticket shape', async () => {
    const res = await app.inject({ url: '/claimed-stacks/nodes/1' });
    assert.equal(res.statusCode, 200);
    const body = JSON.parse(res.body.replace(U64_MAX, '"U64_MAX"')) as Record<string, unknown>[];
    assert.deepEqual(body[0], {
      stack_small_id: 5,
      selected_node_id: 1,
      num_claimed_compute_units: 600,
      requested_attestation_nodes: '[2]',
      committed_stack_proofs: bytes(32, 7),
      stack_merkle_leaves: [...bytes(32, 9), ...Array(32).fill(0)],
      dispute_settled_at_epoch: null,
      already_attested_nodes: '[]',
      is_in_dispute: true,
      user_refund_amount: 'U64_MAX',
      is_claimed: true,
      claim_path: 'settlement_ticket',
      // Additions: no epoch in these events; the fee is the contract's, 600 x 2_000_000 x 1.2 / 1e6.
      claimable_from_epoch: null,
      node_fee_amount: 1440,
    });
    assert.deepEqual(
      body.map((c) => [c.stack_small_id, c.claim_path]),
      [
        [5, 'settlement_ticket'],
        [7, 'confidential_compute'],
      ],
    );
  });

  it('GET /attestation_disputes/against and /own split disputes by role', async () => {
    const against = (await app.inject({ url: '/attestation_disputes/against/nodes/1' })).json();
    assert.deepEqual(against, [
      {
        stack_small_id: 5,
        attestation_commitment: bytes(32, 3),
        attestation_node_id: 2,
        original_node_id: 1,
        original_commitment: bytes(32, 7),
      },
    ]);
    assert.deepEqual((await app.inject({ url: '/attestation_disputes/own/nodes/1' })).json(), []);
    assert.deepEqual(
      ((await app.inject({ url: '/attestation_disputes/own/nodes/2' })).json() as unknown[]).length,
      1,
    );
  });

  it('GET /health answers ok', async () => {
    const res = await app.inject({ url: '/health' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: 'ok' });
  });

  it('serves the OpenAPI document and the reference page', async () => {
    const spec = (await app.inject({ url: '/openapi.json' })).json() as { openapi: string; paths: object };
    assert.equal(spec.openapi, '3.1.0');
    assert.ok('/stacks/nodes/{node_id}' in spec.paths);
    const docs = await app.inject({ url: '/docs/' });
    assert.equal(docs.statusCode, 200);
    assert.match(docs.body, /<html/i);
  });

  for (const bad of [
    '-1',
    'abc',
    '1.5',
    '1e3',
    '%207',
    '0x10',
    '9007199254740992',
    '18446744073709551615',
    '',
  ]) {
    it(`rejects node_id ${JSON.stringify(bad)} with a 400 problem naming the parameter`, async () => {
      const res = await app.inject({ url: `/stacks/nodes/${bad}` });
      if (bad === '') {
        assertProblem(res, 404, 'not_found');
        return;
      }
      const body = assertProblem(res, 400, 'invalid_parameter', 'node_id');
      assert.match(String(body.detail), /node_id must be an integer/);
    });
  }

  for (const bad of ['', 'abc', 'NaN', '-0.1', '1.01', 'Infinity', '0.5,0.6', '+0.5', '1e1']) {
    it(`rejects min_fill_fraction ${JSON.stringify(bad)} with a 400`, async () => {
      const res = await app.inject({ url: `/stacks/nodes/1?min_fill_fraction=${encodeURIComponent(bad)}` });
      const body = assertProblem(res, 400, 'invalid_parameter', 'min_fill_fraction');
      assert.match(String(body.detail), /from 0 to 1/);
    });
  }

  it('rejects a repeated or unknown query parameter', async () => {
    assertProblem(
      await app.inject({ url: '/stacks/nodes/1?min_fill_fraction=0.1&min_fill_fraction=0.2' }),
      400,
      'invalid_parameter',
      'min_fill_fraction',
    );
    assertProblem(
      await app.inject({ url: '/stacks/nodes/1?min_fill=0.1' }),
      400,
      'invalid_parameter',
      'min_fill',
    );
    // A route that declares no query parameters takes none (it used to ignore them).
    for (const url of ['/health?verbose=1', '/status?x=1', '/earnings/nodes/1?limit=5']) {
      const res = await app.inject({ url });
      if (url.startsWith('/earnings')) {
        assertProblem(res, 400, 'invalid_parameter', 'limit');
      } else {
        assertProblem(res, 400, 'invalid_parameter', url.slice(url.indexOf('?') + 1).split('=')[0]);
      }
    }
    // The console's files are not the API: a browser's cache-busting query is fine.
    assert.equal((await app.inject({ url: '/?v=2' })).statusCode, 200);
  });

  it('answers 404 with a problem for an unknown path', async () => {
    const body = assertProblem(await app.inject({ url: '/stacks' }), 404, 'not_found');
    assert.equal(body.instance, '/stacks');
  });

  it('answers 405 with Allow for a wrong method', async () => {
    const cases: [string, string, string][] = [
      ['POST', '/tasks', 'GET, HEAD'],
      ['DELETE', '/stacks/nodes/1', 'GET, HEAD'],
      ['GET', '/nodes/register', 'POST'],
      ['POST', '/nodes/task-unsubscribe', 'DELETE'],
    ];
    for (const [method, url, allow] of cases) {
      const res = await app.inject({ method: method as 'GET', url });
      assertProblem(res, 405, 'method_not_allowed');
      assert.equal(res.headers.allow, allow, `${method} ${url}`);
    }
  });

  it('answers 415 for a body that is not JSON', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/nodes/register',
      headers: { 'content-type': 'text/plain' },
      payload: 'hello',
    });
    assertProblem(res, 415, 'unsupported_media_type');
  });

  it('answers 413 for a body over the limit', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/nodes/claim-funds',
      headers: { 'content-type': 'application/json' },
      payload: `{"stack_small_ids":[${'1,'.repeat(BODY_LIMIT / 2)}1]}`,
    });
    assertProblem(res, 413, 'payload_too_large');
  });

  it('answers 400 for malformed or empty JSON', async () => {
    for (const payload of ['{"stack_small_ids": [1,', '']) {
      const res = await app.inject({
        method: 'POST',
        url: '/nodes/claim-funds',
        headers: { 'content-type': 'application/json' },
        payload,
      });
      assertProblem(res, 400, 'malformed_json');
    }
  });

  it('answers every write with 503 no_network on network none', async () => {
    const writes: [string, string][] = [
      ['POST', '/nodes/register'],
      ['POST', '/nodes/model-subscribe'],
      ['POST', '/nodes/task-subscribe'],
      ['POST', '/nodes/task-update-subscription'],
      ['DELETE', '/nodes/task-unsubscribe'],
      ['POST', '/nodes/try-settle-stacks'],
      ['POST', '/nodes/submit-attestations'],
      ['POST', '/nodes/claim-funds'],
    ];
    for (const [method, url] of writes) {
      const res = await app.inject({ method: method as 'POST', url, payload: { anything: 1 } });
      const body = assertProblem(res, 503, 'no_network');
      assert.match(String(body.detail), /network "none"/);
    }
  });

  it('has no /dev routes and no usage reporting off the dev network', async () => {
    assertProblem(await app.inject({ method: 'POST', url: '/dev/tasks', payload: {} }), 404, 'not_found');
    assertProblem(await app.inject({ method: 'POST', url: '/dev/epoch' }), 404, 'not_found');
    assertProblem(
      await app.inject({ method: 'POST', url: '/stacks/1/usage', payload: { compute_units: 1 } }),
      503,
      'no_network',
    );
    assertProblem(await app.inject({ url: '/nodes/badges' }), 503, 'no_network');
  });

  it('never answers 500 to odd requests', async () => {
    const odd = [
      { url: '/stacks/nodes/1?%zz=1' },
      { url: '/%' },
      { url: `/stacks/nodes/1?min_fill_fraction=${'9'.repeat(5000)}` },
      { url: '/tasks', headers: { 'content-type': 'application/json' }, payload: '{' },
      { method: 'OPTIONS' as const, url: '/tasks' },
      { method: 'PUT' as const, url: '/nodes/claim-funds', payload: {} },
    ];
    for (const req of odd) {
      const res = await app.inject(req);
      assert.ok(res.statusCode < 500, `${req.url}: ${res.statusCode} ${res.body}`);
    }
  });

  it('documents every code it can answer with in the catalog', () => {
    assert.ok(Object.keys(ERRORS).length >= 10);
  });
});

describe('response cache', () => {
  for (const cacheMb of [64, 0]) {
    it(`serves fresh data after every commit (cache ${cacheMb} MB), also from another connection`, async () => {
      const ctx = await setup(cacheMb);
      try {
        await ctx.seed([task(1)]);
        assert.equal(((await ctx.app.inject({ url: '/tasks' })).json() as unknown[]).length, 1);
        assert.equal(((await ctx.app.inject({ url: '/tasks' })).json() as unknown[]).length, 1);
        await ctx.seed([task(2)]);
        assert.equal(((await ctx.app.inject({ url: '/tasks' })).json() as unknown[]).length, 2);
        // A second store on the same file stands for another process (replay, or a second daemon).
        const other = new SqliteStore({ dataDir: ctx.dir });
        await applyPage(
          other,
          'other',
          { events: [{ position: '1', raw: task(3) }], nextCursor: null, hasMore: false },
          createLogger('silent'),
        );
        await other.close();
        // Another connection's commit shows from the next event-loop turn (the version is read once a turn).
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(((await ctx.app.inject({ url: '/tasks' })).json() as unknown[]).length, 3);
        await ctx.seed([stack(1, 1)]);
        assert.equal(((await ctx.app.inject({ url: '/stacks/nodes/1' })).json() as unknown[]).length, 1);
        await ctx.store.addStackUsage(1, 999, REQUEST, Date.now());
        const [s] = (await ctx.app.inject({ url: '/stacks/nodes/1' })).json() as {
          already_computed_units: number;
        }[];
        assert.equal(s?.already_computed_units, 999);
      } finally {
        await ctx.close();
      }
    });
  }
});

describe('shutdown', () => {
  it('answers a request that arrives while draining with a shutting_down problem', async () => {
    const ctx = await setup();
    try {
      const closing = ctx.app.close();
      const res = await ctx.app.inject({ url: '/tasks' });
      await closing;
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().code, 'shutting_down');
      assert.equal(res.headers.connection, 'close');
    } finally {
      // The app is closed already (closing it again does nothing); the store and the directory go too.
      await ctx.close();
    }
  });
});
