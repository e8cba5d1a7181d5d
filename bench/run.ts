/**
 * npm run bench: the daemon's performance, measured side by side in one run, on SQLite (the default) or on
 * PostgreSQL (--postgres); bench/engine.ts says what differs between the two.
 *
 *   1. indexer apply rate (events/s) through applyPage, and through the replay path (FileEventSource +
 *      catchUp), each into a fresh store; and how long the store takes to build a node's 1,000-stack list
 *      body (bench/body-build.ts);
 *   2. a data set (tasks, and stacks spread over nodes) built through applyPage (on SQLite, cached across
 *      runs);
 *   3. the daemon started as an operator starts it (pinned to CPU 0), loaded by wrk (pinned to CPU 1);
 *   4. GET /tasks on the daemon against a bare node:http server serving the same bytes;
 *   5. GET /stacks/nodes/{id} latency, with and without min_fill_fraction, one node and a rotating set,
 *      with the response cache and without it.
 *
 * Prints the tables (bench/report.ts), writes bench/results/latest.json (latest-postgres.json on
 * PostgreSQL), reports PASS/MISS per target. Exits 0 even on a miss, 1 when something could not be
 * measured. See docs/PERFORMANCE.md.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { benchArgs } from './args.ts';
import { type ForeignLoad, foreignLoad, snapshot } from './cpu.ts';
import { mixedStream, stacksStream } from './events.ts';
import { measureApply, measureReplay, PAGE_SIZE } from './ingest.ts';
import { type LoadContext, pickTool } from './load.ts';
import { DEFAULT_SERVER_URL } from './postgres.ts';
import {
  disturbance,
  exitCode,
  fail,
  failures,
  fmt,
  isDisturbed,
  log,
  machine,
  type Target,
  warn,
  writeResults,
} from './report.ts';
import { type BodyBuildResult, type BuildTimes, measureBodyBuild } from './run/body-build.ts';
import { type Dataset, expectedFilled } from './run/dataset.ts';
import { type Engine, type EngineName, engineFor, type PreparedDataset } from './run/engine.ts';
import {
  CONNECTIONS,
  type HttpRow,
  type MeasuredIngest,
  measureIngest,
  patienceSecondsUsed,
  runRows,
} from './run/measure.ts';
import { formatProfile, type ProfileSummary, summarizeProfile } from './run/profile.ts';
import { httpTable, ingestTable, reportSummary, reportTargets } from './run/tables.ts';
import { type Server, startBare, startDaemon } from './servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const RESULTS = join(ROOT, 'bench/results');
const ROTATING_NODES = 50;

/** The node every fixed-node measurement reads. */
const FIXED_NODE = 7;

/** The four /stacks measurements: one node and a rotation over ROTATING_NODES, each with and without the filter. */
function stackRowsFor(nodes: number, cache: string): HttpRow[] {
  const rotating = Array.from(
    { length: ROTATING_NODES },
    (_, i) => 1 + Math.floor((i * nodes) / ROTATING_NODES),
  );
  return [
    {
      id: `stacks-fixed-${cache}`,
      label: `GET /stacks/nodes/${FIXED_NODE}`,
      server: '',
      paths: [`/stacks/nodes/${FIXED_NODE}`],
    },
    {
      id: `stacks-fixed-fill-${cache}`,
      label: `GET /stacks/nodes/${FIXED_NODE}?min_fill_fraction=0.9`,
      server: '',
      paths: [`/stacks/nodes/${FIXED_NODE}?min_fill_fraction=0.9`],
    },
    {
      id: `stacks-rotating-${cache}`,
      label: `GET /stacks/nodes/{${ROTATING_NODES} ids}`,
      server: '',
      paths: rotating.map((n) => `/stacks/nodes/${n}`),
    },
    {
      id: `stacks-rotating-fill-${cache}`,
      label: `GET /stacks/nodes/{${ROTATING_NODES} ids}?min_fill_fraction=0.9`,
      server: '',
      paths: rotating.map((n) => `/stacks/nodes/${n}?min_fill_fraction=0.9`),
    },
  ];
}

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

