/**
 * node bench/probes/head-probe.ts [--before N] [--stacks N] [--rounds N]: what an event costs the SQLite
 * store at the chain's head, where the live indexer commits at most HEAD_CHUNK_EVENTS (50) a transaction. A
 * fresh store first takes N events of the mixed stream (default 100,000) in the catch-up's transactions of
 * 10,000; then new stacks over 20 nodes, the live stream of bench:mixed, in head transactions through
 * applyPage. Prints the WAL frames each head transaction wrote (read off the WAL index header) and the wall
 * and main-thread CPU time an event, for each round (default 3), each on a fresh store.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPage } from '../../src/indexer/apply.ts';
import { BATCH_EVENTS, HEAD_CHUNK_EVENTS } from '../../src/indexer/run.ts';
import { SQLITE_FILE, SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { benchArgs, usageError } from '../args.ts';
import { datasetStack, EventFactory, mixedStream, pages } from '../events.ts';
import { silentLogger } from '../ingest.ts';

const NAME = 'bench/probes/head-probe.ts';
const HELP = `Usage: node bench/probes/head-probe.ts [--before N] [--stacks N] [--rounds N]

What an event costs the SQLite store at the chain's head: N events of the mixed stream first (--before,
default 100000) in transactions of ${BATCH_EVENTS}, then --stacks new stacks (default 15000) over 20 nodes in
transactions of ${HEAD_CHUNK_EVENTS}. Prints WAL frames a head transaction, and wall and main-thread CPU an
event, for each of --rounds fresh stores (default 3).`;
const flags = benchArgs(NAME, HELP, {
  before: { type: 'string' },
  stacks: { type: 'string' },
  rounds: { type: 'string' },
});
const count = (flag: 'before' | 'stacks' | 'rounds', fallback: number, least: number): number => {
  const value = Number(flags[flag] ?? fallback);
  if (!Number.isInteger(value) || value < least)
    usageError(NAME, `--${flag} is a whole number from ${least}`);
  return value;
};
const before = count('before', 100_000, 0);
const stacks = count('stacks', 15_000, 1);
const rounds = count('rounds', 3, 1);

/** New stacks over 20 nodes, ids past any the mixed stream gave, as users buy them from peers. */
function* newStacks(n: number): Generator<unknown> {
  const f = new EventFactory(9);
  for (let s = 1; s <= n; s++) yield f.stack(datasetStack(1_000_000 + s, 20, 5));
}

/** The WAL's valid frames, from the WAL index header (mxFrame: offset 16, native byte order). */
function framesOf(fd: number, header: Buffer): number {
  readSync(fd, header, 0, 48, 0);
  return header.readUInt32LE(16);
}

for (let round = 1; round <= rounds; round++) {
  const dir = mkdtempSync(join(tmpdir(), 'node-daemon-bench-head-'));
  const store = new SqliteStore({ dataDir: dir });
  try {
    for (const page of pages(mixedStream(before, 7), BATCH_EVENTS, 'bench:before')) {
      await applyPage(store, 'bench:before', page, silentLogger);
    }
    const fd = openSync(join(dir, `${SQLITE_FILE}-shm`), 'r');
    const header = Buffer.alloc(48);
    let frames = 0;
    let measured = 0;
    let applied = 0;
    let wallNs = 0n;
    let cpuUs = 0;
    try {
      for (const page of pages(newStacks(stacks), HEAD_CHUNK_EVENTS, 'bench:head')) {
        const frames0 = framesOf(fd, header);
        const cpu0 = process.threadCpuUsage();
        const started = process.hrtime.bigint();
        applied += (await applyPage(store, 'bench:head', page, silentLogger)).applied;
        wallNs += process.hrtime.bigint() - started;
        const cpu = process.threadCpuUsage(cpu0);
        cpuUs += cpu.user + cpu.system;
        const frames1 = framesOf(fd, header);
        // A checkpoint that restarted the WAL meanwhile leaves no count for this transaction.
        if (frames1 >= frames0) {
          frames += frames1 - frames0;
          measured += 1;
        }
      }
    } finally {
      closeSync(fd);
    }
    if (applied !== stacks) throw new Error(`applied ${applied} of ${stacks} new stacks`);
    console.log(
      `round ${round}: ${(frames / measured).toFixed(1)} WAL frames a head transaction (${measured} counted), ` +
        `${(Number(wallNs) / 1000 / stacks).toFixed(1)} µs wall and ${(cpuUs / stacks).toFixed(1)} µs ` +
        'main-thread CPU an event',
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
