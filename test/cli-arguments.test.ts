import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { COMMANDS, runClient, unknownCommand } from '../src/cli/index.ts';
import { inCliWords, routePath } from '../src/cli/routes.ts';
import { didYouMean, editDistance, nearest } from '../src/cli/suggest.ts';
import { cleanEnv, startDaemon } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

/** The client's arguments: its own parsing and messages, and its checks against the daemon's. */

/** A client command in-process: its exit code and what it wrote. */
async function client(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const text = { stdout: '', stderr: '' };
  const sink = (name: keyof typeof text) =>
    new Writable({
      write(chunk, _encoding, done) {
        text[name] += String(chunk);
        done();
      },
    });
  const [command = '', ...rest] = args;
  const code = await runClient(command, rest, cleanEnv(env), {
    stdout: sink('stdout'),
    stderr: sink('stderr'),
  });
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

describe('suggestions', () => {
  it('counts insertions, deletions, replacements and swaps of neighbours as one edit each', () => {
    for (const [a, b, distance] of [
      ['stacks', 'stacks', 0],
      ['stakcs', 'stacks', 1],
      ['prise', 'price', 1],
      ['stack', 'stacks', 1],
      ['stacks', 'tasks', 2],
      ['', 'abc', 3],
      ['abc', '', 3],
      ['ca', 'abc', 3],
    ] as const) {
      assert.equal(editDistance(a, b), distance, `${a} → ${b}`);
      assert.equal(editDistance(b, a), distance, `${b} → ${a}`);
    }
  });

  it('suggests a near name or the only longer one, and nothing for what is far from all', () => {
    const options = ['price', 'badge', 'min-fill', 'idempotency-key', 'json', 'url', 'token'];
    assert.equal(nearest('prise', options), 'price');
    assert.equal(nearest('PRICE', options), 'price');
    assert.equal(nearest('min', options), 'min-fill');
    assert.equal(nearest('idempotency', options), 'idempotency-key');
    assert.equal(nearest('jsn', options), 'json');
    assert.equal(nearest('colour', options), undefined);
    assert.equal(nearest('x', options), undefined);
    assert.equal(nearest('stakcs', ['stacks', 'tasks', 'status']), 'stacks');
    assert.equal(didYouMean('prise', options, '--'), ' (did you mean --price?)');
    assert.equal(didYouMean('frobnicate', options), '');
    assert.equal(
      unknownCommand('stakcs', ['start', 'replay']),
      'unknown command stakcs (did you mean stacks?); see node-daemon --help',
    );
    assert.equal(
      unknownCommand('strat', ['start', 'replay']),
      'unknown command strat (did you mean start?); see node-daemon --help',
    );
  });
});

describe("parsing in the client's own words", () => {
  const cases: [string[], RegExp][] = [
    [
      ['subscribe', '2', '--price', '-5'],
      /^--price cannot be negative: it must be an integer amount .*; got "-5"; see node-daemon subscribe --help$/,
    ],
    [
      ['subscribe', '2', '--price=-5'],
      /^--price cannot be negative: it must be an integer amount .*; got "-5";/,
    ],
    [['subscribe', '2', '--price', '5x'], /^--price must be an integer amount .*; got "5x";/],
    [
      ['update-subscription', '1', '--price', '0'],
      /^--price must be greater than 0: an integer amount .*; got "0"; see node-daemon update-subscription --help$/,
    ],
    [['subscribe', '1', '--price', '0usdc'], /^--price must be greater than 0: .*; got "0usdc";/],
    [
      ['usage', '12', '-3'],
      /^UNITS cannot be negative: it must be an integer from 0 to 2\^64 - 1; got "-3";/,
    ],
    [
      ['usage', '12', '-3.5'],
      /^UNITS cannot be negative: it must be an integer from 0 to 2\^64 - 1; got "-3\.5";/,
    ],
    [['usage', '12', '3x'], /^UNITS must be an integer from 0 to 2\^64 - 1; got "3x";/],
    [
      ['settle', '-1,2'],
      /^a stack id cannot be negative: it must be an integer from 0 to 2\^53 - 1; got "-1";/,
    ],
    [['tasks', '-1'], /^tasks takes no arguments \(got -1\);/],
    [
      ['subscribe', '2', '--prise', '5'],
      /^unknown option --prise \(did you mean --price\?\); see node-daemon subscribe --help$/,
    ],
    [['subscribe', '2', '--prise=5'], /^unknown option --prise \(did you mean --price\?\);/],
    [['stacks', '--min', '90%'], /^unknown option --min \(did you mean --min-fill\?\);/],
    [['tasks', '-json'], /^unknown option -json \(did you mean --json\?\);/],
    [['tasks', '-x'], /^unknown option -x; see node-daemon tasks --help$/],
    [['tasks', '-hx'], /^unknown option -hx;/],
    [['tasks', '--colour'], /^unknown option --colour; see node-daemon tasks --help$/],
    [['tasks', '--json=yes'], /^--json takes no value; got --json=yes;/],
    [['subscribe', '2', '--price'], /^--price needs a value: --price P;/],
    [
      ['subscribe', '2', '--price', '--json'],
      /^--price needs a value \(--price P\), not the option --json; a value that starts with -- goes as --price=--json;/,
    ],
    [['stakcs'], /^unknown command stakcs \(did you mean stacks\?\); see node-daemon --help$/],
    [
      ['dev', 'stack', 'biy'],
      /^unknown command dev stack biy \(did you mean dev stack buy\?\); the dev stack commands are buy, settle, attest; see node-daemon dev stack --help$/,
    ],
    [['dev'], /^dev needs a command: task, node, stack, dispute, epoch, gas;/],
    [
      ['disputes', 'agianst'],
      /^the first argument must be "against" or "own"; got "agianst" \(did you mean against\?\);/,
    ],
  ];
  for (const [args, pattern] of cases) {
    it(args.join(' '), async () => {
      // Nothing listens at port 1: a usage error is found before anything is sent.
      const result = await client(args, { NODE_DAEMON_URL: 'http://127.0.0.1:1' });
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stdout, '');
      const lines = result.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0]!.replace(/^node-daemon: /, ''), pattern);
    });
  }

  it('takes a value after -- and a value that starts with a dash as given', async () => {
    const result = await client(['usage', '--url', 'http://127.0.0.1:1', '--', '12', '-3']);
    assert.match(
      result.stderr,
      /UNITS cannot be negative: it must be an integer from 0 to 2\^64 - 1; got "-3"/,
    );
    const key = await client(['usage', '1', '2', '--idempotency-key', '-k-1', '--url', 'http://127.0.0.1:1']);
    assert.equal(key.code, 5, key.stderr); // accepted, then nothing listens
  });
});

describe('routes', () => {
  it('every command has its own route, and a message naming it names the command', () => {
    const routes = COMMANDS.map((c) => c.route);
    assert.equal(new Set(routes).size, routes.length);
    for (const spec of COMMANDS) {
      const [method, template] = spec.route.split(' ') as [string, string];
      const path = template.replace(/\{[^}]+\}/g, '7');
      const text = inCliWords(`do it first with ${method} ${path}; then retry`, COMMANDS);
      assert.match(
        text,
        new RegExp(`^do it first with \`node-daemon ${spec.name}[^\`]*\`; then retry$`),
        spec.name,
      );
    }
    assert.equal(
      inCliWords('see GET /health, POST /tasks and GET /tasks.', COMMANDS),
      'see GET /health, POST /tasks and `node-daemon tasks`.',
    );
    assert.equal(
      routePath('GET /attestation_disputes/{side}/nodes/{node}', { side: 'own', node: 3 }),
      '/attestation_disputes/own/nodes/3',
    );
  });
});
