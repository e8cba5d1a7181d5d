import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { OPENAPI_FILE } from '../scripts/export-openapi.ts';
import { BODY_LIMIT } from '../src/app.ts';
import { TOKEN_FILE } from '../src/http/security.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';

/**
 * The document a running daemon serves, checked against what that daemon does: the token where it asks
 * for it, every status and problem code it answers, examples it accepts, the /dev routes on the dev
 * network, upstream's misnamed paths. Operations are found in the document itself, so a new route is
 * covered without a change here.
 */

interface ResponseObject {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: unknown }>;
  'x-problem-codes'?: string[];
}
interface Operation {
  security?: Record<string, string[]>[];
  deprecated?: boolean;
  responses: Record<string, ResponseObject>;
  parameters?: { in: string; name: string; example?: unknown }[];
  requestBody?: { content: Record<string, { example?: unknown }> };
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes?: Record<string, { type: string; scheme?: string }> };
}

async function servedDocument(d: DevDaemon): Promise<Document> {
  // With --auth all the document itself needs the token (only /health and /ready are open).
  const res = await d.get('/openapi.json');
  assert.equal(res.statusCode, 200);
  return res.json() as Document;
}

function operations(doc: Document): { method: string; path: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );
}

/** The path with its parameters filled from their examples (1 where there is none). */
function concrete(path: string, op: Operation): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const example = op.parameters?.find((p) => p.in === 'path' && p.name === name)?.example;
    return String(example ?? 1);
  });
}

const hasBody = (method: string) => method !== 'GET' && method !== 'HEAD';

/** What these tests read of an answer. */
interface Answered {
  statusCode: number;
  headers: LightMyRequestResponse['headers'];
  body: string;
  // biome-ignore lint/suspicious/noExplicitAny: as LightMyRequestResponse's json(): each test reads its fields.
  json(): any;
}

/**
 * app.inject for any operation: an event stream (GET /events) never ends, so its answer is taken as soon
 * as its head is written and its body is left unread; any other answer is read whole.
 */
async function inject(d: DevDaemon, options: InjectOptions): Promise<Answered> {
  const res = await d.app.inject({ ...options, payloadAsStream: true });
  const stream = res.stream();
  let body = '';
  if (String(res.headers['content-type']).startsWith('text/event-stream')) stream.destroy();
  else for await (const chunk of stream) body += String(chunk);
  return { statusCode: res.statusCode, headers: res.headers, body, json: () => JSON.parse(body) };
}

/** A request without the token. Bodies are text/plain, so an open write stops at 415 and runs nothing. */
function anonymous(d: DevDaemon, method: string, url: string): Promise<Answered> {
  return inject(d, {
    method: method as 'GET',
    url,
    ...(hasBody(method) ? { payload: 'x', headers: { 'content-type': 'text/plain' } } : {}),
  });
}

describe('the served OpenAPI document and --auth', () => {
  for (const auth of ['writes', 'all', 'none'] as const) {
    it(`--auth ${auth}: declares the bearer token on exactly the operations that answer 401 without it`, async () => {
      const d = await devDaemon({ auth });
      try {
        const doc = await servedDocument(d);
        const schemes = doc.components.securitySchemes ?? {};
        if (auth === 'none') {
          assert.deepEqual(schemes, {}, 'no token, no scheme');
        } else {
          assert.deepEqual(Object.keys(schemes), ['apiToken']);
          assert.equal(schemes.apiToken?.type, 'http');
          assert.equal(schemes.apiToken?.scheme, 'bearer');
        }
        let secured = 0;
        for (const { method, path, op } of operations(doc)) {
          const res = await anonymous(d, method, concrete(path, op));
          const declared = (op.security ?? []).some((requirement) => 'apiToken' in requirement);
          assert.equal(declared, res.statusCode === 401, `${method} ${path} answered ${res.statusCode}`);
          if (declared) {
            secured += 1;
            assert.ok(op.responses['401'], `${method} ${path} documents 401`);
            assert.ok(op.responses['403'], `${method} ${path} documents 403`);
          }
        }
        assert.ok(auth === 'none' ? secured === 0 : secured > 0);
        // Swagger UI reads the same document: its Authorize button comes from the scheme.
        const ui = await d.get('/docs/json');
        assert.deepEqual(ui.json(), doc);
      } finally {
        await d.close();
      }
    });
  }

  it('the committed docs/openapi.json declares the token as the default --auth writes does', async () => {
    const committed = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Document;
    const d = await devDaemon();
    try {
      const served = await servedDocument(d);
      assert.ok(committed.components.securitySchemes?.apiToken);
      assert.deepEqual(committed.components.securitySchemes, served.components.securitySchemes);
      for (const { method, path, op } of operations(committed)) {
        const live = served.paths[path]?.[method.toLowerCase()];
        assert.ok(live, `${method} ${path} is served on dev too`);
        assert.deepEqual(op.security, live.security, `${method} ${path}`);
      }
    } finally {
      await d.close();
    }
  });
});

