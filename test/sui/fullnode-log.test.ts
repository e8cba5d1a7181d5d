import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it, mock } from 'node:test';
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { loadConfig } from '../../src/config.ts';
import { buildDaemonApp, openServices } from '../../src/daemon.ts';
import { TOKEN_FILE } from '../../src/http/security.ts';
import { captureLogger } from '../helpers/capture-log.ts';
import { closedPort, until, writeSuiKeystore } from '../helpers/sui-fixtures.ts';
import { tempDir } from '../helpers/tmp.ts';
import { FullnodeDouble } from './fullnode-double.ts';

/**
 * What the log says about a fullnode that does not answer (docs/SUI.md): the reason once, again only
 * when it changes, and once when it answers again; no line per retry, no stack trace.
 */

describe('an unreachable fullnode in the log', () => {
  it('is said once, again when the reason changes, and once when it answers again', async () => {
    const tmp = tempDir('fullnode-log-');
    const keystore = join(tmp.dir, 'sui.keystore');
    const [kp] = writeSuiKeystore(keystore) as [Ed25519Keypair];
    // The chain's ids, from a fullnode test double that is then stopped: its port is closed at start.
    const chainDir = join(tmp.dir, 'chain');
    const first = await FullnodeDouble.start({ dataDir: chainDir, signerAddress: kp.toSuiAddress() });
    const ids = { packageId: first.packageId, atomaDbId: first.atomaDbId };
    await first.close();
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}`;
    // The shortest back-off (125 ms): the indexer retries about eight times a second.
    const random = mock.method(Math, 'random', () => 0);
    const config = loadConfig(
      {
        network: 'sui',
        'data-dir': join(tmp.dir, 'data'),
        'sui-url': url,
        'sui-package-id': ids.packageId,
        'sui-atoma-db-id': ids.atomaDbId,
        'sui-keystore': keystore,
        autopilot: 'on',
      },
      {},
    );
    const log = captureLogger('info');
    const logger = log.logger;
    const lines = () => log.lines() as { level: number; msg: string; err?: unknown }[];
    const said = (from: number) =>
      lines()
        .slice(from)
        .filter((l) => l.level >= 40);
    const services = await openServices(config, logger);
    const app = await buildDaemonApp(config, services, logger);
    const token = readFileSync(join(tmp.dir, 'data', TOKEN_FILE), 'utf8').trim();
    const post = (path: string) =>
      app.inject({ method: 'POST', url: path, payload: {}, headers: { authorization: `Bearer ${token}` } });
    let double: FullnodeDouble | undefined;
    try {
      // Down at start, and everything that needs it tries: the indexer's retries, writes, reads of the
      // badges, autopilot passes.
      const retries = async () => {
        const metrics = (await app.inject({ url: '/metrics' })).body;
        return Number(/\nnode_daemon_indexer_errors_total (\d+)/.exec(metrics)?.[1] ?? 0);
      };
      await until('the indexer retried 10 times', async () => (await retries()) >= 10);
      assert.equal((await post('/nodes/register')).statusCode, 503);
      assert.equal((await app.inject({ url: '/nodes/badges' })).statusCode, 503);
      assert.equal((await post('/autopilot/run')).statusCode, 503);
      assert.equal((await app.inject({ url: '/status' })).statusCode, 200);
      assert.equal((await app.inject({ url: '/metrics' })).statusCode, 200, 'metrics while it is down');
      const down = `cannot reach the Sui fullnode at ${url}: connection refused (ECONNREFUSED); serving the store meanwhile, retrying`;
      assert.deepEqual(
        said(0).map((l) => [l.level, l.msg]),
        [[40, down]],
      );
      assert.equal(said(0)[0]!.err, undefined, 'no stack trace');

      // It answers: connected, said once at info.
      double = await FullnodeDouble.start({ dataDir: chainDir, signerAddress: kp.toSuiAddress(), port });
      await until('ready', async () => (await app.inject({ url: '/ready' })).statusCode === 200);
      assert.equal(lines().filter((l) => l.msg === 'connected to the Sui fullnode').length, 1);

      // It goes away once connected: the reads fail, said once whatever was being read.
      const before = lines().length;
      await double.close();
      double = undefined;
      const retried = await retries();
      await until('the indexer retried 5 more times', async () => (await retries()) >= retried + 5);
      assert.equal((await post('/nodes/register')).statusCode, 503);
      // A request in flight as it closed may fail otherwise first (the connection reset): a reason of its
      // own, said once; then the refusal, once, whatever is being read.
      const lost = said(before).map((l) => l.msg);
      assert.ok(lost.length >= 1 && lost.length <= 2, JSON.stringify(lost));
      assert.match(
        lost.at(-1)!,
        new RegExp(
          `^cannot [A-Za-z ]+ on the Sui fullnode at ${url.replaceAll('.', '\\.')}: connection refused \\(ECONNREFUSED\\); serving the store meanwhile, retrying$`,
        ),
      );
      if (lost.length === 2) assert.doesNotMatch(lost[0]!, /ECONNREFUSED/);

      // Back: one line says so.
      const gone = lines().length;
      double = await FullnodeDouble.start({ dataDir: chainDir, signerAddress: kp.toSuiAddress(), port });
      await until('the indexer reads again', () => services.indexer?.lastError === undefined);
      assert.equal((await app.inject({ url: '/nodes/badges' })).statusCode, 200);
      const back = lines().slice(gone);
      assert.deepEqual(
        back.filter((l) => l.level >= 40),
        [],
      );
      assert.deepEqual(
        back.filter((l) => l.msg === 'the Sui fullnode answers again').map((l) => l.level),
        [30],
      );
    } finally {
      random.mock.restore();
      await app.close();
      await services.close();
      await double?.close();
      await tmp.remove();
    }
  });
});
