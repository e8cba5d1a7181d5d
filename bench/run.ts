/**
 * npm run bench: the daemon's performance, measured side by side in one run, on SQLite (the default) or on
 * PostgreSQL (--postgres); bench/run/engine.ts says what differs between the two.
 *
 *   1. indexer apply rate (events/s) through applyPage, and through the replay path (FileEventSource +
 *      catchUp), each into a fresh store; how long the store takes to build a node's 1,000-stack list
 *      body (bench/run/body-build.ts); and the stack list module's own steps, in process
 *      (src/store/stack-list/stack-list.bench.ts);
 *   2. a data set (tasks, and stacks spread over nodes) built through applyPage (on SQLite, cached across
 *      runs);
 *   3. the daemon started as an operator starts it (pinned to CPU 0), loaded by wrk (pinned to CPU 1);
 *   4. GET /tasks on the daemon against a bare node:http server serving the same bytes;
 *   5. GET /stacks/nodes/{id} latency, with and without min_fill_fraction, one node and a rotating set,
 *      with the response cache and without it (bench/run/http.ts).
 *
 * Prints the tables (bench/run/tables.ts), writes bench/results/latest.json (latest-postgres.json on
 * PostgreSQL), reports PASS/MISS per target (bench/run/targets.ts). Exits 0 even on a miss, 1 when
 * something could not be measured. See docs/PERFORMANCE.md.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  formatStackList,
  measureStackList,
  type StackListBench,
} from '../src/store/stack-list/stack-list.bench.ts';
import { benchArgs } from './args.ts';
import { foreignLoad, snapshot } from './cpu.ts';
import { mixedStream, stacksStream } from './events.ts';
import { measureApply, measureReplay, PAGE_SIZE } from './ingest.ts';
import { releaseOnSignal } from './interrupt.ts';
import { type LoadContext, pickTool } from './load.ts';
import { DEFAULT_SERVER_URL } from './postgres.ts';
import {
  disturbance,
  exitCode,
  fail,
  failures,
  fmt,
  log,
  machine,
  type Target,
  warn,
  writeResults,
} from './report.ts';
import { bodyBuildLine, type MeasuredBodyBuild, measureBodyBuild } from './run/body-build.ts';
import { type Engine, type EngineName, engineFor, onEngine, type PreparedDataset } from './run/engine.ts';
import { type Footprint, measureHttp } from './run/http.ts';
import {
  CONNECTIONS,
  type HttpRow,
  type MeasuredIngest,
  measureIngest,
  patienceSecondsUsed,
} from './run/measure.ts';
import { formatProfile, type ProfileSummary, summarizeProfile } from './run/profile.ts';
import { httpTable, ingestTable, reportSummary, reportTargets } from './run/tables.ts';
import { judge } from './run/targets.ts';

const ROOT = resolve(import.meta.dirname, '..');
const RESULTS = join(ROOT, 'bench/results');

const HELP = `Usage: npm run bench -- [--quick] [--duration N] [--profile] [--postgres [--database-url URL]]

  --quick        smoke run: 3 s per measurement, 100 nodes x 1,000 stacks, 50k events per ingest run
  --duration N   seconds per HTTP measurement (default 10; --quick: 3)
  --profile      also run the daemon under node --cpu-prof and print where its time goes
                 (numbers from a profiled run are slower; do not compare them with a plain run)
  --postgres     the same benchmark on PostgreSQL (same as --engine postgres): throwaway databases
                 bench_<id>_<n> are created on the server and dropped at the end; results go to
                 bench/results/latest-postgres.json, judged against the PostgreSQL targets
  --engine E     sqlite (default) or postgres
  --database-url URL  an existing database on the PostgreSQL server to work from (CREATE/DROP DATABASE);
                 default ${DEFAULT_SERVER_URL}`;

interface Options {
  quick: boolean;
  seconds: number;
  profile: boolean;
  engine: EngineName;
  serverUrl: string;
}

function options(): Options {
  const values = benchArgs('bench', HELP, {
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
    profile: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    engine: { type: 'string' },
    'database-url': { type: 'string' },
  });
  const quick = values.quick === true;
  const seconds = values.duration === undefined ? (quick ? 3 : 10) : Number(values.duration);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 600) {
    process.stderr.write(`bench: --duration must be an integer from 1 to 600; got ${values.duration}\n`);
    process.exit(2);
  }
  const engine = values.engine ?? (values.postgres ? 'postgres' : 'sqlite');
  if ((engine !== 'sqlite' && engine !== 'postgres') || (values.postgres && engine !== 'postgres')) {
    process.stderr.write(
      `bench: --engine must be sqlite or postgres (and agree with --postgres); got ${engine}\n`,
    );
    process.exit(2);
  }
  if (values['database-url'] !== undefined && engine !== 'postgres') {
    process.stderr.write('bench: --database-url needs --postgres\n');
    process.exit(2);
  }
  if (engine === 'postgres' && values.profile) {
    process.stderr.write('bench: --profile is not supported with --postgres\n');
    process.exit(2);
  }
  return {
    quick,
    seconds,
    profile: values.profile === true,
    engine,
    serverUrl: values['database-url'] ?? process.env.BENCH_DATABASE_URL ?? DEFAULT_SERVER_URL,
  };
}

/**
 * npm run bench: prepares the run's temp directory (and, on SIGINT/SIGTERM, drops what the engine created
 * and removes it), then runs the benchmark on the engine the options name.
 */
