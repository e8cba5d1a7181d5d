/**
 * npm run bench:autopilot: the cost of an autopilot pass at 10,000 and at 1,000,000 stacks, in one run.
 *
 * Each store holds N stacks, almost all of them needing nothing from the operator's node (used below the
 * fill threshold, never used, settled and claimed, settling, disputed, claimed directly, other nodes'),
 * plus the same work at every N: 25 stacks filled to 97 %, 25 idle for 2 h, 20 attestations asked of the
 * node, 100 claimable tickets. A pass's cost must follow that work, not N: the ratio of the 1,000,000
 * pass to the 10,000 one should be about 1.
 *
 * What goes through the store's own code: the tasks, the chain's epoch, the whole action set (putStack,
 * putTicket, addStackUsage, putStackHash) and the tickets that asked the node to attest (try-settle,
 * another attester's attestation, the claim), so the attestation requests are what the indexer leaves.
 * The bulk is inserted directly, one transaction, with the values the store writes for each state (the
 * running hash of every stack our node served included).
 *
 * Timed: Autopilot.run() in dry-run mode (the pending records, the four store questions, the plan with a
 * stub chain whose simulation costs nothing, the next timer), the stores' passes interleaved so the
 * machine's drift hits both sizes alike; then each store question alone. Printed with the query plans;
 * written to bench/results/autopilot.json (autopilot-postgres.json). See docs/PERFORMANCE.md. The stores'
 * contents are in bench/autopilot/population.ts; the pass, its check and its questions in pass.ts there.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import type { Autopilot } from '../src/operations/autopilot.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import { SQLITE_FILE, SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';
import { benchArgs } from './args.ts';
import { autopilotOver, checkPlan, postgresPlans, QUESTIONS, sqlitePlans } from './autopilot/pass.ts';
import {
  type Counts,
  fill,
  POPULATION,
  postgresWriter,
  sqliteWriter,
  WORK,
  WORK_STACKS,
} from './autopilot/population.ts';
import { countUserAsOurs, type ForeignLoad, foreignLoad, snapshot, waitForQuiet } from './cpu.ts';
import { releaseOnSignal } from './interrupt.ts';
import { DEFAULT_SERVER_URL, ThrowawayDatabases } from './postgres.ts';
import { exitCode, fail, fmt, log, machine, percentile, table, writeResults } from './report.ts';

const ROOT = resolve(import.meta.dirname, '..');
const RESULTS = join(ROOT, 'bench/results');

const HELP = `Usage: npm run bench:autopilot -- [--postgres [--database-url URL]] [--sizes N,N] [--passes N]

  --postgres       PostgreSQL instead of SQLite: one throwaway database bench_<id>_<n> per size, dropped
                   at the end (also on failure or SIGINT); default server ${DEFAULT_SERVER_URL}
  --sizes N,N      stacks per store (default 10000,1000000); the ratio is the last over the first
  --passes N       timed passes per store (default 100, after 10 untimed)`;

/** One store, of n stacks, with its autopilot, its query plans and its timings. */
interface Sized {
  n: number;
  store: Store;
  autopilot: Autopilot;
  counts: Counts;
  loadSeconds: number;
  plans: Record<string, string>;
  passes: number[];
  questions: Record<string, number[]>;
  release(): Promise<void>;
}

/** The p-th percentile (report.ts's, nearest rank) of samples in any order. */
const quantile = (samples: readonly number[], p: number) =>
  percentile(
    [...samples].sort((a, b) => a - b),
    p,
  );
const median = (s: readonly number[]) => quantile(s, 50);

function options() {
  const values = benchArgs('bench:autopilot', HELP, {
    postgres: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    sizes: { type: 'string', default: '10000,1000000' },
    passes: { type: 'string', default: '100' },
  });
  const sizes = values.sizes.split(',').map(Number);
  const passes = Number(values.passes);
  if (
    sizes.some((n) => !Number.isInteger(n) || n < WORK_STACKS + 100) ||
    !Number.isInteger(passes) ||
    passes < 1
  ) {
    process.stderr.write(
      `bench: --sizes takes integers of at least ${WORK_STACKS + 100}, --passes a positive integer\n`,
    );
    process.exit(2);
  }
  if (values['database-url'] !== undefined && !values.postgres) {
    process.stderr.write('bench: --database-url needs --postgres\n');
    process.exit(2);
  }
  return {
    postgres: values.postgres === true,
    serverUrl: values['database-url'] ?? DEFAULT_SERVER_URL,
    sizes,
    passes,
  };
}

