import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BIN, cleanEnv, run, startDaemon, waitExit } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * The command line in its own words, through the real binary: argument errors of every command (the
 * daemon's own included), the daemon's hints as commands, a second start, a start on a taken port, an
 * interrupted start, a node that does not exist, a server that is not node-daemon.
 */

/** The one line a failed command wrote on stderr, without its `node-daemon: ` prefix. */
function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `expected one line on stderr, got: ${stderr}`);
  assert.match(lines[0]!, /^node-daemon: /);
  return lines[0]!.slice('node-daemon: '.length);
}

describe("argument errors in the command line's own words, exit 2", () => {
  // Nothing listens at port 1: an argument error is found before anything is sent or opened.
  const env = { NODE_DAEMON_URL: 'http://127.0.0.1:1' };
  const cases: [string[], string][] = [
    // The daemon's own commands judged the same way as the client's (they used to answer in
    // node:util parseArgs' words: "Unknown option '--prot'. To specify a positional argument ...").
    [
      ['start', '--prot', '3105'],
      'unknown option --prot (did you mean --port?); see node-daemon start --help',
    ],
    [['start', '--port'], '--port needs a value: --port PORT; see node-daemon start --help'],
    [['start', '--demo=yes'], '--demo takes no value; got --demo=yes; see node-daemon start --help'],
    [
      ['start', '--no-dem'],
      'unknown option --no-dem (did you mean --no-demo?); see node-daemon start --help',
    ],
    [['start', '-3'], 'start takes no arguments (got -3); see node-daemon start --help'],
    [
      ['replay', '--prot', '3'],
      'unknown option --prot (did you mean --port?); see node-daemon replay --help',
    ],
    [
      ['token', 'rotate', '--data-dri', 'x'],
      'unknown option --data-dri (did you mean --data-dir?); see node-daemon token --help',
    ],
    [['--prot'], 'unknown option --prot (did you mean --port?); see node-daemon --help'],
    // A negative number is a value, answered about the value, never an unknown option.
    [
      ['subscribe', '2', '--price', '-5'],
      `--price cannot be negative: it must be an integer amount in USDC's smallest unit (1000000 is 1 USDC; at most 2^64 - 1) or an amount like 1.5usdc; got "-5"; see node-daemon subscribe --help`,
    ],
    [
      ['usage', '12', '-3'],
      'UNITS cannot be negative: it must be an integer from 0 to 2^64 - 1; got "-3"; see node-daemon usage --help',
    ],
    [['start', '--port', '-5'], 'invalid --port: "-5" is not accepted; expected an integer from 0 to 65535'],
  ];
  for (const [args, line] of cases) {
    it(args.join(' '), async () => {
      const result = await run(args, env);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stdout, '');
      assert.equal(oneLine(result.stderr), line);
    });
  }
});

/** Polls `check` until it holds. */
async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A port nothing listens on (it was free a moment ago). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('a start that cannot have its address or its data dir', () => {
  it('a second start on a data dir in use names the daemon there: its pid and address (exit 3)', async () => {
    const tmp = tempDir();
    const first = await startDaemon(['--data-dir', tmp.dir, '--no-demo']);
    try {
      // The record gets the address a moment after the daemon says it listens.
      const record = join(tmp.dir, 'daemon.json');
      await until('the owner record names the address', () =>
        readFileSync(record, 'utf8').includes(first.url),
      );
      const owner = JSON.parse(readFileSync(record, 'utf8'));
      assert.equal(owner.pid, first.child.pid);
      assert.equal(owner.url, first.url);

      // Another port: the dev network's lock refuses it, and the line says who holds it.
      const elsewhere = await run(['start', '--port', '0', '--data-dir', tmp.dir]);
      assert.equal(elsewhere.code, 3, elsewhere.stderr);
      assert.equal(
        oneLine(elsewhere.stderr),
        `the data dir ${tmp.dir} is in use by node-daemon pid ${first.child.pid}, listening on ${first.url}; stop it first, or give this daemon another --data-dir`,
      );

      // The same port, as a second `npm start` would: the port is taken by the daemon of this data dir.
      const { port } = new URL(first.url);
      const again = await run(['start', '--port', port, '--data-dir', tmp.dir]);
      assert.equal(again.code, 3, again.stderr);
      assert.equal(
        oneLine(again.stderr),
        `cannot listen on 127.0.0.1:${port}: node-daemon pid ${first.child.pid} already runs on this data dir (${tmp.dir}) and listens on ${first.url}; stop it first, or start this one with another --port and --data-dir`,
      );
    } finally {
      first.child.kill('SIGTERM');
      assert.equal((await first.exited).code, 0);
    }
    assert.equal(existsSync(join(tmp.dir, 'daemon.json')), false, 'the record goes with the daemon');
    await tmp.remove();
  });

  it('a taken port leaves a fresh data dir as it was: nothing created, one line, exit 3', async () => {
    const tmp = tempDir();
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as AddressInfo;
    const line = `cannot listen on 127.0.0.1:${port}: the port is already in use; stop the other process or choose another port with --port or NODE_DAEMON_PORT`;
    try {
      const missing = join(tmp.dir, 'not-yet');
      const result = await run(['start', '--port', String(port), '--data-dir', missing]);
      assert.equal(result.code, 3, result.stderr);
      assert.equal(oneLine(result.stderr), line);
      assert.equal(existsSync(missing), false, 'no data dir was created');

      const empty = join(tmp.dir, 'empty');
      mkdirSync(empty);
      const again = await run(['start', '--port', String(port), '--data-dir', empty]);
      assert.equal(again.code, 3, again.stderr);
      assert.equal(oneLine(again.stderr), line);
      assert.deepEqual(readdirSync(empty), [], 'no key, token, store or demo world');
    } finally {
      blocker.close();
      await tmp.remove();
    }
  });
});

