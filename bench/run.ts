/**
 * npm run bench: the daemon's performance, measured side by side in one run.
 *
 *   1. indexer apply rate (events/s) through applyPage, and through the replay path (FileEventSource +
 *      catchUp), each into a fresh SQLite store;
 *   2. a data set (tasks, and stacks spread over nodes) built through applyPage, cached across runs;
 *   3. the daemon started as an operator starts it (pinned to CPU 0), loaded by wrk (pinned to CPU 1);
 *   4. GET /tasks on the daemon against a bare node:http server serving the same bytes;
 *   5. GET /stacks/nodes/{id} latency, with and without min_fill_fraction, one node and a rotating set,
 *      with the response cache and without it.
 *
 * Prints a table, writes bench/results/latest.json, reports PASS/MISS per target. Exits 0 even on a miss,
 * 1 when something could not be measured. See docs/PERFORMANCE.md.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { redactUrl } from '../src/store/postgres.ts';
import { countUserAsOurs, type ForeignLoad } from './cpu.ts';
import { type Dataset, expectedFilled, prepareDataset } from './dataset.ts';
import { mixedStream, stacksStream } from './events.ts';
import { type IngestResult, measureApply, measureReplay, PAGE_SIZE } from './ingest.ts';
import { type LoadContext, pickTool } from './load.ts';
import { CONNECTIONS, type HttpRow, measureIngest, patienceSecondsUsed, runRows } from './measure.ts';
import { DEFAULT_SERVER_URL, preparePostgresDataset, ThrowawayDatabases } from './postgres.ts';
import { formatProfile, type ProfileSummary, summarizeProfile } from './profile.ts';
import {
  exitCode,
  fail,
  failures,
  fmt,
  httpTable,
  ingestTable,
  isDisturbed,
  log,
  machine,
  reportSummary,
  reportTargets,
  type Target,
  warn,
  writeResults,
} from './report.ts';
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
const TARGET_RATIO = 0.7;
const TARGET_P99_MS = 10;

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
  engine: 'sqlite' | 'postgres';
  serverUrl: string;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      duration: { type: 'string' },
      profile: { type: 'boolean', default: false },
      postgres: { type: 'boolean', default: false },
      engine: { type: 'string' },
      'database-url': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
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

async function main(): Promise<number> {
  const opts = options();
  if (opts.engine === 'postgres') return mainPostgres(opts);
  const startedAt = new Date();
  const tool = pickTool();
  const tmp = mkdtempSync(join(tmpdir(), 'node-daemon-bench-'));
  mkdirSync(RESULTS, { recursive: true });
  const notes: string[] = [];
  if (tool === 'autocannon') {
    const banner = '!'.repeat(100);
    warn(
      `${banner}\n!! wrk (/usr/bin/wrk) is missing: falling back to autocannon. autocannon is a Node.js client and cannot\n` +
        '!! saturate a fast server from one core of a 2-core machine: throughput and the daemon/bare ratio will be\n' +
        `!! UNDERSTATED. Install wrk (apt-get install wrk) for numbers worth comparing.\n${banner}`,
    );
    notes.push('autocannon fallback: wrk was missing; throughput and the daemon/bare ratio are understated.');
  }
  const cpuCount = cpus().length;
  if (cpuCount < 2) notes.push(`only ${cpuCount} CPU: the server and the load generator share a core.`);

  const ctx: LoadContext = { tool, root: ROOT, tmp, warmupSeconds: 2 };
  const ingestEvents = opts.quick ? 50_000 : 200_000;
  const datasetParams = { tasks: 1000, nodes: opts.quick ? 100 : 1000, stacksPerNode: 1000, seed: 42 };

  log(`node-daemon benchmark, ${startedAt.toISOString()}${opts.quick ? ' (quick)' : ''}`);
  const host = machine(ROOT);
  log(`code: ${host.commit}; ${host.cpus} x ${host.cpuModel}, Node ${host.node}, ${host.wrk}`);
  log(`load generator: ${tool}, ${CONNECTIONS} connections, ${opts.seconds} s per measurement`);

  // 1. Indexer apply rate, every run, on fresh stores.
  log(
    `\n[1/4] indexer apply rate (${ingestEvents.toLocaleString('en-US')} events per run, transactions of ${PAGE_SIZE.toLocaleString('en-US')})`,
  );
  const ingestRuns: [string, () => Promise<IngestResult>][] = [
    ['mixed stream, in memory', () => measureApply('mixed stream', mixedStream(ingestEvents, 7))],
    [
      'StackCreatedEvent only, in memory',
      () => measureApply('StackCreatedEvent only', stacksStream(ingestEvents, 8)),
    ],
    [
      'mixed stream, JSONL replay',
      () => measureReplay('mixed stream (replay)', mixedStream(ingestEvents, 7)),
    ],
  ];
  const ingest = await measureIngest(ingestRuns);

  // 2. The HTTP data set.
  const stacks = datasetParams.nodes * datasetParams.stacksPerNode;
  log(
    `\n[2/4] data set: ${datasetParams.tasks.toLocaleString('en-US')} tasks, ${stacks.toLocaleString('en-US')} stacks over ` +
      `${datasetParams.nodes.toLocaleString('en-US')} nodes`,
  );
  let dataset: Dataset | undefined;
  try {
    dataset = await prepareDataset(ROOT, RESULTS, datasetParams, (line) => log(`  ${line}`));
    if (dataset.build) {
      log(
        `  built: ${fmt(dataset.build.eventsPerSecond, 0)} events/s through applyPage (${fmt(dataset.build.seconds, 1)} s), ` +
          `fills set in ${fmt(dataset.build.fillSeconds, 1)} s`,
      );
    }
  } catch (error) {
    fail('building the data set', error);
  }
  notes.push(
    'already_computed_units has no event: after ingest, one direct UPDATE of the SQLite file sets ' +
      'already_computed_units = num_compute_units * ((stack_small_id * 37) % 101) / 100. It models the usage ' +
      'reporting that arrives in a later issue; everything else went through applyPage.',
  );

  // 3. HTTP.
  const rows: HttpRow[] = [];
  let profiles: ProfileSummary[] = [];
  if (dataset) {
    const ds = dataset;
    const fixed = FIXED_NODE;
    const stackRows = (cache: string) => stackRowsFor(ds.params.nodes, cache);
    const profileDir = join(RESULTS, 'profiles', startedAt.toISOString().replace(/[:.]/g, '-'));
    const profileRun = (name: string) => (opts.profile ? join(profileDir, name) : undefined);
    log(`\n[3/4] daemon, response cache on (default --cache-mb), pinned to CPU 0; ${tool} on CPU 1`);
    const tasksDaemon: HttpRow = { id: 'tasks-daemon', label: 'GET /tasks', server: '', paths: ['/tasks'] };
    const cached = [tasksDaemon, ...stackRows('cached')];
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
        file: join(tmp, 'tasks.json'),
      },
      {
        // Not a target: the floor for a body of this size on this machine.
        row: {
          id: 'floor-stacks-bare',
          label: `GET /stacks/nodes/${fixed} (same bytes)`,
          server: 'bare node:http',
          paths: [`/stacks/nodes/${fixed}`],
        },
        from: cached[1]!,
        file: join(tmp, 'stacks.json'),
      },
    ];
    await withServer(
      () => startDaemon(ROOT, { dataDir: ds.dir, cpuProfDir: profileRun('cached') }),
      'the daemon',
      async (server) => {
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
        await runRows(ctx, server, cached, opts.seconds);
      },
    );
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
            await runRows(ctx, server, [b.row], opts.seconds);
          },
        );
      } else {
        b.row.error = 'not run: the daemon did not serve the body';
      }
      rows.push(b.row);
    }

    // A second daemon/bare round of GET /tasks: the machine is virtual and shared, its speed drifts, and
    // one turn each would let that drift decide the ratio.
    const tasksBare = bare[0]!;
    if (tasksBare.body) {
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
      await withServer(
        () => startDaemon(ROOT, { dataDir: ds.dir }),
        'the daemon (round 2)',
        (server) => runRows(ctx, server, [daemon2], opts.seconds),
      );
      rows.push(daemon2);
      const bare2 = again(tasksBare.row, 'tasks-bare-2', 'GET /tasks (same bytes, round 2)');
      await withServer(
        () => startBare(ROOT, tasksBare.file),
        'the bare server (round 2)',
        (server) => runRows(ctx, server, [bare2], opts.seconds),
      );
      rows.push(bare2);
    }

    log('\n[4/4] daemon, response cache off (--cache-mb 0), pinned to CPU 0');
    const all = stackRows('uncached');
    const uncached = [
      all[2]!,
      all[3]!,
      { id: 'tasks-daemon-uncached', label: 'GET /tasks', server: '', paths: ['/tasks'] },
    ];
    await withServer(
      () => startDaemon(ROOT, { dataDir: ds.dir, cacheMb: 0, cpuProfDir: profileRun('uncached') }),
      'the daemon with --cache-mb 0',
      async (server) => {
        for (const row of uncached) row.server = server.name;
        try {
          await checkDaemon(server, ds, uncached);
        } catch (error) {
          fail('checking what the uncached daemon serves', error);
          return;
        }
        await runRows(ctx, server, uncached, opts.seconds);
      },
    );
    rows.push(...uncached);

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

  // Targets.
  const byId = (id: string) => rows.find((r) => r.id === id);
  const targets: Target[] = [];
  // The ratio of the summed throughputs over the rounds; each round's ratio is shown too.
  const rounds = [
    [byId('tasks-daemon'), byId('tasks-bare')],
    [byId('tasks-daemon-2'), byId('tasks-bare-2')],
  ].filter(([d, b]) => d?.result && b?.result) as [HttpRow, HttpRow][];
  const rps = (row: HttpRow) => row.result!.requestsPerSecond;
  const daemonSum = rounds.reduce((sum, [d]) => sum + rps(d), 0);
  const bareSum = rounds.reduce((sum, [, b]) => sum + rps(b), 0);
  const ratio = rounds.length > 0 ? daemonSum / bareSum : undefined;
  targets.push({
    name: 'GET /tasks throughput, daemon / bare node:http',
    goal: `>= ${TARGET_RATIO.toFixed(2)}`,
    value:
      ratio === undefined
        ? 'not measured'
        : `${ratio.toFixed(2)} (${fmt(daemonSum / rounds.length, 0)} / ${fmt(bareSum / rounds.length, 0)} req/s; ` +
          `rounds ${rounds.map(([d, b]) => (rps(d) / rps(b)).toFixed(2)).join(', ')})`,
    pass: ratio === undefined ? undefined : ratio >= TARGET_RATIO,
    disturbed: rounds.some(([d, b]) => isDisturbed(d.otherLoad) || isDisturbed(b.otherLoad)),
  });
  // Cross-check independent of the load generator: server CPU per request. When wrk saturates its core
  // before the bare server does, the throughput ratio above flatters the daemon; this one does not.
  const cpuPerRequest = (row: HttpRow) =>
    (row.otherLoad?.serverCpuSeconds ?? Number.NaN) / row.result!.requests;
  const daemonCpu = rounds.reduce((sum, [d]) => sum + cpuPerRequest(d), 0) / rounds.length;
  const bareCpu = rounds.reduce((sum, [, b]) => sum + cpuPerRequest(b), 0) / rounds.length;
  const cpuRatio =
    rounds.length > 0 && Number.isFinite(bareCpu / daemonCpu) ? bareCpu / daemonCpu : undefined;
  const loadBound = rounds.some(([, b]) => (b.otherLoad?.clientPercent ?? 0) >= 95);
  targets.push({
    name: 'GET /tasks server CPU per request, bare / daemon (cross-check)',
    goal: `>= ${TARGET_RATIO.toFixed(2)}`,
    value:
      cpuRatio === undefined
        ? 'not measured'
        : `${cpuRatio.toFixed(2)} (${fmt(bareCpu * 1e6, 0)} / ${fmt(daemonCpu * 1e6, 0)} us of CPU 0 per request)`,
    pass: cpuRatio === undefined ? undefined : cpuRatio >= TARGET_RATIO,
    disturbed: rounds.some(([d, b]) => isDisturbed(d.otherLoad) || isDisturbed(b.otherLoad)),
  });
  if (loadBound) {
    notes.push(
      'wrk used >= 95% of its core against the bare server: the load generator, not the server, limited the ' +
        'bare baseline, so the throughput ratio flatters the daemon; the CPU-per-request cross-check does not.',
    );
  }
  for (const row of rows.filter((r) => r.id.startsWith('stacks-'))) {
    targets.push({
      name: `p99 ${row.label}, ${row.server}`,
      goal: `<= ${TARGET_P99_MS} ms`,
      value: row.result ? `${fmt(row.result.p99ms, 2)} ms` : 'not measured',
      pass: row.result ? row.result.p99ms <= TARGET_P99_MS : undefined,
      disturbed: isDisturbed(row.otherLoad),
    });
  }

  // Report.
  log(
    `\n=== results (${startedAt.toISOString().slice(0, 10)}, ${tool}, ${CONNECTIONS} connections, ${opts.seconds} s each) ===\n`,
  );
  log(ingestTable('Indexer ingest', ingest, dataset?.build));
  if (dataset?.cached) log('(HTTP data set reused from an earlier run: its build rate is not re-measured)');
  log('');
  log(httpTable(rows));
  reportTargets('Target', targets, [...rows, ...ingest], notes);
  const floor = byId('floor-stacks-bare');
  if (floor?.result) {
    notes.push(
      `floor: the bare node:http server answering with the same ${fmt(floor.bodyBytes, 0)}-byte body as ` +
        `${floor.paths[0]} manages ${fmt(floor.result.requestsPerSecond, 0)} req/s, p99 ${fmt(floor.result.p99ms, 2)} ms ` +
        `at ${CONNECTIONS} connections: no server on this machine does better for a body of that size.`,
    );
  }
  reportSummary(targets, notes);
  for (const p of profiles) log(`\n${formatProfile(p)}`);

  const out = {
    date: startedAt.toISOString(),
    quick: opts.quick,
    secondsPerMeasurement: opts.seconds,
    warmupSeconds: ctx.warmupSeconds,
    /** Seconds spent waiting for a quiet machine and repeating disturbed measurements. */
    patienceSecondsUsed: patienceSecondsUsed(),
    connections: CONNECTIONS,
    tool,
    machine: host,
    pinning: { server: 'taskset -c 0', loadGenerator: 'taskset -c 1' },
    dataset: dataset
      ? { params: dataset.params, key: dataset.key, cached: dataset.cached, build: dataset.build }
      : null,
    ingest,
    http: rows,
    targets,
    notes,
    profiles,
    failures,
  };
  writeResults(join(RESULTS, 'latest.json'), out);
  rmSync(tmp, { recursive: true, force: true });
  return exitCode();
}

