import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BIN, ROOT, run, startDaemon } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

/** The machine's own Node (20 on ours), which the command re-runs on the pinned Node 24. */
const SYSTEM_NODE = '/usr/bin/node';

function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  assert.equal(lines.length, 1, `expected one line on stderr, got: ${stderr}`);
  return lines[0]!;
}

describe('node-daemon command', () => {
  it('prints help and version', async () => {
    const help = await run(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /node-daemon start/);
    assert.match(help.stdout, /NODE_DAEMON_PORT/);
    assert.match(help.stdout, /Examples:/);
    const version = await run(['--version']);
    assert.equal(version.code, 0);
    assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
  });

  it('refuses bad usage with one line and exit code 2', async () => {
    for (const args of [['frobnicate'], ['start', '--colour'], ['start', '--port', '70000'], ['replay']]) {
      const result = await run(args);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(oneLine(result.stderr), /^node-daemon: /);
    }
    const env = await run(['start'], { NODE_DAEMON_PORT: 'abc' });
    assert.equal(env.code, 2);
    assert.equal(
      oneLine(env.stderr),
      'node-daemon: invalid NODE_DAEMON_PORT: "abc" is not accepted; expected an integer from 0 to 65535',
    );
    // Its own data dir: the start gets as far as taking it before the store fails.
    const { dir, remove } = tempDir();
    const pg = await run(['start', '--port', '0', '--data-dir', dir], {
      DATABASE_URL: 'postgres://postgres:secret-pw@127.0.0.1:1/x',
    });
    await remove();
    assert.equal(pg.code, 1);
    const line = oneLine(pg.stderr);
    assert.match(line, /^node-daemon: cannot open the PostgreSQL store at 127\.0\.0\.1:1, database x: /);
    assert.doesNotMatch(line, /secret-pw/);
  });

  it('says clearly when the port is taken, and exits 3', async () => {
    const { dir, remove } = tempDir();
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const result = await run(['start', '--port', String(port), '--data-dir', dir]);
      assert.equal(result.code, 3);
      const line = result.stderr.trim().split('\n').at(-1)!;
      assert.equal(
        line,
        `node-daemon: cannot listen on 127.0.0.1:${port}: the port is already in use; stop the other process or choose another port with --port or NODE_DAEMON_PORT`,
      );
    } finally {
      blocker.close();
      await remove();
    }
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`serves, then stops cleanly on ${signal} with exit code 0`, async () => {
      const { dir, remove } = tempDir();
      const daemon = await startDaemon(['--data-dir', dir, '--no-demo']);
      const health = await fetch(`${daemon.url}/health`);
      assert.deepEqual(await health.json(), { status: 'ok' });
      daemon.child.kill(signal);
      const finished = await daemon.exited;
      assert.equal(finished.code, 0);
      assert.match(finished.stderr, /"msg":"stopped"/);
      await remove();
    });
  }

  it('finishes an in-flight request before it exits on SIGTERM', async () => {
    const { dir, remove } = tempDir();
    const daemon = await startDaemon(['--data-dir', dir, '--network', 'none', '--auth', 'none']);
    const { hostname, port } = new URL(daemon.url);
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    let response = '';
    socket.on('data', (d) => {
      response += String(d);
    });
    const body = '{"stack_small_ids":[1]}';
    socket.write(
      `POST /nodes/claim-funds HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    daemon.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(daemon.child.exitCode, null, 'still running while the request is in flight');
    socket.write(body.slice(5));
    const finished = await daemon.exited;
    socket.destroy();
    assert.equal(finished.code, 0);
    assert.match(response, /^HTTP\/1\.1 503/);
    assert.match(response, /"code":"no_network"/);
    await remove();
  });

  it('runs under an older system Node by switching to the pinned Node 24', async (t) => {
    const candidates = ['/usr/bin/node', '/usr/local/bin/node', '/bin/node'];
    const older = candidates.find((path) => {
      const out = spawnSync(path, ['--version'], { encoding: 'utf8' });
      return out.status === 0 && Number(out.stdout.slice(1).split('.')[0]) < 24;
    });
    if (!older) {
      t.skip('no Node older than 24 on this machine');
      return;
    }
    const result = await run(['--version'], {}, older);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^\d+\.\d+\.\d+\n$/);
  });
});

describe('the Node options the daemon runs with', () => {
  const flags = JSON.parse(readFileSync(join(ROOT, 'bin/daemon-node-flags.json'), 'utf8')) as string[];

  it('are the ones npm start passes', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: { start: string };
    };
    assert.ok(flags.length > 0);
    assert.equal(pkg.scripts.start, `node ${flags.join(' ')} src/main.ts start`);
  });

  it('are passed by node-daemon start when it re-runs itself on the pinned Node', async (t) => {
    const system = spawnSync(SYSTEM_NODE, ['--version'], { encoding: 'utf8' });
    const major = Number(/^v(\d+)/.exec(system.stdout ?? '')?.[1]);
    if (system.status !== 0 || !(major < 24)) {
      t.skip(`${SYSTEM_NODE} is not a Node older than 24: the command runs in-process there`);
      return;
    }
    const { dir, remove } = tempDir();
    const daemon = await startDaemon(['--data-dir', dir, '--network', 'none'], {}, 60_000, SYSTEM_NODE);
    try {
      const { pid } = JSON.parse(readFileSync(join(dir, 'daemon.json'), 'utf8')) as { pid: number };
      assert.notEqual(pid, daemon.child.pid);
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      for (const flag of flags) assert.ok(argv.includes(flag), `${flag} in ${argv.join(' ')}`);
    } finally {
      daemon.child.kill('SIGTERM');
      assert.equal((await daemon.exited).code, 0);
      await remove();
    }
  });
});

describe('node-daemon logs', () => {
  it('writes readable lines on a terminal and JSON lines otherwise', async (t) => {
    const { spawnSync } = await import('node:child_process');
    if (spawnSync('script', ['--version']).status !== 0) {
      t.skip('script(1) is not installed: no pseudo-terminal to test with');
      return;
    }
    const { dir, remove } = tempDir();
    const command = `${process.execPath} ${BIN} start --port 0 --network none --data-dir ${dir}`;
    // script(1) runs the daemon on a pseudo-terminal; timeout stops it after its first lines.
    const tty = spawnSync('timeout', ['-s', 'TERM', '4', 'script', '-qec', command, '/dev/null'], {
      encoding: 'utf8',
    });
    assert.match(tty.stdout, /INFO.*listening on http:\/\/127\.0\.0\.1:\d+/);
    assert.doesNotMatch(tty.stdout, /"level":30/);
    const daemon = await startDaemon(['--data-dir', dir, '--network', 'none']);
    daemon.child.kill('SIGTERM');
    const finished = await daemon.exited;
    assert.match(finished.stderr.split('\n')[0] ?? '', /^\{"level":30,/);
    await remove();
  });
});
