import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { COMMANDS } from '../src/cli/index.ts';
import { inCliWords } from '../src/cli/routes.ts';
import { BIN, cleanEnv, ROOT, run, startDaemon, waitExit } from './helpers/process.ts';
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

/** Polls `check` until it answers true. */
async function untilAsync(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
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

  it('one daemon per data dir on every network: a second is refused, and a killed one leaves the dir free', async () => {
    const tmp = tempDir();
    // No dev network here, so no ledger: the data dir's own lock keeps the second daemon out.
    const args = ['--data-dir', tmp.dir, '--network', 'none'];
    const first = await startDaemon(args);
    try {
      const record = join(tmp.dir, 'daemon.json');
      await until('the owner record names the address', () =>
        readFileSync(record, 'utf8').includes(first.url),
      );
      const second = await run(['start', '--port', '0', ...args]);
      assert.equal(second.code, 3, second.stderr);
      assert.equal(
        oneLine(second.stderr),
        `the data dir ${tmp.dir} is in use by node-daemon pid ${first.child.pid}, listening on ${first.url}; stop it first, or give this daemon another --data-dir`,
      );
      assert.equal(
        JSON.parse(readFileSync(record, 'utf8')).pid,
        first.child.pid,
        'the record is still the first',
      );
    } finally {
      // A crash: no shutdown, the record stays behind, and the kernel drops the lock with the process.
      first.child.kill('SIGKILL');
      await first.exited;
    }
    assert.equal(existsSync(join(tmp.dir, 'daemon.json')), true, 'the killed daemon left its record');
    const next = await startDaemon(args);
    next.child.kill('SIGTERM');
    assert.equal((await next.exited).code, 0);
    await tmp.remove();
  });

  it('a data dir that cannot be created is one line naming it, exit 3', async () => {
    const tmp = tempDir();
    const file = join(tmp.dir, 'a-file');
    writeFileSync(file, 'not a directory\n');
    const dataDir = join(file, 'data');
    const result = await run(['start', '--port', '0', '--network', 'none', '--data-dir', dataDir]);
    assert.equal(result.code, 3, result.stderr);
    assert.equal(
      oneLine(result.stderr),
      `cannot use the data dir ${dataDir}: a part of that path is a file, not a directory; give --data-dir a directory this user can create and write`,
    );
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
      assert.equal(response.headers.get('content-type'), 'application/problem+json; charset=utf-8');
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

describe('against a real daemon: its hints as commands, a node it does not know, a wrong address', () => {
  const tmp = tempDir();
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  let token = '';
  let stack = 0;
  const cli = (args: string[]) => run([...args, '--url', daemon.url, '--data-dir', tmp.dir]);

  before(async () => {
    daemon = await startDaemon(['--data-dir', tmp.dir], {}, 120_000);
    token = readFileSync(join(tmp.dir, 'api-token'), 'utf8').trim();
    for (const args of [['register'], ['subscribe', '1', '--price', '5']]) {
      const done = await cli(args);
      assert.equal(done.code, 0, done.stderr);
    }
    // The demo world's users buy stacks from a node that subscribes.
    let stacks: { stack_small_id: number }[] = [];
    await untilAsync('the demo users bought a stack', async () => {
      stacks = JSON.parse((await cli(['stacks', '--json'])).stdout || '[]');
      return stacks.length > 0;
    });
    stack = stacks[0]!.stack_small_id;
  });
  after(async () => {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
    await tmp.remove();
  });

  it('subscribing twice names update-subscription with the task', async () => {
    const result = await cli(['subscribe', '1', '--price', '5']);
    assert.equal(result.code, 4, result.stderr);
    assert.match(
      oneLine(result.stderr),
      /^node [0-9]+ is already subscribed to task 1; change its price with `node-daemon update-subscription 1 --price P`$/,
    );
    const http = await post('/nodes/task-subscribe', {
      task_small_id: 1,
      price_per_one_million_compute_units: 5,
    });
    assert.match(http.detail, /change its price with POST \/nodes\/task-update-subscription$/);
  });

  it('settling a stack without usage names usage with the stack, and --claimed for the field', async () => {
    const result = await cli(['settle', String(stack)]);
    assert.equal(result.code, 4, result.stderr);
    const line = `stack ${stack} has no recorded usage: settling it would claim 0 compute units and give its pay up; report usage first (\`node-daemon usage ${stack} UNITS\`) or name the units to claim (\`--claimed U\`)`;
    assert.equal(oneLine(result.stderr.replace(/^settling 1 stack…\n/, '')), line);
    assert.ok(result.stdout.includes(line), result.stdout);
    assert.doesNotMatch(result.stdout + result.stderr, /num_claimed_compute_units|POST \//);
    const http = await post('/nodes/try-settle-stacks', { stack_small_ids: [stack] });
    assert.match(
      http.detail,
      new RegExp(
        `report usage first \\(POST /stacks/${stack}/usage\\) or name the units to claim \\(num_claimed_compute_units\\)$`,
      ),
    );
  });

  it('claiming a stack not settled names settle with the stack', async () => {
    const result = await cli(['claim', String(stack)]);
    assert.equal(result.code, 4, result.stderr);
    assert.equal(
      oneLine(result.stderr.replace(/^claiming 1 stack…\n/, '')),
      `stack ${stack} has not been try-settled; settle it first with \`node-daemon settle ${stack}\``,
    );
  });

  it('a node the daemon does not know is said to be unknown (exit 4), not shown as an empty list', async () => {
    const line = "no node 999 is known to this daemon; the signer's own nodes are in `node-daemon badges`";
    for (const args of [
      ['stacks', '999'],
      ['stacks', '999', '--min-fill', '90%'],
      ['subscriptions', '999'],
      ['claimed-stacks', '999'],
      ['earnings', '999'],
      ['disputes', 'own', '999'],
      ['disputes', 'against', '999'],
    ]) {
      const result = await cli(args);
      assert.equal(result.code, 4, `${args.join(' ')}: ${result.stderr}`);
      assert.equal(oneLine(result.stderr), line, args.join(' '));
      assert.equal(result.stdout, '', args.join(' '));
    }
    // --json still prints the answer as the daemon sent it.
    const json = await cli(['stacks', '999', '--json']);
    assert.equal(json.code, 4);
    assert.equal(json.stdout, '[]\n');
    assert.equal(oneLine(json.stderr), line);
    // A node it knows with nothing to list is an empty list, as before.
    const known = await cli(['claimed-stacks', '1']);
    assert.equal(known.code, 0, known.stderr);
    assert.equal(known.stdout, '(no claimed stacks for node 1)\n');
    // HTTP clients ask GET /network/nodes/{node_id}.
    const unknown = await fetch(`${daemon.url}/network/nodes/999`);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { code: string }).code, 'node_not_found');
    const node = (await (await fetch(`${daemon.url}/network/nodes/1`)).json()) as Record<string, unknown>;
    assert.equal(node.node_small_id, 1);
    assert.match(String(node.badge_id), /^0x[0-9a-f]{64}$/);
  });

  it('an address with a path says that node-daemon serves its API at the root, not "upgrade it"', async () => {
    const result = await run(['status', '--url', `${daemon.url}/api`]);
    assert.equal(result.code, 5, result.stderr);
    assert.equal(
      oneLine(result.stderr),
      `the daemon at ${daemon.url}/api has no GET /status: node-daemon serves its API at the root of its address, not under /api: give ${daemon.url} (check --url)`,
    );
    const tasks = await run(['tasks', '--url', `${daemon.url}/api`]);
    assert.equal(tasks.code, 5, tasks.stderr);
    assert.match(
      oneLine(tasks.stderr),
      /; node-daemon serves its API at the root of its address, not under \/api: /,
    );
  });

  async function post(path: string, body: unknown): Promise<{ detail: string }> {
    const response = await fetch(`${daemon.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
    return (await response.json()) as { detail: string };
  }
});

describe('every request a message of the daemon names is a command in the CLI', () => {
  it('the sources name no request the CLI cannot turn into a command', () => {
    // Each string of the daemon's layers that names a request (`... with POST /nodes/register`), with
    // its ${...} parts as ids: the client must print a command for it, never the request.
    const root = join(ROOT, 'src');
    const files = ['operations', 'problems', 'http', 'schemas']
      .flatMap((dir) => readdirSync(join(root, dir), { recursive: true }).map((f) => join(dir, String(f))))
      .concat(['app.ts'])
      .filter((f) => f.endsWith('.ts'));
    const named: string[] = [];
    for (const file of files) {
      for (const line of readFileSync(join(root, file), 'utf8').split('\n')) {
        if (/^\s*(\/\/|\*|\/\*)/.test(line)) continue;
        for (const m of line.matchAll(/['`"][^'`"]*?\b((?:GET|POST|DELETE) \/[\w\-/{}$]*)/g)) {
          named.push(m[1]!.replace(/\$\{[^}]*\}?/g, '7'));
        }
      }
    }
    assert.ok(named.length >= 5, `found ${named.join(', ')}`);
    const open = ['GET /events'];
    for (const request of named) {
      if (open.includes(request)) continue;
      assert.match(inCliWords(`do ${request} now`, COMMANDS), /^do `node-daemon [^`]+` now$/, request);
    }
  });
});

describe('a server that is not node-daemon', () => {
  const servers: Server[] = [];
  after(() => {
    for (const server of servers) server.close();
  });

  /** An HTTP server that answers every request with this status, type and body. */
  async function answering(status: number, type: string, body: string): Promise<string> {
    const server = createHttpServer((_, res) => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  for (const [what, status, type, body] of [
    ['a 404 page', 404, 'text/html', '<h1>Not Found</h1>'],
    ['a 404 in JSON', 404, 'application/json', '{"statusCode":404,"error":"Not Found"}'],
    ['a 200 page', 200, 'text/html', '<h1>Welcome</h1>'],
    ['a 200 JSON of its own', 200, 'application/json', '{"ok":true}'],
  ] as const) {
    it(`${what}: status and a list say it is not node-daemon (exit 5)`, async () => {
      const url = await answering(status, type, body);
      for (const [args, request] of [
        [['status'], 'GET /status'],
        [['stacks', '3'], 'GET /stacks/nodes/3'],
      ] as const) {
        const result = await run([...args, '--url', url]);
        assert.equal(result.code, 5, `${args.join(' ')}: ${result.stderr}`);
        const line = oneLine(result.stderr);
        assert.ok(
          line.startsWith(
            `the server at ${url} (from --url) does not look like node-daemon: it answered ${request} with `,
          ),
          line,
        );
        assert.doesNotMatch(line, /upgrade|older/);
      }
    });
  }
});