// --- statuses --------------------------------------------------------------------------------------------

/** One answer of the daemon: the operation it was for, and its status and problem code. */
interface Answer {
  method: string;
  path: string;
  label: string;
  status: number;
  code: string | undefined;
  /** The media type, without parameters. */
  media: string;
}

interface Probe {
  label: string;
  method: string;
  /** The operation's path in the document. */
  path: string;
  url?: string;
  body?: unknown;
  /** A raw payload, sent as it is. */
  payload?: string;
  headers?: Record<string, string>;
  /** Send no Authorization header (the default sends the daemon's token). */
  anonymous?: boolean;
  /** The problem code this request must get, or ok for a 200. */
  expect?: string;
}

/** Sends probes to a daemon and keeps every answer, to compare with the daemon's own document. */
class Prober {
  readonly answers: Answer[] = [];
  readonly d: DevDaemon;
  readonly doc: Document;
  readonly token: string;

  constructor(d: DevDaemon, doc: Document) {
    this.d = d;
    this.doc = doc;
    this.token = readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim();
  }

  async send(probe: Probe): Promise<Answered> {
    const op = this.doc.paths[probe.path]?.[probe.method.toLowerCase()];
    assert.ok(op, `${probe.method} ${probe.path} is documented`);
    const json = probe.body !== undefined ? JSON.stringify(probe.body) : undefined;
    const payload = probe.payload ?? json;
    const res = await inject(this.d, {
      method: probe.method as 'GET',
      url: probe.url ?? concrete(probe.path, op),
      ...(payload === undefined ? {} : { payload }),
      headers: {
        ...(probe.anonymous ? {} : { authorization: `Bearer ${this.token}` }),
        ...(json === undefined ? {} : { 'content-type': 'application/json' }),
        ...probe.headers,
      },
    });
    const problem = String(res.headers['content-type']).startsWith('application/problem+json');
    if (probe.expect !== undefined) {
      const got = problem ? (res.json() as { code: string }).code : res.statusCode === 200 ? 'ok' : res.body;
      assert.equal(got, probe.expect, `${probe.method} ${probe.path}: ${probe.label}`);
    }
    this.answers.push({
      method: probe.method,
      path: probe.path,
      label: probe.label,
      status: res.statusCode,
      code: problem ? (res.json() as { code: string }).code : undefined,
      media: String(res.headers['content-type']).split(';')[0]!,
    });
    return res;
  }

  async sendAll(probes: Probe[]): Promise<void> {
    for (const probe of probes) await this.send(probe);
  }

  /**
   * Every answer's status is documented for its operation, with its media type, and a problem's code
   * under that status.
   */
  assertDocumented(): void {
    const missing = new Set<string>();
    for (const a of this.answers) {
      const response = this.doc.paths[a.path]?.[a.method.toLowerCase()]?.responses[String(a.status)];
      const where = `${a.method} ${a.path} answered ${a.status}${a.code ? ` ${a.code}` : ''} (${a.label})`;
      if (!response) {
        missing.add(`${where}: status not documented`);
        continue;
      }
      if (a.status !== 304 && !response.content?.[a.media])
        missing.add(`${where}: ${a.media} not documented`);
      if (a.code !== undefined && !response['x-problem-codes']?.includes(a.code)) {
        missing.add(`${where}: code not documented`);
      }
    }
    assert.deepEqual([...missing], []);
  }
}

/** The example body of an operation, if it documents one. */
function example(op: Operation): unknown {
  return op.requestBody?.content['application/json']?.example;
}

