import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it, mock } from 'node:test';
import { decodeSuiPrivateKey } from '@mysten/sui/cryptography';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { toBase64 } from '@mysten/sui/utils';
import { loadConfig } from '../../src/config.ts';
import { buildDaemonApp, openServices } from '../../src/daemon.ts';
import { TOKEN_FILE } from '../../src/http/security.ts';
import { CliError } from '../../src/internal/exit-codes.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { tempDir } from '../helpers/tmp.ts';
import { FullnodeDouble } from './fullnode-double.ts';

/** A Sui CLI keystore with one fresh Ed25519 key. */
function keystoreIn(dir: string): { kp: Ed25519Keypair; keystore: string } {
  const kp = Ed25519Keypair.generate();
  const keystore = join(dir, 'sui.keystore');
  writeFileSync(
    keystore,
    JSON.stringify([toBase64(new Uint8Array([0, ...decodeSuiPrivateKey(kp.getSecretKey()).secretKey]))]),
  );
  return { kp, keystore };
}

function suiConfig(
  dir: string,
  keystore: string,
  ids: { url: string; packageId: string; atomaDbId: string },
  flags: Record<string, string> = {},
) {
  return loadConfig(
    {
      network: 'sui',
      'data-dir': join(dir, 'data'),
      'sui-url': ids.url,
      'sui-package-id': ids.packageId,
      'sui-atoma-db-id': ids.atomaDbId,
      'sui-keystore': keystore,
      ...flags,
    },
    {},
  );
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// The whole daemon on --network sui, against the loopback fullnode test double: the same API as on the
// dev network, with nothing above the Chain interface knowing which network runs.
describe('the daemon on --network sui', () => {
  it('serves reads and signs writes through a Sui fullnode', async () => {
    const tmp = tempDir('daemon-sui-');
    const { kp, keystore } = keystoreIn(tmp.dir);
    const double = await FullnodeDouble.start({
      dataDir: join(tmp.dir, 'chain'),
      signerAddress: kp.toSuiAddress(),
    });
    const config = suiConfig(tmp.dir, keystore, double);
    const logger = createLogger('silent');
    const services = await openServices(config, logger);
    const app = await buildDaemonApp(config, services, logger);
    const token = readFileSync(join(tmp.dir, 'data', TOKEN_FILE), 'utf8').trim();
    const post = (url: string, payload: unknown) =>
      app.inject({
        method: 'POST',
        url,
        payload: payload as object,
        headers: { authorization: `Bearer ${token}` },
      });
    try {
      const task = await double.dev.createTask({
        role: 0,
        model_name: 'm',
        security_level: 0,
        minimum_reputation_score: null,
        is_public: true,
      });
      assert.equal(task.submission.status, 'success');
      const registered = await post('/nodes/register', {});
      assert.equal(registered.statusCode, 200, registered.body);
      const node = registered.json().node_small_id;
      assert.equal(typeof node, 'number');
      const subscribed = await post('/nodes/task-subscribe', {
        task_small_id: Number(task.task_small_id),
        price_per_one_million_compute_units: 1_000_000,
      });
      assert.equal(subscribed.statusCode, 200, subscribed.body);
      assert.equal(subscribed.json().indexed, true);
      const subscriptions = (await app.inject({ url: `/subscriptions/nodes/${node}` })).json();
      assert.deepEqual(
        subscriptions.map((s: { task_small_id: number }) => s.task_small_id),
        [Number(task.task_small_id)],
      );
      const aborted = await post('/nodes/model-subscribe', {
        model_name: 'meta-llama/Llama-3.3-70B-Instruct',
        echelon_id: 99,
      });
      assert.equal(aborted.statusCode, 422);
      assert.deepEqual(aborted.json().abort, { name: 'EEchelonNotFound', code: 312012005, module: 'db' });
      const status = (await app.inject({ url: '/status' })).json();
      assert.equal(status.network, 'sui');
      assert.equal(status.signer_address, kp.toSuiAddress());
      assert.equal(status.indexer.source.startsWith('sui:'), true);
      assert.equal(
        (
          await app.inject({
            url: '/dev/epoch',
            method: 'POST',
            headers: { authorization: `Bearer ${token}` },
          })
        ).statusCode,
        404,
      );
    } finally {
      await app.close();
      await services.close();
      await double.close();
      await tmp.remove();
    }
  });

  it('runs the autopilot through the fullnode, and halts after aborts its simulation did not foresee', async () => {
    const tmp = tempDir('daemon-sui-');
    const { kp, keystore } = keystoreIn(tmp.dir);
    const double = await FullnodeDouble.start({
      dataDir: join(tmp.dir, 'chain'),
      signerAddress: kp.toSuiAddress(),
    });
    const config = suiConfig(tmp.dir, keystore, double, { autopilot: 'on', 'autopilot-min-claim': '1' });
    const logger = createLogger('silent');
    const services = await openServices(config, logger);
    const app = await buildDaemonApp(config, services, logger);
    const token = readFileSync(join(tmp.dir, 'data', TOKEN_FILE), 'utf8').trim();
    const post = async (url: string, payload: unknown = {}) => {
      const res = await app.inject({
        method: 'POST',
        url,
        payload: payload as object,
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    };
    type Action = { action: string; status: string; stack_small_ids: number[]; error: string | null };
    const run = async () => (await post('/autopilot/run')).actions as Action[];
    const epochIs = (epoch: number) =>
      until(`the daemon has indexed epoch ${epoch}`, async () => {
        return (await app.inject({ url: '/autopilot' })).json().epoch === epoch;
      });
    try {
      const tasks: number[] = [];
      for (let i = 0; i < 2; i++) {
        const task = await double.dev.createTask({
          role: 0,
          model_name: 'm',
          security_level: 0,
          minimum_reputation_score: null,
          is_public: true,
        });
        tasks.push(Number(task.task_small_id));
      }
      const node = (await post('/nodes/register')).node_small_id as number;
      for (const task_small_id of tasks) {
        await post('/nodes/task-subscribe', {
          task_small_id,
          price_per_one_million_compute_units: 1_000_000,
        });
      }
      /** A user buys a stack of the task from our node, and our node serves all of it. */
      const served = async (task: number) => {
        const bought = await double.dev.buyStack({
          task_small_id: task,
          num_compute_units: 1000,
          price_per_one_million_compute_units: 2_000_000,
          selected_node_id: node,
        });
        const stack = Number(bought.stack_small_id);
        await until(`stack ${stack} is indexed`, async () => {
          const stacks = (await app.inject({ url: `/stacks/nodes/${node}` })).json() as {
            stack_small_id: number;
          }[];
          return stacks.some((s) => s.stack_small_id === stack);
        });
        await post(`/stacks/${stack}/usage`, { compute_units: 1000 });
        return stack;
      };

      // A full stack is settled, and claimed once its epoch has passed: signed, sent and indexed through Sui.
      // Usage and new epochs start passes by themselves; run() makes sure one has run since.
      const recent = async () => (await app.inject({ url: '/autopilot' })).json().recent_actions as Action[];
      const done = (action: string, stack: number) =>
        until(`${action} of stack ${stack} succeeded`, async () => {
          await run();
          return (await recent()).some(
            (a) => a.action === action && a.status === 'succeeded' && a.stack_small_ids.includes(stack),
          );
        });
      const first = await served(tasks[0]!);
      await done('settle', first);
      await double.dev.advanceEpoch();
      await epochIs(1);
      await done('claim', first);
      const earnings = (await app.inject({ url: `/earnings/nodes/${node}` })).json();
      assert.equal(earnings.claimed, 2000);

      // The second stack's task is removed after its settlement: claim_funds aborts on chain. The double's
      // simulation does not run Move code, so it does not foresee the abort, as a real fullnode would not when
      // the state changes between simulation and execution. Three aborts in a row, and the autopilot stops.
      const second = await served(tasks[1]!);
      await done('settle', second);
      await double.dev.deprecateTask(tasks[1]!);
      await double.dev.advanceEpoch();
      await double.dev.removeTask(tasks[1]!);
      await epochIs(2);
      await until('the autopilot halted', async () => {
        await run();
        return (await app.inject({ url: '/autopilot' })).json().state === 'halted';
      });
      const status = (await app.inject({ url: '/autopilot' })).json();
      assert.match(
        status.halted_reason,
        new RegExp(`3 contract aborts in a row, the last: claim of ${second}: .*EFieldDoesNotExist`),
      );
      const failed = (await recent()).filter((a) => a.status === 'failed');
      assert.equal(failed.length, 3);
      assert.ok(failed.every((a) => a.action === 'claim' && a.stack_small_ids[0] === second));
      const metrics = (await app.inject({ url: '/metrics' })).body;
      assert.match(metrics, /\nnode_daemon_autopilot_halted 1\n/);
      assert.match(metrics, /node_daemon_autopilot_actions_total\{kind="claim",outcome="failed"\} 3/);
      const sentBefore = double.executed.length;
      assert.deepEqual(await run(), [], 'a halted autopilot sends nothing');
      assert.equal(double.executed.length, sentBefore);
      assert.match((await app.inject({ url: '/status' })).json().autopilot.halted, /contract aborts/);
      // The operator resumes it: it acts again.
      const resumed = await post('/autopilot/resume');
      assert.notEqual(resumed.state, 'halted');
      assert.match((await app.inject({ url: '/metrics' })).body, /\nnode_daemon_autopilot_halted 0\n/);
    } finally {
      await app.close();
      await services.close();
      await double.close();
      await tmp.remove();
    }
  });

  it('starts without its fullnode: /ready 503 naming it, writes 503, and ready once it answers', async () => {
    const tmp = tempDir('daemon-sui-');
    const { kp, keystore } = keystoreIn(tmp.dir);
    const dataDir = join(tmp.dir, 'chain');
    // Learn the chain's ids, then stop its fullnode: its port is closed when the daemon starts.
    const first = await FullnodeDouble.start({ dataDir, signerAddress: kp.toSuiAddress() });
    const ids = { url: first.url, packageId: first.packageId, atomaDbId: first.atomaDbId };
    await first.close();
    // The shortest back-off (125 ms), so that the test does not wait for the indexer's retries.
    const random = mock.method(Math, 'random', () => 0);
    const config = suiConfig(tmp.dir, keystore, ids);
    const logger = createLogger('silent');
    const services = await openServices(config, logger);
    const app = await buildDaemonApp(config, services, logger);
    const token = readFileSync(join(tmp.dir, 'data', TOKEN_FILE), 'utf8').trim();
    const register = () =>
      app.inject({
        method: 'POST',
        url: '/nodes/register',
        payload: {},
        headers: { authorization: `Bearer ${token}` },
      });
    let double: FullnodeDouble | undefined;
    try {
      const reason = `cannot reach the Sui fullnode at ${ids.url}: connection refused (ECONNREFUSED)`;
      const ready = await app.inject({ url: '/ready' });
      assert.equal(ready.statusCode, 503);
      assert.equal(ready.json().code, 'not_ready');
      assert.equal(ready.json().detail, reason);
      // Reads are served from the store meanwhile.
      assert.equal((await app.inject({ url: '/tasks' })).statusCode, 200);
      await until('the indexer has tried', async () => services.indexer?.lastError !== undefined);
      const status = (await app.inject({ url: '/status' })).json();
      assert.equal(status.indexer.last_error.message, reason);
      assert.equal(status.badges, null);
      const refused = await register();
      assert.equal(refused.statusCode, 503, refused.body);
      assert.equal(refused.json().code, 'chain_unavailable');
      assert.ok(refused.json().detail.includes(reason), refused.json().detail);
      assert.equal(occurrences(refused.json().detail, 'Sui fullnode'), 1, refused.json().detail);
      // A usage report on a stack the store does not know is still answered as such, badges or not.
      const unknown = await app.inject({
        method: 'POST',
        url: '/stacks/77/usage',
        payload: { compute_units: 1 },
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(unknown.statusCode, 404, unknown.body);
      assert.equal(unknown.json().code, 'stack_not_found');

      double = await FullnodeDouble.start({
        dataDir,
        signerAddress: kp.toSuiAddress(),
        port: Number(new URL(ids.url).port),
      });
      await until('ready', async () => (await app.inject({ url: '/ready' })).statusCode === 200);
      const registered = await register();
      assert.equal(registered.statusCode, 200, registered.body);
      assert.equal((await app.inject({ url: '/status' })).json().indexer.last_error, null);
    } finally {
      random.mock.restore();
      await app.close();
      await services.close();
      await double?.close();
      await tmp.remove();
    }
  });

  it('keeps serving when the fullnode that answers at last has no such AtomaDb, and says so', async () => {
    const tmp = tempDir('daemon-sui-');
    const { kp, keystore } = keystoreIn(tmp.dir);
    const dataDir = join(tmp.dir, 'chain');
    const first = await FullnodeDouble.start({ dataDir, signerAddress: kp.toSuiAddress() });
    const missing = `0x${'0'.repeat(60)}1234`;
    const ids = { url: first.url, packageId: first.packageId, atomaDbId: missing };
    // Known at start, the same mistake stops the daemon in one line.
    await assert.rejects(openServices(suiConfig(tmp.dir, keystore, ids), createLogger('silent')), (error) => {
      assert.ok(error instanceof CliError);
      assert.match(error.message, /^AtomaDb object 0x0+1234 does not exist on the fullnode at http:/);
      assert.doesNotMatch(error.message, /\n/);
      return true;
    });
    await first.close();
    const random = mock.method(Math, 'random', () => 0);
    const config = suiConfig(tmp.dir, keystore, ids);
    const logger = createLogger('silent');
    const services = await openServices(config, logger);
    const app = await buildDaemonApp(config, services, logger);
    const token = readFileSync(join(tmp.dir, 'data', TOKEN_FILE), 'utf8').trim();
    let double: FullnodeDouble | undefined;
    try {
      double = await FullnodeDouble.start({
        dataDir,
        signerAddress: kp.toSuiAddress(),
        port: Number(new URL(ids.url).port),
      });
      const problem = `AtomaDb object ${missing} does not exist on the fullnode at ${ids.url} (check the id and the network)`;
      await until('the fullnode answered', async () => services.indexer?.lastError?.message === problem);
      const ready = await app.inject({ url: '/ready' });
      assert.equal(ready.statusCode, 503);
      assert.equal(ready.json().detail, problem);
      assert.equal((await app.inject({ url: '/status' })).json().indexer.last_error.message, problem);
      const refused = await app.inject({
        method: 'POST',
        url: '/nodes/register',
        payload: {},
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(refused.statusCode, 503, refused.body);
      assert.equal(refused.json().code, 'chain_unavailable');
      assert.ok(refused.json().detail.includes(problem), refused.json().detail);
      assert.deepEqual(double.executed, []);
    } finally {
      random.mock.restore();
      await app.close();
      await services.close();
      await double?.close();
      await tmp.remove();
    }
  });

  it('refuses incomplete Sui settings in one line', () => {
    assert.throws(
      () => loadConfig({ network: 'sui' }, {}),
      /--network sui needs --sui-url, --sui-package-id, --sui-atoma-db-id/,
    );
    assert.throws(
      () => loadConfig({ network: 'sui', 'sui-package-id': 'abc' }, {}),
      /invalid --sui-package-id: "abc"/,
    );
  });
});
