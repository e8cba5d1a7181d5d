import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BIN, cleanEnv, ROOT, waitExit } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

// V8 prints a line "... => tenure" each time it decides to make an allocation site's objects in the old
// generation (--trace-pretenuring-statistics, on stdout). The fixture makes objects that outlive many
// young-generation collections, the pattern that leads V8 to that decision.
const FIXTURE = fileURLToPath(new URL('./fixtures/survivors.mjs', import.meta.url));
const TENURED = /=> tenure\b/g;

describe('the daemon keeps request objects young (allocation-site pretenuring off)', () => {
  it('V8 pretenures the fixture sites in a plain process (the check can see it)', async () => {
    // Whether V8 decides within the run depends on timing: under load, the fixture's function is sometimes
    // optimized before its sites are decided, and optimized code leaves no mementos to count
    // (--trace-pretenuring-statistics then stops after the first scavenge). With three CPU-bound processes
    // beside it, 3 runs in 15 gave no decision; CI once had all of three tries fail. So up to ten tries.
    let tenured = 0;
    for (let attempt = 0; attempt < 10 && tenured === 0; attempt++) {
      const child = spawn(
        process.execPath,
        ['--trace-pretenuring-statistics', '--import', FIXTURE, '-e', ''],
        {
          env: cleanEnv({ SURVIVORS_NOW: '1' }),
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const done = await waitExit(child);
      assert.equal(done.code, 0, done.stderr);
      assert.match(done.stderr, /survivors: done/);
      tenured = (done.stdout.match(TENURED) ?? []).length;
    }
    assert.ok(tenured > 0, 'V8 pretenured no site: the fixture no longer provokes it');
  });

  it('a started daemon pretenures nothing, whatever survives', async () => {
    const { dir, remove } = tempDir();
    try {
      const child = spawn(
        process.execPath,
        [
          '--trace-pretenuring-statistics',
          '--import',
          FIXTURE,
          BIN,
          'start',
          '--port',
          '0',
          '--network',
          'none',
        ],
        { env: cleanEnv({ NODE_DAEMON_DATA_DIR: dir }), cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const exited = waitExit(child);
      let stdout = '';
      child.stdout!.on('data', (d) => {
        stdout += String(d);
      });
      let stderr = '';
      const seen = (pattern: RegExp) =>
        new Promise<void>((resolve, reject) => {
          const check = () => {
            if (pattern.test(stderr)) resolve();
          };
          child.stderr!.on('data', (d) => {
            stderr += String(d);
            check();
          });
          check();
          exited.then((f) => reject(new Error(`the daemon exited (${f.code}): ${f.stderr}`)), reject);
        });
      await seen(/listening on http/);
      const from = stdout.length;
      child.kill('SIGUSR2');
      await seen(/survivors: done/);
      child.kill('SIGTERM');
      assert.equal((await exited).code, 0);
      assert.deepEqual(stdout.slice(from).match(TENURED) ?? [], []);
    } finally {
      await remove();
    }
  });
});