/** Requests every operation can be sent: without or with a wrong token, for another host, malformed. */
function genericProbes(doc: Document): Probe[] {
  return operations(doc).flatMap(({ method, path, op }): Probe[] => {
    const url = concrete(path, op);
    const body = hasBody(method) ? (example(op) ?? {}) : undefined;
    const probes: Probe[] = [
      { label: 'no token', method, path, body, anonymous: true },
      { label: 'wrong token', method, path, body, headers: { authorization: 'Bearer wrong' } },
      { label: 'another Host', method, path, body, headers: { host: 'evil.example' } },
      { label: 'token in the query', method, path, body, url: `${url}?token=abc` },
    ];
    if (/\{\w+\}/.test(path)) {
      probes.push({
        label: 'path parameter not a number',
        method,
        path,
        body,
        url: path.replace(/\{\w+\}/g, 'x'),
      });
    }
    for (const query of op.parameters?.filter((p) => p.in === 'query') ?? []) {
      probes.push({ label: `query ${query.name} not a number`, method, path, url: `${url}?${query.name}=x` });
    }
    probes.push({ label: 'unknown query parameter', method, path, url: `${url}?unknown_parameter=1` });
    if (hasBody(method)) {
      const json = { 'content-type': 'application/json' };
      probes.push(
        { label: 'text body', method, path, payload: 'x', headers: { 'content-type': 'text/plain' } },
        { label: 'malformed JSON', method, path, payload: '{"', headers: json },
        { label: 'empty JSON', method, path, payload: '', headers: json },
        { label: 'too large', method, path, payload: `"${'x'.repeat(BODY_LIMIT)}"`, headers: json },
      );
      if (op.requestBody) probes.push({ label: 'unknown field', method, path, body: { unknown_field: 1 } });
      if (op.parameters?.some((p) => p.in === 'header' && p.name === 'idempotency-key')) {
        probes.push({
          label: 'Idempotency-Key too long',
          method,
          path,
          body,
          headers: { 'idempotency-key': 'k'.repeat(300) },
        });
      }
    }
    return probes;
  });
}

const PRICE = { price_per_one_million_compute_units: 1_000_000 };
const NO_BADGE = { node_badge_id: '0x1' };

/**
 * Requests the operations refuse (each with the code it gets), on the demo world once the documented
 * examples have run: the operator's node 4 owns stacks 10 (settled and claimed), 11 and 12 (no usage);
 * peer node 1 owns stack 1; task 4 is deprecated and removed; task 5 asks for more reputation than any
 * node has.
 */
