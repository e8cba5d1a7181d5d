import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { runClient } from '../src/cli/index.ts';
import { type AtomaStateDatabase, createAtomaState } from './helpers/atoma-state.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';

/**
 * A daemon whose usage comes from atoma-state (--usage-source atoma-state), on the dev network, with the
 * node's inference service played by the SQL atoma-state's own statements run (reserve, then correct):
 * reports refused with 409, /status and /metrics say where usage comes from, the earnings and the autopilot
 * work from the mirrored usage, and atoma-node's own claims of confidential stacks are left to it. Both
 * of this daemon's stores.
 */

type Json = Record<string, unknown>;

function ok(res: LightMyRequestResponse): Json {
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Json;
}

const OURS = 2;

/** What a client command printed. */
class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.text += String(chunk);
    done();
  }
}

async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string, ms = 10_000) {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!check(value)) {
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
    value = await read();
  }
  return value;
}

/** Task 1 (no security) and 2 (confidential compute); a peer node 1; our node 2 subscribed to both. */
async function world(d: DevDaemon): Promise<void> {
  for (const security_level of [0, 1]) {
    ok(
      await d.post('/dev/tasks', {
        role: 0,
        model_name: 'meta-llama/Llama-3.3-70B-Instruct',
        security_level,
      }),
    );
  }
  const subscriptions = [1, 2].map((task_small_id) => ({
    task_small_id,
    price_per_one_million_compute_units: 1_000_000,
  }));
  ok(await d.post('/dev/nodes', { subscriptions }));
  ok(await d.post('/nodes/register'));
  for (const s of subscriptions) ok(await d.post('/nodes/task-subscribe', s));
}

/** A user buys a stack from our node; atoma-node's subscriber inserts it into atoma-state. */
async function buy(d: DevDaemon, atoma: AtomaStateDatabase, task: number, units: number): Promise<number> {
  const { stack_small_id } = ok(
    await d.post('/dev/stacks', {
      task_small_id: task,
      num_compute_units: units,
      price_per_one_million_compute_units: 2_000_000,
      selected_node_id: OURS,
    }),
  );
  await atoma.addStack({ id: stack_small_id as number, node: OURS, units, confidential: task === 2 });
  return stack_small_id as number;
}

async function stack(d: DevDaemon, id: number): Promise<Json | undefined> {
  const stacks = ok(await d.get(`/stacks/nodes/${OURS}`)) as unknown as Json[];
  return stacks.find((s) => s.stack_small_id === id);
}

