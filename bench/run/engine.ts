/**
 * The store engines npm run bench measures, described by what sets their runs apart: how a fresh store is
 * made and disposed of, how the HTTP data set is prepared, which measurements and targets apply, how the
 * output names the engine and where the results go. bench/run.ts is the one run that uses them.
 */
import { join } from 'node:path';
import { redactUrl } from '../../src/store/postgres/migrations.ts';
import { countUserAsOurs } from '../cpu.ts';
import { type FreshStore, freshSqlite } from '../ingest.ts';
import { ThrowawayDatabases } from '../postgres.ts';
import { fail, log, warn } from '../report.ts';
import { type Dataset, type DatasetParams, prepareDataset, preparePostgresDataset } from './dataset.ts';

export type EngineName = 'sqlite' | 'postgres';

/** The HTTP data set, ready for the daemon. */
export type PreparedDataset = Dataset & {
  /** The database the daemon serves (--database-url); without one it serves the SQLite file in dir. */
  url?: string;
  /** Seconds VACUUM ANALYZE of stacks took after the fill (PostgreSQL). */
  analyzeSeconds?: number;
};

export interface Engine {
  /** The engine's name where the output gives one ("on PostgreSQL"); SQLite, the default, goes unnamed. */
  name?: string;
  /** Says, in the ingest heading, what each ingest run writes into ("a fresh database each"). */
  ingestInto?: string;
  /** Prefix of the run's temp directory. */
  tmpPrefix: string;
  /** The results file, under bench/results. */
  resultsFile: string;
  /** Whether --profile (the daemon under node --cpu-prof) works (options() refuses it otherwise); the results then list the profiles. */
  profiles: boolean;
  /** Heading of the database server's CPU column, for an engine whose server is processes of its own. */
  databaseColumn?: string;
  /** The results' pinning of the database server, for an engine that has one. */
  databasePinning?: string;
  http: {
    /** GET /tasks before the /stacks rows on the daemon with its cache (else after them). */
    tasksFirst: boolean;
    /** Also the floor: the bare server answering with the bytes of the fixed node's /stacks (no target). */
    floor: boolean;
  };
  targets: {
    /**
     * GET /tasks throughput, daemon / bare node:http, at least this (and the server CPU per request the
     * other way round, as a cross-check), over two daemon/bare rounds. Undefined: one round, reported in a
     * note as a reference.
     */
    tasksRatio?: number;
    /**
     * Every timed ingest run of the streams (200,000 events; 50,000 with --quick) at least this many events/s
     * (issue 13); undefined: none. The JIT-cold first run is shown and not judged.
     */
    streamEventsPerSecond?: number;
    /** The data set's build (1,001,000 events into one growing store) at least this many events/s. */
    buildEventsPerSecond?: number;
    /** Cached GET /stacks/nodes/{fixed} p99 at most this times the bare server's with the same bytes. */
    cachedStacksP99VsBare?: number;
    /** Uncached GET /stacks/nodes/{rotating ids} (--cache-mb 0) p99 at most this many ms (issue 13). */
    uncachedRotatingP99Ms?: number;
    /**
     * A node's 1,000-stack list body rebuilt by the store after a usage report and after an indexer page,
     * p50 at most this many ms each (issue 13's cheap miss; bench/body-build.ts). Undefined: shown only.
     */
    bodyBuildP50Ms?: number;
    /** The p99 of every /stacks measurement at most this many ms. */
    stacksP99Ms: number;
  };
  /** A note on how the data set got its already_computed_units (they have no event). */
  datasetNote: string;
  /**
   * Checks the engine's server answers, once the run has started; pushes notes about it. Returns the
   * heading's lines about it and the results' fields, or undefined (the failure recorded) when it does not.
   */
  connect?(notes: string[]): Promise<{ lines: string[]; results: Record<string, unknown> } | undefined>;
  /** A fresh, empty store for one ingest run. */
  fresh(): Promise<FreshStore>;
  /** Builds (or reuses) the HTTP data set; tmp is the run's temp directory. */
  prepare(params: DatasetParams, tmp: string, log: (line: string) => void): Promise<PreparedDataset>;
  /** The data set as the results file records it. */
  datasetResults(dataset: PreparedDataset): Record<string, unknown>;
  /**
   * What the run created beyond its temp directory, dropped at the end of the run, also after a failure or
   * on SIGINT/SIGTERM; what says so on a signal.
   */
  release?: { what: string; run(): Promise<void> };
}

