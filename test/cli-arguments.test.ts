import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { runClient } from '../src/cli/index.ts';
import { cleanEnv, startDaemon } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

/** The client's arguments: its own parsing and messages, and its checks against the daemon's. */

/** A client command in-process: its exit code and what it wrote. */
async function client(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const text = { stdout: '', stderr: '' };
  const sink = (name: keyof typeof text) =>
    new Writable({
      write(chunk, _encoding, done) {
        text[name] += String(chunk);
        done();
      },
    });
  const [command = '', ...rest] = args;
  const code = await runClient(command, rest, cleanEnv(), { stdout: sink('stdout'), stderr: sink('stderr') });
  return { code, ...text };
}

describe('Idempotency-Key: the client refuses exactly what the daemon refuses', () => {
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  const tmp = tempDir();
  before(async () => {
    daemon = await startDaemon(['--data-dir', tmp.dir, '--auth', 'none', '--no-demo']);
  });
  after(async () => {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
    await tmp.remove();
  });

  /** Whether the daemon refuses the key with 400 invalid_idempotency_key; a key HTTP cannot carry counts. */
  async function daemonRefuses(key: string): Promise<boolean> {
    let response: Response;
    try {
      response = await fetch(`${daemon.url}/stacks/1/usage`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: '{"compute_units":1}',
      });
    } catch {
      return true;
    }
    const problem = (await response.json()) as { code?: string };
    return response.status === 400 && problem.code === 'invalid_idempotency_key';
  }

  for (const [name, key] of [
    ['a plain key', 'retry-1'],
    ['an inner space', 'retry 1'],
    ['a leading and a trailing space', ' retry-1 '],
    ['an inner tab', 'retry\t1'],
    ['a line break', 'retry\n1'],
    ['255 characters', '~'.repeat(255)],
    ['256 characters', 'k'.repeat(256)],
    ['nothing', ''],
    ['only spaces', '   '],
    ['a Latin-1 letter', 'clé'],
    ['a non-Latin-1 letter', 'ключ'],
    ['a control character', 'a\u0001b'],
  ] as const) {
    it(`${name}: ${JSON.stringify(key)}`, async () => {
      const refused = await daemonRefuses(key);
      const result = await client(['usage', '1', '1', '--idempotency-key', key, '--url', daemon.url]);
      if (refused) {
        assert.equal(result.code, 2, result.stderr);
        assert.match(
          result.stderr,
          /^node-daemon: --idempotency-key must be 1 to 255 printable ASCII characters without spaces; got .*; see node-daemon usage --help\n$/,
        );
      } else {
        assert.notEqual(result.code, 2, result.stderr);
      }
    });
  }
});
