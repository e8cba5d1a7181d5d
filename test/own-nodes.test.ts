import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { runClient } from '../src/cli/index.ts';
import { loadConfig } from '../src/config.ts';
import { startDaemon } from '../src/daemon.ts';
import { createLogger } from '../src/internal/logger.ts';
import { cleanEnv } from './helpers/process.ts';
import { closedPort, writeSuiKeystore } from './helpers/sui-fixtures.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * The operator's nodes as configured (--node-small-ids, node_small_ids of atoma-node's config.toml): the
 * daemon tells them beside the badges, and the client's default [node] is the first of them.
 */

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.text += String(chunk);
    done();
  }
}

async function client(url: string, ...args: string[]) {
  const stdout = new Sink();
  const stderr = new Sink();
  const [command = '', ...rest] = args;
  const code = await runClient(command, [...rest, '--url', url], cleanEnv(), { stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe("the operator's configured nodes", () => {
  it('are told by /status and /nodes/badges, and are the default node of the client', async () => {
    const tmp = tempDir();
    const config = loadConfig({ 'data-dir': tmp.dir, demo: false, port: '0', 'node-small-ids': '5,2' }, {});
    const daemon = await startDaemon(config, createLogger('silent'));
    try {
      const status = (await daemon.app.inject({ url: '/status' })).json();
      assert.deepEqual(status.node_small_ids, [5, 2]);
      const badges = (await daemon.app.inject({ url: '/nodes/badges' })).json();
      assert.deepEqual(badges.node_small_ids, [5, 2]);
      assert.deepEqual(badges.badges, []);
      const stacks = await client(daemon.url, 'stacks');
      assert.equal(stacks.code, 0, stacks.stderr);
      assert.equal(stacks.stdout, '(no stacks for node 5)\n');
      const shown = await client(daemon.url, 'badges');
      assert.match(shown.stdout, /^signer: +0x[0-9a-f]{64}\nconfigured nodes: 5, 2\n\(no NodeBadge/);
    } finally {
      await daemon.close();
      await tmp.remove();
    }
    // Without configured nodes, the signer's first badge is the node, as before.
    const bare = tempDir();
    const plain = await startDaemon(
      loadConfig({ 'data-dir': bare.dir, demo: false, port: '0' }, {}),
      createLogger('silent'),
    );
    try {
      assert.deepEqual((await plain.app.inject({ url: '/status' })).json().node_small_ids, []);
      const none = await client(plain.url, 'stacks');
      assert.equal(none.code, 4);
      assert.equal(
        none.stderr,
        'node-daemon: the signer owns no NodeBadge; run `node-daemon register` first\n',
      );
      const token = readFileSync(join(bare.dir, 'api-token'), 'utf8').trim();
      const registered = await plain.app.inject({
        method: 'POST',
        url: '/nodes/register',
        payload: {},
        headers: { authorization: `Bearer ${token}` },
      });
      const node = registered.json().node_small_id;
      assert.equal((await client(plain.url, 'stacks')).stdout, `(no stacks for node ${node})\n`);
    } finally {
      await plain.close();
      await bare.remove();
    }
  });

  it('name the node while the fullnode cannot be asked for the badges', async () => {
    const tmp = tempDir();
    const keystore = join(tmp.dir, 'sui.keystore');
    writeSuiKeystore(keystore);
    // The fullnode is down: a port nothing listens on (the test double is not even started).
    const sui = {
      network: 'sui',
      'sui-url': `http://127.0.0.1:${await closedPort()}`,
      'sui-package-id': '0x5',
      'sui-atoma-db-id': '0x6',
      'sui-keystore': keystore,
      port: '0',
    };
    const configured = await startDaemon(
      loadConfig({ ...sui, 'data-dir': join(tmp.dir, 'a'), 'node-small-ids': '7' }, {}),
      createLogger('silent'),
    );
    const bare = await startDaemon(
      loadConfig({ ...sui, 'data-dir': join(tmp.dir, 'b') }, {}),
      createLogger('silent'),
    );
    try {
      assert.equal((await configured.app.inject({ url: '/nodes/badges' })).statusCode, 503);
      const stacks = await client(configured.url, 'stacks');
      assert.equal(stacks.code, 0, stacks.stderr);
      assert.equal(stacks.stdout, '(no stacks for node 7)\n');
      const refused = await client(bare.url, 'stacks');
      assert.equal(refused.code, 5);
      assert.match(
        refused.stderr,
        /^node-daemon: cannot find the operator's node: the chain is unavailable: cannot reach the Sui fullnode at .*; name the node instead: node-daemon stacks NODE\n$/,
      );
    } finally {
      await configured.close();
      await bare.close();
      await tmp.remove();
    }
  });
});
