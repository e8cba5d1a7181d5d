import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { run, startDaemon } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';
import { Receiver } from './helpers/webhook-receiver.ts';

/** `node-daemon webhooks ...` against a running daemon (network none), as an operator types them. */
describe('node-daemon webhooks', () => {
  const dir = tempDir();
  const receiver = new Receiver();
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  const cli = (...args: string[]) => run(['webhooks', ...args, '--url', daemon.url, '--data-dir', dir.dir]);
  before(async () => {
    await receiver.listen();
    daemon = await startDaemon(['--data-dir', dir.dir, '--network', 'none']);
  });
  after(async () => {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
    await receiver.down();
    await dir.remove();
  });

  it('adds, lists, tests, shows deliveries, and removes an endpoint', async () => {
    const added = await cli(
      'add',
      receiver.url,
      '--types',
      'dispute_opened,signer_gas_low',
      '--description',
      'phone',
    );
    assert.equal(added.code, 0, added.stderr);
    const secret = /secret:?\s+(whsec_\S+)/.exec(added.stdout)?.[1];
    assert.ok(secret, added.stdout);
    receiver.secret = secret;
    const listed = await cli('list');
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /enabled\s+dispute_opened,signer_gas_low\s+http:\/\/127\.0\.0\.1/);
    assert.ok(!listed.stdout.includes('whsec_'));
    const test = await cli('test', '1');
    assert.equal(test.code, 0, test.stderr);
    const [got] = await receiver.waitFor(1);
    assert.ok(got!.verified, got!.problem);
    let deliveries = await cli('deliveries', '1');
    for (let i = 0; i < 50 && !deliveries.stdout.includes('delivered'); i++) {
      await new Promise((r) => setTimeout(r, 100));
      deliveries = await cli('deliveries', '1');
    }
    assert.match(deliveries.stdout, /webhook\.test\s+delivered\s+1\s+200/);
    const bad = await cli('add', 'ftp://example.com');
    assert.equal(bad.code, 4);
    assert.match(bad.stderr, /only http:\/\/ and https:\/\//);
    const missing = await cli('show', '9');
    assert.equal(missing.code, 4);
    assert.match(missing.stderr, /no webhook endpoint 9/);
    assert.equal((await cli('remove', '1')).code, 0);
    assert.match((await cli('list')).stdout, /no webhook endpoints/);
  });
});
