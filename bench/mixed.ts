// The mixed workload: reads while the node works. The daemon runs as an operator runs it on --network sui
// (its own process, pinned to CPU 0), against the fullnode TEST DOUBLE of the test suite
// (test/sui/fullnode-double.ts, in this process: the outside boundary, not our code), so that its indexer
// follows a live event stream exactly as it follows a fullnode. On CPU 1: wrk, the double, and the client
// that reports usage.
//
// What runs at once, per row:
//   - 50 connections read GET /stacks/nodes/{own node} (1,000 stacks) and GET /tasks, in turn (wrk);
//   - usage reports (POST /stacks/{id}/usage) for the node's own stacks at 0, 100 or 500 per second;
//   - users buy stacks from peer nodes at 1,000 per second on the chain, which the indexer applies live.
// The "no writes" rows have neither the reports nor the stream. There is one before and one after every
// row with writes, and that row's throughput is given as a ratio to the mean of the two around it: this
// VM's speed drifts by up to 2x within a minute, so the base is measured next to what it is compared with.
// Then the first rate's reports under the same reads without the stream (the write target: a report's
// latency while 50 connections read). Two last rows have no reads: the reports alone (the client's floor),
// and the stream alone (the daemon's CPU over the events it applied: what a live event costs).
//
//   node bench/mixed.ts [--quick] [--postgres] [--database-url URL] [--rates 0,100,500] [--profile DIR]
//                       [--daemon-flag FLAG ...] [--daemon-output FILE] [--rows-only] [--wire] [--pin-postgres]
// --rows-only skips the interleaved ratio (for comparing latencies, which only the rows give).
// --wire also measures the reports on the wire, with tcpdump on the loopback interface (bench/wire.ts): the
// daemon's latency without the reporter's own delays on the load generator's core.
// BENCH_TRACE=1 logs each row's steps and its slow reads by the daemon's own clocks (slowShares).
// --pin-postgres pins the local PostgreSQL server's processes to the load generator's core for the run (and
// puts them back after): the server's share of the daemon's core, for digging; the daemon's numbers are
// measured with the server unpinned.
// --daemon-flag passes a flag to the daemon's node (e.g. --trace-gc-nvp, --inspect=127.0.0.1:9229), and
// --daemon-output keeps all the daemon's stdout and stderr in FILE: for finding where time goes, not for numbers.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { decodeSuiPrivateKey } from '@mysten/sui/cryptography';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { toBase64 } from '@mysten/sui/utils';
import DAEMON_NODE_FLAGS from '../bin/daemon-node-flags.json' with { type: 'json' };
import { CHECKPOINT_THREAD } from '../src/store/sqlite-checkpointer.ts';
import { FullnodeDouble } from '../test/sui/fullnode-double.ts';
import { benchArgs, usageError } from './args.ts';
import {
  countUserAsOurs,
  databaseTicks,
  procTicks,
  snapshot,
  type ThreadTimes,
  TICKS_PER_SECOND,
  threadTimes,
} from './cpu.ts';
import { call, json } from './daemon-http.ts';
import { LOAD_CPU, type LoadResult, runOnce } from './load.ts';
import { DEFAULT_SERVER_URL, pinPostgres, ThrowawayDatabases } from './postgres.ts';
import { percentile, type Target } from './report.ts';
import { freePort, SERVER_CPU } from './servers.ts';
import { REPORTER_ADDRESS, WireCapture, type WireReport, wireLatency } from './wire.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HELP = `Usage: npm run bench:mixed -- [--quick] [--postgres [--database-url URL]] [--rates 0,100,500] [--wire]
                            [--rows-only] [--pin-postgres] [--profile DIR] [--daemon-flag FLAG ...]
                            [--daemon-output FILE]

  --quick          smoke run: 4 s rows, 3 pairs of 2 s segments, 2,000 background stacks
  --postgres       the same workload on PostgreSQL (a throwaway database on the server)
  --database-url URL  the PostgreSQL server to work from; default ${DEFAULT_SERVER_URL}
  --rates R,R      usage reports per second for the rows with writes (default 0,100,500)
  --wire           also measure the reports on the wire, with tcpdump on the loopback interface
  --rows-only      skip the interleaved ratio (for comparing latencies, which only the rows give)
  --pin-postgres   pin the local PostgreSQL server's processes to the load generator's core for the run
  --profile DIR    run the daemon under node --cpu-prof and write its profiles to DIR (V8's sampler counts
                   less than half of the loop's time in rows without reads: PERFORMANCE.md)
  --daemon-flag F  pass a flag to the daemon's node (repeatable)
  --daemon-output FILE  keep all the daemon's stdout and stderr in FILE`;
const flags = benchArgs('bench:mixed', HELP, {
  quick: { type: 'boolean', default: false },
  postgres: { type: 'boolean', default: false },
  'database-url': { type: 'string' },
  rates: { type: 'string' },
  profile: { type: 'string' },
  'rows-only': { type: 'boolean', default: false },
  wire: { type: 'boolean', default: false },
  'pin-postgres': { type: 'boolean', default: false },
  'daemon-flag': { type: 'string', multiple: true },
  'daemon-output': { type: 'string' },
});
const quick = flags.quick === true;
const wire = flags.wire === true;
const SECONDS = quick ? 4 : 10;
const WARMUP_SECONDS = 2;
const OWN_STACKS = 1000;
/** Stacks of peer nodes bought before the measurement, so that the store is not only ours. */
const BACKGROUND_STACKS = quick ? 2000 : 20_000;
const STREAM_PER_SECOND = 1000;
/**
 * The interleaved ratio (see interleaved below): pairs of segments with the writes off and on, each
 * counted for SEGMENT_SECONDS after SETTLE_SECONDS (the indexer reads once a second: what the stream
 * released just before is applied in the next second).
 */
const PAIRS = quick ? 3 : 5;
const SEGMENT_SECONDS = quick ? 2 : 3;
const SETTLE_SECONDS = 1.5;
/**
 * The hypervisor's steal (/proc/stat, both cores) above which a row or segment measured a slower VM, not
 * the daemon: a tenth of a core. This VM's "drift" was steal: rows at half speed had 50 to 80 % of a core
 * stolen, their neighbours 0 to 9 %. Such a row is measured again, at most STEAL_RETRIES times, and is
 * marked when it stays disturbed; a disturbed segment is left out of the interleaved ratio.
 */
const STEAL_LIMIT = 0.1;
const STEAL_RETRIES = 2;
/** Repeats of rows with the stream, in all: the stream's stacks are bought for them beforehand. */
const STREAM_RETRIES = 3;
const REPORT_RATES = flags.rates ? flags.rates.split(',').map(Number) : [0, 100, 500];
if (REPORT_RATES.some((r) => !Number.isInteger(r) || r < 0 || r > 10_000)) {
  usageError(
    'bench:mixed',
    `--rates takes integers from 0 to 10000, separated by commas; got ${flags.rates}`,
  );
}
if (!flags.postgres && (flags['database-url'] !== undefined || flags['pin-postgres'])) {
  usageError('bench:mixed', '--database-url and --pin-postgres go with --postgres');
}
const log = (line: string) => process.stderr.write(`${line}\n`);

async function until(what: string, check: () => Promise<boolean>, seconds = 300): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(0.1);
  }
}