function refusals(): Probe[] {
  const post = (expect: string, label: string, path: string, body?: unknown, url?: string): Probe => ({
    expect,
    label,
    method: 'POST',
    path,
    body: body ?? {},
    ...(url ? { url } : {}),
  });
  const del = (expect: string, label: string, body: unknown): Probe => ({
    expect,
    label,
    method: 'DELETE',
    path: '/nodes/task-unsubscribe',
    body,
  });
  const usage = '/stacks/{stack_small_id}/usage';
  return [
    post('gas_rejected', 'a gas coin the signer does not own', '/nodes/register', { gas: '0x1234' }),
    post('gas_rejected', 'a gas budget too small', '/nodes/register', { gas_budget: 1 }),
    post('badge_not_found', 'a badge the signer does not own', '/nodes/model-subscribe', {
      model_name: 'Qwen/QwQ-32B',
      echelon_id: 1,
      ...NO_BADGE,
    }),
    post('transaction_failed', 'an unknown echelon', '/nodes/model-subscribe', {
      model_name: 'Qwen/QwQ-32B',
      echelon_id: 999,
    }),
    post('task_not_found', 'an unknown task', '/nodes/task-subscribe', { task_small_id: 999, ...PRICE }),
    post('invalid_body', 'a price of 0', '/nodes/task-subscribe', {
      task_small_id: 2,
      price_per_one_million_compute_units: 0,
    }),
    post('ok', 'subscribe', '/nodes/task-subscribe', { task_small_id: 2, ...PRICE }),
    post('already_subscribed', 'subscribe twice', '/nodes/task-subscribe', { task_small_id: 2, ...PRICE }),
    post('task_inactive', 'a removed task', '/nodes/task-subscribe', { task_small_id: 4, ...PRICE }),
    post('ok', 'a task asking for more reputation', '/dev/tasks', {
      role: 0,
      security_level: 0,
      minimum_reputation_score: 100,
    }),
    post('requirements_not_met', 'more reputation than the node has', '/nodes/task-subscribe', {
      task_small_id: 5,
      ...PRICE,
    }),
    post('badge_not_found', 'a badge the signer does not own', '/nodes/task-subscribe', {
      task_small_id: 3,
      ...PRICE,
      ...NO_BADGE,
    }),
    post('not_subscribed', 'not subscribed', '/nodes/task-update-subscription', {
      task_small_id: 3,
      ...PRICE,
    }),
    post('task_not_found', 'an unknown task', '/nodes/task-update-subscription', {
      task_small_id: 999,
      ...PRICE,
    }),
    post('task_inactive', 'a removed task', '/nodes/task-update-subscription', {
      task_small_id: 4,
      ...PRICE,
    }),
    del('not_subscribed', 'not subscribed', { task_small_id: 3 }),
    del('task_not_found', 'an unknown task', { task_small_id: 999 }),
    del('task_inactive', 'a removed task', { task_small_id: 4 }),
    del('badge_not_found', 'a badge the signer does not own', { task_small_id: 2, ...NO_BADGE }),
    post('stack_not_found', 'an unknown stack', '/nodes/try-settle-stacks', { stack_small_ids: [999] }),
    post('stack_not_ours', "a peer's stack", '/nodes/try-settle-stacks', { stack_small_ids: [1] }),
    post('already_settled', 'a settled stack', '/nodes/try-settle-stacks', { stack_small_ids: [10] }),
    post('no_usage', 'a stack with no usage', '/nodes/try-settle-stacks', { stack_small_ids: [11] }),
    post('invalid_body', 'more units than the stack has', '/nodes/try-settle-stacks', {
      stack_small_ids: [11],
      num_claimed_compute_units: 10_000_000,
    }),
    post('nothing_to_settle', 'nothing to settle, for several reasons', '/nodes/try-settle-stacks', {
      stack_small_ids: [1, 999],
    }),
    post('badge_not_found', 'a badge the signer does not own', '/nodes/try-settle-stacks', {
      stack_small_ids: [11],
      ...NO_BADGE,
    }),
    post('nothing_to_attest', 'not asked to attest', '/nodes/submit-attestations', { stack_small_ids: [1] }),
    post('badge_not_found', 'a node the signer does not own', '/nodes/submit-attestations', {
      stack_small_ids: [1],
      node_small_id: 999,
    }),
    post('stack_not_found', 'an unknown stack', '/nodes/claim-funds', { stack_small_ids: [999] }),
    post('stack_not_ours', "a peer's stack", '/nodes/claim-funds', { stack_small_ids: [1] }),
    post('nothing_to_claim', 'an unsettled stack', '/nodes/claim-funds', { stack_small_ids: [11] }),
    post('nothing_to_claim', 'a claimed stack', '/nodes/claim-funds', { stack_small_ids: [10] }),
    post('badge_not_found', 'a badge the signer does not own', '/nodes/claim-funds', {
      stack_small_ids: [11],
      ...NO_BADGE,
    }),
    post('stack_not_found', 'an unknown stack', usage, { compute_units: 1 }, '/stacks/999/usage'),
    post('stack_not_ours', "a peer's stack", usage, { compute_units: 1 }, '/stacks/1/usage'),
    post('over_capacity', 'beyond the capacity', usage, { compute_units: 10_000_000 }, '/stacks/11/usage'),
    post(
      'invalid_body',
      'a request hash that is not 32 bytes',
      usage,
      { compute_units: 1, request_hash: '0x12' },
      '/stacks/11/usage',
    ),
    {
      ...post('ok', 'with a key', usage, { compute_units: 1 }, '/stacks/11/usage'),
      headers: { 'idempotency-key': 'k1' },
    },
    {
      ...post(
        'idempotency_key_reused',
        'the key again, for another request',
        usage,
        { compute_units: 2 },
        '/stacks/11/usage',
      ),
      headers: { 'idempotency-key': 'k1' },
    },
    post('transaction_failed', 'an unknown role', '/dev/tasks', { role: 99, security_level: 0 }),
    post(
      'transaction_failed',
      'an unknown task',
      '/dev/tasks/{task_small_id}/deprecate',
      undefined,
      '/dev/tasks/999/deprecate',
    ),
    post(
      'transaction_failed',
      'a task not deprecated',
      '/dev/tasks/{task_small_id}/remove',
      undefined,
      '/dev/tasks/1/remove',
    ),
    post('transaction_failed', 'an unknown task', '/dev/nodes', {
      subscriptions: [{ task_small_id: 999, ...PRICE }],
    }),
    post('transaction_failed', 'an unknown task', '/dev/stacks', {
      task_small_id: 999,
      num_compute_units: 10,
      ...PRICE,
    }),
    post(
      'stack_not_found',
      'an unknown stack',
      '/dev/stacks/{stack_small_id}/try-settle',
      {},
      '/dev/stacks/999/try-settle',
    ),
    post(
      'invalid_body',
      "the operator's stack",
      '/dev/stacks/{stack_small_id}/try-settle',
      {},
      '/dev/stacks/11/try-settle',
    ),
    post(
      'stack_not_found',
      'no record of the stack',
      '/dev/stacks/{stack_small_id}/attest',
      { node_small_id: 1 },
      '/dev/stacks/999/attest',
    ),
    post('not_found', 'an unknown node', '/dev/disputes', { stack_small_id: 1, node_small_id: 999 }),
    post('not_found', 'an unknown node', '/dev/claims', { node_small_id: 999, stack_small_ids: [1] }),
  ];
}