/** " on PostgreSQL": how headings and labels name a named engine. */
export const onEngine = (engine: Engine) => (engine.name ? ` on ${engine.name}` : '');

/** SQLite: stores in temp directories, the data set cached under bench/results. */
function sqlite(root: string, resultsDir: string): Engine {
  return {
    tmpPrefix: 'node-daemon-bench-',
    resultsFile: 'latest.json',
    profiles: true,
    http: { tasksFirst: true, floor: true },
    targets: {
      tasksRatio: 0.7,
      stacksP99Ms: 10,
      streamEventsPerSecond: 60_000,
      cachedStacksP99VsBare: 1.3,
      uncachedRotatingP99Ms: 50,
      bodyBuildP50Ms: 1,
    },
    datasetNote:
      'already_computed_units has no event: after ingest, one direct UPDATE of the SQLite file sets ' +
      'already_computed_units = num_compute_units * ((stack_small_id * 37) % 101) / 100. It models the usage ' +
      'reporting that arrives in a later issue; everything else went through applyPage.',
    fresh: freshSqlite,
    prepare: (params, _tmp, say) => prepareDataset(root, resultsDir, params, say),
    datasetResults: (ds) => ({ params: ds.params, key: ds.key, cached: ds.cached, build: ds.build }),
  };
}

/**
 * PostgreSQL: every store lives in a throwaway database (bench_<id>_<n>) on the server at serverUrl,
 * dropped at the end, also when a measurement fails or the run is interrupted. The daemon is started with
 * --database-url; the server is not ours to pin, its CPU is counted as part of the benchmark ("PG CPU").
 * The targets are the for the PostgreSQL store.
 */
function postgres(serverUrl: string): Engine {
  const dbs = new ThrowawayDatabases(serverUrl);
  const where = redactUrl(serverUrl);
  return {
    name: 'PostgreSQL',
    ingestInto: 'a fresh database each',
    tmpPrefix: 'node-daemon-bench-pg-',
    resultsFile: 'latest-postgres.json',
    profiles: false,
    databaseColumn: 'PG CPU',
    databasePinning: 'not pinned',
    http: { tasksFirst: false, floor: false },
    targets: { streamEventsPerSecond: 25_000, buildEventsPerSecond: 10_000, stacksP99Ms: 15 },
    datasetNote:
      'already_computed_units has no event: after ingest, one UPDATE sets it to ' +
      'div(num_compute_units * ((stack_small_id * 37) % 101), 100), the same values as the SQLite data set; ' +
      'then VACUUM ANALYZE stacks (the UPDATE leaves a dead version of every row). Everything else went ' +
      'through applyPage.',
    async connect(notes) {
      let server: string;
      try {
        server = await dbs.version();
      } catch (error) {
        fail(`connecting to ${where}`, error);
        return undefined;
      }
      if (countUserAsOurs('postgres')) {
        notes.push(
          'the PostgreSQL server (every process of the OS user postgres) is counted as part of the benchmark, ' +
            'not as other load; its CPU is the "PG CPU" column. It is not pinned: it shares both cores with the ' +
            'daemon (CPU 0) and wrk (CPU 1). Another client of the same server would be counted as ours too.',
        );
      } else {
        notes.push('no OS user postgres here: the PostgreSQL server CPU counts as other load.');
      }
      return {
        lines: [`database: ${server} at ${where}; throwaway databases bench_${dbs.runId}_*`],
        results: {
          engine: 'postgres',
          database: { server, url: where, throwawayPrefix: `bench_${dbs.runId}_` },
        },
      };
    },
    fresh: () => dbs.fresh(),
    prepare: (params, tmp, say) => preparePostgresDataset(dbs, join(tmp, 'data'), params, say),
    datasetResults: (ds) => ({
      params: ds.params,
      database: ds.key,
      build: ds.build,
      analyzeSeconds: ds.analyzeSeconds,
    }),
    release: {
      what: `dropping the throwaway databases bench_${dbs.runId}_*`,
      async run() {
        const left = await dbs.dropAll();
        if (left.length > 0) warn(`bench: could not drop ${left.join(', ')}: drop them by hand`);
        else log(`dropped the throwaway databases bench_${dbs.runId}_*`);
      },
    },
  };
}

/** The engine --engine (or --postgres) names; at says where its data and its server are. */
export function engineFor(
  name: EngineName,
  at: { root: string; resultsDir: string; serverUrl: string },
): Engine {
  return name === 'postgres' ? postgres(at.serverUrl) : sqlite(at.root, at.resultsDir);
}