async function main(): Promise<number> {
  const opts = options();
  const engine = engineFor(opts.engine, { root: ROOT, resultsDir: RESULTS, serverUrl: opts.serverUrl });
  const tmp = mkdtempSync(join(tmpdir(), engine.tmpPrefix));
  mkdirSync(RESULTS, { recursive: true });
  const { release } = engine;
  const unhook = release ? releaseOnSignal(release.what, () => release.run(), tmp) : undefined;
  try {
    return await run(engine, opts, tmp);
  } finally {
    await release?.run();
    rmSync(tmp, { recursive: true, force: true });
    unhook?.();
  }
}

/** What the run measured, step by step; what a step could not measure is missing. */
interface Measured {
  ingest: MeasuredIngest[];
  bodyBuild?: MeasuredBodyBuild;
  stackList?: StackListBench;
  dataset?: PreparedDataset;
  rows: HttpRow[];
  footprint?: Footprint;
  profiles: ProfileSummary[];
}

/** The benchmark on one engine: ingest, data set, HTTP, targets, report, results file. */
async function run(engine: Engine, opts: Options, tmp: string): Promise<number> {
  const startedAt = new Date();
  const ctx: LoadContext = { tool: pickTool(), root: ROOT, tmp, warmupSeconds: 2 };
  const notes: string[] = [];
  const host = machine(ROOT);
  const connected = await begin(engine, opts, ctx, startedAt, host, notes);
  if (!connected) return 1;
  const { ingest, bodyBuild } = await ingestStep(engine, opts);
  // The stack list module's own row: no store, so the same on either engine.
  const stackList = measureStackList();
  log(`\n${formatStackList(stackList)}`);
  const dataset = await datasetStep(engine, opts, tmp, notes);
  const http = dataset
    ? await httpStep(engine, opts, ctx, dataset, startedAt, notes)
    : { rows: [], profiles: [] };
  const measured: Measured = { ingest, bodyBuild, stackList, dataset, ...http };
  const targets = judge(engine, measured.rows, ingest, bodyBuild, dataset?.build, notes);
  printResults(engine, opts, ctx, startedAt, measured, targets, notes);
  writeResults(join(RESULTS, engine.resultsFile), {
    date: startedAt.toISOString(),
    ...connected.results,
    quick: opts.quick,
    secondsPerMeasurement: opts.seconds,
    warmupSeconds: ctx.warmupSeconds,
    /** Seconds spent waiting for a quiet machine and repeating disturbed measurements. */
    patienceSecondsUsed: patienceSecondsUsed(),
    connections: CONNECTIONS,
    tool: ctx.tool,
    machine: host,
    pinning: { server: 'taskset -c 0', loadGenerator: 'taskset -c 1', database: engine.databasePinning },
    dataset: dataset ? engine.datasetResults(dataset) : null,
    ingest,
    bodyBuild,
    stackList,
    http: measured.rows,
    footprint: measured.footprint,
    targets,
    notes,
    profiles: engine.profiles ? measured.profiles : undefined,
    failures,
  });
  return exitCode();
}

/**
 * The run's heading: the code, the machine, the engine's server (undefined, the failure recorded, when it
 * does not answer) and the load generator; a warning and a note when it is autocannon.
 */