function scenario(engine: string, extra: () => Record<string, string>) {
  describe(`a daemon whose usage comes from atoma-state, on ${engine}`, () => {
    let atoma: AtomaStateDatabase;
    let d: DevDaemon;
    before(async () => {
      atoma = (await createAtomaState())!;
      d = await devDaemon({
        'usage-source': 'atoma-state',
        'atoma-state-url': atoma.url,
        'usage-poll-interval': '0.1',
        autopilot: 'on',
        'autopilot-settle-fill': '0.9',
        ...extra(),
      });
      await world(d);
    });
    after(async () => {
      await d.close();
      await atoma.drop();
    });

    it('refuses a usage report with 409: one source of truth, never two counts', async () => {
      const id = await buy(d, atoma, 1, 1000);
      const res = await d.post(`/stacks/${id}/usage`, { compute_units: 10 });
      assert.equal(res.statusCode, 409, res.body);
      const problem = res.json() as Json;
      assert.equal(problem.code, 'usage_from_source');
      assert.match(String(problem.detail), /usage comes from atoma-state/);
      assert.equal((await stack(d, id))?.already_computed_units, 0);
    });

    it('says where usage comes from in /status and /metrics', async () => {
      const status = await until(
        async () => ok(await d.get('/status')).usage_source as Json,
        (s) => s.state === 'connected' && (s.stacks_followed as number) >= 1,
        'the source connected',
      );
      assert.equal(status.kind, 'atoma-state');
      assert.doesNotMatch(String(status.location), /password/);
      assert.equal(typeof status.last_poll_at, 'string');
      assert.ok((status.behind_seconds as number) < 5);
      // The operator's one line (node-daemon status): the source, its state, how far behind, what it follows.
      const address = await d.app.listen({ port: 0, host: '127.0.0.1' });
      const stdout = new Sink();
      const code = await runClient('status', ['--url', address], {}, { stdout, stderr: new Sink() });
      assert.equal(code, 0);
      assert.match(
        stdout.text,
        /^usage source: +atoma-state at postgres:\/\/\S+: connected; last poll .+, [\d.]+ s behind; \d+ stacks followed$/m,
      );
      const metrics = (await d.get('/metrics')).body;
      assert.match(metrics, /^node_daemon_usage_source_up 1$/m);
      assert.match(metrics, /^node_daemon_usage_source_stacks_followed \d+$/m);
      assert.match(metrics, /^node_daemon_usage_source_lag_seconds [\d.e-]+$/m);
    });

    it('mirrors the inference service, earns from it, and the autopilot settles a stack it brings past the fill', async () => {
      const id = await buy(d, atoma, 1, 1000);
      await atoma.reserve(id, 600);
      await atoma.correct(id, 600, 500);
      await until(
        async () => (await stack(d, id))?.already_computed_units,
        (u) => u === 500,
        'mirrored',
      );
      const earnings = ok(await d.get(`/earnings/nodes/${OURS}`));
      // The fee of the mirrored usage: 500 units at 2 USDC per million units (SecurityLevel none).
      assert.ok(BigInt(earnings.unsettled as number) >= 1000n, JSON.stringify(earnings));
      // The node serves more: the source brings the stack past --autopilot-settle-fill, the autopilot settles.
      await atoma.reserve(id, 450);
      await atoma.correct(id, 450, 450);
      const settled = await until(
        async () => await stack(d, id),
        (s) => s?.in_settle_period === true,
        'settled by the autopilot',
        20_000,
      );
      assert.equal(settled?.already_computed_units, 950);
      // On chain: a ticket that claims the 950 mirrored units.
      assert.ok((await d.services.dev!.getTicket(id)) !== undefined);
      const settle = await until(
        async () =>
          (ok(await d.get('/autopilot')).recent_actions as Json[]).find(
            (a) => a.action === 'settle' && (a.stack_small_ids as number[]).includes(id),
          ),
        (a) => a?.status === 'succeeded',
        'the settle recorded as succeeded',
      );
      assert.match(String(settle?.reason), /claims its 950 recorded units/);
    });

    it('leaves a confidential stack that atoma-node locked to claim itself to the node', async () => {
      const id = await buy(d, atoma, 2, 1000);
      await atoma.reserve(id, 970);
      await atoma.correct(id, 970, 960);
      await until(
        async () => (await stack(d, id))?.already_computed_units,
        (u) => u === 960,
        'mirrored',
      );
      const plan = ok(await d.get('/autopilot')).plan as Json[];
      const item = plan.find((p) => (p.stack_small_ids as number[]).includes(id));
      assert.equal(item?.will, 'skip', JSON.stringify(plan));
      assert.match(String(item?.reason), /atoma-node claims a confidential stack itself/);
      // The autopilot never claimed it: the stack is not claimed on chain.
      ok(await d.post('/autopilot/run'));
      assert.equal((await stack(d, id))?.is_claimed, false);
    });
  });
}

scenario('sqlite', () => ({}));

if (await postgresAvailable('a daemon whose usage comes from atoma-state, on PostgreSQL')) {
  let db: TestDatabase;
  before(async () => {
    db = (await createTestDatabase())!;
  });
  after(() => db.drop());
  scenario('postgres', () => ({ 'database-url': db.url }));
}