/** Every write (POST, DELETE) with its documented example, or {} when it takes no body. */
function exampleProbes(doc: Document): Probe[] {
  return operations(doc)
    .filter(({ method }) => hasBody(method))
    .map(({ method, path, op }) => ({ label: 'the example', method, path, body: example(op) ?? {} }));
}

/** Every operation once, as the examples send it. */
function everyOperation(doc: Document): Probe[] {
  return operations(doc).map(({ method, path, op }) => ({
    label: 'the example',
    method,
    path,
    ...(hasBody(method) ? { body: example(op) ?? {} } : {}),
  }));
}

/**
 * The order in which the examples make sense on a fresh dev network with its demo world (tasks 1 to 3,
 * peer nodes 1 to 3 with stacks 1 to 9): the operator registers (node 4) and subscribes to task 1, the
 * demo's users buy its stacks 10 to 12, it reports usage on stack 10, settles and, an epoch later, claims
 * it; the dev actors create task 4, deprecate and remove it, and a peer settles and claims its stack 1.
 */
const EXAMPLE_ORDER = [
  'POST /nodes/register',
  'POST /nodes/model-subscribe',
  'POST /nodes/task-subscribe',
  'POST /nodes/task-update-subscription',
  'POST /stacks/{stack_small_id}/usage',
  'POST /nodes/try-settle-stacks',
  'POST /nodes/submit-attestations',
  'POST /dev/tasks',
  'POST /dev/tasks/{task_small_id}/deprecate',
  'POST /dev/nodes',
  'POST /dev/stacks',
  'POST /dev/stacks/{stack_small_id}/try-settle',
  'POST /dev/stacks/{stack_small_id}/attest',
  'POST /dev/disputes',
  'POST /dev/epoch',
  'POST /dev/tasks/{task_small_id}/remove',
  'POST /nodes/claim-funds',
  'POST /dev/claims',
  'DELETE /nodes/task-unsubscribe',
  // The webhooks: one endpoint added, tested, enabled, its (pending) test delivery replayed, removed.
  'POST /webhooks',
  'POST /webhooks/{id}/test',
  'POST /webhooks/{id}/enable',
  'POST /webhooks/{id}/deliveries/{delivery_id}/retry',
  'DELETE /webhooks/{id}',
];

/**
 * Examples that cannot succeed on a fresh demo world, and the refusal they get instead: attesting and
 * disputing need a sampling-consensus settlement that drew the attester (1% of them by default).
 */
const REFUSED_ON_A_FRESH_WORLD: Record<string, string> = {
  'POST /nodes/submit-attestations': 'nothing_to_attest',
  'POST /dev/stacks/{stack_small_id}/attest': 'transaction_failed',
  'POST /dev/disputes': 'transaction_failed',
  'POST /webhooks/{id}/deliveries/{delivery_id}/retry': 'webhook_delivery_pending',
};

/** Sends every write's example in EXAMPLE_ORDER (the others after), waiting for the demo's stacks. */
async function sendExamples(prober: Prober): Promise<{ probe: Probe; res: Answered }[]> {
  const rank = (p: Probe) => {
    const i = EXAMPLE_ORDER.indexOf(`${p.method} ${p.path}`);
    return i === -1 ? EXAMPLE_ORDER.length : i;
  };
  const sent: { probe: Probe; res: Answered }[] = [];
  for (const probe of exampleProbes(prober.doc).sort((a, b) => rank(a) - rank(b))) {
    sent.push({ probe, res: await prober.send(probe) });
    if (probe.path === '/nodes/task-subscribe') await demoStacks(prober.d, 4, 3);
  }
  return sent;
}

/** Waits until the demo's users have bought `count` stacks from the node. */
async function demoStacks(d: DevDaemon, node: number, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((((await d.get(`/stacks/nodes/${node}`)).json() as unknown[]) ?? []).length < count) {
    assert.ok(Date.now() < deadline, 'the demo bought stacks from the node');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the documented examples', () => {
  it('are accepted as they stand, in order, on a fresh dev network with its demo world', async () => {
    const d = await devDaemon({ demo: true });
    try {
      const prober = new Prober(d, await servedDocument(d));
      for (const { method, path, op } of operations(prober.doc)) {
        if (op.requestBody) assert.notEqual(example(op), undefined, `${method} ${path} has an example body`);
      }
      for (const { probe, res } of await sendExamples(prober)) {
        const key = `${probe.method} ${probe.path}`;
        assert.notEqual(res.statusCode, 400, `${key}: ${res.body}`);
        const refused = REFUSED_ON_A_FRESH_WORLD[key];
        if (refused) assert.equal(res.json().code, refused, `${key}: ${res.body}`);
        else
          assert.ok(res.statusCode >= 200 && res.statusCode < 300, `${key}: ${res.statusCode} ${res.body}`);
      }
    } finally {
      await d.close();
    }
  });
});