// --- helpers ---------------------------------------------------------------------------------------------

async function getJson(url: string): Promise<{ body: Buffer; contentType: string; json: unknown }> {
  const response = await fetch(url);
  const body = Buffer.from(await response.arrayBuffer());
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}: ${body.toString('utf8', 0, 300)}`);
  return {
    body,
    contentType: response.headers.get('content-type') ?? '',
    json: JSON.parse(body.toString('utf8')),
  };
}

/** Checks what the daemon serves before it is loaded, and records the response sizes. */
async function checkDaemon(server: Server, dataset: Dataset, rows: HttpRow[]): Promise<void> {
  const { params } = dataset;
  const tasks = await getJson(`${server.origin}/tasks`);
  if (!Array.isArray(tasks.json) || tasks.json.length !== params.tasks) {
    throw new Error(`GET /tasks returned ${Array.isArray(tasks.json) ? tasks.json.length : 'no'} tasks`);
  }
  for (const row of rows) {
    const path = row.paths[0]!;
    const { body, json } = await getJson(`${server.origin}${path}`);
    if (!Array.isArray(json)) throw new Error(`GET ${path} did not return an array`);
    const node = /\/stacks\/nodes\/(\d+)/.exec(path);
    if (node) {
      const filtered = path.includes('min_fill_fraction=0.9');
      const expected = filtered ? expectedFilled(params, Number(node[1]), 90) : params.stacksPerNode;
      if (json.length !== expected) {
        throw new Error(`GET ${path} returned ${json.length} stacks; the data set has ${expected}`);
      }
      const fills = new Set(
        json.map((s) => (s as { already_computed_units: number }).already_computed_units),
      );
      if (!filtered && fills.size < 10) throw new Error(`GET ${path}: already_computed_units is not spread`);
    }
    row.bodyBytes = body.length;
    row.items = json.length;
  }
}

async function withServer<T>(start: () => Promise<Server>, what: string, body: (s: Server) => Promise<T>) {
  let server: Server;
  try {
    server = await start();
  } catch (error) {
    fail(`starting ${what}`, error);
    return undefined;
  }
  try {
    return await body(server);
  } finally {
    await server.stop().catch((error: unknown) => fail(`stopping ${what}`, error));
  }
}

function latestProfile(dir: string): string | undefined {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort();
  return files.length > 0 ? join(dir, files[files.length - 1]!) : undefined;
}

// --- the run ---------------------------------------------------------------------------------------------

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
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted || !release) return;
    interrupted = true;
    warn(`\nbench: ${signal}: ${release.what}`);
    void release.run().finally(() => {
      rmSync(tmp, { recursive: true, force: true });
      process.exit(130);
    });
  };
  if (release) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  try {
    return await run(engine, opts, tmp);
  } finally {
    await release?.run();
    rmSync(tmp, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** " on PostgreSQL": how headings and labels name a named engine. */
const onEngine = (engine: Engine) => (engine.name ? ` on ${engine.name}` : '');

/** The benchmark on one engine: ingest, data set, HTTP, targets, report, results file. */
async function run(engine: Engine, opts: Options, tmp: string): Promise<number> {
  const startedAt = new Date();
  const tool = pickTool();
  const onName = onEngine(engine);
  const intoName = engine.name ? ` into ${engine.name}` : '';
  const notes: string[] = [];
  if (tool === 'autocannon') {
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

  const ctx: LoadContext = { tool, root: ROOT, tmp, warmupSeconds: 2 };
  const ingestEvents = opts.quick ? 50_000 : 200_000;
  const datasetParams = { tasks: 1000, nodes: opts.quick ? 100 : 1000, stacksPerNode: 1000, seed: 42 };

  log(`node-daemon benchmark${onName}, ${startedAt.toISOString()}${opts.quick ? ' (quick)' : ''}`);
  const host = machine(ROOT);
  const connected = engine.connect ? await engine.connect(notes) : { lines: [], results: {} };
  if (!connected) return 1;
  log(`code: ${host.commit}; ${host.cpus} x ${host.cpuModel}, Node ${host.node}, ${host.wrk}`);
  for (const line of connected.lines) log(line);
  log(`load generator: ${tool}, ${CONNECTIONS} connections, ${opts.seconds} s per measurement`);

  // 1. Indexer apply rate, every run, each into a fresh store.
  log(
    `\n[1/4] indexer apply rate${intoName} (${ingestEvents.toLocaleString('en-US')} events per run, ` +
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
  let bodyBuild: MeasuredBodyBuild | undefined;
  try {
    const before = snapshot();
    const result = await measureBodyBuild(engine.fresh);
    bodyBuild = { ...result, otherLoad: foreignLoad(before, snapshot()) };
    log(`  ${bodyBuildLine(bodyBuild)}${disturbance(bodyBuild.otherLoad)}`);
  } catch (error) {
    fail('building list bodies', error);
  }

  // 2. The HTTP data set.
  const stacks = datasetParams.nodes * datasetParams.stacksPerNode;
  log(
    `\n[2/4] data set: ${datasetParams.tasks.toLocaleString('en-US')} tasks, ${stacks.toLocaleString('en-US')} stacks over ` +
      `${datasetParams.nodes.toLocaleString('en-US')} nodes${engine.name ? `, through applyPage${intoName}` : ''}`,
  );
  let dataset: PreparedDataset | undefined;
  try {
    dataset = await engine.prepare(datasetParams, tmp, (line) => log(`  ${line}`));
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

  // 3 and 4. HTTP.
  const rows: HttpRow[] = [];
  let profiles: ProfileSummary[] = [];
  if (dataset) {
    const profileDir = join(RESULTS, 'profiles', startedAt.toISOString().replace(/[:.]/g, '-'));
    rows.push(...(await measureHttp(engine, ctx, dataset, opts, profileDir)));
    if (opts.profile) {
      profiles = ['cached', 'uncached'].flatMap((name) => {
        try {
          const file = latestProfile(join(profileDir, name));
          return file ? [summarizeProfile(file, ROOT)] : [];
        } catch (error) {
          fail(`reading the ${name} profile`, error);
          return [];
        }
      });
      notes.push(
        'profiled run (--profile): the daemon ran under node --cpu-prof, so its numbers are slower.',
      );
    }
  }

  const targets = judge(engine, rows, ingest, bodyBuild, dataset?.build, notes);

  // Report.
  log(
    `\n=== results${onName} (${startedAt.toISOString().slice(0, 10)}, ${tool}, ${CONNECTIONS} connections, ${opts.seconds} s each) ===\n`,
  );
  log(ingestTable(`Indexer ingest${intoName}`, ingest, dataset?.build, engine.databaseColumn));
  if (dataset?.cached) log('(HTTP data set reused from an earlier run: its build rate is not re-measured)');
  log('');
  log(httpTable(rows, engine.databaseColumn));
  reportTargets(engine.name ? `${engine.name} target` : 'Target', targets, [...rows, ...ingest], notes);
  const floor = rows.find((r) => r.id === 'floor-stacks-bare');
  if (floor?.result) {
    notes.push(
      `floor: the bare node:http server answering with the same ${fmt(floor.bodyBytes, 0)}-byte body as ` +
        `${floor.paths[0]} manages ${fmt(floor.result.requestsPerSecond, 0)} req/s, p99 ${fmt(floor.result.p99ms, 2)} ms ` +
        `at ${CONNECTIONS} connections: no server on this machine does better for a body of that size.`,
    );
  }
  if (footprint) {
    log(
      `\nDaemon on ${fmt(footprint.stacks, 0)} stacks: start to /health ${fmt(footprint.startToHealthMs, 0)} ms; ` +
        `RSS ${fmt(footprint.rssAfterStartMb, 0)} MB after start, peak ${fmt(footprint.peakRssMb, 0)} MB after its load runs`,
    );
  }
  reportSummary(targets, notes);
  for (const p of profiles) log(`\n${formatProfile(p)}`);

  writeResults(join(RESULTS, engine.resultsFile), {
    date: startedAt.toISOString(),
    ...connected.results,
    quick: opts.quick,
    secondsPerMeasurement: opts.seconds,
    warmupSeconds: ctx.warmupSeconds,
    /** Seconds spent waiting for a quiet machine and repeating disturbed measurements. */
    patienceSecondsUsed: patienceSecondsUsed(),
    connections: CONNECTIONS,
    tool,
    machine: host,
    pinning: { server: 'taskset -c 0', loadGenerator: 'taskset -c 1', database: engine.databasePinning },
    dataset: dataset ? engine.datasetResults(dataset) : null,
    ingest,
    bodyBuild,
    http: rows,
    footprint,
    targets,
    notes,
    profiles: engine.profiles ? profiles : undefined,
    failures,
  });
  return exitCode();
}

/**
 * Steps 3 and 4: the daemon with its response cache (GET /tasks, the /stacks rows), the bare node:http
 * server with the bytes the daemon served, a second daemon/bare round of GET /tasks where its ratio is a
 * target, then the daemon without its cache. Returns the rows in the order they ran.
 */
/** The daemon's start time and memory on the data set (the cached daemon of step 3). */
interface Footprint {
  stacks: number;
  startToHealthMs: number;
  rssAfterStartMb: number;
  /** VmHWM after its load runs. */
  peakRssMb: number;
}
let footprint: Footprint | undefined;

async function measureHttp(
  engine: Engine,
  ctx: LoadContext,
  ds: PreparedDataset,
  opts: Options,
  profileDir: string,
): Promise<HttpRow[]> {
  const rows: HttpRow[] = [];
  const seconds = opts.seconds;
  const flag = ds.url === undefined ? '' : ' --database-url';
  const daemon = `the daemon${onEngine(engine)}`;
  const startDaemonWith = (cacheMb?: number, profile?: string) => () =>
    startDaemon(ROOT, {
      dataDir: ds.dir,
      databaseUrl: ds.url,
      cacheMb,
      cpuProfDir: profile !== undefined && opts.profile ? join(profileDir, profile) : undefined,
    });
  const stackRows = (cache: string) => stackRowsFor(ds.params.nodes, cache);

  log(`\n[3/4] daemon${flag}, response cache on (default --cache-mb), pinned to CPU 0; ${ctx.tool} on CPU 1`);
  const tasksDaemon: HttpRow = { id: 'tasks-daemon', label: 'GET /tasks', server: '', paths: ['/tasks'] };
  const stacksCached = stackRows('cached');
  const cached = engine.http.tasksFirst ? [tasksDaemon, ...stacksCached] : [...stacksCached, tasksDaemon];
  // The bare server's bodies: exactly the bytes the daemon served, fetched once.
  const bare: { row: HttpRow; from: HttpRow; file: string; body?: Buffer }[] = [
    {
      row: {
        id: 'tasks-bare',
        label: 'GET /tasks (same bytes)',
        server: 'bare node:http',
        paths: ['/tasks'],
      },
      from: tasksDaemon,
      file: join(ctx.tmp, 'tasks.json'),
    },
  ];
  if (engine.http.floor) {
    // Not a target: the floor for a body of this size on this machine.
    bare.push({
      row: {
        id: 'floor-stacks-bare',
        label: `GET /stacks/nodes/${FIXED_NODE} (same bytes)`,
        server: 'bare node:http',
        paths: [`/stacks/nodes/${FIXED_NODE}`],
      },
      from: stacksCached[0]!,
      file: join(ctx.tmp, 'stacks.json'),
    });
  }
  await withServer(startDaemonWith(undefined, 'cached'), daemon, async (server) => {
    for (const row of cached) row.server = server.name;
    try {
      await checkDaemon(server, ds, cached);
      for (const b of bare) {
        const got = await getJson(`${server.origin}${b.row.paths[0]}`);
        if (got.contentType !== 'application/json; charset=utf-8') {
          throw new Error(`GET ${b.row.paths[0]} content-type is ${got.contentType}`);
        }
        b.body = got.body;
        writeFileSync(b.file, got.body);
      }
    } catch (error) {
      fail('checking what the daemon serves', error);
      return;
    }
    const started = server.memory();
    await runRows(ctx, server, cached, seconds);
    footprint = {
      stacks: ds.params.nodes * ds.params.stacksPerNode,
      startToHealthMs: Math.round(server.startedInMs),
      rssAfterStartMb: Math.round(started.rssMb),
      peakRssMb: Math.round(server.memory().peakMb),
    };
  });
  rows.push(...cached);

  for (const b of bare) {
    if (b.body) {
      log(`\n      bare node:http baseline for ${b.row.paths[0]}, pinned to CPU 0 (the daemon is stopped)`);
      await withServer(
        () => startBare(ROOT, b.file),
        'the bare server',
        async (server) => {
          b.row.bodyBytes = b.body!.length;
          b.row.items = b.from.items;
          await runRows(ctx, server, [b.row], seconds);
        },
      );
    } else {
      b.row.error = 'not run: the daemon did not serve the body';
    }
    rows.push(b.row);
  }

  // Where the ratio is a target, a second daemon/bare round of GET /tasks: the machine is virtual and
  // shared, its speed drifts, and one turn each would let that drift decide the ratio.
  const tasksBare = bare[0]!;
  if (engine.targets.tasksRatio !== undefined && tasksBare.body) {
    const again = (row: HttpRow, id: string, label: string): HttpRow => ({
      ...row,
      id,
      label,
      result: undefined,
      otherLoad: undefined,
      error: undefined,
    });
    const daemon2 = again(tasksDaemon, 'tasks-daemon-2', 'GET /tasks (round 2)');
    log('\n      GET /tasks, round 2: the daemon again, then the bare server again');
    await withServer(startDaemonWith(), `${daemon} (round 2)`, (server) =>
      runRows(ctx, server, [daemon2], seconds),
    );
    rows.push(daemon2);
    const bare2 = again(tasksBare.row, 'tasks-bare-2', 'GET /tasks (same bytes, round 2)');
    await withServer(
      () => startBare(ROOT, tasksBare.file),
      'the bare server (round 2)',
      (server) => runRows(ctx, server, [bare2], seconds),
    );
    rows.push(bare2);
  }

  log(`\n[4/4] daemon${flag}, response cache off (--cache-mb 0), pinned to CPU 0`);
  const all = stackRows('uncached');
  const uncached = [
    all[2]!,
    all[3]!,
    { id: 'tasks-daemon-uncached', label: 'GET /tasks', server: '', paths: ['/tasks'] },
  ];
  await withServer(startDaemonWith(0, 'uncached'), `${daemon} with --cache-mb 0`, async (server) => {
    for (const row of uncached) row.server = server.name;
    try {
      await checkDaemon(server, ds, uncached);
    } catch (error) {
      fail('checking what the uncached daemon serves', error);
      return;
    }
    await runRows(ctx, server, uncached, seconds);
  });
  rows.push(...uncached);
  return rows;
}

type MeasuredBodyBuild = BodyBuildResult & { otherLoad?: ForeignLoad };

function bodyBuildLine(b: MeasuredBodyBuild): string {
  const t = (x: BuildTimes) => `p50 ${fmt(x.p50ms, 3)} / p99 ${fmt(x.p99ms, 2)} ms`;
  return (
    `list body build (${b.nodes} nodes x ${fmt(b.stacksPerNode, 0)} stacks, ${fmt(b.bodyBytes, 0)} B): ` +
    `first sight ${t(b.firstSight)}; after a usage report ${t(b.afterReport)}; ` +
    `after an indexer page ${t(b.afterIndexer)}; after a new stack ${t(b.afterNewStack)}`
  );
}

// --- targets ---------------------------------------------------------------------------------------------

/** Judges the measurements against the engine's targets; pushes the notes that go with them. */
function judge(
  engine: Engine,
  rows: readonly HttpRow[],
  ingest: readonly MeasuredIngest[],
  bodyBuild: MeasuredBodyBuild | undefined,
  build: { eventsPerSecond: number } | undefined,
  notes: string[],
): Target[] {
  const goals = engine.targets;
  const targets: Target[] = [];
  if (goals.tasksRatio !== undefined) targets.push(...tasksRatioTargets(rows, goals.tasksRatio, notes));
  const ingestTarget = (name: string, eventsPerSecond: number, goal: number, otherLoad?: ForeignLoad) => {
    targets.push({
      name: `ingest ${name}`,
      goal: `>= ${fmt(goal, 0)} events/s`,
      value: `${fmt(eventsPerSecond, 0)} events/s`,
      pass: eventsPerSecond >= goal,
      disturbed: isDisturbed(otherLoad),
    });
  };
  const streamGoal = goals.streamEventsPerSecond;
  if (streamGoal !== undefined) {
    for (const r of ingest.filter((r) => !r.cold)) {
      ingestTarget(`${r.name}, ${r.path}`, r.eventsPerSecond, streamGoal, r.otherLoad);
    }
  }
  if (goals.buildEventsPerSecond !== undefined && build) {
    ingestTarget(
      'HTTP data set build, applyPage into one growing database',
      build.eventsPerSecond,
      goals.buildEventsPerSecond,
    );
  }
  const bodyGoal = goals.bodyBuildP50Ms;
  if (bodyGoal !== undefined && bodyBuild) {
    for (const [when, t] of [
      ['after a usage report', bodyBuild.afterReport],
      ['after an indexer page', bodyBuild.afterIndexer],
      ['after a new stack', bodyBuild.afterNewStack],
    ] as const) {
      targets.push({
        name: `${fmt(bodyBuild.stacksPerNode, 0)}-stack list body rebuilt ${when}, p50 (issue 13)`,
        goal: `<= ${bodyGoal} ms`,
        value: `${fmt(t.p50ms, 3)} ms (p99 ${fmt(t.p99ms, 2)}, max ${fmt(t.maxMs, 2)} ms)`,
        pass: t.p50ms <= bodyGoal,
        disturbed: isDisturbed(bodyBuild.otherLoad),
      });
    }
    notes.push(
      `list body: a node's list built the first time (whole rows, once per node while the store keeps what ` +
        `it read) took p50 ${fmt(bodyBuild.firstSight.p50ms, 2)} ms; shown, not judged.`,
    );
  }
  for (const row of rows.filter((r) => r.id.startsWith('stacks-'))) {
    targets.push({
      name: `p99 ${row.label}, ${row.server}`,
      goal: `<= ${goals.stacksP99Ms} ms`,
      value: row.result ? `${fmt(row.result.p99ms, 2)} ms` : 'not measured',
      pass: row.result ? row.result.p99ms <= goals.stacksP99Ms : undefined,
      disturbed: isDisturbed(row.otherLoad),
    });
  }
  const byId = (id: string) => rows.find((r) => r.id === id);
  const cached = byId('stacks-fixed-cached');
  const bare = byId('floor-stacks-bare');
  if (goals.cachedStacksP99VsBare !== undefined && cached?.result && bare?.result) {
    const ratio = cached.result.p99ms / bare.result.p99ms;
    targets.push({
      name: `p99 ${cached.label}, daemon / bare node:http (same bytes)`,
      goal: `<= ${goals.cachedStacksP99VsBare.toFixed(1)}x`,
      value: `${ratio.toFixed(2)}x (${fmt(cached.result.p99ms, 2)} / ${fmt(bare.result.p99ms, 2)} ms)`,
      pass: ratio <= goals.cachedStacksP99VsBare,
      disturbed: isDisturbed(cached.otherLoad) || isDisturbed(bare.otherLoad),
    });
  }
  const rotating = byId('stacks-rotating-uncached');
  if (goals.uncachedRotatingP99Ms !== undefined && rotating?.result) {
    targets.push({
      name: `p99 ${rotating.label}, ${rotating.server} (issue 13)`,
      goal: `<= ${goals.uncachedRotatingP99Ms} ms`,
      value: `${fmt(rotating.result.p99ms, 2)} ms`,
      pass: rotating.result.p99ms <= goals.uncachedRotatingP99Ms,
      disturbed: isDisturbed(rotating.otherLoad),
    });
  }
  if (goals.tasksRatio === undefined) {
    const td = byId('tasks-daemon')?.result;
    const tb = byId('tasks-bare')?.result;
    if (td && tb) {
      notes.push(
        `GET /tasks, daemon${onEngine(engine)} / bare node:http, one round: ` +
          `${(td.requestsPerSecond / tb.requestsPerSecond).toFixed(2)} ` +
          `(${fmt(td.requestsPerSecond, 0)} / ${fmt(tb.requestsPerSecond, 0)} req/s); ` +
          `a reference, not a ${engine.name ? `${engine.name} ` : ''}target.`,
      );
    }
  }
  return targets;
}

