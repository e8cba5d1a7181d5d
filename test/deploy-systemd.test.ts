import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from './helpers/process.ts';

/**
 * The systemd unit for a host install (deploy/systemd/node-daemon.service, docs/DEPLOY.md): what
 * systemd-analyze says of it, and what it promises about restarts and stopping. That the daemon starts
 * and stops under this sandbox is tested in test/deploy-image.test.ts, with systemd as PID 1 in a
 * container (no systemd runs this suite).
 */
const UNIT = join(ROOT, 'deploy', 'systemd', 'node-daemon.service');
const SYSUSERS = join(ROOT, 'deploy', 'systemd', 'node-daemon.sysusers');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string };
const flags = JSON.parse(readFileSync(join(ROOT, 'bin', 'daemon-node-flags.json'), 'utf8')) as string[];

/** The unit's [Service] settings, each key with its values in order (a key may be given several times). */
function service(): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const raw of readFileSync(UNIT, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('[')) {
      section = line;
      continue;
    }
    if (section !== '[Service]') continue;
    const at = line.indexOf('=');
    const key = line.slice(0, at);
    settings.set(key, [...(settings.get(key) ?? []), line.slice(at + 1)]);
  }
  return settings;
}

function one(settings: Map<string, string[]>, key: string): string {
  const values = settings.get(key) ?? [];
  assert.equal(values.length, 1, `${key} is set once`);
  return values[0]!;
}

function analyze(t: { skip: (message: string) => void }): boolean {
  if (spawnSync('systemd-analyze', ['--version']).status === 0) return true;
  if (process.env.NODE_DAEMON_REQUIRE_DEPLOY === '1') {
    assert.fail(
      'NODE_DAEMON_REQUIRE_DEPLOY=1 but systemd-analyze is not installed (apt-get install systemd)',
    );
  }
  t.skip('systemd-analyze is not installed (apt-get install systemd); CI sets NODE_DAEMON_REQUIRE_DEPLOY=1');
  return false;
}

describe('the systemd unit', () => {
  const settings = service();
  const execStart = one(settings, 'ExecStart').split(/\s+/);

  it('passes systemd-analyze verify', (t) => {
    if (!analyze(t)) return;
    const result = spawnSync('systemd-analyze', ['verify', UNIT], { encoding: 'utf8' });
    // The one thing verify checks of this machine rather than of the unit: that the package is installed
    // where ExecStart names it. Where it is not, that line is expected and nothing else may be said.
    const absent = existsSync(execStart[0]!)
      ? undefined
      : `node-daemon.service: Command ${execStart[0]} is not executable: No such file or directory`;
    const said = `${result.stdout}${result.stderr}`
      .split('\n')
      .filter((line) => line.trim() !== '' && line !== absent);
    assert.deepEqual(said, []);
    if (absent === undefined) assert.equal(result.status, 0);
  });

  it('is rated an exposure of 2.0 or lower by systemd-analyze security --offline=true', (t) => {
    if (!analyze(t)) return;
    const result = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', UNIT], {
      encoding: 'utf8',
    });
    const match = /Overall exposure level for node-daemon\.service: (\d+\.\d+)/.exec(result.stdout);
    assert.ok(match, result.stdout + result.stderr);
    const exposure = Number(match[1]);
    assert.ok(exposure <= 2.0, `exposure ${exposure}`);
    process.stdout.write(`# systemd-analyze security: exposure ${exposure}\n`);
  });

  it('runs the installed package on its pinned Node, with the daemon options, as a user of its own', () => {
    const installed = `/usr/local/lib/node_modules/${pkg.name}`;
    assert.deepEqual(execStart, [
      `${installed}/node_modules/node/bin/node`,
      ...flags,
      `${installed}/bin/node-daemon.js`,
      'start',
    ]);
    assert.equal(one(settings, 'User'), 'node-daemon');
    assert.match(readFileSync(SYSUSERS, 'utf8'), /^u node-daemon - "[^"]+" \/var\/lib\/node-daemon \S+$/m);
    assert.equal(one(settings, 'StateDirectory'), 'node-daemon');
    assert.ok((settings.get('Environment') ?? []).includes('NODE_DAEMON_DATA_DIR=%S/node-daemon'));
    // V8's JIT needs memory it writes and then runs (test/deploy-image.test.ts shows Node dying under it).
    assert.equal(settings.get('MemoryDenyWriteExecute'), undefined);
  });

  it('restarts after a crash but not after a refused setting, and waits out the shutdown timeout', () => {
    assert.equal(one(settings, 'Restart'), 'on-failure');
    assert.equal(one(settings, 'RestartPreventExitStatus'), '2');
    assert.equal(one(settings, 'KillSignal'), 'SIGTERM');
    const timeout = (settings.get('Environment') ?? [])
      .map((value) => /^NODE_DAEMON_SHUTDOWN_TIMEOUT=(\d+)$/.exec(value)?.[1])
      .find((value) => value !== undefined);
    assert.ok(timeout !== undefined, 'the unit sets the shutdown timeout it waits for');
    assert.ok(
      Number(one(settings, 'TimeoutStopSec')) > Number(timeout),
      'systemd waits longer than the daemon',
    );
  });
});