describe('every status the daemon answers is documented for its operation', () => {
  it('on the dev network with its demo world: the examples, bad requests and refusals', async () => {
    const d = await devDaemon({ demo: true });
    try {
      const prober = new Prober(d, await servedDocument(d));
      await sendExamples(prober);
      await prober.sendAll(genericProbes(prober.doc));
      await prober.sendAll(refusals());
      // A chain that cannot be reached: every operation once more.
      await d.services.dev?.close();
      await prober.sendAll(exampleProbes(prober.doc));
      prober.assertDocumented();
      const seen = new Set(prober.answers.map((a) => a.status));
      for (const status of [200, 400, 401, 403, 404, 409, 413, 415, 422, 503]) {
        assert.ok(seen.has(status), `the probes reached ${status}`);
      }
    } finally {
      await d.close();
    }
  });

  it('every read that answers with an ETag documents it, If-None-Match and its 304, and no other does', async () => {
    const d = await devDaemon({ demo: true });
    try {
      const prober = new Prober(d, await servedDocument(d));
      await sendExamples(prober);
      let conditional = 0;
      for (const { method, path, op } of operations(prober.doc).filter((o) => o.method === 'GET')) {
        const label = `${method} ${path}`;
        const res = await prober.send({ label: 'as documented', method, path });
        if (res.statusCode !== 200) continue;
        const etag = res.headers.etag as string | undefined;
        const documented = op.responses['200']?.headers?.ETag !== undefined;
        assert.equal(
          documented,
          etag !== undefined,
          `${label}: ETag ${etag ?? 'not sent'}, documented ${documented}`,
        );
        const inHeader = op.parameters?.some((p) => p.in === 'header' && p.name === 'If-None-Match') ?? false;
        assert.equal(inHeader, documented, `${label}: If-None-Match documented with its ETag`);
        if (etag === undefined) continue;
        conditional += 1;
        const again = await prober.send({
          label: 'If-None-Match',
          method,
          path,
          headers: { 'if-none-match': etag },
        });
        assert.equal(again.statusCode, 304, `${label}: a current ETag answers 304`);
        assert.equal(again.body, '', `${label}: a 304 has no body`);
        const paged = op.parameters?.some((p) => p.in === 'query' && p.name === 'limit') ?? false;
        assert.equal(
          op.responses['200']?.headers?.Link !== undefined,
          paged,
          `${label}: Link documented with limit`,
        );
      }
      assert.ok(conditional >= 9, `the conditional reads were reached (${conditional})`);
      prober.assertDocumented();
    } finally {
      await d.close();
    }
  });

  it('before the node is registered: the writes that need its badge', async () => {
    const d = await devDaemon();
    try {
      const prober = new Prober(d, await servedDocument(d));
      await prober.sendAll(exampleProbes(prober.doc).filter((p) => p.path !== '/nodes/register'));
      prober.assertDocumented();
      assert.ok(prober.answers.some((a) => a.code === 'no_badge'));
    } finally {
      await d.close();
    }
  });

  it('on network none: the writes, which it does not serve', async () => {
    const d = await devDaemon({ network: 'none' });
    try {
      const prober = new Prober(d, await servedDocument(d));
      await prober.sendAll(exampleProbes(prober.doc));
      await prober.sendAll(genericProbes(prober.doc));
      prober.assertDocumented();
      assert.ok(prober.answers.some((a) => a.code === 'no_network'));
    } finally {
      await d.close();
    }
  });

  it('beyond --max-in-flight: every operation at once', async () => {
    const d = await devDaemon({ 'max-in-flight': '1' });
    try {
      const prober = new Prober(d, await servedDocument(d));
      await Promise.all(everyOperation(prober.doc).map((probe) => prober.send(probe)));
      prober.assertDocumented();
      assert.ok(prober.answers.some((a) => a.code === 'overloaded'));
    } finally {
      await d.close();
    }
  });

  it('any path answers 405 with the methods the document gives it, and an unknown path 404', async () => {
    const d = await devDaemon();
    try {
      const doc = await servedDocument(d);
      const token = readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim();
      for (const [path, item] of Object.entries(doc.paths)) {
        const methods = Object.keys(item).map((m) => m.toUpperCase());
        const url = concrete(path, Object.values(item)[0]!);
        const res = await inject(d, {
          method: 'PATCH',
          url,
          headers: { authorization: `Bearer ${token}` },
        });
        assert.equal(res.statusCode, 405, path);
        const allow = String(res.headers.allow)
          .split(', ')
          .filter((m) => m !== 'HEAD');
        assert.deepEqual(allow.sort(), methods.sort(), path);
      }
      assert.equal((await d.get('/no/such/path')).statusCode, 404);
      assert.match(String((doc as { info?: { description?: string } }).info?.description), /405/);
    } finally {
      await d.close();
    }
  });
});