async function main(): Promise<number> {
  const opts = options();
  const engine = opts.postgres ? 'postgres' : 'sqlite';
  const tmp = mkdtempSync(join(tmpdir(), 'node-daemon-bench-autopilot-'));
  const dbs = opts.postgres ? new ThrowawayDatabases(opts.serverUrl) : undefined;
  const unhook = releaseOnSignal("dropping the run's databases", async () => dbs?.dropAll(), tmp);
  const sized: Sized[] = [];
  const info = machine(ROOT);
  const results: Record<string, unknown> = { engine, machine: info, work: WORK, population: POPULATION };
  try {
    if (dbs) {
      log(`PostgreSQL: ${await dbs.version()}`);
      countUserAsOurs('postgres');
    }
    log(
      `autopilot pass on ${engine}: sizes ${opts.sizes.map((n) => n.toLocaleString('en-US')).join(', ')}; ` +
        `${opts.passes} passes each; code ${info.commit}, ${info.cpus} x ${info.cpuModel}, Node ${info.node}`,
    );
    for (const n of opts.sizes) sized.push(dbs ? await sizedPostgres(n, dbs) : await sizedSqlite(n, tmp));
    const { waited, load } = await timePasses(sized, opts.passes);
    printTimes(sized, waited, load);
    Object.assign(results, resultsOf(sized, load));
    mkdirSync(RESULTS, { recursive: true });
    writeResults(
      join(RESULTS, engine === 'postgres' ? 'autopilot-postgres.json' : 'autopilot.json'),
      results,
    );
  } catch (error) {
    fail('the autopilot pass', error);
  } finally {
    for (const s of sized) await s.release().catch(() => undefined);
    await dbs?.dropAll();
    rmSync(tmp, { recursive: true, force: true });
    unhook();
  }
  return exitCode();
}

/** A store of n stacks in a throwaway database: filled, vacuumed and analysed, reopened, its plan checked. */
async function sizedPostgres(n: number, dbs: ThrowawayDatabases): Promise<Sized> {
  const started = performance.now();
  const { name, url } = await dbs.create();
  const loading = await PostgresStore.open({ url, applicationName: 'node-daemon bench' });
  const counts = await fill(loading, await postgresWriter(url), n);
  await loading.close();
  // What autovacuum does after a bulk load, done now: the plans do not depend on when it runs.
  const client = new Client({ connectionString: url });
  await client.connect();
  await client.query('VACUUM ANALYZE');
  await client.end();
  const store = await PostgresStore.open({ url, applicationName: 'node-daemon bench' });
  const release = async () => {
    await store.close();
    await dbs.drop(name);
  };
  return sizedOf(n, store, counts, started, release, () => postgresPlans(url));
}

/** A store of n stacks in a directory of tmp: filled, closed and opened again as a daemon restarts. */
async function sizedSqlite(n: number, tmp: string): Promise<Sized> {
  const started = performance.now();
  const dir = join(tmp, `n${n}`);
  mkdirSync(dir);
  const loading = new SqliteStore({ dataDir: dir });
  const counts = await fill(loading, sqliteWriter(join(dir, SQLITE_FILE)), n);
  // A daemon restart: the store's PRAGMA optimize at close leaves the statistics the planner then uses.
  await checkPlan(autopilotOver(loading));
  await loading.close();
  const store = new SqliteStore({ dataDir: dir });
  return sizedOf(
    n,
    store,
    counts,
    started,
    () => store.close(),
    async () => sqlitePlans(join(dir, SQLITE_FILE)),
  );
}

/** The store ready for timing: its autopilot, its plan checked, its query plans; says how long it took. */
async function sizedOf(
  n: number,
  store: Store,
  counts: Counts,
  started: number,
  release: () => Promise<void>,
  plans: () => Promise<Record<string, string>>,
): Promise<Sized> {
  const loadSeconds = (performance.now() - started) / 1000;
  const autopilot = autopilotOver(store);
  await checkPlan(autopilot);
  const entry: Sized = {
    n,
    store,
    autopilot,
    counts,
    loadSeconds,
    plans: await plans(),
    passes: [],
    questions: Object.fromEntries(Object.keys(QUESTIONS).map((q) => [q, []])),
    release,
  };
  log(
    `  ${n.toLocaleString('en-US')} stacks (${counts.tickets.toLocaleString('en-US')} tickets, ` +
      `${counts.askedOurs.toLocaleString('en-US')} of them asked our node to attest): built in ${fmt(loadSeconds, 1)} s`,
  );
  return entry;
}

