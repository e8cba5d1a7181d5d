/**
 * A quick ingest probe for work on the indexer's hot path on a shared machine:
 * node bench/ingest-probe.ts [events] [--stacks] [--postgres]. It applies the mixed stream (or stacks only)
 * into a fresh store, page by page with the indexer's applyPage, and prints events per second of wall time
 * and per second of this process's CPU time spent in applyPage (the generator excluded). On SQLite the CPU
 * figure is the one to compare between changes: other processes on the machine do not move it. It counts
 * every thread of the process (V8's GC helpers, the WAL checkpointer); the main thread's own CPU is printed
 * beside it, the bound on wall time when the other threads find a free core. The store is instrumented as
 * the daemon's is (its calls timed into the metrics). On PostgreSQL the server's CPU is not in it; read the
 * wall figure there.
 */
import { pino } from 'pino';
import { applyPage } from '../src/indexer/apply.ts';
import { mixedStream, pages, stacksStream } from './events.ts';
import { asTheDaemonHasIt, freshSqlite, PAGE_SIZE } from './ingest.ts';
import { DEFAULT_SERVER_URL, ThrowawayDatabases } from './postgres.ts';

const args = process.argv.slice(2);
const events = Number(args.find((a) => /^\d+$/.test(a)) ?? 200_000);
const pg = args.includes('--postgres');
const stacksOnly = args.includes('--stacks');
const dbs = new ThrowawayDatabases(process.env.DATABASE_URL ?? DEFAULT_SERVER_URL);
const { store: opened, dispose } = pg ? await dbs.fresh() : await freshSqlite();
const store = asTheDaemonHasIt(opened);
const log = pino({ level: 'silent' });
try {
  let wallNs = 0n;
  let cpuUs = 0;
  let mainUs = 0;
  let applied = 0;
  const stream = stacksOnly ? stacksStream(events, 8) : mixedStream(events, 7);
  for (const page of pages(stream, PAGE_SIZE, 'bench:probe')) {
    const cpu0 = process.cpuUsage();
    const main0 = process.threadCpuUsage();
    const t0 = process.hrtime.bigint();
    applied += (await applyPage(store, 'bench:probe', page, log)).applied;
    wallNs += process.hrtime.bigint() - t0;
    const cpu = process.cpuUsage(cpu0);
    const main = process.threadCpuUsage(main0);
    cpuUs += cpu.user + cpu.system;
    mainUs += main.user + main.system;
  }
  const wall = Number(wallNs) / 1e9;
  console.log(
    `${pg ? 'postgres' : 'sqlite'} ${stacksOnly ? 'stacks' : 'mixed'} ${events} events (${applied} applied): ` +
      `${Math.round(events / wall)} ev/s wall (${wall.toFixed(2)} s), ` +
      `${Math.round(events / (cpuUs / 1e6))} ev/s of CPU in applyPage ` +
      `(${Math.round(events / (mainUs / 1e6))} ev/s of the main thread's)`,
  );
} finally {
  await dispose();
  await dbs.dropAll();
}