/**
 * GET /tasks, daemon against bare node:http, over the rounds measured: the throughput ratio, and server
 * CPU per request as a cross-check independent of the load generator.
 */
function tasksRatioTargets(rows: readonly HttpRow[], minRatio: number, notes: string[]): Target[] {
  const byId = (id: string) => rows.find((r) => r.id === id);
  // The ratio of the summed throughputs over the rounds; each round's ratio is shown too.
  const rounds = [
    [byId('tasks-daemon'), byId('tasks-bare')],
    [byId('tasks-daemon-2'), byId('tasks-bare-2')],
  ].filter(([d, b]) => d?.result && b?.result) as [HttpRow, HttpRow][];
  const disturbed = rounds.some(([d, b]) => isDisturbed(d.otherLoad) || isDisturbed(b.otherLoad));
  const rps = (row: HttpRow) => row.result!.requestsPerSecond;
  const daemonSum = rounds.reduce((sum, [d]) => sum + rps(d), 0);
  const bareSum = rounds.reduce((sum, [, b]) => sum + rps(b), 0);
  const ratio = rounds.length > 0 ? daemonSum / bareSum : undefined;
  // When wrk saturates its core before the bare server does, the throughput ratio flatters the daemon;
  // the server CPU per request does not.
  const cpuPerRequest = (row: HttpRow) =>
    (row.otherLoad?.serverCpuSeconds ?? Number.NaN) / row.result!.requests;
  const daemonCpu = rounds.reduce((sum, [d]) => sum + cpuPerRequest(d), 0) / rounds.length;
  const bareCpu = rounds.reduce((sum, [, b]) => sum + cpuPerRequest(b), 0) / rounds.length;
  const cpuRatio =
    rounds.length > 0 && Number.isFinite(bareCpu / daemonCpu) ? bareCpu / daemonCpu : undefined;
  if (rounds.some(([, b]) => (b.otherLoad?.clientPercent ?? 0) >= 95)) {
    notes.push(
      'wrk used >= 95% of its core against the bare server: the load generator, not the server, limited the ' +
        'bare baseline, so the throughput ratio flatters the daemon; the CPU-per-request cross-check does not.',
    );
  }
  return [
    {
      name: 'GET /tasks throughput, daemon / bare node:http',
      goal: `>= ${minRatio.toFixed(2)}`,
      value:
        ratio === undefined
          ? 'not measured'
          : `${ratio.toFixed(2)} (${fmt(daemonSum / rounds.length, 0)} / ${fmt(bareSum / rounds.length, 0)} req/s; ` +
            `rounds ${rounds.map(([d, b]) => (rps(d) / rps(b)).toFixed(2)).join(', ')})`,
      pass: ratio === undefined ? undefined : ratio >= minRatio,
      disturbed,
    },
    {
      name: 'GET /tasks server CPU per request, bare / daemon (cross-check)',
      goal: `>= ${minRatio.toFixed(2)}`,
      value:
        cpuRatio === undefined
          ? 'not measured'
          : `${cpuRatio.toFixed(2)} (${fmt(bareCpu * 1e6, 0)} / ${fmt(daemonCpu * 1e6, 0)} us of CPU 0 per request)`,
      pass: cpuRatio === undefined ? undefined : cpuRatio >= minRatio,
      disturbed,
    },
  ];
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    warn(`bench: ${(error as Error)?.stack ?? String(error)}`);
    process.exit(1);
  },
);
