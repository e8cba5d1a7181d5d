import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { CLIENT_COMMANDS, clientHelp, runClient } from '../src/cli/index.ts';
import { cleanEnv, type Finished, run, startDaemon } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

/** The client commands against real daemons: in-process through runClient, and through bin/node-daemon.js. */

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}
/** What a call expects: a success, or one of the error classes. Only the sampling runner looks at it. */
type Outcome = 'ok' | 'refused' | 'usage' | 'unavailable';
type Runner = (args: string[], env?: Record<string, string>, outcome?: Outcome) => Promise<Result>;

class Sink extends Writable {
  text = '';
  override _write(
    chunk: Buffer | string,
    _encoding: BufferEncoding,
    done: (error?: Error | null) => void,
  ): void {
    this.text += String(chunk);
    done();
  }
}

const inProcess: Runner = async (args, env = {}) => {
  const stdout = new Sink();
  const stderr = new Sink();
  const [command = '', ...rest] = args;
  const code = await runClient(command, rest, cleanEnv(env), { stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
};

const binary: Runner = (args, env = {}) => run(args, env);

/** The command's name in the arguments: `stacks`, `dev stack buy`, `autopilot run`. */
function commandName(args: readonly string[]): string {
  if (args[0] !== 'dev' && args[0] !== 'autopilot') return args[0] ?? '';
  const words = [];
  for (const arg of args.slice(0, 3)) {
    if (!/^[a-z]+$/.test(arg)) break;
    words.push(arg);
  }
  return words.join(' ');
}

/**
 * The binary for the first call of each command in each output mode expecting each outcome (one per
 * error class), in-process for the rest: every command and class goes through bin/node-daemon.js while
 * the file stays fast (each process start loads the whole daemon).
 */
function sampling(first: Runner, rest: Runner): Runner {
  const seen = new Set<string>();
  return (args, env, outcome = 'ok') => {
    const key = `${outcome === 'ok' ? commandName(args) : ''}|${outcome}|${args.includes('--json')}`;
    if (seen.has(key)) return rest(args, env, outcome);
    seen.add(key);
    return first(args, env, outcome);
  };
}

function line(result: Result): string {
  // A multi-stack command's progress line comes first.
  const lines = result.stderr
    .trimEnd()
    .split('\n')
    .filter((l) => !/^(settling|attesting|claiming) \d+ stacks?…$/.test(l));
  assert.equal(lines.length, 1, `one line on stderr, got: ${result.stderr}`);
  assert.match(lines[0]!, /^node-daemon: /);
  return lines[0]!;
}

function ok(result: Result, args: string[]): string {
  assert.equal(result.code, 0, `${args.join(' ')}: exit ${result.code}; stderr: ${result.stderr}`);
  return result.stdout;
}

/** The closed port of a server that listened a moment ago. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const NO_SECURITY = 0;
const SAMPLING = 2;

/**
 * The node's fee as the contract computes it (contracts.md §4.2, src/protocol/fees.ts), written out here
 * to check the daemon against: floor(units x price / 1e6), and 1.2x for a SamplingConsensus task.
 */
function nodeFee(units: bigint, price: bigint, level: number): bigint {
  return level === SAMPLING ? (units * price * 1200n) / 1_000_000_000n : (units * price) / 1_000_000n;
}

/** An amount as the tables print it, in a pattern: "0.001800 USDC". */
function usdc(amount: bigint): string {
  return `${amount / 1_000_000n}\\.${String(amount % 1_000_000n).padStart(6, '0')} USDC`;
}

/**
 * `node-daemon start` until it listens, like startDaemon in helpers/process.ts but with no 60-second
 * limit on its life: the binary scenario may take longer on a loaded machine.
 */
function listening(args: string[]): Promise<{ child: ChildProcess; url: string; exited: Promise<Finished> }> {
  return startDaemon(args, {}, 600_000);
}

/**
 * A running daemon on the dev network, empty (--no-demo), attesters always sampled (k = 1), with its
 * autopilot planning only (dry-run) unless `settings` say otherwise.
 */
async function daemon(settings: string[] = ['--autopilot', 'dry-run']) {
  const tmp = tempDir('node-daemon-cli-');
  const started = await listening([
    '--data-dir',
    tmp.dir,
    '--no-demo',
    '--dev-sampling-probability',
    '1',
    '--dev-attestation-nodes',
    '1',
    ...settings,
  ]);
  const tokenFile = join(tmp.dir, 'api-token');
  return {
    url: started.url,
    dir: tmp.dir,
    /** The daemon's JSON answer, as sent, for comparing with --json. */
    async get(path: string): Promise<string> {
      const headers: Record<string, string> = existsSync(tokenFile)
        ? { authorization: `Bearer ${readFileSync(tokenFile, 'utf8').trim()}` }
        : {};
      const response = await fetch(`${started.url}${path}`, { headers });
      assert.equal(response.status, 200, path);
      return (await response.text()).trim();
    },
    async stop() {
      started.child.kill('SIGTERM');
      await started.exited;
      await tmp.remove();
    },
  };
}

type Daemon = Awaited<ReturnType<typeof daemon>>;

/**
 * Every client command in both output modes, and each error class, against one daemon. `cli` runs the
 * commands under test; `setup` only prepares state (in-process, fast).
 */
async function scenario(d: Daemon, cli: Runner, setup: Runner): Promise<void> {
  // The client finds the daemon (its port) and the token (in its data dir) from the daemon's settings.
  const { port } = new URL(d.url);
  const env = { NODE_DAEMON_PORT: port, NODE_DAEMON_DATA_DIR: d.dir };
  const call = (args: string[], outcome: Outcome = 'ok') => cli(args, env, outcome);
  const prep = async (args: string[]) => ok(await setup(args, env), args);
  const table = async (args: string[]) => ok(await call(args), args);
  const json = async (args: string[]): Promise<string> => {
    const out = ok(await call([...args, '--json']), args).trim();
    assert.equal(out.split('\n').length, 1, `--json prints one document: ${out}`);
    JSON.parse(out);
    return out;
  };
  const parsed = async (args: string[]) => JSON.parse(await json(args)) as Record<string, unknown>;
  const refused = async (args: string[], pattern: RegExp): Promise<Result> => {
    const result = await call(args, 'refused');
    assert.equal(result.code, 4, `${args.join(' ')}: exit ${result.code}; stderr: ${result.stderr}`);
    assert.match(line(result), pattern);
    return result;
  };

  // Before registering: no badge, so no default node.
  assert.match(await table(['badges']), /^signer: +0x[0-9a-f]{64}\n\(no NodeBadge/);
  assert.deepEqual((await parsed(['badges'])).badges, []);
  await refused(['stacks'], /^node-daemon: the signer owns no NodeBadge; run `node-daemon register` first$/);

  // The dev network's admin and peers.
  assert.match(
    await table([
      'dev',
      'task',
      'create',
      '--role',
      'chat',
      '--security-level',
      'none',
      '--model',
      'meta-llama/Llama-3.3-70B-Instruct',
    ]),
    /^created task 1\ntransaction: +\w{43,44}\n/,
  );
  const sampling = await parsed([
    'dev',
    'task',
    'create',
    '--role',
    '0',
    '--security-level',
    'sampling',
    '--model',
    'Qwen/QwQ-32B',
  ]);
  assert.equal(sampling.task_small_id, 2);
  await prep(['dev', 'task', 'create', '--role', '1', '--security-level', '0']); // 3
  await prep(['dev', 'task', 'create', '--role', '0', '--security-level', '0', '--private']); // 4
  assert.match(
    await table(['dev', 'node', 'create', '--subscribe', '1:1usdc', '--subscribe', '2:2000000']),
    /^created peer node 1, subscribed to 2 tasks\ntransactions: /,
  );
  assert.equal((await parsed(['dev', 'node', 'create'])).node_small_id, 2);
  // The daemon's message names POST /nodes/register; the client names its command.
  await refused(
    ['subscribe', '1', '--price', '1'],
    /owns no NodeBadge; register first with `node-daemon register`$/,
  );

  // The operator's node: 3 (the default [node]), and 4.
  assert.match(
    await table(['register']),
    /^registered node 3\nbadge: +0x[0-9a-f]{64}\ntransaction: +\w+\ngas: +\d+ MIST/,
  );
  // A signer with a badge registers another only when asked: a second node costs gas.
  const again = await refused(
    ['register'],
    /^node-daemon: the signer already holds a NodeBadge \(node 3\); registering mints another node, which costs gas: run `node-daemon register --another` if that is what you want$/,
  );
  assert.equal(again.stdout, '');
  assert.equal((await parsed(['register', '--another'])).node_small_id, 4);
  assert.match(
    await table(['badges']),
    /\nNODE {2}BADGE ID\n {3}3 {2}0x[0-9a-f]{4}…[0-9a-f]{4}\n {3}4 {2}0x/,
  );
  assert.equal(await json(['badges']), await d.get('/nodes/badges'));

  // Subscriptions: prices in USDC per million units in tables, raw in JSON.
  assert.match(
    await table(['subscribe', '1', '--price', '1usdc']),
    /^subscribed to task 1 at 1\.000000 USDC\/M\n/,
  );
  assert.equal(typeof (await parsed(['subscribe', '2', '--price', '1000000'])).tx_digest, 'string');
  assert.match(
    await table(['update-subscription', '1', '--price', '900000']),
    /^changed the price for task 1 to 0\.900000 USDC\/M\n/,
  );
  assert.equal((await parsed(['update-subscription', '2', '--price', '1usdc'])).status, 'success');
  await refused(
    ['subscribe', '1', '--price', '1'],
    /already subscribed to task 1; change its price with `node-daemon update-subscription 1 --price P`$/,
  );
  await prep(['subscribe', '3', '--price', '1']);
  assert.match(await table(['unsubscribe', '3']), /^unsubscribed from task 3\n/);
  await prep(['subscribe', '3', '--price', '1']);
  assert.equal((await parsed(['unsubscribe', '3'])).indexed, true);
  assert.match(
    await table(['subscriptions']),
    /^NODE +TASK +PRICE +MAX UNITS +VALID\n +3 +1 +0\.900000 USDC\/M +\d+ +yes\n +3 +2 +1\.000000 USDC\/M/,
  );
  assert.equal(await json(['subscriptions', '3']), await d.get('/subscriptions/nodes/3'));
  assert.match(
    await table(['subscribe-model', 'meta-llama/Llama-3.3-70B-Instruct', '1']),
    /^subscribed to model meta-llama\/Llama-3.3-70B-Instruct in echelon 1\n/,
  );
  assert.equal((await parsed(['subscribe-model', 'Qwen/QwQ-32B', '1'])).status, 'success');
  assert.match(
    await table(['tasks']),
    /^TASK +MODEL +ROLE +SECURITY +MIN REPUTATION +STATE +TASK ID\n +1 +meta-llama\/Llama-3\.3-70B-Instruct +chat \(0\) +none \(0\) +- +active +0x[0-9a-f]{4}…/,
  );
  assert.equal(await json(['tasks']), await d.get('/tasks'));

  // Users buy stacks. Task 2 samples one attester among the subscribers whose price is within the
  // stack's: stacks at 1.5 USDC/M are attested by node 3 only (peer 1 asks 2), and once node 3 asks 5,
  // stacks at 3 USDC/M are attested by peer 1 only.
  assert.match(
    await table(['dev', 'stack', 'buy', '--task', '2', '--units', '1000', '--price', '3usdc', '--node', '3']),
    /^bought stack 1 from node 3\n/,
  );
  const bought = await parsed([
    'dev',
    'stack',
    'buy',
    '--task',
    '2',
    '--units',
    '1000',
    '--price',
    '1500000',
    '--node',
    '3',
  ]);
  assert.deepEqual([bought.stack_small_id, bought.selected_node_id], [2, 3]);
  for (const args of [
    ['--task', '2', '--units', '1000', '--price', '1.5usdc', '--node', '3'], // 3
    ['--task', '2', '--units', '1000', '--price', '3usdc', '--node', '3'], // 4
    ['--task', '1', '--units', '2000', '--price', '2usdc', '--node', '3'], // 5
    ['--task', '1', '--units', '1000', '--price', '2usdc', '--node', '3'], // 6
    ['--task', '1', '--units', '1000', '--price', '2usdc', '--node', '1'], // 7
    ['--task', '1', '--units', '1000', '--price', '2usdc', '--node', '1'], // 8
    ['--task', '1', '--units', '1000', '--price', '2usdc', '--node', '3'], // 9, never used
  ]) {
    await prep(['dev', 'stack', 'buy', ...args]);
  }

  // Usage reports.
  assert.equal(
    await table(['usage', '1', '600']),
    'stack 1: 600 of 1000 compute units used (60.0%), 1 message\n',
  );
  assert.deepEqual(await parsed(['usage', '2', '950']), {
    stack_small_id: 2,
    already_computed_units: 950,
    num_compute_units: 1000,
    num_total_messages: 1,
    fill_fraction: 0.95,
  });
  for (const [stack, units] of [
    ['3', '400'],
    ['4', '100'],
    ['5', '1900'],
    ['6', '100'],
  ] as const) {
    await prep(['usage', stack, units]);
  }
  await refused(['usage', '1', '5000'], /would exceed it \(nothing was recorded\)$/);

  assert.match(
    await table(['stacks']),
    /^STACK +TASK +USED +UNITS +FILL +MESSAGES +PRICE +STATE +CC +REFUND +STACK ID +OWNER\n +1 +2 +600 +1000 +60\.0% +1 +3\.000000 USDC\/M +open +- +0x[0-9a-f]{4}…[0-9a-f]{4} +0x/,
  );
  const full = await table(['stacks', '--min-fill', '90%']);
  assert.deepEqual(
    full
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/ +/)[0]),
    ['2', '5'],
  );
  assert.equal(
    await json(['stacks', '3', '--min-fill', '0.9']),
    await d.get('/stacks/nodes/3?min_fill_fraction=0.9'),
  );

  // The autopilot (dry-run) would settle the stacks filled to 95%, each for the fee of its usage:
  // stack 2, 950 units at 1.5 USDC/M on a sampling task; stack 5, 1900 units at 2 USDC/M.
  const pilot = await table(['autopilot']);
  assert.match(
    pilot,
    /^mode: +dry-run: it plans and records what it would do, and submits nothing\nstate: +(idle|running a pass)\nepoch: +0\nsettles: +a stack once its usage reaches 95\.0% of its units, or 1h after its last usage\nclaims: +a batch once its node fees reach 1\.000000 USDC\ngas: +acts only when a transaction's estimated gas is at most 0\.050000000 SUI\ngas budget: +50\.000000000 SUI left of 50\.000000000 SUI a day \(--autopilot-max-gas-per-day\), nothing spent in 24 hours\nlast pass: +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \((.+ ago|now)\), started by \w+; planned only/,
  );
  assert.match(pilot, /\n\nWhat it would do now:\nACTION +NODE +STACKS +WILL +NODE FEE +GAS +REASON\n/);
  const fee2 = usdc(nodeFee(950n, 1_500_000n, SAMPLING));
  const fee5 = usdc(nodeFee(1900n, 2_000_000n, NO_SECURITY));
  assert.match(pilot, new RegExp(`\nsettle +3 +2 +act +${fee2} +0\\.\\d{9} SUI +filled to 95%`));
  assert.match(pilot, new RegExp(`\nsettle +3 +5 +act +${fee5} +0\\.\\d{9} SUI +filled to 95%`));
  const plan = (await parsed(['autopilot'])) as { mode: string; plan: { stack_small_ids: number[] }[] };
  assert.equal(plan.mode, 'dry-run');
  assert.deepEqual(
    plan.plan.map((p) => p.stack_small_ids),
    [[2], [5]],
  );
  assert.match(
    await table(['autopilot', 'run']),
    /^ran a pass that only planned \(mode dry-run\); nothing was submitted\n\nWhat it would do:\nACTION +NODE +STACKS +WILL /,
  );
  const ran = await parsed(['autopilot', 'run']);
  assert.deepEqual([ran.mode, ran.acted, ran.actions], ['dry-run', false, []]);
  // The pass recorded what it would have done.
  const resumed = await table(['autopilot', 'resume']);
  assert.match(resumed, /^not halted; in mode dry-run it does not act\n\nmode: +dry-run: /);
  assert.match(
    resumed,
    /\n\nRecent actions, newest first:\nTIME +ACTION +STACKS +STATUS +NODE FEE +DETAIL\n\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ +settle +[25] +planned +/,
  );
  assert.equal((await parsed(['autopilot', 'resume'])).halted_reason, null);
  await refused(['autopilot', 'run', '--token', 'not-the-token'], /^node-daemon: the API token is wrong/);

  // Settling: a progress line on stderr, then one line per stack. A stack with no usage is refused: its
  // line says why, nothing is submitted, the error is on stderr (exit 4); --json prints the problem.
  const noUsage = await refused(
    ['settle', '9'],
    /^node-daemon: stack 9 has no recorded usage: .*; report usage first \(`node-daemon usage 9 UNITS`\) or name the units to claim \(`--claimed U`\)$/,
  );
  assert.match(
    noUsage.stdout,
    /^STACK +RESULT +DETAIL\n +9 +skipped \(no_usage\) +stack 9 has no recorded usage: /,
  );
  const noUsageJson = await call(['settle', '9', '--json'], 'refused');
  assert.equal(noUsageJson.code, 4);
  const problem409 = JSON.parse(noUsageJson.stdout);
  assert.deepEqual(
    [problem409.status, problem409.code, problem409.results[0].error.code],
    [409, 'no_usage', 'no_usage'],
  );
  line(noUsageJson);
  // A batch: the stacks that can be settled are, the others say why (exit 0).
  const settled = await parsed(['settle', '2', '3', '9']);
  assert.deepEqual(
    (settled.results as { stack_small_id: number; status: string }[]).map((r) => [
      r.stack_small_id,
      r.status,
    ]),
    [
      [2, 'success'],
      [3, 'success'],
      [9, 'skipped'],
    ],
  );
  const settle = await call(['settle', '5,6,9', '--claimed', '6=50']);
  assert.equal(settle.code, 0, settle.stderr);
  assert.equal(settle.stderr, 'settling 3 stacks…\n');
  const lines = settle.stdout.split('\n');
  assert.match(lines[0]!, /^STACK +RESULT +CLAIMED UNITS +TRANSACTION +DETAIL$/);
  assert.match(lines[1]!, /^ +5 +settled +1900 +\w{4}…\w{4}$/);
  assert.match(lines[2]!, /^ +6 +settled +50 +\w{4}…\w{4}$/);
  assert.match(lines[3]!, /^ +9 +skipped \(no_usage\) +stack 9 has no recorded usage: /);
  const [first, second] = /^transactions: +(\w{43,44}), (\w{43,44})$/.exec(lines[4]!)!.slice(1) as [
    string,
    string,
  ];
  assert.equal(lines[1]!.split(/ +/)[4], `${first.slice(0, 4)}…${first.slice(-4)}`);
  assert.equal(lines[2]!.split(/ +/)[4], `${second.slice(0, 4)}…${second.slice(-4)}`);
  assert.deepEqual(lines.slice(5), ['']);
  await prep(['update-subscription', '2', '--price', '5usdc']);
  await prep(['settle', '1', '4', '--claimed', '500']);
  await refused(['settle', '5'], /already/);

  // Attesting: node 3 was asked for stacks 2 and 3.
  const attest = await call(['attest', '2']);
  assert.equal(attest.code, 0, attest.stderr);
  assert.equal(attest.stderr, 'attesting 1 stack…\n');
  assert.match(
    attest.stdout,
    /^STACK +RESULT +TRANSACTION +DETAIL\n +2 +attested +\w{4}…\w{4}\ntransaction: +\w{43,44}\n$/,
  );
  assert.equal(((await parsed(['attest', '3'])).results as { status: string }[])[0]?.status, 'success');
  const skipped = await refused(
    ['attest', '2', '5'],
    /^node-daemon: none of the listed stacks can be attested/,
  );
  assert.match(skipped.stdout, /^STACK +RESULT +DETAIL\n/);
  assert.match(skipped.stdout, /\n +2 +skipped \(already_attested\) +node 3 already attested stack 2\n/);
  assert.match(skipped.stdout, /\n +5 +skipped \(not_requested\) +/);

  // Peer 1 attests stacks 1 and 4, settles its own stacks 7 and 8, and disputes 2 and 3.
  assert.match(await table(['dev', 'stack', 'attest', '1', '--node', '1']), /^node 1 attested stack 1\n/);
  assert.equal(typeof (await parsed(['dev', 'stack', 'attest', '4', '--node', '1'])).tx_digest, 'string');
  assert.match(
    await table(['dev', 'stack', 'settle', '7']),
    /^the peer node settled stack 7\nattesters: +-\n/,
  );
  assert.deepEqual(
    (await parsed(['dev', 'stack', 'settle', '8', '--claimed', '500'])).requested_attestation_nodes,
    [],
  );
  assert.match(await table(['dev', 'dispute', '2', '--node', '1']), /^node 1 disputed stack 2\n/);
  assert.equal((await parsed(['dev', 'dispute', '3', '--node', '1'])).indexed, true);
  assert.match(
    await table(['disputes', 'against']),
    /^STACK +ORIGINAL NODE +ATTESTER +ORIGINAL COMMITMENT +ATTESTER COMMITMENT\n +2 +3 +1 +0x[0-9a-f]{4}…[0-9a-f]{4} +0x/,
  );
  assert.equal(
    await json(['disputes', 'against', '3']),
    await d.get('/attestation_disputes/against/nodes/3'),
  );
  assert.match(await table(['disputes', 'own', '1']), /\n +2 +3 +1 /);
  assert.equal(await json(['disputes', 'own', '1']), await d.get('/attestation_disputes/own/nodes/1'));
  assert.equal(await table(['disputes', 'own']), '(no disputes raised by node 3)\n');

  // Claiming too early: nothing submitted, each stack says from which epoch (exit 4).
  const early = await refused(
    ['claim', '1', '5'],
    /^node-daemon: none of the 2 listed stacks can be claimed now \(2 dispute_period\); each stack's reason is in results$/,
  );
  assert.match(
    early.stdout,
    /^STACK +RESULT +CLAIMABLE FROM +DETAIL\n +1 +not claimable \(dispute_period\) +epoch 1 /,
  );
  assert.match(early.stdout, /\n +5 +not claimable \(dispute_period\) +epoch 1 /);

  // Tasks: deprecate, a removal too soon (a contract abort, 422), an epoch, then removal.
  assert.match(await table(['dev', 'task', 'deprecate', '3']), /^deprecated task 3\n/);
  assert.equal(typeof (await parsed(['dev', 'task', 'deprecate', '4'])).tx_digest, 'string');
  await refused(
    ['dev', 'task', 'remove', '3'],
    /^node-daemon: .*ENotEnoughEpochsPassed \(abort code \d+ in db\); transaction \w{43,44}$/,
  );
  assert.equal(await table(['dev', 'epoch']), 'epoch 1\n');
  // Each claimed stack with the contract's amounts: stack 1 claimed 500 of its 1000 units at 3 USDC/M on
  // a sampling task (1.2x), stack 5 1900 of 2000 at 2 USDC/M on a task without security; the buyer is
  // refunded the fee of the units not claimed.
  const claim = await call(['claim', '1', '5', '2']);
  assert.equal(claim.code, 0, claim.stderr);
  assert.equal(claim.stderr, 'claiming 3 stacks…\n');
  const fees = { 1: nodeFee(500n, 3_000_000n, SAMPLING), 5: nodeFee(1900n, 2_000_000n, NO_SECURITY) };
  const refunds = { 1: nodeFee(500n, 3_000_000n, SAMPLING), 5: nodeFee(100n, 2_000_000n, NO_SECURITY) };
  assert.deepEqual([fees[1], fees[5], refunds[5]], [1800n, 3800n, 200n]);
  const claimLines = claim.stdout.split('\n');
  assert.match(claimLines[0]!, /^STACK +RESULT +PATH +UNITS +NODE FEE +REFUND +DETAIL$/);
  assert.match(
    claimLines[1]!,
    new RegExp(`^ +1 +claimed +ticket +500 +${usdc(fees[1])} +${usdc(refunds[1])}$`),
  );
  assert.match(
    claimLines[2]!,
    new RegExp(`^ +5 +claimed +ticket +1900 +${usdc(fees[5])} +${usdc(refunds[5])}$`),
  );
  assert.match(claimLines[3]!, /^ +2 +not claimable \(in_dispute\) +stack 2 is in dispute/);
  assert.match(
    claimLines[4]!,
    new RegExp(
      `^total: +2 stacks claimed: node fees ${usdc(fees[1] + fees[5])}, refunds ${usdc(refunds[1] + refunds[5])}$`,
    ),
  );
  assert.match(claimLines[5]!, /^transaction: +\w{43,44}$/);
  const six = (await parsed(['claim', '6'])) as {
    claimed: { stack_small_id: number; path: string; node_fee_amount: number; user_refund_amount: number }[];
    total: Record<string, number>;
  };
  const fee6 = nodeFee(50n, 2_000_000n, NO_SECURITY);
  const refund6 = nodeFee(950n, 2_000_000n, NO_SECURITY);
  assert.deepEqual(
    six.claimed.map((c) => [c.stack_small_id, c.path, c.node_fee_amount, c.user_refund_amount]),
    [[6, 'settlement_ticket', Number(fee6), Number(refund6)]],
  );
  assert.deepEqual(six.total, {
    node_fee_amount: Number(fee6),
    user_refund_amount: Number(refund6),
    unpriced_stacks: 0,
  });
  const claimedFees = fees[1] + fees[5] + fee6;
  assert.deepEqual(await parsed(['dev', 'epoch']), { epoch: 2, indexed: true });
  assert.match(await table(['dev', 'task', 'remove', '3']), /^removed task 3\n/);
  assert.equal(typeof (await parsed(['dev', 'task', 'remove', '4'])).tx_digest, 'string');
  assert.match(await table(['tasks']), /\n +3 +- +embeddings \(1\) +none \(0\) +- +removed \(epoch 2\)/);

  assert.match(
    await table(['claimed-stacks']),
    /^STACK +NODE +CLAIMED UNITS +REFUND +PATH +ATTESTERS +ATTESTED +DISPUTED +CLAIMED\n +1 +3 +500 +\d+\.\d{6} USDC +ticket +1 +1 +no +yes\n/,
  );
  assert.equal(await json(['claimed-stacks']), await d.get('/claimed-stacks/nodes/3'));

  // Earnings: the fees of the stacks in each state, and those claimed by epoch (all in epoch 1). Stack 4
  // (500 units at 3 USDC/M, sampling) is claimable; stacks 2 and 3 are disputed; stack 9 is open.
  const earnings = await table(['earnings']);
  assert.match(earnings, /^node: +3\nepoch: +2\n\nSTATE +STACKS +NODE FEES\n/);
  assert.match(earnings, /\nopen +1 +0\.000000 USDC +usage reported, not settled yet\n/);
  assert.match(earnings, /\nsettling +0 +0\.000000 USDC +settled, in the dispute period\n/);
  assert.match(
    earnings,
    new RegExp(
      `\nclaimable +1 +${usdc(nodeFee(500n, 3_000_000n, SAMPLING))} +claim it with \`node-daemon claim\`\n`,
    ),
  );
  assert.match(earnings, new RegExp(`\nclaimed +3 +${usdc(claimedFees)} +received\n`));
  const disputed = nodeFee(950n, 1_500_000n, SAMPLING) + nodeFee(400n, 1_500_000n, SAMPLING);
  assert.match(earnings, new RegExp(`\ndisputed +2 +${usdc(disputed)} +locked: `));
  assert.match(earnings, /\n\nattester rewards: +\d+\.\d{6} USDC\nrefunded to users: +\d+\.\d{6} USDC\n/);
  assert.match(
    earnings,
    new RegExp(`\n\nCLAIMED IN EPOCH +STACKS +NODE FEES\n +1 +3 +${usdc(claimedFees)}\n$`),
  );
  assert.equal(await json(['earnings', '3']), await d.get('/earnings/nodes/3'));
  assert.equal((await parsed(['earnings', '3'])).claimed, Number(claimedFees));
  assert.match(await table(['earnings', '1']), /\n\n\(no claims yet\)\n$/);

  // Status: "key: value" lines; --json as the daemon sent it.
  const status = await table(['status']);
  assert.match(status, /^version: +\d+\.\d+\.\d+\nnetwork: +dev\nepoch: +2\n/m);
  assert.match(status, /^autopilot: +dry-run \(plans only\), last pass \S+Z \((.+ ago|now)\)$/m);
  assert.match(status, /^badges: +node 3 \(badge 0x[0-9a-f]{64}\), node 4 /m);
  assert.match(status, /^usage source: +none \(usage comes from POST \/stacks\/\{id\}\/usage\)$/m);
  assert.equal((await parsed(['status'])).network, 'dev');

  // Refusals (exit 4): the problem's detail in one line; with --json the problem document on stdout.
  await refused(['subscribe', '99', '--price', '1'], /^node-daemon: no task 99 /);
  const problem = await call(['subscribe', '99', '--price', '1', '--json'], 'refused');
  assert.equal(problem.code, 4);
  assert.equal(JSON.parse(problem.stdout).code, 'task_not_found');
  line(problem);
  await refused(
    ['subscribe-model', 'no-such-model', '1'],
    /^node-daemon: .*EFieldDoesNotExist.*transaction \w{43,44}/,
  );
  await refused(
    ['register', '--another', '--token', 'not-the-token'],
    /API token is wrong.*\(this client sent the token from --token\)$/,
  );

  // Usage errors (exit 2): one line naming the command's help; nothing is sent.
  for (const [args, pattern] of [
    [['stacks', 'one'], /node must be an integer/],
    [['subscribe', '1'], /--price P is required/],
    [['settle'], /missing arguments/],
    [['settle', '1', '1'], /stack 1 is listed twice/],
    [['tasks', '--colour'], /^node-daemon: unknown option --colour; see/],
    [['subscribe', '1', '--prise', '1'], /^node-daemon: unknown option --prise \(did you mean --price\?\);/],
    [
      ['subscribe', '2', '--price', '-5'],
      /^node-daemon: --price cannot be negative: it must be .*; got "-5";/,
    ],
    [['usage', '12', '-3'], /^node-daemon: UNITS cannot be negative: it must be an integer .*; got "-3";/],
    [['stacks', '--min-fill', '2'], /--min-fill must be a fraction/],
    [['dev', 'frob'], /^node-daemon: unknown command dev frob; the dev commands are task, node, stack/],
    [['dev', 'stakc', 'buy'], /^node-daemon: unknown command dev stakc \(did you mean dev stack\?\);/],
  ] as const) {
    const result = await call([...args], 'usage');
    assert.equal(result.code, 2, args.join(' '));
    assert.match(line(result), pattern);
    assert.match(
      line(result),
      new RegExp(`; see node-daemon ${args[0] === 'dev' ? 'dev' : args[0]} --help$`),
    );
    assert.equal(result.stdout, '');
  }

  // Unavailable (exit 5): nothing listens there; the line says where and how to start the daemon.
  const closed = String(await closedPort());
  const down = await cli(['tasks'], { NODE_DAEMON_PORT: closed }, 'unavailable');
  assert.equal(down.code, 5);
  assert.equal(
    line(down),
    `node-daemon: cannot reach the daemon at http://127.0.0.1:${closed}: connection refused; start it with \`node-daemon start\` (with the same --host/--port/--config), or give its address with --url or NODE_DAEMON_URL`,
  );
  const downJson = await cli(
    ['settle', '1', '--json', '--url', `http://127.0.0.1:${closed}`],
    {},
    'unavailable',
  );
  assert.equal(downJson.code, 5);
  assert.match(line(downJson), /\(from --url\): connection refused; is it running there\?/);
  assert.equal(downJson.stdout, '');
}

/** Polls `check` until it answers true (the autopilot acts on its own, a moment after what pokes it). */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The autopilot at work (mode on, claiming any amount): it settles a stack filled by usage, and claims
 * it once the dispute period is over; `autopilot` shows what it did, `earnings` what it brought.
 */
async function autopilotAtWork(d: Daemon, cli: Runner): Promise<void> {
  const { port } = new URL(d.url);
  const env = { NODE_DAEMON_PORT: port, NODE_DAEMON_DATA_DIR: d.dir };
  const out = async (args: string[]) => ok(await cli(args, env), args);
  const actions = async () =>
    (
      JSON.parse(await out(['autopilot', '--json'])) as {
        recent_actions: { action: string; status: string }[];
      }
    ).recent_actions;
  const done = (action: string) => async () =>
    (await actions()).some((a) => a.action === action && a.status === 'succeeded');

  await out(['dev', 'task', 'create', '--role', 'chat', '--security-level', 'none']);
  await out(['register']);
  await out(['subscribe', '1', '--price', '1usdc']);
  await out(['dev', 'stack', 'buy', '--task', '1', '--units', '1000', '--price', '2usdc', '--node', '1']);
  await out(['dev', 'stack', 'buy', '--task', '1', '--units', '2000', '--price', '2usdc', '--node', '1']);
  await out(['usage', '2', '500']);
  await out(['usage', '1', '1000']);
  // A pass now: it settles stack 1, unless the pass the usage started already did.
  assert.match(await out(['autopilot', 'run']), /^ran a pass: (nothing to act on|1 action)\n\n/);
  const ran = JSON.parse(await out(['autopilot', 'run', '--json']));
  assert.deepEqual([ran.mode, ran.acted], ['on', true]);
  await until('the settlement of stack 1', done('settle'));
  const fee1 = usdc(nodeFee(1000n, 2_000_000n, NO_SECURITY));
  const view = await out(['autopilot']);
  assert.match(view, /^mode: +on: it settles, attests and claims by itself\nstate: +(idle|running a pass)\n/);
  assert.match(view, /\n\nWhat it would do now:\n\(nothing to do\)\n/);
  assert.match(view, new RegExp(`\n\\S+Z +settle +1 +succeeded +${fee1} +\\w{4}…\\w{4}\n`));

  // The dispute period ends with the epoch: the autopilot claims stack 1.
  await out(['dev', 'epoch']);
  await until('the claim of stack 1', done('claim'));
  assert.match(
    await out(['autopilot']),
    new RegExp(`\n\\S+Z +claim +1 +succeeded +${fee1} +\\w{4}…\\w{4}\n`),
  );
  const earnings = await out(['earnings']);
  assert.match(earnings, new RegExp(`\nopen +1 +${usdc(nodeFee(500n, 2_000_000n, NO_SECURITY))} +`));
  assert.match(earnings, new RegExp(`\nclaimed +1 +${fee1} +received\n`));
  assert.match(earnings, new RegExp(`\nCLAIMED IN EPOCH +STACKS +NODE FEES\n +1 +1 +${fee1}\n$`));
  assert.match(await out(['status']), /^autopilot: +on, last pass \S+Z \((.+ ago|now)\)$/m);
}

describe('client commands against a real daemon', { concurrency: true }, () => {
  it('runs every command in both output modes, and each error class (in-process)', async () => {
    const d = await daemon();
    try {
      await scenario(d, inProcess, inProcess);
    } finally {
      await d.stop();
    }
  });

  it('shows the autopilot at work and the earnings it brings (in-process)', async () => {
    const d = await daemon(['--autopilot', 'on', '--autopilot-min-claim', '0']);
    try {
      await autopilotAtWork(d, inProcess);
    } finally {
      await d.stop();
    }
  });

  it('runs every command through bin/node-daemon.js', async (t) => {
    const help = await binary(['tasks', '--help']);
    if (!help.stdout.startsWith('Usage: node-daemon tasks')) {
      t.skip('src/main.ts does not dispatch the client commands yet');
      return;
    }
    const overview = await binary(['--help']);
    assert.equal(overview.code, 0);
    for (const command of CLIENT_COMMANDS) assert.match(overview.stdout, new RegExp(`\\n {2}${command}\\b`));
    const d = await daemon();
    try {
      await scenario(d, sampling(binary, inProcess), inProcess);
    } finally {
      await d.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// Against a stand-in server: the token, the classes of failure, exact u64 values, an older daemon.

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  idempotencyKey: string | undefined;
  body: string;
}

describe('client commands against a stand-in server', () => {
  let server: Server;
  let url: string;
  const seen: Seen[] = [];
  let answer: (req: IncomingMessage, res: ServerResponse) => void = () => {};

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += String(d);
      });
      req.on('end', () => {
        seen.push({
          method: req.method ?? '',
          url: req.url ?? '',
          authorization: req.headers.authorization,
          idempotencyKey: req.headers['idempotency-key'] as string | undefined,
          body,
        });
        answer(req, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const send = (
    status: number,
    body: string,
    headers: Record<string, string> = {},
    contentType = status < 400 ? 'application/json' : 'application/problem+json',
  ) => {
    answer = (_req, res) => {
      res.writeHead(status, { 'content-type': contentType, ...headers });
      res.end(body);
    };
  };
  /** A problem document as node-daemon writes them (its type, code and detail), with extensions. */
  const problem = (status: number, code: string, detail: string, extensions: Record<string, unknown> = {}) =>
    JSON.stringify({
      type: `urn:node-daemon:problem:${code}`,
      title: code,
      status,
      code,
      detail,
      instance: '/',
      request_id: 'req-1',
      ...extensions,
    });

  it('finds the token: --token, else NODE_DAEMON_TOKEN, else <data dir>/api-token; never prints it', async () => {
    const tmp = tempDir();
    try {
      send(200, '[]');
      seen.length = 0;
      await inProcess(['tasks', '--url', url, '--data-dir', tmp.dir]);
      assert.equal(seen[0]?.authorization, undefined, 'no file: no token');
      writeFileSync(join(tmp.dir, 'api-token'), '  file-token\n');
      await inProcess(['tasks'], { NODE_DAEMON_URL: url, NODE_DAEMON_DATA_DIR: tmp.dir });
      assert.equal(seen[1]?.authorization, 'Bearer file-token');
      await inProcess(['tasks', '--url', url, '--data-dir', tmp.dir], { NODE_DAEMON_TOKEN: 'env-token' });
      assert.equal(seen[2]?.authorization, 'Bearer env-token');
      await inProcess(['tasks', '--url', url, '--token', 'flag-token'], { NODE_DAEMON_TOKEN: 'env-token' });
      assert.equal(seen[3]?.authorization, 'Bearer flag-token');
      // The data dir from a config file, as the daemon reads it.
      const config = join(tmp.dir, 'config.json');
      writeFileSync(config, JSON.stringify({ 'data-dir': tmp.dir, port: Number(new URL(url).port) }));
      assert.equal((await inProcess(['tasks', '--config', config])).code, 0);
      assert.equal(seen[4]?.authorization, 'Bearer file-token');

      send(403, problem(403, 'forbidden', 'the API token is wrong'));
      const wrong = await inProcess(['register', '--another', '--url', url, '--token', 'sekrit-token']);
      assert.equal(wrong.code, 4);
      assert.equal(
        line(wrong),
        'node-daemon: the API token is wrong (this client sent the token from --token)',
      );
      assert.doesNotMatch(wrong.stdout + wrong.stderr, /sekrit-token/);
    } finally {
      await tmp.remove();
    }
  });

  it('prints u64 values beyond 2^53 exactly, formatted in tables and as sent with --json', async () => {
    const big = '18446744073709551615';
    const body = `[{"owner_address":"0x${'ab'.repeat(32)}","stack_small_id":9007199254740991,"stack_id":"0x${'cd'.repeat(32)}","task_small_id":1,"selected_node_id":1,"num_compute_units":${big},"price_per_one_million_compute_units":${big},"already_computed_units":9223372036854775808,"in_settle_period":false,"num_total_messages":${big},"is_claimed":false,"is_locked_for_claim":false,"is_confidential":true,"user_refund_amount":null}]`;
    send(200, body);
    const out = ok(await inProcess(['stacks', '1', '--url', url]), ['stacks']);
    assert.match(
      out,
      /9007199254740991 +1 +9223372036854775808 +18446744073709551615 +50\.0% +18446744073709551615/,
    );
    assert.match(out, / 18446744073709\.551615 USDC\/M +open +yes +- +0xcdcd…cdcd +0xabab…abab\n$/);
    assert.equal(ok(await inProcess(['stacks', '1', '--url', url, '--json']), ['stacks']), `${body}\n`);

    send(200, `{"epoch":${big}}`);
    assert.equal(ok(await inProcess(['dev', 'epoch', '--url', url]), ['dev epoch']), `epoch ${big}\n`);
    seen.length = 0;
    send(
      200,
      '{"stack_small_id":1,"already_computed_units":1,"num_compute_units":2,"num_total_messages":1,"fill_fraction":0.5}',
    );
    await inProcess(['usage', '1', big, '--url', url]);
    assert.equal(seen[0]?.body, `{"compute_units":${big}}`);
    assert.match(seen[0]?.idempotencyKey ?? '', /^node-daemon-cli-[0-9a-f-]{36}$/);
  });

  it('formats the status document, and says when the daemon is older than GET /status', async () => {
    send(
      200,
      '{"version":"9.9.9","network":"dev","epoch":18446744073709551615,"uptime_seconds":3725,"signer_address":"0x1","badges":[],"store":{"engine":"sqlite"},"indexer":{"cursor":"12","lag_seconds":0.5,"last_error":null},"balances":{"USDC":18446744073709551615,"SUI":1500000000},"autopilot":{"mode":"on","halted":"3 contract aborts in a row, the last: EStackNotFound","last_pass_at":null}}',
    );
    assert.equal(
      ok(await inProcess(['status', '--url', url]), ['status']),
      [
        'version:             9.9.9',
        'network:             dev',
        'epoch:               18446744073709551615',
        'uptime_seconds:      3725 s (1h 2m 5s)',
        'signer_address:      0x1',
        'badges:              none',
        'store.engine:        sqlite',
        'indexer.cursor:      12',
        'indexer.lag_seconds: 0.5',
        'indexer.last_error:  none',
        'balances.USDC:       18446744073709.551615 USDC',
        'balances.SUI:        1.500000000 SUI',
        'autopilot:           on, no pass yet; halted: 3 contract aborts in a row, the last: EStackNotFound (`node-daemon autopilot resume` lets it act again)',
        '',
      ].join('\n'),
    );
    // A daemon without a chain (network none) has no epoch yet and no autopilot.
    send(200, '{"version":"9.9.9","network":"none","epoch":null,"autopilot":null}');
    assert.equal(
      ok(await inProcess(['status', '--url', url]), ['status']),
      'version:   9.9.9\nnetwork:   none\nepoch:     unknown (the chain has not said yet)\nautopilot: none (the daemon has no chain network: it serves reads only)\n',
    );
    send(404, problem(404, 'not_found', 'no endpoint at /status; see /docs for the API'));
    const old = await inProcess(['status', '--url', url]);
    assert.equal(old.code, 4);
    assert.match(line(old), /has no GET \/status: it is older than this command/);
  });

  it('says plainly when the server at the address is not node-daemon', async () => {
    for (const [status, body, type, answer] of [
      [404, 'Not Found', 'text/plain', 'HTTP 404 and text/plain, not a node-daemon problem document'],
      [404, '', 'text/plain', 'HTTP 404 and no body, not a node-daemon problem document'],
      [
        404,
        '{"type":"about:blank","title":"Not Found","status":404,"detail":"no such route"}',
        'application/problem+json',
        'HTTP 404 and application/problem+json, not a node-daemon problem document',
      ],
      [200, '<!doctype html><title>router</title>', 'text/html', 'HTTP 200 and text/html, not JSON'],
      [
        200,
        '{"status":"ok","uptime":12}',
        'application/json',
        "JSON without the version and network of node-daemon's status",
      ],
      [200, '[1, 2]', 'application/json', "JSON without the version and network of node-daemon's status"],
    ] as const) {
      send(status, body, {}, type);
      for (const json of [false, true]) {
        const result = await inProcess(['status', '--url', url, ...(json ? ['--json'] : [])]);
        assert.equal(result.code, 5, body);
        assert.equal(
          line(result),
          `node-daemon: the server at ${url} (from --url) does not look like node-daemon: it answered GET /status with ${answer}; check --url`,
        );
        assert.equal(result.stdout, '');
      }
    }
    // The address from the daemon's settings: the hint says how to give another.
    send(404, 'Not Found', {}, 'text/plain');
    const settings = await inProcess(['tasks'], { NODE_DAEMON_PORT: new URL(url).port });
    assert.match(
      line(settings),
      /with HTTP 404 and text\/plain, not a node-daemon problem document; if the daemon listens elsewhere, give its address with --url or NODE_DAEMON_URL$/,
    );
  });

  it("names the command for the HTTP request a daemon's message names", async () => {
    send(
      409,
      problem(
        409,
        'already_subscribed',
        'node 3 is already subscribed to task 1; change its price with POST /nodes/task-update-subscription',
      ),
    );
    const again = await inProcess(['subscribe', '1', '--price', '1', '--url', url]);
    assert.equal(again.code, 4);
    assert.equal(
      line(again),
      'node-daemon: node 3 is already subscribed to task 1; change its price with `node-daemon update-subscription 1 --price P`',
    );
    const detail = 'stack 4 has not been try-settled; settle it first with POST /nodes/try-settle-stacks';
    const notClaimable = {
      results: [{ stack_small_id: 4, status: 'skipped', error: { code: 'not_settled', detail } }],
      not_claimable: [{ stack_small_id: 4, reason: 'not_settled', detail }],
    };
    send(409, problem(409, 'nothing_to_claim', 'none of the listed stacks can be claimed now', notClaimable));
    const claim = await inProcess(['claim', '4', '--url', url]);
    assert.equal(claim.code, 4);
    assert.match(
      claim.stdout,
      /\n +4 +not claimable \(not_settled\) +stack 4 has not been try-settled; settle it first with `node-daemon settle 4`\n$/,
    );
    // --json prints the daemon's words as they were sent.
    const json = await inProcess(['claim', '4', '--url', url, '--json']);
    assert.match(JSON.parse(json.stdout).not_claimable[0].detail, /with POST \/nodes\/try-settle-stacks$/);
  });

  it('prints earnings exactly in USDC, with the unpriced stacks when there are any', async () => {
    const big = '18446744073709551615';
    const body = `{"node_small_id":7,"epoch":12,"claimed":${big},"claimable":1500000,"settling":1,"disputed":0,"unsettled":9007199254740993,"attester_rewards":250000,"refunded_to_users":0,"stacks":{"open":2,"settling":1,"claimable":3,"claimed":40,"disputed":0},"unpriced":{"open":0,"settling":0,"claimable":1,"claimed":2,"disputed":0},"by_epoch":[{"epoch":11,"claimed":${big},"stacks_claimed":38}]}`;
    send(200, body);
    assert.equal(
      ok(await inProcess(['earnings', '7', '--url', url]), ['earnings']),
      [
        'node:  7',
        'epoch: 12',
        '',
        'STATE      STACKS  UNPRICED                   NODE FEES',
        'open            2         0      9007199254.740993 USDC  usage reported, not settled yet',
        'settling        1         0               0.000001 USDC  settled, in the dispute period',
        'claimable       3         1               1.500000 USDC  claim it with `node-daemon claim`',
        'claimed        40         2  18446744073709.551615 USDC  received',
        'disputed        0         0               0.000000 USDC  locked: the contract has no resolution',
        '',
        'unpriced: stacks whose price the daemon never saw, left out of the fees',
        '',
        'attester rewards:  0.250000 USDC',
        'refunded to users: 0.000000 USDC',
        '',
        'CLAIMED IN EPOCH  STACKS                   NODE FEES',
        '              11      38  18446744073709.551615 USDC',
        '',
      ].join('\n'),
    );
    assert.equal(ok(await inProcess(['earnings', '7', '--url', url, '--json']), ['earnings']), `${body}\n`);
  });

  it('prints a halted autopilot, its plan and its actions; a pass that acted says what it did', async () => {
    const digest = 'AVaaJg12Kj664HEBMPJZgBs237UPhMmdqvevATkbwKJ1';
    const action = (over: Record<string, unknown>) => ({
      id: 1,
      at: '2026-11-24T22:26:47.734Z',
      updated_at: '2026-11-24T22:26:48.000Z',
      action: 'claim',
      node_small_id: 4,
      stack_small_ids: [17],
      status: 'succeeded',
      reason: 'claimable since epoch 1',
      node_fee_amount: 5760,
      gas_estimate: 3476000,
      tx_digests: [digest],
      error: null,
      ...over,
    });
    const plan = [
      {
        action: 'claim',
        node_small_id: 4,
        stack_small_ids: [10, 11, 12, 13, 14, 15, 16],
        will: 'act',
        reason:
          '7 stacks (claimable since epoch 3, ...): node fees 1.2 USDC reach --autopilot-min-claim 1 USDC',
        node_fee_amount: 1200000,
        gas_estimate: 3476000,
      },
      {
        action: 'attest',
        node_small_id: 4,
        stack_small_ids: [3],
        will: 'skip',
        reason: 'the stack is in dispute: an attestation would abort',
        node_fee_amount: null,
        gas_estimate: null,
      },
    ];
    const status = {
      mode: 'on',
      state: 'halted',
      halted_reason: '3 contract aborts in a row, the last: EStackInDispute',
      policy: { settle_fill: 0.9, settle_idle_seconds: 5400, min_claim: 1000000, max_gas: 50000000 },
      gas_budget: {
        per_day: 8000000,
        spent: 5995760,
        remaining: 2004240,
        paused: true,
        needed: 3976000,
        frees_at: '2026-11-25T22:26:47.734Z',
      },
      epoch: 4,
      last_pass: {
        at: '2026-11-24T22:26:47.734Z',
        trigger: 'indexer',
        acted: true,
        actions: 2,
        duration_ms: 12.5,
      },
      next_pass_at: null,
      plan,
      recent_actions: [
        action({
          id: 3,
          action: 'attest',
          stack_small_ids: [3],
          status: 'failed',
          error: 'EStackInDispute (abort code 7 in db)',
          node_fee_amount: null,
        }),
        action({ id: 2, status: 'pending' }),
        action({
          id: 1,
          status: 'skipped',
          tx_digests: [],
          reason: 'node fees 0.1 USDC are below --autopilot-min-claim 1 USDC',
        }),
      ],
    };
    send(200, JSON.stringify(status));
    const text = ok(await inProcess(['autopilot', '--url', url]), ['autopilot']);
    assert.match(
      text,
      /^mode: +on: it settles, attests and claims by itself\nstate: +halted: 3 contract aborts in a row, the last: EStackInDispute; `node-daemon autopilot resume` lets it act again\nepoch: +4\nsettles: +a stack once its usage reaches 90\.0% of its units, or 1h 30m after its last usage\nclaims: +a batch once its node fees reach 1\.000000 USDC\ngas: +acts only when a transaction's estimated gas is at most 0\.050000000 SUI\ngas budget: +paused: 0\.002004240 SUI left of 0\.008000000 SUI a day \(--autopilot-max-gas-per-day\), the next action needs 0\.003976000 SUI; it frees up 2026-11-25T22:26:47Z .*\nlast pass: +2026-11-24T22:26:47Z \(.+ ago\), started by indexer; acted: 2 transactions \(12\.5 ms\)\nnext pass: +when the chain or the usage changes\n\n/,
    );
    assert.ok(
      text.endsWith(
        [
          'What it would do now:',
          'ACTION  NODE  STACKS                      WILL       NODE FEE              GAS  REASON',
          'claim      4  10, 11, 12, 13, 14 +2 more  act   1.200000 USDC  0.003476000 SUI  7 stacks (claimable since epoch 3, ...): node fees 1.2 USDC reach --autopilot-min-claim 1 USDC',
          'attest     4  3                           skip              -                -  the stack is in dispute: an attestation would abort',
          '',
          'Recent actions, newest first:',
          'TIME                  ACTION  STACKS  STATUS        NODE FEE  DETAIL',
          '2026-11-24T22:26:47Z  attest  3       failed               -  EStackInDispute (abort code 7 in db) (transaction AVaa…wKJ1)',
          '2026-11-24T22:26:47Z  claim   17      pending  0.005760 USDC  AVaa…wKJ1',
          '2026-11-24T22:26:47Z  claim   17      skipped  0.005760 USDC  node fees 0.1 USDC are below --autopilot-min-claim 1 USDC',
          '',
        ].join('\n'),
      ),
      text,
    );

    send(200, JSON.stringify({ mode: 'on', acted: true, plan: plan.slice(1), actions: [action({})] }));
    assert.equal(
      ok(await inProcess(['autopilot', 'run', '--url', url, '--token', 't']), ['autopilot run']),
      [
        'ran a pass: 1 action',
        '',
        'What it did:',
        'TIME                  ACTION  STACKS  STATUS          NODE FEE  DETAIL',
        '2026-11-24T22:26:47Z  claim   17      succeeded  0.005760 USDC  AVaa…wKJ1',
        '',
        'The plan:',
        'ACTION  NODE  STACKS  WILL  NODE FEE  GAS  REASON',
        'attest     4  3       skip         -    -  the stack is in dispute: an attestation would abort',
        '',
      ].join('\n'),
    );
    assert.equal(seen.at(-1)?.method, 'POST');
    assert.equal(seen.at(-1)?.url, '/autopilot/run');
    assert.equal(seen.at(-1)?.idempotencyKey, undefined);
  });

  it('prints each claimed stack with its amounts, a fee it cannot know, a failed stack, and the total', async () => {
    const body = {
      tx_digest: 'D1',
      tx_digests: ['D1', 'D2'],
      status: 'success',
      claimed: [
        {
          stack_small_id: 10,
          path: 'settlement_ticket',
          num_claimed_compute_units: 1000,
          node_fee_amount: 2000,
          user_refund_amount: 0,
        },
        {
          stack_small_id: 11,
          path: 'settlement_ticket',
          num_claimed_compute_units: 5,
          node_fee_amount: null,
          user_refund_amount: 18,
        },
      ],
      not_claimable: [
        {
          stack_small_id: 12,
          reason: 'dispute_period',
          detail: 'stack 12 is in its dispute period; it can be claimed from epoch 3 (now 2)',
          claimable_from_epoch: 3,
        },
      ],
      results: [
        {
          stack_small_id: 10,
          status: 'success',
          tx_digest: 'D1',
          path: 'settlement_ticket',
          num_claimed_compute_units: 1000,
          node_fee_amount: 2000,
          user_refund_amount: 0,
        },
        {
          stack_small_id: 11,
          status: 'success',
          tx_digest: 'D1',
          path: 'settlement_ticket',
          num_claimed_compute_units: 5,
          node_fee_amount: null,
          user_refund_amount: 18,
        },
        {
          stack_small_id: 12,
          status: 'skipped',
          error: {
            code: 'dispute_period',
            detail: 'stack 12 is in its dispute period; it can be claimed from epoch 3 (now 2)',
          },
        },
        {
          stack_small_id: 13,
          status: 'failed',
          tx_digest: 'D2',
          error: {
            code: 'transaction_failed',
            detail: 'claim_funds_for_stacks failed',
            abort: { name: 'EStackNotFound', code: 4, module: 'db' },
          },
        },
      ],
      total: { node_fee_amount: 2000, user_refund_amount: 18, unpriced_stacks: 1 },
      indexed: false,
    };
    send(200, JSON.stringify(body));
    assert.equal(
      ok(await inProcess(['claim', '10', '11', '12', '13', '--url', url, '--token', 't']), ['claim']),
      [
        'STACK  RESULT                          PATH    UNITS       NODE FEE         REFUND  CLAIMABLE FROM  DETAIL',
        '   10  claimed                         ticket   1000  0.002000 USDC  0.000000 USDC',
        '   11  claimed                         ticket      5        unknown  0.000018 USDC',
        '   12  not claimable (dispute_period)                                               epoch 3         stack 12 is in its dispute period; it can be claimed from epoch 3 (now 2)',
        '   13  failed (transaction_failed)                                                                  EStackNotFound (abort code 4 in db)',
        'total:        2 stacks claimed: node fees 0.002000 USDC, refunds 0.000018 USDC; 1 stack of unknown price left out of the fees',
        'transactions: D1, D2',
        'indexed:      not yet: reads may not show it for a few seconds',
        '',
      ].join('\n'),
    );
  });

  it('classes failures: a 422 names the abort, a 5xx or a silence is exit 5, a write names its key', async () => {
    send(
      422,
      problem(422, 'transaction_failed', 'claim failed', {
        tx_digest: 'D1g3st',
        abort: { name: 'ENotEnough', code: 7, module: 'db' },
      }),
    );
    const aborted = await inProcess(['claim', '1', '--url', url]);
    assert.equal(aborted.code, 4);
    assert.equal(
      aborted.stderr,
      'claiming 1 stack…\nnode-daemon: claim failed (abort ENotEnough, code 7 in db); transaction D1g3st\n',
    );

    send(503, problem(503, 'chain_unavailable', 'the chain is out of reach', { request_id: 'req-9' }), {
      'retry-after': '3',
    });
    const failing = await inProcess(['register', '--another', '--url', url]);
    assert.equal(failing.code, 5);
    assert.equal(
      line(failing),
      `node-daemon: the daemon at ${url} could not do it: the chain is out of reach (HTTP 503, chain_unavailable, request req-9); retry in 3 s`,
    );

    send(200, '<html>not the daemon</html>', {}, 'text/html');
    const stranger = await inProcess(['tasks', '--url', url]);
    assert.equal(stranger.code, 5);
    assert.equal(
      line(stranger),
      `node-daemon: the server at ${url} (from --url) does not look like node-daemon: it answered GET /tasks with HTTP 200 and text/html, not JSON; check --url`,
    );

    answer = () => {}; // never answers
    const slow = await inProcess([
      'register',
      '--another',
      '--url',
      url,
      '--timeout',
      '0.3',
      '--idempotency-key',
      'k-1',
    ]);
    assert.equal(slow.code, 5);
    assert.match(
      line(slow),
      /did not answer within 0\.3 s .*repeat the command with --idempotency-key k-1 to get its result without a second transaction$/,
    );
  });
});

describe('client help', () => {
  it('lists every command with examples, and each command has complete help', async () => {
    const overview = clientHelp();
    for (const command of CLIENT_COMMANDS) assert.match(overview, new RegExp(`\\n {2}${command}\\b`));
    assert.match(overview, /Examples:\n {2}node-daemon /);
    assert.match(overview, /Exit codes: 0 ok; 1 unexpected failure; 2 usage/);
    for (const command of [
      ...CLIENT_COMMANDS.filter((c) => c !== 'dev' && c !== 'token' && c !== 'webhooks'),
      'webhooks add',
      'webhooks list',
      'webhooks show',
      'webhooks remove',
      'webhooks deliveries',
      'webhooks test',
      'webhooks enable',
      'webhooks retry',
      'token create',
      'token list',
      'token revoke',
      'dev task create',
      'dev stack buy',
      'dev epoch',
      'autopilot run',
      'autopilot resume',
    ]) {
      const help = await inProcess([...command.split(' '), '--help']);
      assert.equal(help.code, 0, command);
      assert.match(help.stdout, new RegExp(`^Usage: node-daemon ${command}`));
      assert.match(help.stdout, /\nExamples:\n {2}node-daemon /);
      assert.match(help.stdout, /\n {2}--json +print the daemon's JSON answer/);
    }
    const dev = await inProcess(['dev', '-h']);
    assert.match(dev.stdout, /^Usage: node-daemon dev COMMAND/);
    for (const sub of [
      'task create',
      'task deprecate',
      'task remove',
      'node create',
      'stack buy',
      'stack settle',
      'stack attest',
      'dispute',
      'epoch',
    ]) {
      assert.match(dev.stdout, new RegExp(`\\n {2}dev ${sub}`));
    }
  });
});
