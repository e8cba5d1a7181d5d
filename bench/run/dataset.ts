import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { SQLITE_FILE, SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { datasetStack, EventFactory } from '../events.ts';
import { applyStream } from '../ingest.ts';
import { type ThrowawayDatabases, withClient } from '../postgres.ts';

/** The HTTP benchmarks' data set: tasks, and stacks spread evenly over nodes. */
export interface DatasetParams {
  tasks: number;
  nodes: number;
  stacksPerNode: number;
  seed: number;
}

export interface Dataset {
  dir: string;
  params: DatasetParams;
  key: string;
  /** True when an earlier run's data set was reused. */
  cached: boolean;
  /** The ingest of this data set through applyPage, when it was built in this run. */
  build?: { events: number; seconds: number; eventsPerSecond: number; fillSeconds: number };
}

/**
 * Applies the data set's events (tasks, then stacks over the nodes) through the indexer's applyPage into
 * the store open() gives, logging progress every 10 s, and closes the store; both engines build it this way.
 */
async function ingestDataset(
  open: () => Store | Promise<Store>,
  into: string,
  params: DatasetParams,
  log: (line: string) => void,
): Promise<{ events: number; seconds: number }> {
  const total = params.tasks + params.nodes * params.stacksPerNode;
  log(`data set: building ${total.toLocaleString('en-US')} events through applyPage into ${into}`);
  const store = await open();
  const factory = new EventFactory(params.seed);
  function* stream(): Generator<unknown> {
    for (let t = 1; t <= params.tasks; t++) yield factory.task(t);
    const stacks = params.nodes * params.stacksPerNode;
    for (let s = 1; s <= stacks; s++) yield factory.stack(datasetStack(s, params.nodes, params.tasks));
  }
  let lastLog = performance.now();
  try {
    return await applyStream(store, 'bench:dataset', stream(), (events) => {
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        log(`  ${events.toLocaleString('en-US')} / ${total.toLocaleString('en-US')} events`);
      }
    });
  } finally {
    await store.close();
  }
}

/** The fill fraction (in hundredths) the data set gives stack s: (s * 37) % 101, so 0 to 100. */
export const fillPercent = (s: number) => (s * 37) % 101;

/** How many of node's stacks have a fill fraction of at least minPercent/100. */
export function expectedFilled(params: DatasetParams, node: number, minPercent: number): number {
  let n = 0;
  for (let i = 0; i < params.stacksPerNode; i++) {
    if (fillPercent(node + i * params.nodes) >= minPercent) n += 1;
  }
  return n;
}

/**
 * Sources whose change makes a cached data set stale: the schema, and the bench code that generates the
 * events and the fills. (A change elsewhere in the store is not fingerprinted: other engineers change it
 * often, and a rebuild costs minutes; the daemon applies any new migration to the cached store on start.)
 */
function codeFingerprint(root: string): string {
  const hash = createHash('sha256');
  const files = [
    ...readdirSync(join(root, 'src/store/sqlite/migrations'))
      .sort()
      .map((f) => join('src/store/sqlite/migrations', f)),
    'bench/events.ts',
    'bench/run/dataset.ts',
  ];
  for (const file of files) hash.update(file).update(readFileSync(join(root, file)));
  return hash.digest('hex').slice(0, 12);
}

/**
 * Builds (or reuses) the data set under resultsDir: tasks and stacks go through applyPage exactly as the
 * indexer writes them; then one direct UPDATE gives the stacks a deterministic spread of
 * already_computed_units, which has no event (it stands in for the usage reporting of a later issue).
 */
