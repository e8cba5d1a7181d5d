/**
 * Steps 3 and 4 of npm run bench: the daemon with its response cache (GET /tasks, the /stacks rows), the
 * bare node:http server with the bytes the daemon served, a second daemon/bare round of GET /tasks where its
 * ratio is a target, then the daemon without its cache.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadContext } from '../load.ts';
import { fail, log } from '../report.ts';
import { type Server, startBare, startDaemon } from '../servers.ts';
import { type Dataset, expectedFilled } from './dataset.ts';
import { type Engine, onEngine, type PreparedDataset } from './engine.ts';
import { type HttpRow, runRows } from './measure.ts';

const ROTATING_NODES = 50;

/** The node every fixed-node measurement reads. */
const FIXED_NODE = 7;

/** The daemon's start time and memory on the data set (the cached daemon of step 3). */
export interface Footprint {
  stacks: number;
  startToHealthMs: number;
  rssAfterStartMb: number;
  /** VmHWM after its load runs. */
  peakRssMb: number;
}

/** What the HTTP steps work with. */
export interface HttpRun {
  root: string;
  engine: Engine;
  ctx: LoadContext;
  ds: PreparedDataset;
  /** Seconds per measurement. */
  seconds: number;
  /** Where the daemon named `name` (cached, uncached) writes its profile; undefined without --profile. */
  profileDir(name: string): string | undefined;
}

/** A bare server's row, the daemon's row whose bytes it serves, and the file they go in once fetched. */
interface BareBaseline {
  row: HttpRow;
  from: HttpRow;
  file: string;
  body?: Buffer;
}

/** Steps 3 and 4; returns the rows in the order they ran, and the cached daemon's footprint. */
export async function measureHttp(run: HttpRun): Promise<{ rows: HttpRow[]; footprint?: Footprint }> {
  const flag = run.ds.url === undefined ? '' : ' --database-url';
  log(
    `\n[3/4] daemon${flag}, response cache on (default --cache-mb), pinned to CPU 0; ${run.ctx.tool} on CPU 1`,
  );
  const tasksDaemon: HttpRow = { id: 'tasks-daemon', label: 'GET /tasks', server: '', paths: ['/tasks'] };
  const stacksCached = stackRowsFor(run.ds.params.nodes, 'cached');
  const cached = run.engine.http.tasksFirst ? [tasksDaemon, ...stacksCached] : [...stacksCached, tasksDaemon];
  const bare = bareBaselines(run, tasksDaemon, stacksCached[0]!);
  const footprint = await daemonWithCache(run, cached, bare);
  const rows = [...cached, ...(await bareRuns(run, bare))];
  rows.push(...(await tasksSecondRound(run, tasksDaemon, bare[0]!)));
  log(`\n[4/4] daemon${flag}, response cache off (--cache-mb 0), pinned to CPU 0`);
  rows.push(...(await daemonWithoutCache(run)));
  return { rows, footprint };
}

/** The four /stacks rows: one node and a rotation over ROTATING_NODES, each with and without the filter. */
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

/** "the daemon on PostgreSQL" started on the data set, with cacheMb (the default when undefined). */
function daemonOn(run: HttpRun, cacheMb?: number, profile?: string): () => Promise<Server> {
  return () =>
    startDaemon(run.root, {
      dataDir: run.ds.dir,
      databaseUrl: run.ds.url,
      cacheMb,
      cpuProfDir: profile === undefined ? undefined : run.profileDir(profile),
    });
}

const daemonName = (run: HttpRun) => `the daemon${onEngine(run.engine)}`;

/** The bare server's rows: GET /tasks, and where the engine has one the floor (not a target) for /stacks. */
function bareBaselines(run: HttpRun, tasksDaemon: HttpRow, stacksFixed: HttpRow): BareBaseline[] {
  const bare: BareBaseline[] = [
    {
      row: {
        id: 'tasks-bare',
        label: 'GET /tasks (same bytes)',
        server: 'bare node:http',
        paths: ['/tasks'],
      },
      from: tasksDaemon,
      file: join(run.ctx.tmp, 'tasks.json'),
    },
  ];
  if (run.engine.http.floor) {
    // Not a target: the floor for a body of this size on this machine.
    bare.push({
      row: {
        id: 'floor-stacks-bare',
        label: `GET /stacks/nodes/${FIXED_NODE} (same bytes)`,
        server: 'bare node:http',
        paths: [`/stacks/nodes/${FIXED_NODE}`],
      },
      from: stacksFixed,
      file: join(run.ctx.tmp, 'stacks.json'),
    });
  }
  return bare;
}