// --- the dev network's routes ---------------------------------------------------------------------------

const DEV_ROUTES = [
  'POST /dev/tasks',
  'POST /dev/tasks/{task_small_id}/deprecate',
  'POST /dev/tasks/{task_small_id}/remove',
  'POST /dev/nodes',
  'POST /dev/stacks',
  'POST /dev/stacks/{stack_small_id}/try-settle',
  'POST /dev/stacks/{stack_small_id}/attest',
  'POST /dev/disputes',
  'POST /dev/claims',
  'POST /dev/epoch',
  'POST /dev/gas',
];

interface ObjectSchema {
  type?: string;
  required?: string[];
  properties?: Record<string, unknown>;
}

describe('the /dev routes in the document', () => {
  it('are served, with their response schemas, by a daemon on the dev network', async () => {
    const d = await devDaemon({ demo: true });
    try {
      const doc = (await servedDocument(d)) as Document & { tags: { name: string; description?: string }[] };
      const dev = operations(doc).filter(({ path }) => path.startsWith('/dev/'));
      assert.deepEqual(dev.map(({ method, path }) => `${method} ${path}`).sort(), [...DEV_ROUTES].sort());
      for (const { method, path, op } of dev) {
        assert.deepEqual((op as { tags?: string[] }).tags, ['dev network'], path);
        const schema = op.responses['200']?.content?.['application/json']?.schema as ObjectSchema | undefined;
        assert.equal(schema?.type, 'object', `${method} ${path} documents its 200 body`);
        assert.ok(Object.keys(schema?.properties ?? {}).length > 0, path);
      }
      assert.match(String(doc.tags.find((t) => t.name === 'dev network')?.description), /only on/i);
      // What the dev routes answer is what their schemas say: the examples' bodies, field by field.
      const prober = new Prober(d, doc);
      for (const { probe, res } of await sendExamples(prober)) {
        if (res.statusCode !== 200) continue;
        const op = doc.paths[probe.path]?.[probe.method.toLowerCase()];
        const schema = op?.responses['200']?.content?.['application/json']?.schema as ObjectSchema;
        const keys = Object.keys(res.json() as object).sort();
        const where = `${probe.method} ${probe.path}`;
        for (const name of schema.required ?? []) assert.ok(keys.includes(name), `${where} answers ${name}`);
        for (const name of keys) assert.ok(name in (schema.properties ?? {}), `${where} documents ${name}`);
      }
    } finally {
      await d.close();
    }
  });

  it('are not in the network-independent docs/openapi.json, which says where they are documented', () => {
    const doc = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Document & {
      info: { description: string };
      tags: { name: string; description?: string }[];
    };
    assert.deepEqual(
      Object.keys(doc.paths).filter((path) => path.startsWith('/dev/')),
      [],
    );
    const tag = doc.tags.find((t) => t.name === 'dev network')?.description ?? '';
    for (const text of [doc.info.description, tag]) {
      assert.match(text, /--network dev/);
      assert.match(text, /docs\/DEV-NETWORK\.md/);
    }
  });
});

// --- upstream's documented paths ------------------------------------------------------------------------

/** Upstream's openapi.yml names two reads by paths its router never had; a client generated from it uses them. */
const UPSTREAM_ALIASES = [
  { alias: '/stacks/stacks/nodes/{node_id}', canonical: '/stacks/nodes/{node_id}', query: 'listStacksJson' },
  {
    alias: '/claimed-stacks/claimed_stacks/nodes/{node_id}',
    canonical: '/claimed-stacks/nodes/{node_id}',
    query: 'listClaimedStacks',
  },
];

