import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Chain } from '../src/chain/chain.ts';
import { createLogger } from '../src/internal/logger.ts';
import { Mutex } from '../src/internal/mutex.ts';
import { Submitter } from '../src/operations/submit.ts';
import { Writes } from '../src/operations/writes.ts';
import { ERRORS, ProblemError } from '../src/problems/catalog.ts';
import { type DevDaemon, devDaemon, nodeWithStacks } from './helpers/dev-daemon.ts';
import { run, startDaemon } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

/** The loose ends of issue 51: each answered with a problem that says what to change, never a 500. */

type Json = Record<string, unknown>;

function ok(res: LightMyRequestResponse): Json {
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Json;
}

async function withDaemon(run: (d: DevDaemon) => Promise<void>): Promise<void> {
  const d = await devDaemon({});
  try {
    await run(d);
  } finally {
    await d.close();
  }
}

describe('loose ends', () => {
  it('answers a path parameter over 100 characters with invalid_parameter naming it', () =>
    withDaemon(async (d) => {
      const long = '9'.repeat(120);
      const res = await d.get(`/stacks/nodes/${long}`);
      assert.equal(res.statusCode, 400, res.body);
      const body = res.json() as Json;
      assert.equal(body.code, 'invalid_parameter');
      assert.equal(body.parameter, 'node_id');
      assert.match(String(body.detail), /^path parameter node_id is 120 characters long; give at most 100$/);
      // At the limit it is routed, and judged as a number like any other.
      const at = await d.get(`/stacks/nodes/${'9'.repeat(100)}`);
      assert.equal((at.json() as Json).code, 'invalid_parameter');
      assert.equal((at.json() as Json).parameter, 'node_id');
      assert.doesNotMatch(String((at.json() as Json).detail), /characters long/);
    }));

  it('refuses a JSON body declared in a charset other than UTF-8 with a 415 naming it', () =>
    withDaemon(async (d) => {
      for (const contentType of [
        'application/json; charset=latin1',
        'application/json;charset="ISO-8859-1"',
        'application/json; charset=utf-16',
      ]) {
        const res = await d.post('/nodes/register', '{}', { 'content-type': contentType });
        assert.equal(res.statusCode, 415, `${contentType}: ${res.body}`);
        const body = res.json() as Json;
        assert.equal(body.code, 'unsupported_media_type');
        assert.equal(body.parameter, 'content-type');
        const named = /charset=("?)([^";]+)\1/.exec(contentType)![2]!;
        assert.ok(String(body.detail).includes(`charset=${named}`), String(body.detail));
      }
      // UTF-8, however it is spelt, and no charset at all, are read.
      ok(await d.post('/nodes/register', '{}', { 'content-type': 'application/json; charset=UTF-8' }));
      ok(await d.post('/nodes/register', '{}', { 'content-type': 'application/json;charset="utf8"' }));
      ok(await d.post('/nodes/register', '{}', { 'content-type': 'application/json' }));
    }));

  it('refuses to settle or attest when the chain asks for an attester slot above 255 (k >= 256): a 400, not a 500', () =>
    withDaemon(async (d) => {
      const stack = (await nodeWithStacks(d, 1, 1000))[0]!;
      // Test double at the chain's boundary: a network whose admin set k (cross_validation_extra_nodes_count)
      // to 300; everything else is the real dev network.
      const dev = d.services.chain!;
      const chain = new Proxy(dev, {
        get(target, name) {
          if (name === 'parameters') {
            return async () => ({ ...(await target.parameters()), cross_validation_extra_nodes_count: 300 });
          }
          const value = Reflect.get(target, name, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }) as Chain;
      const log = createLogger('silent');
      const writes = new Writes({
        chain,
        store: d.services.store,
        submitter: new Submitter({ indexer: d.services.indexer!, indexWaitMs: 5000, log }),
        lock: new Mutex(),
      });
      for (const attempt of [
        () => writes.trySettle({ stack_small_ids: [stack] }),
        () => writes.estimateSettle({ stack_small_ids: [stack] }),
      ]) {
        await assert.rejects(attempt(), (error: unknown) => {
          assert.ok(error instanceof ProblemError, String(error));
          assert.equal(error.code, 'attester_slots_unsupported');
          assert.equal(ERRORS[error.code].status, 400);
          assert.match(error.message, /cross_validation_extra_nodes_count is 300.*slot 300, above 255/);
          return true;
        });
      }
      assert.equal(await d.services.store.getTicket(stack), undefined, 'nothing was signed');
    }));

  it("lets Node's own fetch read its 413 every time: the rest of a refused body is read and dropped, not reset", async () => {
    const tmp = tempDir();
    const daemon = await startDaemon(['--data-dir', tmp.dir, '--network', 'dev']);
    try {
      const token = readFileSync(join(tmp.dir, 'api-token'), 'utf8').trim();
      const outcomes: string[] = [];
      for (const mib of [1.5, 4]) {
        const body = `{"stack_small_ids":[${'1,'.repeat((mib * 1024 * 1024) / 2)}1]}`;
        for (let i = 0; i < 10; i++) {
          try {
            const res = await fetch(`${daemon.url}/nodes/claim-funds`, {
              method: 'POST',
              body,
              headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
            });
            outcomes.push(`${res.status} ${((await res.json()) as Json).code}`);
          } catch (error) {
            outcomes.push(
              `${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message}`,
            );
          }
        }
      }
      assert.deepEqual(outcomes, Array(20).fill('413 payload_too_large'));
      // The connections that read the rest go on serving.
      assert.equal((await fetch(`${daemon.url}/health`)).status, 200);
    } finally {
      daemon.child.kill('SIGTERM');
      await daemon.exited;
      await tmp.remove();
    }
  });

  it('retires an attestation request whose window closed: said once, then out of every later pass', async () => {
    const d = await devDaemon({ 'dev-sampling-probability': '1', autopilot: 'dry-run' });
    try {
      // Only our node serves the sampling-consensus task, so the contract can only sample our node.
      ok(await d.post('/dev/tasks', { role: 0, model_name: 'm', security_level: 2 }));
      ok(await d.post('/nodes/register'));
      ok(await d.post('/nodes/task-subscribe', { task_small_id: 1, price_per_one_million_compute_units: 1 }));
      const bought = ok(
        await d.post('/dev/stacks', {
          task_small_id: 1,
          num_compute_units: 1000,
          price_per_one_million_compute_units: 2_000_000,
          selected_node_id: 1,
        }),
      );
      const stack = bought.stack_small_id as number;
      ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 1000 }));
      ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [stack] }));
      assert.equal((await d.services.store.listAttestationRequests(1)).length, 1, 'asked to attest');
      ok(await d.post('/dev/epoch'));
      ok(await d.post('/dev/epoch'));
      ok(await d.post('/autopilot/run'));
      assert.deepEqual(await d.services.store.listAttestationRequests(1), [], 'no longer read');
      const attests = (result: Json) =>
        (result.plan as Json[]).filter(
          (p) => p.action === 'attest' && (p.stack_small_ids as number[])[0] === stack,
        );
      assert.deepEqual(attests(ok(await d.post('/autopilot/run'))), []);
      const recorded = (ok(await d.get('/autopilot')).recent_actions as Json[]).filter(
        (a) => a.action === 'attest' && a.status === 'skipped',
      );
      assert.equal(recorded.length, 1, 'the closed window was said once');
      assert.match(String(recorded[0]!.reason), /attestation window closed with epoch 1/);
    } finally {
      await d.close();
    }
  });

  it('refuses a second daemon on a data dir whatever its network: sui and none, as dev (one line, exit 3)', async () => {
    const tmp = tempDir();
    const first = await startDaemon(['--data-dir', tmp.dir, '--network', 'none']);
    try {
      const sui = [
        ...['--network', 'sui', '--sui-url', 'http://127.0.0.1:9', '--sui-package-id', '0x5'],
        ...['--sui-atoma-db-id', '0x6', '--sui-keystore', join(tmp.dir, 'no.keystore')],
      ];
      for (const network of [['--network', 'none'], sui]) {
        const second = await run(['start', '--port', '0', '--data-dir', tmp.dir, ...network]);
        assert.equal(second.code, 3, second.stderr);
        const lines = second.stderr.trim().split('\n');
        assert.equal(lines.length, 1, second.stderr);
        assert.match(
          lines[0]!,
          new RegExp(`the data dir .* is in use by node-daemon pid ${first.child.pid}`),
        );
      }
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
      await tmp.remove();
    }
  });
});