// --- the PostgreSQL run ----------------------------------------------------------------------------------

/** The targets for the PostgreSQL store. */
const PG_TARGET_EVENTS_PER_SECOND = 10_000;
const PG_TARGET_P99_MS = 15;

/**
 * npm run bench -- --postgres: the ingest and read measurements on PostgreSQL. Every store lives in a
 * throwaway database (bench_<id>_<n>) that is dropped at the end, also when a measurement fails or the run
 * is interrupted. The daemon is started with --database-url, pinned like the SQLite runs; the PostgreSQL
 * server is not ours to pin, its CPU is counted as part of the benchmark and shown in the "PG CPU" column.
 */
async function mainPostgres(opts: Options): Promise<number> {
  const startedAt = new Date();
  const tool = pickTool();
  const tmp = mkdtempSync(join(tmpdir(), 'node-daemon-bench-pg-'));
  mkdirSync(RESULTS, { recursive: true });
  const dbs = new ThrowawayDatabases(opts.serverUrl);
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    warn(`\nbench: ${signal}: dropping the throwaway databases bench_${dbs.runId}_*`);
    void dbs.dropAll().finally(() => {
      rmSync(tmp, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await postgresRun(opts, dbs, tmp, startedAt, tool);
  } finally {
    const left = await dbs.dropAll();
    if (left.length > 0) warn(`bench: could not drop ${left.join(', ')}: drop them by hand`);
    else log(`dropped the throwaway databases bench_${dbs.runId}_*`);
    rmSync(tmp, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function postgresRun(
  opts: Options,
  dbs: ThrowawayDatabases,
  tmp: string,
  startedAt: Date,
  tool: ReturnType<typeof pickTool>,
): Promise<number> {
  const notes: string[] = [];
  if (tool === 'autocannon') {
    warn('!! wrk (/usr/bin/wrk) is missing: falling back to autocannon; throughput is UNDERSTATED.');
    notes.push('autocannon fallback: wrk was missing; throughput is understated.');
  }
  const ctx: LoadContext = { tool, root: ROOT, tmp, warmupSeconds: 2 };
  const ingestEvents = opts.quick ? 50_000 : 200_000;
  const datasetParams = { tasks: 1000, nodes: opts.quick ? 100 : 1000, stacksPerNode: 1000, seed: 42 };

  log(`node-daemon benchmark on PostgreSQL, ${startedAt.toISOString()}${opts.quick ? ' (quick)' : ''}`);
  const host = machine(ROOT);
  let server: string;
  try {
    server = await dbs.version();
  } catch (error) {
    fail(`connecting to ${redactUrl(opts.serverUrl)}`, error);
    return 1;
  }
  log(`code: ${host.commit}; ${host.cpus} x ${host.cpuModel}, Node ${host.node}, ${host.wrk}`);
  log(`database: ${server} at ${redactUrl(opts.serverUrl)}; throwaway databases bench_${dbs.runId}_*`);
  log(`load generator: ${tool}, ${CONNECTIONS} connections, ${opts.seconds} s per measurement`);
  if (countUserAsOurs('postgres')) {
    notes.push(
      'the PostgreSQL server (every process of the OS user postgres) is counted as part of the benchmark, ' +
        'not as other load; its CPU is the "PG CPU" column. It is not pinned: it shares both cores with the ' +
        'daemon (CPU 0) and wrk (CPU 1). Another client of the same server would be counted as ours too.',
    );
  } else {
    notes.push('no OS user postgres here: the PostgreSQL server CPU counts as other load.');
  }

  // 1. Ingest, each run into a fresh database.
  log(
    `\n[1/4] indexer apply rate into PostgreSQL (${ingestEvents.toLocaleString('en-US')} events per run, transactions of ${PAGE_SIZE.toLocaleString('en-US')}, a fresh database each)`,
  );
  const fresh = () => dbs.fresh();
  const ingest = await measureIngest([
    ['mixed stream, in memory', () => measureApply('mixed stream', mixedStream(ingestEvents, 7), fresh)],
    [
      'StackCreatedEvent only, in memory',
      () => measureApply('StackCreatedEvent only', stacksStream(ingestEvents, 8), fresh),
    ],
    [
      'mixed stream, JSONL replay',
      () => measureReplay('mixed stream (replay)', mixedStream(ingestEvents, 7), fresh),
    ],
  ]);

  // 2. The data set, built every run (the database is thrown away).
  const stacks = datasetParams.nodes * datasetParams.stacksPerNode;
  log(
    `\n[2/4] data set: ${datasetParams.tasks.toLocaleString('en-US')} tasks, ${stacks.toLocaleString('en-US')} stacks over ` +
      `${datasetParams.nodes.toLocaleString('en-US')} nodes, through applyPage into PostgreSQL`,
  );
  let dataset: Awaited<ReturnType<typeof preparePostgresDataset>> | undefined;
  try {
    dataset = await preparePostgresDataset(dbs, join(tmp, 'data'), datasetParams, (line) => log(`  ${line}`));
    const b = dataset.build!;
    log(
      `  built: ${fmt(b.eventsPerSecond, 0)} events/s through applyPage (${fmt(b.seconds, 1)} s), fills set in ` +
        `${fmt(b.fillSeconds, 1)} s, VACUUM ANALYZE stacks ${fmt(dataset.analyzeSeconds, 1)} s`,
    );
  } catch (error) {
    fail('building the data set', error);
  }
  notes.push(
    'already_computed_units has no event: after ingest, one UPDATE sets it to ' +
      'div(num_compute_units * ((stack_small_id * 37) % 101), 100), the same values as the SQLite data set; ' +
      'then VACUUM ANALYZE stacks (the UPDATE leaves a dead version of every row). Everything else went ' +
      'through applyPage.',
  );

  // 3 and 4. HTTP.
  const rows: HttpRow[] = [];
  if (dataset) {
    const ds = dataset;
    const stackRows = (cache: string) => stackRowsFor(ds.params.nodes, cache);
    log(
      `\n[3/4] daemon --database-url, response cache on (default --cache-mb), pinned to CPU 0; ${tool} on CPU 1`,
    );
    const tasksDaemon: HttpRow = { id: 'tasks-daemon', label: 'GET /tasks', server: '', paths: ['/tasks'] };
    const cached = [...stackRows('cached'), tasksDaemon];
    const tasksFile = join(tmp, 'tasks.json');
    let tasksBody: Buffer | undefined;
    await withServer(
      () => startDaemon(ROOT, { dataDir: ds.dir, databaseUrl: ds.url }),
      'the daemon on PostgreSQL',
      async (server) => {
        for (const row of cached) row.server = server.name;
        try {
          await checkDaemon(server, ds, cached);
          tasksBody = (await getJson(`${server.origin}/tasks`)).body;
          writeFileSync(tasksFile, tasksBody);
        } catch (error) {
          fail('checking what the daemon serves', error);
          return;
        }
        await runRows(ctx, server, cached, opts.seconds);
      },
    );
    rows.push(...cached);
    // GET /tasks against the bare server, one round: a reference, not a PostgreSQL target.
    const tasksBare: HttpRow = {
      id: 'tasks-bare',
      label: 'GET /tasks (same bytes)',
      server: 'bare node:http',
      paths: ['/tasks'],
    };
    if (tasksBody) {
      log('\n      bare node:http baseline for /tasks, pinned to CPU 0 (the daemon is stopped)');
      await withServer(
        () => startBare(ROOT, tasksFile),
        'the bare server',
        async (server) => {
          tasksBare.bodyBytes = tasksBody!.length;
          tasksBare.items = tasksDaemon.items;
          await runRows(ctx, server, [tasksBare], opts.seconds);
        },
      );
    } else {
      tasksBare.error = 'not run: the daemon did not serve the body';
    }
    rows.push(tasksBare);

    log('\n[4/4] daemon --database-url, response cache off (--cache-mb 0), pinned to CPU 0');
    const all = stackRows('uncached');
    const uncached = [
      all[2]!,
      all[3]!,
      { id: 'tasks-daemon-uncached', label: 'GET /tasks', server: '', paths: ['/tasks'] },
    ];
    await withServer(
      () => startDaemon(ROOT, { dataDir: ds.dir, databaseUrl: ds.url, cacheMb: 0 }),
      'the daemon on PostgreSQL with --cache-mb 0',
      async (server) => {
        for (const row of uncached) row.server = server.name;
        try {
          await checkDaemon(server, ds, uncached);
        } catch (error) {
          fail('checking what the uncached daemon serves', error);
          return;
        }
        await runRows(ctx, server, uncached, opts.seconds);
      },
    );
    rows.push(...uncached);
  }

  // Targets.
  const targets: Target[] = [];
  const ingestRows: { name: string; eventsPerSecond: number; otherLoad?: ForeignLoad }[] = [
    ...ingest.map((r) => ({
      name: `${r.name}, ${r.path}`,
      eventsPerSecond: r.eventsPerSecond,
      otherLoad: r.otherLoad,
    })),
    ...(dataset?.build
      ? [
          {
            name: 'HTTP data set build, applyPage into one growing database',
            eventsPerSecond: dataset.build.eventsPerSecond,
          },
        ]
      : []),
  ];
  for (const r of ingestRows) {
    targets.push({
      name: `ingest ${r.name}`,
      goal: `>= ${fmt(PG_TARGET_EVENTS_PER_SECOND, 0)} events/s`,
      value: `${fmt(r.eventsPerSecond, 0)} events/s`,
      pass: r.eventsPerSecond >= PG_TARGET_EVENTS_PER_SECOND,
      disturbed: isDisturbed(r.otherLoad),
    });
  }
  for (const row of rows.filter((r) => r.id.startsWith('stacks-'))) {
    targets.push({
      name: `p99 ${row.label}, ${row.server}`,
      goal: `<= ${PG_TARGET_P99_MS} ms`,
      value: row.result ? `${fmt(row.result.p99ms, 2)} ms` : 'not measured',
      pass: row.result ? row.result.p99ms <= PG_TARGET_P99_MS : undefined,
      disturbed: isDisturbed(row.otherLoad),
    });
  }
  const byId = (id: string) => rows.find((r) => r.id === id);
  const td = byId('tasks-daemon')?.result;
  const tb = byId('tasks-bare')?.result;
  if (td && tb) {
    notes.push(
      `GET /tasks, daemon on PostgreSQL / bare node:http, one round: ${(td.requestsPerSecond / tb.requestsPerSecond).toFixed(2)} ` +
        `(${fmt(td.requestsPerSecond, 0)} / ${fmt(tb.requestsPerSecond, 0)} req/s); a reference, not a PostgreSQL target.`,
    );
  }

  // Report.
  log(
    `\n=== results on PostgreSQL (${startedAt.toISOString().slice(0, 10)}, ${tool}, ${CONNECTIONS} connections, ${opts.seconds} s each) ===\n`,
  );
  log(ingestTable('Indexer ingest into PostgreSQL', ingest, dataset?.build, 'PG CPU'));
  log('');
  log(httpTable(rows, 'PG CPU'));
  reportTargets('PostgreSQL target', targets, [...rows, ...ingest], notes);
  reportSummary(targets, notes);

  const out = {
    date: startedAt.toISOString(),
    engine: 'postgres',
    database: { server, url: redactUrl(opts.serverUrl), throwawayPrefix: `bench_${dbs.runId}_` },
    quick: opts.quick,
    secondsPerMeasurement: opts.seconds,
    warmupSeconds: ctx.warmupSeconds,
    patienceSecondsUsed: patienceSecondsUsed(),
    connections: CONNECTIONS,
    tool,
    machine: host,
    pinning: { server: 'taskset -c 0', loadGenerator: 'taskset -c 1', database: 'not pinned' },
    dataset: dataset
      ? {
          params: dataset.params,
          database: dataset.key,
          build: dataset.build,
          analyzeSeconds: dataset.analyzeSeconds,
        }
      : null,
    ingest,
    http: rows,
    targets,
    notes,
    failures,
  };
  const file = join(RESULTS, 'latest-postgres.json');
  writeResults(file, out);
  return exitCode();
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    warn(`bench: ${(error as Error)?.stack ?? String(error)}`);
    process.exit(1);
  },
);