/**
 * Step 3: the daemon with its response cache, checked, then loaded on each row. Keeps the bytes it served
 * for the bare server (exactly those, fetched once) and returns its footprint.
 */
async function daemonWithCache(
  run: HttpRun,
  cached: HttpRow[],
  bare: BareBaseline[],
): Promise<Footprint | undefined> {
  let footprint: Footprint | undefined;
  await withServer(daemonOn(run, undefined, 'cached'), daemonName(run), async (server) => {
    for (const row of cached) row.server = server.name;
    try {
      await checkDaemon(server, run.ds, cached);
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
    await runRows(run.ctx, server, cached, run.seconds);
    footprint = {
      stacks: run.ds.params.nodes * run.ds.params.stacksPerNode,
      startToHealthMs: Math.round(server.startedInMs),
      rssAfterStartMb: Math.round(started.rssMb),
      peakRssMb: Math.round(server.memory().peakMb),
    };
  });
  return footprint;
}

/** The bare server on each body the daemon served (a row says why when the daemon served none). */
async function bareRuns(run: HttpRun, bare: BareBaseline[]): Promise<HttpRow[]> {
  for (const b of bare) {
    if (b.body) {
      log(`\n      bare node:http baseline for ${b.row.paths[0]}, pinned to CPU 0 (the daemon is stopped)`);
      await withServer(
        () => startBare(run.root, b.file),
        'the bare server',
        async (server) => {
          b.row.bodyBytes = b.body!.length;
          b.row.items = b.from.items;
          await runRows(run.ctx, server, [b.row], run.seconds);
        },
      );
    } else {
      b.row.error = 'not run: the daemon did not serve the body';
    }
  }
  return bare.map((b) => b.row);
}

/**
 * Where the ratio is a target, a second daemon/bare round of GET /tasks: the machine is virtual and shared,
 * its speed drifts, and one turn each would let that drift decide the ratio.
 */
async function tasksSecondRound(
  run: HttpRun,
  tasksDaemon: HttpRow,
  tasksBare: BareBaseline,
): Promise<HttpRow[]> {
  if (run.engine.targets.tasksRatio === undefined || !tasksBare.body) return [];
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
  await withServer(daemonOn(run), `${daemonName(run)} (round 2)`, (server) =>
    runRows(run.ctx, server, [daemon2], run.seconds),
  );
  const bare2 = again(tasksBare.row, 'tasks-bare-2', 'GET /tasks (same bytes, round 2)');
  await withServer(
    () => startBare(run.root, tasksBare.file),
    'the bare server (round 2)',
    (server) => runRows(run.ctx, server, [bare2], run.seconds),
  );
  return [daemon2, bare2];
}

/** Step 4: the daemon without its cache, on the rotating /stacks rows and GET /tasks. */
async function daemonWithoutCache(run: HttpRun): Promise<HttpRow[]> {
  const all = stackRowsFor(run.ds.params.nodes, 'uncached');
  const uncached = [
    all[2]!,
    all[3]!,
    { id: 'tasks-daemon-uncached', label: 'GET /tasks', server: '', paths: ['/tasks'] },
  ];
  await withServer(daemonOn(run, 0, 'uncached'), `${daemonName(run)} with --cache-mb 0`, async (server) => {
    for (const row of uncached) row.server = server.name;
    try {
      await checkDaemon(server, run.ds, uncached);
    } catch (error) {
      fail('checking what the uncached daemon serves', error);
      return;
    }
    await runRows(run.ctx, server, uncached, run.seconds);
  });
  return uncached;
}

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

/** Runs body on a server start() started, then stops it; a failure to start or stop is recorded. */
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
