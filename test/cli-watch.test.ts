import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BIN, cleanEnv, freePort, ROOT, run, waitExit } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

/** `node-daemon watch` against real daemon processes: lines, NDJSON, a restart of the daemon, Ctrl-C. */

/** Starts `node-daemon start` on a known port and resolves once it listens. */
async function daemon(dir: string, port: number, extra: string[] = []): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BIN, 'start', '--port', String(port), '--data-dir', dir, ...extra], {
    env: cleanEnv(),
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    child.stderr?.on('data', (d) => {
      seen += String(d);
      if (seen.includes('listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`daemon exited (${code}): ${seen}`)));
  });
  return child;
}

/** A running `watch`, its stdout as lines as they come. */
function watch(args: string[]) {
  const child = spawn(process.execPath, [BIN, 'watch', ...args], {
    env: cleanEnv(),
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let partial = '';
  child.stdout?.on('data', (d) => {
    partial += String(d);
    const parts = partial.split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr?.on('data', (d) => {
    stderr += String(d);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    stderr: () => stderr,
    exited,
    async until(check: (lines: string[]) => boolean, ms = 15_000) {
      const deadline = Date.now() + ms;
      while (!check(lines)) {
        assert.ok(
          Date.now() < deadline,
          `watch did not print it; stdout: ${lines.join('\n')}\nstderr: ${stderr}`,
        );
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  };
}

const post = async (url: string, token: string, path: string, body: unknown = {}) => {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as Record<string, unknown>;
};

describe('node-daemon watch', () => {
  const tmp = tempDir();
  after(() => tmp.remove());

  it('prints each event once, follows a restart of the daemon, and stops cleanly on Ctrl-C', {
    timeout: 90_000,
  }, async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let d = await daemon(tmp.dir, port);
    const token = readFileSync(join(tmp.dir, 'api-token'), 'utf8').trim();
    // --timeout bounds the wait for the daemon's answer, not the stream: it stays open past it.
    const ndjson = watch(['--all', '--json', '--timeout', '1', '--url', url, '--data-dir', tmp.dir]);
    const table = watch(['--types', 'stack_assigned', '--all', '--url', url, '--data-dir', tmp.dir]);
    try {
      // The demo's users buy stacks from a node as soon as it subscribes.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      assert.equal(ndjson.stderr(), '', 'the stream outlived --timeout');
      const node = (await post(url, token, '/nodes/register')).node_small_id as number;
      await post(url, token, '/nodes/task-subscribe', {
        task_small_id: 1,
        price_per_one_million_compute_units: 1_000_000,
      });
      const parsed = () => ndjson.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      await ndjson.until(
        () => parsed().filter((e) => e.type === 'stack_assigned' && e.node_small_id === node).length >= 3,
      );
      await table.until((lines) => lines.length >= 3);
      assert.match(
        table.lines[0]!,
        /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ {2}stack_assigned +node \d+ +stack \d+ of task \d+: \d+ units at \d+\.\d{6} USDC\/M, bought by 0x[0-9a-f]{4}…[0-9a-f]{4}$/,
      );

      // The daemon goes away and comes back on the same address: watch says so, then resumes.
      d.kill('SIGTERM');
      await waitExit(d);
      await ndjson.until(() => /reconnecting in \d+ s/.test(ndjson.stderr()));
      d = await daemon(tmp.dir, port);
      const bought = await post(url, token, '/dev/stacks', {
        task_small_id: 1,
        num_compute_units: 1000,
        price_per_one_million_compute_units: 2_000_000,
        selected_node_id: node,
      });
      await ndjson.until(() =>
        parsed().some((e) => e.type === 'stack_assigned' && e.stack_small_id === bought.stack_small_id),
      );
      await ndjson.until(() => /reconnected after event \d+/.test(ndjson.stderr()));
      // Nothing missed and nothing twice: the ids printed are exactly the daemon's, in order, with no gap.
      const ids = parsed()
        .map((e) => e.id as number)
        .filter((id) => id !== undefined);
      assert.deepEqual(
        ids,
        Array.from({ length: ids.length }, (_, i) => ids[0]! + i),
      );

      ndjson.child.kill('SIGINT');
      table.child.kill('SIGINT');
      assert.equal(await ndjson.exited, 0);
      assert.equal(await table.exited, 0);
      assert.doesNotMatch(ndjson.stderr(), /at .*\.ts:\d+/, 'no stack trace');
    } finally {
      ndjson.child.kill('SIGKILL');
      table.child.kill('SIGKILL');
      d.kill('SIGTERM');
      await waitExit(d).catch(() => undefined);
    }
  });

  it('refuses bad arguments in one line (exit 2), and a refusal of the daemon without retrying (exit 4)', async () => {
    const usage = await run(['watch', '--types', 'nope', '--url', 'http://127.0.0.1:9']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /^node-daemon: unknown event type nope; the types are stack_assigned, .*\n$/);
    for (const [args, message] of [
      [['--last', '0'], /--last takes a count of events from 1 to 1000; got "0"/],
      [['--last', '5', '--after', '3'], /--last and --after do not go together/],
    ] as const) {
      const bad = await run(['watch', ...args, '--url', 'http://127.0.0.1:9']);
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, message);
    }
    const dir = tempDir();
    const port = await freePort();
    const d = await daemon(dir.dir, port, ['--auth', 'all', '--no-demo']);
    try {
      const refused = await run(['watch', '--url', `http://127.0.0.1:${port}`, '--token', 'wrong']);
      assert.equal(refused.code, 4);
      assert.match(refused.stderr, /^node-daemon: .*token.*\n$/);
    } finally {
      d.kill('SIGTERM');
      await waitExit(d).catch(() => undefined);
      await dir.remove();
    }
  });
});