/** The sum of a counter's samples in /metrics text, per label value of `label`. */
function counterBy(metrics: string, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^${name}\\{([^}]*)\\} ([0-9.e+]+)$`, 'gm');
  for (const m of metrics.matchAll(re)) {
    const value = new RegExp(`${label}="([^"]*)"`).exec(m[1]!)?.[1] ?? '';
    out.set(value, (out.get(value) ?? 0) + Number(m[2]));
  }
  return out;
}

/**
 * A histogram's samples between two /metrics texts, summed over the series of `metric` whose labels include
 * `label` (e.g. route="/stacks/:stack_small_id/usage"): the count at or under each bucket bound (`le`), and
 * the total.
 */
function histogramDelta(
  after: string,
  before: string,
  metric: string,
  label: string,
): { within: (le: string) => number; total: number } {
  const buckets = (text: string) => {
    const out = new Map<string, number>();
    for (const m of text.matchAll(new RegExp(`^${metric}_bucket\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
      if (!m[1]!.includes(label)) continue;
      const le = /le="([^"]*)"/.exec(m[1]!)?.[1] ?? '';
      out.set(le, (out.get(le) ?? 0) + Number(m[2]));
    }
    return out;
  };
  const a = buckets(after);
  const b = buckets(before);
  const within = (le: string) => (a.get(le) ?? 0) - (b.get(le) ?? 0);
  return { within, total: within('+Inf') };
}

/**
 * The daemon's own view of the usage reports between two /metrics texts: the share answered within 1 ms
 * and within 5 ms (node_daemon_http_request_duration_seconds, route /stacks/:stack_small_id/usage).
 */
function usageBuckets(after: string, before: string): { within1ms: number; within5ms: number } {
  const { within, total } = histogramDelta(
    after,
    before,
    'node_daemon_http_request_duration_seconds',
    'route="/stacks/:stack_small_id/usage"',
  );
  return total === 0
    ? { within1ms: Number.NaN, within5ms: Number.NaN }
    : { within1ms: within('0.001') / total, within5ms: within('0.005') / total };
}

/**
 * Where the slow reads' time went, by the daemon's own clocks between two /metrics texts: for the stacks
 * route as the daemon timed it and for the store calls a read makes (topicVersions, the one round trip a
 * loop turn's reads share on PostgreSQL; listStacksJson, a list read or reloaded) and a report's, the
 * calls' number and the share of them over 5, 10 and 25 ms. For digging (BENCH_TRACE); the histograms'
 * buckets are coarse.
 */
function slowShares(after: string, before: string): string {
  const series: [string, string, string][] = [
    ['stacks route', 'node_daemon_http_request_duration_seconds', 'route="/stacks/nodes/:node_id"'],
    ...['topicVersions', 'listStacksJson', 'addStackUsage'].map((query): [string, string, string] => [
      query,
      'node_daemon_store_query_duration_seconds',
      `query="${query}"`,
    ]),
  ];
  return series
    .map(([name, metric, label]) => {
      const { within, total } = histogramDelta(after, before, metric, label);
      const over = (le: string) =>
        total === 0 ? '-' : `${(((total - within(le)) / total) * 100).toFixed(2)} %`;
      return `${name} ${total}: over 5 ms ${over('0.005')}, 10 ms ${over('0.01')}, 25 ms ${over('0.025')}`;
    })
    .join('; ');
}

/**
 * The daemon's young-generation collections between two /metrics texts (node_daemon_nodejs_gc_duration_seconds,
 * kind "minor"): their number, and the event loop's time stopped in them per second and per collection.
 */
function youngGc(
  after: string,
  before: string,
  seconds: number,
): { count: number; msPerSecond: number; meanMs: number } {
  const read = (text: string, part: 'sum' | 'count') =>
    Number(
      new RegExp(`^node_daemon_nodejs_gc_duration_seconds_${part}\\{kind="minor"\\} (\\S+)$`, 'm').exec(
        text,
      )?.[1] ?? 0,
    );
  const count = read(after, 'count') - read(before, 'count');
  const ms = (read(after, 'sum') - read(before, 'sum')) * 1000;
  return { count, msPerSecond: ms / seconds, meanMs: count === 0 ? Number.NaN : ms / count };
}

function sleep(seconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}

/** The daemon's threads between two readings, in ms per second of wallMs (Row.threads). */
function threadShares(before: ThreadTimes, after: ThreadTimes, wallMs: number): Row['threads'] {
  const shares = { mainRun: 0, mainWait: 0, checkpoint: 0, others: 0, busiest: '' };
  const perSecond = (ns: number) => ns / 1e6 / (wallMs / 1000);
  const others: [string, number][] = [];
  for (const [name, t] of after) {
    const b = before.get(name) ?? { runNs: 0, waitNs: 0 };
    const run = perSecond(t.runNs - b.runNs);
    if (name === 'MainThread') {
      shares.mainRun = run;
      shares.mainWait = perSecond(t.waitNs - b.waitNs);
    } else if (name === CHECKPOINT_THREAD) shares.checkpoint = run;
    else {
      shares.others += run;
      others.push([name, run]);
    }
  }
  shares.busiest = others
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([name, ms]) => `${name} ${ms.toFixed(0)}`)
    .join(', ');
  return shares;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The mean reads/s of some rows. */
function mean(rows: Row[]): number {
  return rows.reduce((sum, row) => sum + row.reads.requestsPerSecond, 0) / rows.length;
}

interface Row {
  label: string;
  reportsPerSecond: number | null;
  stream: boolean;
  reads: LoadResult;
  ratio?: number;
  /** The ratios of the interleaved segments (interleaved in main), for the rows with writes. */
  interleaved?: number[];
  reports: {
    sent: number;
    p50ms: number;
    p99ms: number;
    failed: number;
    /**
     * The reporter's thread CPU per report sent, in µs (its whole run, a little longer than the row's
     * measured seconds): of the bench's share of the load generator's core, the part that is the reporter.
     */
    reporterCpuUs: number;
    /** Share of the reports the daemon answered within 1 ms and 5 ms, by its own request histogram. */
    servedWithin1ms: number;
    servedWithin5ms: number;
    /** When the reporter ran (s since the epoch), for the reports on the wire (--wire). */
    from: number;
    to: number;
  };
  streamApplied: number;
  cacheHitRate: number;
  /** The daemon's scavenges over the measured seconds: ms of pause per second, and per scavenge. */
  youngGc: { count: number; msPerSecond: number; meanMs: number };
  /** The daemon's CPU time over the measured seconds, in cores (1.0: its core was never idle). */
  daemonCpu: number;
  /** The same for wrk, and for this process (the fullnode double and the reporter), both on CPU 1. */
  wrkCpu: number;
  benchCpu: number;
  /** The PostgreSQL server's processes, in cores (NaN on SQLite). */
  databaseCpu: number;
  /**
   * Time the hypervisor ran something else on the VM's cores (/proc/stat steal, both cores), in cores (NaN
   * off Linux). A row with steal measured a slower machine than its neighbours, not the daemon.
   */
  steal: number;
  /** Still above STEAL_LIMIT after STEAL_RETRIES repeats: its numbers are the VM's, not the daemon's. */
  disturbed?: boolean;
  /** No interleaved ratio was clean of steal: the median is of them all. */
  interleavedDisturbed?: boolean;
  /**
   * The daemon's threads over the measured seconds, in ms per second: the event loop's time on the core
   * and waiting for it, the WAL checkpoint worker's time, and the rest (V8's compiler and GC helpers,
   * libuv's pool) together.
   */
  threads: { mainRun: number; mainWait: number; checkpoint: number; others: number; busiest: string };
}

/**
 * The workload's targets, judged from the rows measured: at 100 reports/s the reads' ratio (the row's and,
 * when measured, the interleaved median) at least 0.8 and their p99 at most 15 ms; at 500 reports/s the
 * ratio at least 0.6; on SQLite, a report's p50 at most 1 ms and p99 at most 5 ms while 50 connections read
 * (the "reports/s, no stream" row), on the wire when it was captured, else as the reporter saw it. A rate
 * not measured in this run is not judged.
 */
function mixedTargets(rows: readonly Row[], engine: string, onWire: WireReport[] | undefined): Target[] {
  const targets: Target[] = [];
  const ratioTargets = (rate: number, goal: number) => {
    const row = rows.find((r) => r.reportsPerSecond === rate && r.stream && r.ratio !== undefined);
    if (row === undefined) return row;
    const disturbed = row.disturbed === true;
    targets.push({
      name: `${row.label}: reads' ratio to no writes (row)`,
      goal: `>= ${goal}`,
      value: row.ratio!.toFixed(3),
      pass: row.ratio! >= goal,
      disturbed,
    });
    if (row.interleaved) {
      const m = median(row.interleaved);
      targets.push({
        name: `${row.label}: reads' ratio to no writes (interleaved median)`,
        goal: `>= ${goal}`,
        value: `${m.toFixed(3)} (${row.interleaved.map((r) => r.toFixed(2)).join(', ')})`,
        pass: m >= goal,
        disturbed: row.interleavedDisturbed === true,
      });
    }
    return row;
  };
  const at100 = ratioTargets(100, 0.8);
  if (at100) {
    targets.push({
      name: `${at100.label}: read p99`,
      goal: '<= 15 ms',
      value: `${at100.reads.p99ms.toFixed(2)} ms`,
      pass: at100.reads.p99ms <= 15,
      disturbed: at100.disturbed === true,
    });
  }
  ratioTargets(500, 0.6);
  const reports = rows.find((r) => r.reportsPerSecond && !r.stream && r.label.endsWith('no stream'));
  if (engine === 'SQLite' && reports) {
    const seen = onWire ? wireLatency(onWire, reports.reports.from, reports.reports.to) : reports.reports;
    const where = onWire ? 'on the wire' : "the reporter's clock";
    targets.push({
      name: `${reports.label}: report p50 / p99 (${where})`,
      goal: '<= 1 / 5 ms',
      value: `${seen.p50ms.toFixed(2)} / ${seen.p99ms.toFixed(2)} ms`,
      pass: seen.p50ms <= 1 && seen.p99ms <= 5,
      disturbed: reports.disturbed === true,
    });
  }
  return targets;
}

function printTargets(rows: readonly Row[], engine: string, onWire: WireReport[] | undefined): void {
  const targets = mixedTargets(rows, engine, onWire);
  if (targets.length === 0) return;
  console.log(`\nTargets on ${engine} (issue 13)\n`);
  console.log('| Target | Goal | Measured | Result |');
  console.log('| --- | --- | --- | --- |');
  for (const t of targets) {
    const result = `${t.pass ? 'PASS' : 'MISS'}${t.disturbed ? ' (disturbed: steal)' : ''}`;
    console.log(`| ${t.name} | ${t.goal} | ${t.value} | ${result} |`);
  }
  if (quick) console.log('\n(--quick: rows of 4 s; the full run is the one to judge by.)');
}

async function main(): Promise<void> {
  // This process (the fullnode double, the reporter) is outside the daemon, like wrk: it runs on the load
  // generator's core, every thread of it, so that the daemon's core is the daemon's alone.
  const pinned = spawnSync('taskset', ['-a', '-p', '-c', LOAD_CPU, String(process.pid)], {
    encoding: 'utf8',
  });
  if (pinned.status !== 0) log(`could not pin the bench to CPU ${LOAD_CPU}: ${pinned.stderr.trim()}`);
  const dir = mkdtempSync(join(tmpdir(), 'node-daemon-bench-mixed-'));
  const dbs = new ThrowawayDatabases(flags['database-url'] ?? DEFAULT_SERVER_URL);
  const children: ReturnType<typeof spawn>[] = [];
  let double: FullnodeDouble | undefined;
  let unpin: (() => void) | undefined;
  try {
    if (flags['pin-postgres']) {
      unpin = pinPostgres(LOAD_CPU);
      log(`PostgreSQL's processes pinned to CPU ${LOAD_CPU} for this run`);
    }
    // The operator's key, as a Sui CLI keystore.
    const kp = Ed25519Keypair.generate();
    const keystore = join(dir, 'sui.keystore');
    const secret = decodeSuiPrivateKey(kp.getSecretKey()).secretKey;
    writeFileSync(keystore, JSON.stringify([toBase64(new Uint8Array([0, ...secret]))]));
    double = await FullnodeDouble.start({
      dataDir: join(dir, 'chain'),
      signerAddress: kp.toSuiAddress(),
      coins: [1000n * 1_000_000_000n],
    });
    const dev = double.dev;
    const task = (
      await dev.createTask({
        role: 0,
        model_name: 'bench/own',
        security_level: 0,
        minimum_reputation_score: null,
        is_public: true,
      })
    ).task_small_id!;
    const peerTask = (
      await dev.createTask({
        role: 0,
        model_name: 'bench/peers',
        security_level: 0,
        minimum_reputation_score: null,
        is_public: true,
      })
    ).task_small_id!;
    const peers: bigint[] = [];
    for (let i = 0; i < 20; i++) {
      const peer = await dev.createPeerNode({
        subscriptions: [{ task_small_id: peerTask, price_per_one_million_compute_units: 1000 }],
      });
      peers.push(BigInt(peer.node_small_id!));
    }

    const engine = flags.postgres
      ? `PostgreSQL${unpin ? ` (its processes pinned to CPU ${LOAD_CPU}, the load generator's)` : ''}`
      : 'SQLite';
    // The server's processes, whose CPU each row reports beside the daemon's.
    if (flags.postgres && !countUserAsOurs('postgres')) log('no OS user postgres: its CPU is not counted');
    const database = flags.postgres ? await dbs.create() : undefined;
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const args = [
      '-c',
      SERVER_CPU,
      join(ROOT, 'node_modules/.bin/node'),
      ...DAEMON_NODE_FLAGS,
      // --profile DIR: the daemon writes a V8 CPU profile there when it stops (slower; not for numbers).
      ...(flags.profile ? ['--cpu-prof', '--cpu-prof-dir', flags.profile] : []),
      ...(flags['daemon-flag'] ?? []),
      join(ROOT, 'src/main.ts'),
      'start',
      '--network',
      'sui',
      '--sui-url',
      double.url,
      '--sui-package-id',
      double.packageId,
      '--sui-atoma-db-id',
      double.atomaDbId,
      '--sui-keystore',
      keystore,
      '--data-dir',
      join(dir, 'data'),
      '--port',
      String(port),
      '--log-level',
      'warn',
      ...(database ? ['--database-url', database.url] : []),
    ];
    const kept = flags['daemon-output'] ? createWriteStream(flags['daemon-output']) : undefined;
    const daemon = spawn('taskset', args, { stdio: ['ignore', kept ? 'pipe' : 'ignore', 'pipe'] });
    const spawned = performance.now();
    children.push(daemon);
    daemon.stdout?.on('data', (d) => kept?.write(d));
    let stderr = '';
    daemon.stderr!.on('data', (d) => {
      kept?.write(d);
      stderr = (stderr + String(d)).slice(-4000);
    });
    daemon.on('exit', (code) => {
      if (code !== 0 && code !== null) log(`the daemon exited with ${code}:\n${stderr}`);
    });
    await until('the daemon answers /health', async () => {
      try {
        return (await call(origin, 'GET', '/health')).status === 200;
      } catch {
        return false;
      }
    });
    const token = readFileSync(join(dir, 'data', 'api-token'), 'utf8').trim();
    const registered = await json<{ node_small_id: number }>(origin, 'POST', '/nodes/register', token, {});
    const node = registered.node_small_id;
    await json(origin, 'POST', '/nodes/task-subscribe', token, {
      task_small_id: Number(task),
      price_per_one_million_compute_units: 1_000_000,
    });
    log(
      `${engine}: node ${node}; buying ${OWN_STACKS} stacks from it and ${BACKGROUND_STACKS} from 20 peers`,
    );
    const own: number[] = [];
    for (let i = 0; i < OWN_STACKS; i++) {
      const bought = await dev.buyStack({
        task_small_id: task,
        num_compute_units: 1_000_000,
        price_per_one_million_compute_units: 1_000_000,
        selected_node_id: node,
      });
      if (bought.submission.status !== 'success') {
        throw new Error(`buying a stack from node ${node} failed: ${JSON.stringify(bought.submission)}`);
      }
      own.push(Number(bought.stack_small_id));
    }
    let peerIndex = 0;
    const buyFromPeer = () =>
      dev.buyStack({
        task_small_id: peerTask,
        num_compute_units: 1_000_000,
        price_per_one_million_compute_units: 1000,
        selected_node_id: peers[peerIndex++ % peers.length]!,
      });
    for (let i = 0; i < BACKGROUND_STACKS; i++) await buyFromPeer();
    // The live stream's transactions, executed now and held back until a row lets them through.
    const rowSeconds = WARMUP_SECONDS + SECONDS + 5;
    const streamStacks =
      (REPORT_RATES.length *
        // A row, and the on-segments of its interleaved ratio (plus time to read /metrics), with margins;
        (rowSeconds + PAIRS * (SETTLE_SECONDS + SEGMENT_SECONDS) + 5) +
        // the warm-up pass before the rows, and the stream's row without reads.
        rowSeconds * (REPORT_RATES.includes(0) ? 2 : 1) +
        // and the rows measured again for steal.
        rowSeconds * STREAM_RETRIES) *
      STREAM_PER_SECOND;
    await double.holdEvents();
    log(`buying the stream's ${streamStacks} stacks (held until released at ${STREAM_PER_SECOND}/s)`);
    for (let i = 0; i < streamStacks; i++) await buyFromPeer();
    await double.encodeHeld();
    const ownPath = `/stacks/nodes/${node}`;
    await until(`the daemon has indexed node ${node}'s ${OWN_STACKS} stacks`, async () => {
      const stacks = await json<unknown[]>(origin, 'GET', ownPath);
      log(
        `  ${stacks.length} stacks; ${JSON.stringify((await json<{ indexer: unknown }>(origin, 'GET', '/status')).indexer)}`,
      );
      return stacks.length === OWN_STACKS;
    });
    // From /metrics: /status asks the fullnode for balances and badges, which a count does not need.
    const indexedEvents = async () =>
      counterBy(
        (await call(origin, 'GET', '/metrics', token)).text,
        'node_daemon_indexer_events_total',
        'outcome',
      ).get('applied') ?? 0;
    const caughtUp = () =>
      until('the indexer has caught up', async () => {
        const a = await indexedEvents();
        await sleep(1.5);
        return (await indexedEvents()) === a;
      });
    await caughtUp();
    /** The usage reporter (mixed-reporter.ts) in its own thread, at `rate` a second, started or paused. */
    const startReporter = (rate: number, paused = false) => {
      const worker = new Worker(new URL('./mixed-reporter.ts', import.meta.url), {
        workerData: { origin, token, rate, stacks: own, paused, from: wire ? REPORTER_ADDRESS : undefined },
      });
      const done = once(worker, 'message') as Promise<
        [{ sent: number; failed: number; latencies: number[]; cpuUs: number }]
      >;
      return { worker, done };
    };
    /**
     * Releases the stream's held transactions at the stream's rate while `on()` says so, until `running()`
     * says no more, so that the indexer meets them as a live chain's.
     */
    const releaseStream = async (on: () => boolean, running: () => boolean) => {
      let activeMs = 0;
      let released = 0;
      let last = performance.now();
      while (running()) {
        const now = performance.now();
        if (on()) activeMs += now - last;
        last = now;
        const due = Math.floor((activeMs / 1000) * STREAM_PER_SECOND);
        if (due > released) {
          if (double!.heldEvents < due - released) throw new Error('the stream ran out of held events');
          await double!.releaseEvents(due - released);
          released = due;
        }
        await sleep(0.01);
      }
    };

    const metrics = async () => (await call(origin, 'GET', '/metrics', token)).text;
    const lookups = async () => counterBy(await metrics(), 'node_daemon_http_cache_lookups_total', 'outcome');
    const ctx = { tool: 'wrk' as const, root: ROOT, tmp: dir, warmupSeconds: 0 };
    const readSpec = (seconds: number) => ({
      origin,
      paths: [ownPath, '/tasks'],
      seconds,
      connections: 50,
    });

    /** Runs one row: reads with wrk while the reports and the stream (if any) run; stops them after. */
    async function measure(
      label: string,
      reportsPerSecond: number | null,
      stream: boolean,
      reading = true,
    ): Promise<Row> {
      let running = true;
      const reporterFrom = Date.now() / 1000;
      const reporter = reportsPerSecond ? startReporter(reportsPerSecond) : undefined;
      // The stream's transactions were executed beforehand and are held by the double.
      const background = stream
        ? releaseStream(
            () => true,
            () => running,
          )
        : undefined;
      const t0 = performance.now();
      const trace = (what: string) => {
        if (process.env.BENCH_TRACE) {
          log(
            `    ${((performance.now() - t0) / 1000).toFixed(1)} s ${what} (daemon's ${Math.round(performance.now() - spawned)} ms)`,
          );
        }
      };
      if (reading) await runOnce(ctx, readSpec(WARMUP_SECONDS));
      else await sleep(WARMUP_SECONDS);
      trace('warmed up');
      const usageBefore = await metrics();
      const before = await lookups();
      const appliedBefore = await indexedEvents();
      trace('counted');
      const [cpuBefore] = procTicks(daemon.pid!);
      const threadsBefore = threadTimes(daemon.pid!);
      const [benchBefore, wrkBefore] = procTicks('self');
      const databaseBefore = databaseTicks();
      const machineBefore = snapshot();
      const wallBefore = performance.now();
      const measuredFrom = process.hrtime.bigint();
      // Without reads, the row shows what a report costs the client when nothing waits ahead of it.
      const reads = reading
        ? await runOnce(ctx, readSpec(SECONDS))
        : await new Promise<LoadResult>((resolve) =>
            setTimeout(
              () =>
                resolve({
                  tool: 'wrk',
                  requests: 0,
                  requestsPerSecond: Number.NaN,
                  p50ms: Number.NaN,
                  p99ms: Number.NaN,
                  bytesPerSecond: 0,
                  non2xx: 0,
                  socketErrors: 0,
                  timeouts: 0,
                  command: '(no reads)',
                }),
              SECONDS * 1000,
            ),
          );
      const cores = (ticks: number) => ticks / TICKS_PER_SECOND / ((performance.now() - wallBefore) / 1000);
      const daemonCpu = cores(procTicks(daemon.pid!)[0] - cpuBefore);
      const threads = threadShares(threadsBefore, threadTimes(daemon.pid!), performance.now() - wallBefore);
      // For the stall probes (bench/probes/stall-log.ts): the measured window, on the stall log's clock.
      if (process.env.BENCH_STALL_LOG) {
        appendFileSync(
          process.env.BENCH_STALL_LOG,
          `# ${measuredFrom / 1000n} ${process.hrtime.bigint() / 1000n} ${label}\n`,
        );
      }
      const [benchAfter, wrkAfter] = procTicks('self');
      const databaseAfter = databaseTicks();
      const machineAfter = snapshot();
      trace('measured');
      const appliedAfter = await indexedEvents();
      const after = await lookups();
      const histogramAfter = await metrics();
      trace('counted again');
      trace(`slow shares: ${slowShares(histogramAfter, usageBefore)}`);
      running = false;
      reporter?.worker.postMessage('stop');
      const [{ sent, failed, latencies, cpuUs }] = reporter
        ? await reporter.done
        : [{ sent: 0, failed: 0, latencies: [], cpuUs: 0 }];
      await reporter?.worker.terminate();
      const reporterTo = Date.now() / 1000;
      await background;
      const served = usageBuckets(histogramAfter, usageBefore);
      const gc = youngGc(histogramAfter, usageBefore, SECONDS);
      const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
      const total = [...after.keys()].reduce((sum, k) => sum + delta(k), 0);
      latencies.sort((a, b) => a - b);
      // The reports the daemon answered a second: the reporter's rate over its whole run, warm-up included.
      const reportRate = sent / (reporterTo - reporterFrom);
      const row: Row = {
        label,
        reportsPerSecond,
        stream,
        reads,
        reports: {
          sent,
          p50ms: percentile(latencies, 50),
          p99ms: percentile(latencies, 99),
          failed,
          reporterCpuUs: sent === 0 ? Number.NaN : cpuUs / sent,
          servedWithin1ms: served.within1ms,
          servedWithin5ms: served.within5ms,
          from: reporterFrom,
          to: reporterTo,
        },
        streamApplied: (appliedAfter - appliedBefore) / SECONDS,
        cacheHitRate: total === 0 ? Number.NaN : delta('hit') / total,
        youngGc: gc,
        daemonCpu,
        wrkCpu: cores(wrkAfter - wrkBefore),
        benchCpu: cores(benchAfter - benchBefore),
        databaseCpu: flags.postgres ? cores(databaseAfter - databaseBefore) : Number.NaN,
        steal:
          machineBefore && machineAfter
            ? cores(machineAfter.stealTicks - machineBefore.stealTicks)
            : Number.NaN,
        threads,
      };
      log(
        `  ${label}: ${Math.round(reads.requestsPerSecond)} req/s, p99 ${reads.p99ms.toFixed(2)} ms; ` +
          `reports p50 ${row.reports.p50ms.toFixed(2)} / p99 ${row.reports.p99ms.toFixed(2)} ms; ` +
          `indexer ${Math.round(row.streamApplied)} ev/s` +
          (stream && !reading && !reportsPerSecond
            ? ` (${Math.round((daemonCpu * 1e6) / row.streamApplied)} µs of daemon CPU an event)`
            : '') +
          // What a report costs the daemon's core, counted by the kernel: a V8 profile of this row counts
          // less than half of it (PERFORMANCE.md, thirty-first pass).
          (!stream && !reading && sent > 0
            ? ` (${Math.round((daemonCpu * 1e6) / reportRate)} µs of daemon CPU a report, ` +
              `${Math.round((threads.mainRun * 1e3) / reportRate)} of them the event loop's)`
            : '') +
          `; cache hits ${(row.cacheHitRate * 100).toFixed(1)} %; ` +
          `young GC ${gc.msPerSecond.toFixed(1)} ms/s (${gc.count} × ${gc.meanMs.toFixed(2)} ms); ` +
          `daemon CPU ${(row.daemonCpu * 100).toFixed(0)} %, wrk ${(row.wrkCpu * 100).toFixed(0)} %, ` +
          `bench ${(row.benchCpu * 100).toFixed(0)} %` +
          (sent > 0 ? ` (reporter ${Math.round(row.reports.reporterCpuUs)} µs a report)` : '') +
          (flags.postgres ? `, PostgreSQL ${(row.databaseCpu * 100).toFixed(0)} %` : '') +
          `, hypervisor steal ${(row.steal * 100).toFixed(0)} %` +
          `; event loop ${threads.mainRun.toFixed(0)} ms/s on the core, ` +
          `${threads.mainWait.toFixed(0)} ms/s waiting for it; checkpoints ${threads.checkpoint.toFixed(0)} ms/s, ` +
          `other threads ${threads.others.toFixed(0)} ms/s (${threads.busiest})`,
      );
      // Let the indexer finish what the stream left before the next row.
      await caughtUp();
      return row;
    }

    // A pass of everything a row does, not kept. V8 compiles the daemon's code on the stream's and the
    // reports' paths, and the WAL fills enough to start the checkpoint worker: a few percent of the core for
    // seconds, once per process (perf showed both in the first row with writes). The first row then
    // measures the daemon as it runs, not as it starts.
    let streamRetries = STREAM_RETRIES;
    /** A row, measured again while the hypervisor took more than STEAL_LIMIT of a core during it. */
    async function steady(label: string, reportsPerSecond: number | null, stream: boolean, reading = true) {
      let row = await measure(label, reportsPerSecond, stream, reading);
      for (let retry = 0; retry < STEAL_RETRIES && row.steal > STEAL_LIMIT; retry++) {
        if (stream && streamRetries-- <= 0) break;
        log(
          `  ${label}: the hypervisor took ${(row.steal * 100).toFixed(0)} % of a core; measuring it again`,
        );
        row = await measure(label, reportsPerSecond, stream, reading);
      }
      if (row.steal > STEAL_LIMIT) row.disturbed = true;
      return row;
    }
    const highest = Math.max(...REPORT_RATES);
    const capture = wire ? await WireCapture.start(join(dir, 'reports.pcap')) : undefined;
    if (capture) children.push(capture.process);
    await measure('warm-up (not kept)', highest > 0 ? highest : null, true);
    const rows: Row[] = [];
    let before = await steady('no writes', null, false);
    rows.push(before);
    for (const rate of REPORT_RATES) {
      const row = await steady(rate === 0 ? 'stream only' : `${rate} reports/s + stream`, rate, true);
      const after = await steady('no writes', null, false);
      row.ratio = row.reads.requestsPerSecond / mean([before, after]);
      rows.push(row, after);
      before = after;
    }
    const floorRate = REPORT_RATES.find((rate) => rate > 0);
    if (floorRate !== undefined) {
      // The reports under the 50 readers without the live stream: the write target as the issue words it
      // (a report's latency while 50 connections read), and what of the row above it the stream adds.
      rows.push(await steady(`${floorRate} reports/s, no stream`, floorRate, false));
      // The floor of a report's latency as the reporter sees it: the same reports with no read waiting.
      rows.push(await steady(`${floorRate} reports/s, no reads`, floorRate, false, false));
    }
    // What the live stream costs the daemon alone: its CPU over the events it applied, with nothing else.
    if (REPORT_RATES.includes(0)) rows.push(await steady('stream only, no reads', 0, true, false));
    /**
     * The ratio once more, against this VM's drift, which moves a 4 to 10 s row by ±30 % on its own: one
     * wrk run across segments with the writes (reports and stream) off and on in turn, off first and
     * last. The daemon's own count of the reads it answered gives each segment's rate; each on-segment is
     * compared with the mean of the off-segments on either side, and the median of those ratios is kept.
     * An on-segment is left out when the hypervisor took more than STEAL_LIMIT of a core during it or
     * either of its off-segments (all are kept, and the row marked, when none is clean).
     */
    async function interleaved(row: Row): Promise<number[]> {
      const reporter = row.reportsPerSecond ? startReporter(row.reportsPerSecond, true) : undefined;
      let on = false;
      let running = true;
      const stream = releaseStream(
        () => on,
        () => running,
      );
      const readsAnswered = async () => {
        const routes = counterBy(await metrics(), 'node_daemon_http_requests_total', 'route');
        let n = 0;
        for (const [route, count] of routes) if (/^\/(stacks\/nodes|tasks)/.test(route)) n += count;
        return { n, at: performance.now(), steal: snapshot()?.stealTicks ?? Number.NaN };
      };
      const segments = 2 * PAIRS + 1;
      const load = runOnce(
        ctx,
        readSpec(Math.ceil(WARMUP_SECONDS + segments * (SETTLE_SECONDS + SEGMENT_SECONDS) + 2)),
      );
      await sleep(WARMUP_SECONDS);
      const rates: number[] = [];
      const steals: number[] = [];
      for (let i = 0; i < segments; i++) {
        on = i % 2 === 1;
        reporter?.worker.postMessage(on ? 'resume' : 'pause');
        await sleep(SETTLE_SECONDS);
        const a = await readsAnswered();
        await sleep(SEGMENT_SECONDS);
        const b = await readsAnswered();
        rates.push(((b.n - a.n) * 1000) / (b.at - a.at));
        steals.push((b.steal - a.steal) / TICKS_PER_SECOND / ((b.at - a.at) / 1000));
      }
      on = false;
      reporter?.worker.postMessage('stop');
      await reporter?.done;
      await reporter?.worker.terminate();
      running = false;
      await stream;
      await load;
      const ratios: number[] = [];
      const clean: number[] = [];
      for (let i = 1; i < segments; i += 2) {
        const ratio = rates[i]! / ((rates[i - 1]! + rates[i + 1]!) / 2);
        ratios.push(ratio);
        if (Math.max(steals[i - 1]!, steals[i]!, steals[i + 1]!) <= STEAL_LIMIT) clean.push(ratio);
      }
      log(
        `  interleaved, ${row.label}: reads/s ` +
          `${rates.map((r) => Math.round(r)).join(', ')} (off, on, ...); ratios ${ratios.map((r) => r.toFixed(2)).join(', ')}; ` +
          `steal ${steals.map((x) => `${(x * 100).toFixed(0)} %`).join(', ')}; ${clean.length} of ${ratios.length} ratios clean`,
      );
      await caughtUp();
      if (clean.length > 0) return clean;
      row.interleavedDisturbed = true;
      return ratios;
    }
    for (const row of rows) {
      const read = !Number.isNaN(row.reads.requestsPerSecond);
      if (read && row.reportsPerSecond !== null && row.stream && !flags['rows-only']) {
        row.interleaved = await interleaved(row);
      }
    }

    const onWire = await capture?.stop();

    // The no-writes rows' own ratios are to the mean of them all: how far the VM drifted in this pass.
    const base = mean(rows.filter((row) => row.reportsPerSecond === null));
    for (const row of rows) if (row.reportsPerSecond === null) row.ratio = row.reads.requestsPerSecond / base;

    const ownBytes = (await call(origin, 'GET', ownPath)).text.length;
    const tasksBytes = (await call(origin, 'GET', '/tasks')).text.length;
    console.log(
      `\nMixed workload on ${engine} (${SECONDS} s a row after ${WARMUP_SECONDS} s warm-up; reads: 50 connections ` +
        `over GET ${ownPath} [${OWN_STACKS} stacks, ${ownBytes.toLocaleString('en-US')} B] and GET /tasks ` +
        `[${tasksBytes.toLocaleString('en-US')} B])\n`,
    );
    console.log(
      '| Writes                       |  Reads/s | Ratio | Interleaved | Read p50 ms | Read p99 ms | Reports sent | Report p50 ms | Report p99 ms | Served <= 1 ms | Served <= 5 ms | Indexer ev/s | Cache hits | Young GC ms/s | per GC ms | Daemon CPU | wrk CPU | Bench CPU | Steal |',
    );
    console.log(
      '| ---------------------------- | -------: | ----: | ----------: | ----------: | ----------: | -----------: | ------------: | ------------: | -------------: | -------------: | -----------: | ---------: | ------------: | --------: | ---------: | ------: | --------: | ----: |',
    );
    const cell = (n: number, digits = 2) => (Number.isNaN(n) ? '-' : n.toFixed(digits));
    for (const r of rows) {
      console.log(
        `| ${r.label.padEnd(28)} | ${cell(r.reads.requestsPerSecond, 0).padStart(8)} | ${cell(r.ratio ?? Number.NaN)} | ` +
          `${(r.interleaved ? cell(median(r.interleaved)) : '-').padStart(11)} | ` +
          `${cell(r.reads.p50ms).padStart(11)} | ${cell(r.reads.p99ms).padStart(11)} | ` +
          `${String(r.reports.sent).padStart(12)} | ${cell(r.reports.p50ms).padStart(13)} | ` +
          `${cell(r.reports.p99ms).padStart(13)} | ${`${cell(r.reports.servedWithin1ms * 100, 1)} %`.padStart(14)} | ` +
          `${`${cell(r.reports.servedWithin5ms * 100, 1)} %`.padStart(14)} | ${String(Math.round(r.streamApplied)).padStart(12)} | ` +
          `${`${cell(r.cacheHitRate * 100, 1)} %`.padStart(10)} | ${cell(r.youngGc.msPerSecond, 1).padStart(13)} | ` +
          `${cell(r.youngGc.meanMs).padStart(9)} | ${`${cell(r.daemonCpu * 100, 0)} %`.padStart(10)} | ` +
          `${`${cell(r.wrkCpu * 100, 0)} %`.padStart(7)} | ${`${cell(r.benchCpu * 100, 0)} %`.padStart(9)} | ` +
          `${`${cell(r.steal * 100, 0)} %`.padStart(5)} |`,
      );
      if (r.disturbed)
        console.log(
          `  (disturbed: the hypervisor took ${cell(r.steal * 100, 0)} % of a core after ${STEAL_RETRIES} repeats)`,
        );
      if (r.interleavedDisturbed)
        console.log('  (interleaved: no segment pair was clean of steal; the median of them all)');
      if (r.reports.failed > 0 || r.reads.non2xx > 0)
        console.log(`  (${r.reports.failed} reports failed, ${r.reads.non2xx} reads not 2xx)`);
    }
    if (onWire) {
      console.log(
        '\nThe same reports on the wire (tcpdump on lo: from the request leaving the reporter to the answer leaving the daemon)\n',
      );
      console.log(
        '| Writes                       | Reports seen | Client p50 ms | Client p99 ms | Wire p50 ms | Wire p99 ms |',
      );
      console.log(
        '| ---------------------------- | -----------: | ------------: | ------------: | ----------: | ----------: |',
      );
      for (const r of rows) {
        if (!r.reportsPerSecond) continue;
        const seen = wireLatency(onWire, r.reports.from, r.reports.to);
        console.log(
          `| ${r.label.padEnd(28)} | ${String(seen.count).padStart(12)} | ${cell(r.reports.p50ms).padStart(13)} | ` +
            `${cell(r.reports.p99ms).padStart(13)} | ${cell(seen.p50ms).padStart(11)} | ${cell(seen.p99ms).padStart(11)} |`,
        );
      }
    }
    printTargets(rows, engine, onWire);
    daemon.kill('SIGTERM');
    await once(daemon, 'exit');
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await double?.close();
    await dbs.dropAll();
    unpin?.();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