/** A problem without what names the request itself (its path and id). */
function comparable(res: LightMyRequestResponse) {
  const body: unknown = res.headers['content-type']?.toString().includes('json') ? res.json() : res.body;
  if (body && typeof body === 'object' && 'request_id' in body) {
    const { instance: _instance, request_id: _id, ...rest } = body as Record<string, unknown>;
    return {
      status: res.statusCode,
      type: res.headers['content-type'],
      allow: res.headers.allow,
      body: rest,
    };
  }
  return { status: res.statusCode, type: res.headers['content-type'], allow: res.headers.allow, body };
}

/** How many times the store was asked this query (node_daemon_store_query_duration_seconds_count). */
async function queries(d: DevDaemon, query: string): Promise<number> {
  const { values } = await d.services.metrics.storeQueryDuration.get();
  return values.find((v) => v.metricName?.endsWith('_count') && v.labels.query === query)?.value ?? 0;
}

describe("upstream's openapi.yml paths", () => {
  it('answer exactly what our routes answer, from the same cache entries', async () => {
    const d = await devDaemon();
    try {
      // Node 1 with four stacks: one claimed, one full, two untouched.
      assert.equal((await d.post('/dev/tasks', { role: 0, security_level: 0 })).statusCode, 200);
      assert.equal((await d.post('/nodes/register')).statusCode, 200);
      assert.equal((await d.post('/nodes/task-subscribe', { task_small_id: 1, ...PRICE })).statusCode, 200);
      for (const units of [1000, 2000, 3000, 4000]) {
        const stack = { task_small_id: 1, num_compute_units: units, ...PRICE, selected_node_id: 1 };
        assert.equal((await d.post('/dev/stacks', stack)).statusCode, 200);
      }
      assert.equal((await d.post('/stacks/1/usage', { compute_units: 700 })).statusCode, 200);
      assert.equal((await d.post('/stacks/2/usage', { compute_units: 2000 })).statusCode, 200);
      assert.equal((await d.post('/nodes/try-settle-stacks', { stack_small_ids: [1] })).statusCode, 200);
      assert.equal((await d.post('/dev/epoch')).statusCode, 200);
      assert.equal((await d.post('/nodes/claim-funds', { stack_small_ids: [1] })).statusCode, 200);

      const suffixes = [
        '1',
        '1/',
        '2',
        '1?min_fill_fraction=0.5',
        '1?min_fill_fraction=0',
        '1?min_fill_fraction=1',
        '1?min_fill_fraction=x',
        '1?min_fill_fraction=2',
        '1?other=1',
        'x',
        '-1',
        '9007199254740992',
      ];
      for (const { alias, canonical, query } of UPSTREAM_ALIASES) {
        for (const suffix of suffixes) {
          const ours = await d.get(canonical.replace('{node_id}', suffix));
          const before = await queries(d, query);
          const theirs = await d.get(alias.replace('{node_id}', suffix));
          assert.deepEqual(comparable(theirs), comparable(ours), `${alias} ${suffix}`);
          if (ours.statusCode === 200) {
            assert.ok(
              JSON.stringify(ours.json()).length > 2 || suffix === '2',
              `${canonical} ${suffix} lists some`,
            );
            // The alias is served from the entry the canonical request just cached: no second query.
            assert.equal(await queries(d, query), before, `${alias} ${suffix} shares the cache`);
          }
        }
        assert.ok((await queries(d, query)) > 0, `the store was asked ${query}`);
        const post = await d.post(alias.replace('{node_id}', '1'), {});
        assert.equal(post.statusCode, 405);
        assert.equal(
          post.headers.allow,
          (await d.post(canonical.replace('{node_id}', '1'), {})).headers.allow,
        );
      }
    } finally {
      await d.close();
    }
  });

  it('are documented as deprecated operations like our routes', async () => {
    for (const doc of [
      JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Document,
      await (async () => {
        const d = await devDaemon();
        try {
          return await servedDocument(d);
        } finally {
          await d.close();
        }
      })(),
    ]) {
      for (const { alias, canonical } of UPSTREAM_ALIASES) {
        const theirs = doc.paths[alias]?.get as
          | (Operation & { description?: string; summary?: string })
          | undefined;
        const ours = doc.paths[canonical]?.get as
          | (Operation & { description?: string; summary?: string })
          | undefined;
        assert.ok(theirs && ours, alias);
        assert.equal(theirs.deprecated, true, alias);
        assert.equal(ours.deprecated, undefined, canonical);
        assert.match(String(theirs.description), new RegExp(canonical.replace(/[{}]/g, '\\$&')));
        const { deprecated: _d, description: _t, summary: _s, ...same } = theirs;
        const { description: _o, summary: _u, ...expected } = ours;
        assert.deepEqual(same, expected, `${alias} takes and answers what ${canonical} does`);
      }
    }
  });
});
