import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BIN, cleanEnv, freePort, ROOT, run, startDaemon, waitExit } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * The README's command-line tour, run as written, line by line, against a daemon on a fresh data
 * directory with the demo world (what `npm start` makes): every command must succeed, in order. A new
 * operator types these first; a tour that fails on a fresh start is the first thing they meet.
 */

/** The tour: the second sh block of the README's "The command line" section, one command a line. */
function tourLines(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## The command line'));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const tour = blocks[1];
  assert.ok(tour, 'the README has the tour block');
  return tour
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '');
}

describe("the README's command-line tour", () => {
  it('runs as written on a fresh data directory', { timeout: 180_000 }, async () => {
    const dir = tempDir();
    const port = await freePort();
    // The settings the tour's commands find the daemon by, as the operator's shell would have them.
    const env = { NODE_DAEMON_DATA_DIR: dir.dir, NODE_DAEMON_PORT: String(port) };
    const daemon = await startDaemon(['--port', String(port)], env, 170_000);
    try {
      const lines = tourLines();
      assert.ok(lines.length >= 10, lines.join('\n'));
      for (const line of lines) {
        const [npx, command, ...args] = line.split(/\s+/);
        assert.equal(`${npx} ${command}`, 'npx node-daemon', line);
        if (args[0] === 'watch') {
          // It runs until Ctrl-C: the last events come first, then it follows; Ctrl-C exits 0.
          const last = Number(args[args.indexOf('--last') + 1]);
          const watch = spawn(process.execPath, [BIN, ...args], { env: cleanEnv(env), cwd: ROOT });
          const exited = waitExit(watch);
          let out = '';
          watch.stdout?.on('data', (d) => {
            out += String(d);
          });
          const deadline = Date.now() + 20_000;
          while (out.split('\n').length <= last && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          watch.kill('SIGINT');
          const finished = await exited;
          assert.equal(finished.code, 0, `${line}: ${finished.stderr}`);
          assert.equal(out.trim().split('\n').length, last, out);
          assert.match(out, /funds_claimed +node 4 +claimed 2 stacks 10, 11/);
          continue;
        }
        const result = await run(args, env);
        assert.equal(result.code, 0, `${line}\n${result.stdout}${result.stderr}`);
        if (args[0] === 'subscribe') {
          // The demo's users buy three stacks from a node once it subscribes: the next lines use them.
          const deadline = Date.now() + 20_000;
          for (;;) {
            const stacks = (await (await fetch(`${daemon.url}/stacks/nodes/4`)).json()) as unknown[];
            if (stacks.length === 3) break;
            assert.ok(Date.now() < deadline, 'the demo users bought stacks 10, 11 and 12');
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
        if (args[0] === 'claim') assert.match(result.stdout, /2 stacks claimed: node fees 0\.011900 USDC/);
      }
    } finally {
      daemon.child.kill('SIGTERM');
      await daemon.exited.catch(() => undefined);
      await dir.remove();
    }
  });
});
