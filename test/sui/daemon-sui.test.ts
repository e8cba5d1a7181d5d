import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { decodeSuiPrivateKey } from '@mysten/sui/cryptography';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { toBase64 } from '@mysten/sui/utils';
import { loadConfig } from '../../src/config.ts';
import { buildDaemonApp, openServices } from '../../src/daemon.ts';
import { TOKEN_FILE } from '../../src/http/security.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { tempDir } from '../helpers/tmp.ts';
import { FullnodeDouble } from './fullnode-double.ts';

// The whole daemon on --network sui, against the loopback fullnode test double: the same API as on the
// dev network, with nothing above the Chain interface knowing which network runs.
describe('the daemon on --network sui', () => {
  it('serves reads and signs writes through a Sui fullnode', async () => {
    const tmp = tempDir('daemon-sui-');
    const kp = Ed25519Keypair.generate();
    const keystore = join(tmp.dir, 'sui.keystore');
    writeFileSync(
      keystore,
      JSON.stringify([toBase64(new Uint8Array([0, ...decodeSuiPrivateKey(kp.getSecretKey()).secretKey]))]),
    );
    const double = await FullnodeDouble.start({
      dataDir: join(tmp.dir, 'chain'),
      signerAddress: kp.toSuiAddress(),
    });
    const config = loadConfig(
      {
        network: 'sui',
        'data-dir': join(tmp.dir, 'data'),
        'sui-url': double.url,
        'sui-package-id': double.packageId,
        'sui-atoma-db-id': double.atomaDbId,
        'sui-keystore': keystore,
      },
      {},
    );
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