async function begin(
  engine: Engine,
  opts: Options,
  ctx: LoadContext,
  startedAt: Date,
  host: ReturnType<typeof machine>,
  notes: string[],
): Promise<{ results: Record<string, unknown> } | undefined> {
  if (ctx.tool === 'autocannon') {
    const ratio = engine.targets.tasksRatio !== undefined;
    const understated = ratio ? 'throughput and the daemon/bare ratio' : 'throughput';
    const banner = '!'.repeat(100);
    warn(
      `${banner}\n!! wrk (/usr/bin/wrk) is missing: falling back to autocannon. autocannon is a Node.js client and cannot\n` +
        `!! saturate a fast server from one core of a 2-core machine: ${understated} will be\n` +
        `!! UNDERSTATED. Install wrk (apt-get install wrk) for numbers worth comparing.\n${banner}`,
    );
    notes.push(`autocannon fallback: wrk was missing; ${understated} ${ratio ? 'are' : 'is'} understated.`);
  }
  const cpuCount = cpus().length;
  if (cpuCount < 2) notes.push(`only ${cpuCount} CPU: the server and the load generator share a core.`);
  log(`node-daemon benchmark${onEngine(engine)}, ${startedAt.toISOString()}${opts.quick ? ' (quick)' : ''}`);
  const connected = engine.connect ? await engine.connect(notes) : { lines: [], results: {} };
  if (!connected) return undefined;
  log(`code: ${host.commit}; ${host.cpus} x ${host.cpuModel}, Node ${host.node}, ${host.wrk}`);
  for (const line of connected.lines) log(line);
  log(`load generator: ${ctx.tool}, ${CONNECTIONS} connections, ${opts.seconds} s per measurement`);
  return connected;
}

/** " into PostgreSQL": how the ingest and data set headings name a named engine. */
const intoEngine = (engine: Engine) => (engine.name ? ` into ${engine.name}` : '');

/** Step 1: the indexer's apply rate, every run, each into a fresh store; then the list body builds. */
async function ingestStep(
  engine: Engine,
  opts: Options,
): Promise<{ ingest: MeasuredIngest[]; bodyBuild?: MeasuredBodyBuild }> {
  const ingestEvents = opts.quick ? 50_000 : 200_000;
  log(
    `\n[1/4] indexer apply rate${intoEngine(engine)} (${ingestEvents.toLocaleString('en-US')} events per run, ` +
      `transactions of ${PAGE_SIZE.toLocaleString('en-US')}${engine.ingestInto ? `, ${engine.ingestInto}` : ''})`,
  );
  // The process's first apply compiles the decoder and the store's calls as it goes: shown, not judged
  // (a daemon pays it once, not per 200,000 events); the runs after it are the rate it keeps. A repeat of
  // it (other load disturbed the first) is no longer cold, and its name says so.
  let coldRuns = 0;
  const ingest = await measureIngest([
    [
      'mixed stream, in memory, JIT cold',
      async () => {
        const name =
          coldRuns++ === 0 ? 'mixed stream, JIT cold' : 'mixed stream, JIT cold run repeated (warm)';
        return { ...(await measureApply(name, mixedStream(ingestEvents, 7), engine.fresh)), cold: true };
      },
    ],
    [
      'mixed stream, in memory',
      () => measureApply('mixed stream', mixedStream(ingestEvents, 7), engine.fresh),
    ],
    [
      'StackCreatedEvent only, in memory',
      () => measureApply('StackCreatedEvent only', stacksStream(ingestEvents, 8), engine.fresh),
    ],
    [
      'mixed stream, JSONL replay',
      () => measureReplay('mixed stream (replay)', mixedStream(ingestEvents, 7), engine.fresh),
    ],
  ]);
  try {
    const before = snapshot();
    const result = await measureBodyBuild(engine.fresh);
    const bodyBuild = { ...result, otherLoad: foreignLoad(before, snapshot()) };
    log(`  ${bodyBuildLine(bodyBuild)}${disturbance(bodyBuild.otherLoad)}`);
    return { ingest, bodyBuild };
  } catch (error) {
    fail('building list bodies', error);
    return { ingest };
  }
}

