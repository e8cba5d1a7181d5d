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
) {
  return loadConfig(
    {
      network: 'sui',
      'data-dir': join(dir, 'data'),
      'sui-url': ids.url,
      'sui-package-id': ids.packageId,
      'sui-atoma-db-id': ids.atomaDbId,
      'sui-keystore': keystore,
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