describe('a start interrupted before it listens', () => {
  /**
   * A start held in a step that does not end: a "PostgreSQL" that accepts connections and never answers.
   * Resolves once the daemon is in that step, with the address it holds meanwhile.
   */
  async function stuckStart(shutdownTimeout: number) {
    const tmp = tempDir();
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const connected = new Promise((resolve) => silent.once('connection', resolve));
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        BIN,
        'start',
        '--port',
        String(port),
        '--network',
        'none',
        '--data-dir',
        join(tmp.dir, 'data'),
        '--database-url',
        `postgres://postgres@127.0.0.1:${(silent.address() as AddressInfo).port}/db`,
        '--shutdown-timeout',
        String(shutdownTimeout),
      ],
      { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = waitExit(child);
    await connected;
    return {
      child,
      exited,
      url: `http://127.0.0.1:${port}`,
      async close() {
        silent.close();
        await tmp.remove();
      },
    };
  }

  it('meanwhile, the address answers 503 not_ready; SIGTERM ends it with exit 130 and one line', async () => {
    const start = await stuckStart(1);
    try {
      const response = await fetch(`${start.url}/health`);
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      assert.equal(response.headers.get('retry-after'), '1');
      const problem = (await response.json()) as Record<string, unknown>;
      assert.equal(problem.code, 'not_ready');
      assert.equal(problem.detail, 'node-daemon is starting; retry in a moment');

      const status = await run(['status', '--url', start.url]);
      assert.equal(status.code, 5);
      assert.match(
        oneLine(status.stderr),
        /node-daemon is starting; retry in a moment \(HTTP 503, not_ready,/,
      );

      start.child.kill('SIGTERM');
      const finished = await start.exited;
      assert.equal(finished.code, 130, finished.stderr);
      assert.equal(
        finished.stderr.trimEnd().split('\n').at(-1),
        'node-daemon: interrupted by SIGTERM while starting, before it listened: nothing was served',
      );
    } finally {
      await start.close();
    }
  });

  it('a signal the moment it says it listens is a clean stop: never lost, never a silent kill', async () => {
    // The signal handler used to be added only once the start returned: a signal in between killed the
    // process without a word, and one that came while the handlers changed hands was lost for good.
    for (let round = 0; round < 3; round += 1) {
      const tmp = tempDir();
      const child = spawn(
        process.execPath,
        [BIN, 'start', '--port', '0', '--data-dir', tmp.dir, '--no-demo'],
        {
          env: cleanEnv(),
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const exited = waitExit(child, 15_000);
      const onData = (d: Buffer) => {
        if (/listening on/.test(String(d))) {
          child.stderr?.off('data', onData);
          child.kill('SIGTERM');
        }
      };
      child.stderr?.on('data', onData);
      const finished = await exited;
      assert.equal(finished.signal, null, finished.stderr);
      assert.equal(finished.code, 0, finished.stderr);
      assert.match(finished.stderr, /"msg":"stopped"/);
      await tmp.remove();
    }
  });

  it('a second SIGINT ends it at once, without waiting for the shutdown timeout', async () => {
    const start = await stuckStart(60);
    try {
      const began = Date.now();
      start.child.kill('SIGINT');
      await new Promise((resolve) => setTimeout(resolve, 200));
      start.child.kill('SIGINT');
      const finished = await start.exited;
      assert.equal(finished.code, 130, finished.stderr);
      assert.ok(Date.now() - began < 10_000, 'well before the 60 s timeout and the 10 s connect timeout');
      assert.match(finished.stderr, /node-daemon: interrupted by SIGINT while starting/);
    } finally {
      await start.close();
    }
  });
});