/** Step 2: the HTTP data set, built (or, on SQLite, reused); undefined when it could not be built. */
async function datasetStep(
  engine: Engine,
  opts: Options,
  tmp: string,
  notes: string[],
): Promise<PreparedDataset | undefined> {
  const params = { tasks: 1000, nodes: opts.quick ? 100 : 1000, stacksPerNode: 1000, seed: 42 };
  const stacks = params.nodes * params.stacksPerNode;
  log(
    `\n[2/4] data set: ${params.tasks.toLocaleString('en-US')} tasks, ${stacks.toLocaleString('en-US')} stacks over ` +
      `${params.nodes.toLocaleString('en-US')} nodes${engine.name ? `, through applyPage${intoEngine(engine)}` : ''}`,
  );
  let dataset: PreparedDataset | undefined;
  try {
    dataset = await engine.prepare(params, tmp, (line) => log(`  ${line}`));
    const b = dataset.build;
    if (b) {
      log(
        `  built: ${fmt(b.eventsPerSecond, 0)} events/s through applyPage (${fmt(b.seconds, 1)} s), ` +
          `fills set in ${fmt(b.fillSeconds, 1)} s` +
          (dataset.analyzeSeconds === undefined
            ? ''
            : `, VACUUM ANALYZE stacks ${fmt(dataset.analyzeSeconds, 1)} s`),
      );
    }
  } catch (error) {
    fail('building the data set', error);
  }
  notes.push(engine.datasetNote);
  return dataset;
}

/** Steps 3 and 4 on the data set, and with --profile the daemon's profiles summed up. */
async function httpStep(
  engine: Engine,
  opts: Options,
  ctx: LoadContext,
  dataset: PreparedDataset,
  startedAt: Date,
  notes: string[],
): Promise<{ rows: HttpRow[]; footprint?: Footprint; profiles: ProfileSummary[] }> {
  const profileDir = join(RESULTS, 'profiles', startedAt.toISOString().replace(/[:.]/g, '-'));
  const { rows, footprint } = await measureHttp({
    root: ROOT,
    engine,
    ctx,
    ds: dataset,
    seconds: opts.seconds,
    profileDir: (name) => (opts.profile ? join(profileDir, name) : undefined),
  });
  if (!opts.profile) return { rows, footprint, profiles: [] };
  const profiles = ['cached', 'uncached'].flatMap((name) => {
    try {
      const file = latestProfile(join(profileDir, name));
      return file ? [summarizeProfile(file, ROOT)] : [];
    } catch (error) {
      fail(`reading the ${name} profile`, error);
      return [];
    }
  });
  notes.push('profiled run (--profile): the daemon ran under node --cpu-prof, so its numbers are slower.');
  return { rows, footprint, profiles };
}

function latestProfile(dir: string): string | undefined {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort();
  return files.length > 0 ? join(dir, files[files.length - 1]!) : undefined;
}

/** The tables, the targets, the floor and the footprint, the summary with the notes, and the profiles. */
function printResults(
  engine: Engine,
  opts: Options,
  ctx: LoadContext,
  startedAt: Date,
  m: Measured,
  targets: Target[],
  notes: string[],
): void {
  log(
    `\n=== results${onEngine(engine)} (${startedAt.toISOString().slice(0, 10)}, ${ctx.tool}, ${CONNECTIONS} connections, ${opts.seconds} s each) ===\n`,
  );
  log(ingestTable(`Indexer ingest${intoEngine(engine)}`, m.ingest, m.dataset?.build, engine.databaseColumn));
  if (m.dataset?.cached) log('(HTTP data set reused from an earlier run: its build rate is not re-measured)');
  if (m.stackList) log(`\n${formatStackList(m.stackList)}`);
  log('');
  log(httpTable(m.rows, engine.databaseColumn));
  reportTargets(engine.name ? `${engine.name} target` : 'Target', targets, [...m.rows, ...m.ingest], notes);
  const floor = m.rows.find((r) => r.id === 'floor-stacks-bare');
  if (floor?.result) {
    notes.push(
      `floor: the bare node:http server answering with the same ${fmt(floor.bodyBytes, 0)}-byte body as ` +
        `${floor.paths[0]} manages ${fmt(floor.result.requestsPerSecond, 0)} req/s, p99 ${fmt(floor.result.p99ms, 2)} ms ` +
        `at ${CONNECTIONS} connections: no server on this machine does better for a body of that size.`,
    );
  }
  const footprint = m.footprint;
  if (footprint) {
    log(
      `\nDaemon on ${fmt(footprint.stacks, 0)} stacks: start to /health ${fmt(footprint.startToHealthMs, 0)} ms; ` +
        `RSS ${fmt(footprint.rssAfterStartMb, 0)} MB after start, peak ${fmt(footprint.peakRssMb, 0)} MB after its load runs`,
    );
  }
  reportSummary(targets, notes);
  for (const p of m.profiles) log(`\n${formatProfile(p)}`);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    warn(`bench: ${(error as Error)?.stack ?? String(error)}`);
    process.exit(1);
  },
);
