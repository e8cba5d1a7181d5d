/**
 * A quick ingest probe for work on the indexer's hot path on a shared machine,
 * node bench/probes/ingest-probe.ts [events] [--stacks] [--postgres] [--replay]: it applies the mixed stream
 * (or stacks only) into a fresh store, page by page with the indexer's applyPage, and prints events per
 * second of wall time and per second of this process's CPU time spent in applyPage (the generator excluded).
 * With --replay it writes the stream to a JSON-lines file first (not timed) and times `node-daemon replay`'s
 * path instead, catchUp on a FileEventSource: there the process's CPU includes the file reader's thread, and
 * the main thread's is the one that bounds the replay. On SQLite the CPU figure is the one to compare between
 * changes: other processes on the machine do not move it. It counts every thread of the process (V8's GC
 * helpers, the WAL checkpointer); the main thread's own CPU is printed beside it, the bound on wall time when
 * the other threads find a free core. The store is instrumented as the daemon's is (its calls timed into the
 * metrics), except with --replay, as the replay command's is not. On PostgreSQL the server's CPU is not in
 * it; read the wall figure there.
 */
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { pino } from 'pino';
import { applyPage } from '../../src/indexer/apply.ts';
import { FileEventSource } from '../../src/indexer/file-source.ts';
import { catchUp } from '../../src/indexer/run.ts';
import { benchArgsAndOperands, usageError } from '../args.ts';
import { mixedStream, pages, stacksStream } from '../events.ts';
import { asTheDaemonHasIt, freshSqlite, PAGE_SIZE } from '../ingest.ts';
import { DEFAULT_SERVER_URL, ThrowawayDatabases } from '../postgres.ts';

const NAME = 'bench/probes/ingest-probe.ts';
const HELP = `Usage: node bench/probes/ingest-probe.ts [EVENTS] [--stacks] [--postgres] [--replay] [--own-node N]

The indexer's apply rate in wall and in CPU seconds: EVENTS (default 200000) of the mixed stream into a fresh
store through applyPage.
  --stacks    StackCreatedEvent only instead of the mixed stream
  --postgres  into a throwaway database of the local PostgreSQL server (read the wall figure there)
  --replay    through node-daemon replay's path (a JSON-lines file, FileEventSource and catchUp)
  --own-node  record node events of this node (and everyone's) only, as a daemon with that node does;
              on SQLite it then prints the store's bytes and the node events' share of them`;
const { values: flags, positionals } = benchArgsAndOperands(NAME, HELP, {
  stacks: { type: 'boolean', default: false },
  postgres: { type: 'boolean', default: false },
  replay: { type: 'boolean', default: false },
  'own-node': { type: 'string' },
});
const events = Number(positionals[0] ?? 200_000);
if (!Number.isInteger(events) || events < 1 || positionals.length > 1) {
  usageError(NAME, `EVENTS is one whole number of events, not ${positionals.join(' ')}`);
}
const pg = flags.postgres;
const stacksOnly = flags.stacks;
const replay = flags.replay;
const dbs = new ThrowawayDatabases(process.env.DATABASE_URL ?? DEFAULT_SERVER_URL);
const { store: opened, dispose } = pg ? await dbs.fresh() : await freshSqlite();
// The replay command opens its store bare; the daemon's indexer has its calls timed into the metrics.
const store = replay ? opened : asTheDaemonHasIt(opened);
const log = pino({ level: 'silent' });
const ownNode = flags['own-node'];
if (ownNode !== undefined) await store.scopeNodeEvents([Number(ownNode)]);
/** What one timed span cost: wall time, the process's CPU and the main thread's. */
class Spent {
  wallNs = 0n;
  cpuUs = 0;
  mainUs = 0;

  async time(work: () => Promise<void>): Promise<void> {
    const cpu0 = process.cpuUsage();
    const main0 = process.threadCpuUsage();
    const t0 = process.hrtime.bigint();
    await work();
    this.wallNs += process.hrtime.bigint() - t0;
    const cpu = process.cpuUsage(cpu0);
    const main = process.threadCpuUsage(main0);
    this.cpuUs += cpu.user + cpu.system;
    this.mainUs += main.user + main.system;
  }
}

const file = replay ? join(mkdtempSync(join(tmpdir(), 'node-daemon-probe-')), 'events.jsonl') : undefined;
try {
  const spent = new Spent();
  let applied = 0;
  const stream = stacksOnly ? stacksStream(events, 8) : mixedStream(events, 7);
  if (file === undefined) {
    for (const page of pages(stream, PAGE_SIZE, 'bench:probe')) {
      await spent.time(async () => {
        applied += (await applyPage(store, 'bench:probe', page, log)).applied;
      });
    }
  } else {
    const out = createWriteStream(file);
    for (const raw of stream) if (!out.write(`${JSON.stringify(raw)}\n`)) await once(out, 'drain');
    out.end();
    await once(out, 'finish');
    const source = new FileEventSource(file);
    try {
      await spent.time(async () => {
        applied = (await catchUp(store, source, log)).totals.applied;
      });
    } finally {
      await source.close();
    }
  }
  const wall = Number(spent.wallNs) / 1e9;
  console.log(
    `${pg ? 'postgres' : 'sqlite'} ${stacksOnly ? 'stacks' : 'mixed'}${replay ? ' replay' : ''} ${events} events ` +
      `(${applied} applied): ${Math.round(events / wall)} ev/s wall (${wall.toFixed(2)} s), ` +
      `${Math.round(events / (spent.cpuUs / 1e6))} ev/s of CPU in ${replay ? 'catchUp' : 'applyPage'} ` +
      `(${Math.round(events / (spent.mainUs / 1e6))} ev/s of the main thread's)`,
  );
  if (!pg) console.log(storeBytes(store.location));
} finally {
  await dispose();
  await dbs.dropAll();
  if (file !== undefined) rmSync(join(file, '..'), { recursive: true, force: true });
}

/** The SQLite store's bytes in use (pages less the free list), and the node events' (table and indexes). */
function storeBytes(file: string): string {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const one = (sql: string) => Number(Object.values(db.prepare(sql).get() ?? {})[0]);
    const used = (one('PRAGMA page_count') - one('PRAGMA freelist_count')) * one('PRAGMA page_size');
    const events = one(
      "SELECT sum(pgsize) FROM dbstat WHERE name = 'node_events' OR name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'node_events' AND type = 'index')",
    );
    const rows = one('SELECT count(*) FROM node_events');
    return `store ${used} bytes, of which node events ${events} bytes (${((100 * events) / used).toFixed(1)} %, ${rows} rows)`;
  } finally {
    db.close();
  }
}