export async function prepareDataset(
  root: string,
  resultsDir: string,
  params: DatasetParams,
  log: (line: string) => void,
): Promise<Dataset> {
  const shape = `t${params.tasks}-n${params.nodes}-s${params.stacksPerNode}-r${params.seed}`;
  const key = `${shape}-${codeFingerprint(root)}`;
  const dir = join(resultsDir, `dataset-${key}`);
  const marker = join(dir, 'complete.json');
  if (existsSync(marker)) {
    log(`data set: reusing ${dir}`);
    return { dir, params, key, cached: true };
  }
  // One data set per shape is kept (the full one is hundreds of megabytes): older code's go.
  if (existsSync(resultsDir)) {
    for (const name of readdirSync(resultsDir)) {
      if (name.startsWith(`dataset-${shape}-`))
        rmSync(join(resultsDir, name), { recursive: true, force: true });
    }
  }
  mkdirSync(dir, { recursive: true });
  const built = await ingestDataset(() => new SqliteStore({ dataDir: dir }), dir, params, log);

  const started = performance.now();
  const db = new DatabaseSync(join(dir, SQLITE_FILE));
  try {
    db.exec('PRAGMA journal_mode = WAL');
    // One statement; every value stays an INTEGER (all are far below 2^53 - 1), as the store would bind it.
    db.exec(`UPDATE stacks SET already_computed_units =
      (num_compute_units * ((stack_small_id * 37) % 101)) / 100`);
    const check = db
      .prepare('SELECT count(*) AS n, max(typeof(already_computed_units)) AS t FROM stacks')
      .get() as { n: number; t: string };
    if (check.n !== params.nodes * params.stacksPerNode || check.t !== 'integer') {
      throw new Error(`data set check failed: ${JSON.stringify(check)}`);
    }
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  const fillSeconds = (performance.now() - started) / 1000;
  writeFileSync(marker, `${JSON.stringify({ params, key, built, fillSeconds }, null, 2)}\n`);
  return {
    dir,
    params,
    key,
    cached: false,
    build: { ...built, eventsPerSecond: built.events / built.seconds, fillSeconds },
  };
}

/**
 * The HTTP data set in a new database of dbs: the same events as prepareDataset (tasks, then stacks spread
 * over nodes) through applyPage into a PostgresStore, then one UPDATE giving the same already_computed_units
 * as the SQLite data set (integer division, as SQLite's), then VACUUM ANALYZE of stacks. Never cached: the
 * database is dropped at the end of the run. dataDir is the daemon's data directory (its token file).
 */
export async function preparePostgresDataset(
  dbs: ThrowawayDatabases,
  dataDir: string,
  params: DatasetParams,
  log: (line: string) => void,
): Promise<Dataset & { url: string; analyzeSeconds: number }> {
  const { name, url } = await dbs.create();
  const built = await ingestDataset(
    () => PostgresStore.open({ url, applicationName: 'node-daemon bench' }),
    `database ${name}`,
    params,
    log,
  );

  const fillStarted = performance.now();
  let analyzeSeconds = 0;
  await withClient(url, async (c) => {
    // div() is integer division, like SQLite's INTEGER / INTEGER; plain / on NUMERIC would round instead.
    await c.query(`UPDATE stacks SET already_computed_units =
      div(num_compute_units * ((stack_small_id * 37) % 101), 100)`);
    const { rows } = await c.query<{ n: string; top: string }>(
      'SELECT count(*) AS n, max(already_computed_units)::text AS top FROM stacks',
    );
    if (Number(rows[0]!.n) !== params.nodes * params.stacksPerNode) {
      throw new Error(`data set check failed: ${JSON.stringify(rows[0])}`);
    }
    // The UPDATE left a dead version of every row; what autovacuum would do in time, done now, so the
    // reads do not depend on when autovacuum happens to run.
    const started = performance.now();
    await c.query('VACUUM ANALYZE stacks');
    analyzeSeconds = (performance.now() - started) / 1000;
  });
  const fillSeconds = (performance.now() - fillStarted) / 1000 - analyzeSeconds;
  return {
    dir: dataDir,
    url,
    params,
    key: name,
    cached: false,
    analyzeSeconds,
    build: { ...built, eventsPerSecond: built.events / built.seconds, fillSeconds },
  };
}
