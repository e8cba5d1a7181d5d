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
// --wire also measures the reports on the wire, with tcpdump on the loopback interface (bench/mixed/wire.ts):
// the daemon's latency without the reporter's own delays on the load generator's core.
// BENCH_TRACE=1 logs each row's steps and its slow reads by the daemon's own clocks (slowShares).
// --pin-postgres pins the local PostgreSQL server's processes to the load generator's core for the run (and
// puts them back after): the server's share of the daemon's core, for digging; the daemon's numbers are
// measured with the server unpinned.
// --daemon-flag passes a flag to the daemon's node (e.g. --trace-gc-nvp, --inspect=127.0.0.1:9229), and
// --daemon-output keeps all the daemon's stdout and stderr in FILE: for finding where time goes, not for numbers.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FullnodeDouble } from '../test/sui/fullnode-double.ts';
import { benchArgs, usageError } from './args.ts';
import { countUserAsOurs } from './cpu.ts';
import { call } from './daemon-http.ts';
import { LOAD_CPU, pinSelf } from './load.ts';
import { noWritesRatios, Workload } from './mixed/rows.ts';
import type { Settings } from './mixed/settings.ts';
import { printRows, printTargets, printWire } from './mixed/tables.ts';
import { WireCapture } from './mixed/wire.ts';
import {
  caughtUp,
  createMarket,
  type Daemon,
  type OwnNode,
  setUpNode,
  startDaemon,
  startDouble,
} from './mixed/world.ts';
import { DEFAULT_SERVER_URL, pinPostgres, ThrowawayDatabases } from './postgres.ts';

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
const rates = flags.rates ? flags.rates.split(',').map(Number) : [0, 100, 500];
if (rates.some((r) => !Number.isInteger(r) || r < 0 || r > 10_000)) {
  usageError(
    'bench:mixed',
    `--rates takes integers from 0 to 10000, separated by commas; got ${flags.rates}`,
  );
}
if (!flags.postgres && (flags['database-url'] !== undefined || flags['pin-postgres'])) {
  usageError('bench:mixed', '--database-url and --pin-postgres go with --postgres');
}
const settings: Settings = {
  quick,
  postgres: flags.postgres === true,
  wire: flags.wire === true,
  rowsOnly: flags['rows-only'] === true,
  rates,
  seconds: quick ? 4 : 10,
  backgroundStacks: quick ? 2000 : 20_000,
  pairs: quick ? 3 : 5,
  segmentSeconds: quick ? 2 : 3,
  serverUrl: flags['database-url'] ?? DEFAULT_SERVER_URL,
  pinPostgres: flags['pin-postgres'] === true,
  profile: flags.profile,
  daemonFlags: flags['daemon-flag'] ?? [],
  daemonOutput: flags['daemon-output'],
};
const log = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  // This process (the fullnode double, the reporter) is outside the daemon, like wrk: it runs on the load
  // generator's core, every thread of it, so that the daemon's core is the daemon's alone.
  const notPinned = pinSelf(LOAD_CPU);
  if (notPinned !== undefined) log(`could not pin the bench to CPU ${LOAD_CPU}: ${notPinned}`);
  const dir = mkdtempSync(join(tmpdir(), 'node-daemon-bench-mixed-'));
  const dbs = new ThrowawayDatabases(settings.serverUrl);
  const children: ChildProcess[] = [];
  let double: FullnodeDouble | undefined;
  let daemon: Daemon | undefined;
  let unpin: (() => void) | undefined;
  try {
    if (settings.pinPostgres) {
      unpin = pinPostgres(LOAD_CPU);
      log(`PostgreSQL's processes pinned to CPU ${LOAD_CPU} for this run`);
    }
    const started = await startDouble(dir);
    double = started.double;
    const market = await createMarket(double.dev);
    const engine = settings.postgres
      ? `PostgreSQL${unpin ? ` (its processes pinned to CPU ${LOAD_CPU}, the load generator's)` : ''}`
      : 'SQLite';
    // The server's processes, whose CPU each row reports beside the daemon's.
    if (settings.postgres && !countUserAsOurs('postgres')) log('no OS user postgres: its CPU is not counted');
    const database = settings.postgres ? await dbs.create() : undefined;
    const at = { root: ROOT, dir, keystore: started.keystore, databaseUrl: database?.url };
    daemon = await startDaemon(settings, at, double);
    const node = await setUpNode(settings, daemon, double, market, engine);
    await caughtUp(daemon);
    await measureAndPrint(new Workload(settings, daemon, double, node, { root: ROOT, tmp: dir }), {
      daemon,
      node,
      engine,
      dir,
      children,
    });
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await daemon?.server.stop().catch((error: unknown) => log((error as Error).message));
    await double?.close();
    await dbs.dropAll();
    unpin?.();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The rows (with the reports on the wire captured meanwhile, for --wire), their interleaved ratios (unless
 * --rows-only), then the tables.
 */
async function measureAndPrint(
  workload: Workload,
  run: { daemon: Daemon; node: OwnNode; engine: string; dir: string; children: ChildProcess[] },
): Promise<void> {
  const capture = settings.wire ? await WireCapture.start(join(run.dir, 'reports.pcap')) : undefined;
  if (capture) run.children.push(capture.process);
  const rows = await workload.rows();
  if (!settings.rowsOnly) await workload.interleave(rows);
  const onWire = await capture?.stop();
  noWritesRatios(rows);
  const { origin } = run.daemon;
  const ownPath = run.node.ownPath;
  const ownBytes = (await call(origin, 'GET', ownPath)).text.length;
  const tasksBytes = (await call(origin, 'GET', '/tasks')).text.length;
  printRows(rows, run.engine, settings, { ownPath, ownBytes, tasksBytes });
  if (onWire) printWire(rows, onWire);
  printTargets(rows, run.engine, onWire, settings.quick);
}

await main();