/**
 * The timed passes, the stores' in turn, then each store question alone, after the wait for a quiet
 * machine; what other processes used meanwhile. Each store's plan is checked again after.
 */
async function timePasses(
  sized: Sized[],
  passes: number,
): Promise<{ waited: number | undefined; load: ForeignLoad | undefined }> {
  // Untimed passes right before the timed ones (after the wait for quiet, during which other clients of
  // the server may have taken its buffers): caches, JIT, and on PostgreSQL the switch to generic plans
  // after five executions.
  const waited = await waitForQuiet(undefined, 30);
  for (let k = 0; k < 10; k++) for (const s of sized) await s.autopilot.run();
  const before = snapshot();
  for (let k = 0; k < passes; k++) {
    for (const s of sized) {
      const t = performance.now();
      await s.autopilot.run();
      s.passes.push(performance.now() - t);
    }
  }
  for (let k = 0; k < passes; k++) {
    for (const s of sized) {
      for (const [name, ask] of Object.entries(QUESTIONS)) {
        const t = performance.now();
        await ask(s.store);
        s.questions[name]!.push(performance.now() - t);
      }
    }
  }
  const load = foreignLoad(before, snapshot());
  for (const s of sized) await checkPlan(s.autopilot);
  return { waited, load };
}

/** The table of the sizes and their ratio, what a pass is, the other load, and the plans. */
function printTimes(sized: Sized[], waited: number | undefined, load: ForeignLoad | undefined): void {
  const first = sized[0]!;
  const last = sized.at(-1)!;
  const ratio = (a: number, b: number) => `${fmt(a / b, 2)}x`;
  log('');
  log(
    table(
      ['stacks', 'tickets', 'median ms', 'p95 ms', 'min ms', ...Object.keys(QUESTIONS).map((q) => `${q} ms`)],
      [
        ...sized.map((s) => [
          fmt(s.n, 0),
          fmt(s.counts.tickets, 0),
          fmt(median(s.passes), 2),
          fmt(quantile(s.passes, 95), 2),
          fmt(Math.min(...s.passes), 2),
          ...Object.values(s.questions).map((q) => fmt(median(q), 3)),
        ]),
        [
          'ratio',
          '',
          ratio(median(last.passes), median(first.passes)),
          ratio(quantile(last.passes, 95), quantile(first.passes, 95)),
          ratio(Math.min(...last.passes), Math.min(...first.passes)),
          ...Object.keys(QUESTIONS).map((q) =>
            ratio(median(last.questions[q]!), median(first.questions[q]!)),
          ),
        ],
      ],
      new Set([0, 1, 2, 3, 4, 5, 6, 7, 8]),
    ),
  );
  log(
    `\nA pass: Autopilot.run() in dry-run mode (${WORK.fill + WORK.idle} settlements, ${WORK.attest} ` +
      `attestations, 1 claim of ${WORK.claim} planned, each simulated by a stub). Question columns: the store ` +
      'call alone, median.',
  );
  log(
    `other processes used ${load ? `${load.otherPercent}%` : '?'} of a core while timing` +
      `${load?.databasePercent === undefined ? '' : `, PostgreSQL ${load.databasePercent}%`}` +
      `${waited === undefined ? ' (the machine never went quiet: waited 30 s)' : ''}`,
  );
  for (const s of [first, last]) {
    log(`\nplans at ${s.n.toLocaleString('en-US')} stacks:`);
    for (const [name, plan] of Object.entries(s.plans)) log(`  ${name}: ${plan}`);
  }
}

/** The results file's fields beyond the run's: each size's timings and plans, the ratio, the other load. */
function resultsOf(sized: Sized[], load: ForeignLoad | undefined): Record<string, unknown> {
  const first = sized[0]!;
  const last = sized.at(-1)!;
  return {
    sizes: sized.map((s) => ({
      stacks: s.n,
      counts: s.counts,
      loadSeconds: s.loadSeconds,
      passMs: { median: median(s.passes), p95: quantile(s.passes, 95), min: Math.min(...s.passes) },
      passSamplesMs: s.passes.map((ms) => Math.round(ms * 1000) / 1000),
      questionMedianMs: Object.fromEntries(Object.entries(s.questions).map(([q, v]) => [q, median(v)])),
      plans: s.plans,
    })),
    ratio: {
      median: median(last.passes) / median(first.passes),
      p95: quantile(last.passes, 95) / quantile(first.passes, 95),
    },
    otherLoad: load,
  };
}

process.exitCode = await main();
