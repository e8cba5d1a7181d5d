import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { applyPage } from '../src/indexer/apply.ts';
import { FileEventSource } from '../src/indexer/file-source.ts';
import { BATCH_EVENTS, catchUp } from '../src/indexer/run.ts';
import { createMetrics } from '../src/internal/metrics.ts';
import { instrumentStore } from '../src/store/instrument.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { IndexerCounts, Store } from '../src/store/store.ts';
import { pages } from './events.ts';

/** Events per indexer transaction: the live indexer's own batch size while it catches up. */
export const PAGE_SIZE = BATCH_EVENTS;
export const silentLogger = pino({ level: 'silent' });

export interface IngestResult {
  name: string;
  path: 'applyPage' | 'FileEventSource + catchUp';
  events: number;
  seconds: number;
  eventsPerSecond: number;
  counts: IndexerCounts;
  /** The process's first run, its JIT cold: shown, not judged against a target. */
  cold?: boolean;
}

function sum(into: IndexerCounts, more: IndexerCounts): void {
  for (const key of Object.keys(into) as (keyof IndexerCounts)[]) into[key] += more[key];
}

const zero = (): IndexerCounts => ({
  applied: 0,
  duplicate: 0,
  ignored: 0,
  unknown: 0,
  malformed: 0,
  orphaned: 0,
});

/**
 * Applies a stream page by page with the indexer's own applyPage. Only the applyPage calls are timed (the
 * generator's cost is not the indexer's). onProgress sees the events applied so far.
 */
export async function applyStream(
  store: Store,
  sourceId: string,
  stream: Iterable<unknown>,
  onProgress?: (events: number) => void,
): Promise<{ events: number; seconds: number; counts: IndexerCounts }> {
  const counts = zero();
  let events = 0;
  let ns = 0n;
  let pagesDone = 0;
  for (const page of pages(stream, PAGE_SIZE, sourceId)) {
    const started = process.hrtime.bigint();
    sum(counts, await applyPage(store, sourceId, page, silentLogger));
    ns += process.hrtime.bigint() - started;
    events += page.events.length;
    pagesDone += 1;
    if (onProgress && pagesDone % 50 === 0) onProgress(events);
  }
  return { events, seconds: Number(ns) / 1e9, counts };
}

function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `node-daemon-bench-${label}-`));
}

/** A fresh, empty store for one ingest run, and how to get rid of it afterwards. */
export interface FreshStore {
  store: Store;
  dispose(): Promise<void>;
}

/** A fresh SQLite store in a temp directory; dispose closes it and removes the directory. */
export async function freshSqlite(): Promise<FreshStore> {
  const dir = tempDir('store');
  const store = new SqliteStore({ dataDir: dir });
  return {
    store,
    async dispose() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let metrics: ReturnType<typeof createMetrics> | undefined;
/** The store as the daemon's indexer has it: every call timed into the daemon's metrics (src/daemon.ts). */
export function asTheDaemonHasIt(store: Store): Store {
  metrics ??= createMetrics();
  return instrumentStore(store, metrics);
}

/**
 * Into a fresh store (SQLite unless fresh says otherwise), instrumented as the daemon's is, with applyPage;
 * the store is disposed of afterwards.
 */
export async function measureApply(
  name: string,
  stream: Iterable<unknown>,
  fresh: () => Promise<FreshStore> = freshSqlite,
): Promise<IngestResult> {
  const { store, dispose } = await fresh();
  try {
    const { events, seconds, counts } = await applyStream(asTheDaemonHasIt(store), 'bench:memory', stream);
    return { name, path: 'applyPage', events, seconds, eventsPerSecond: events / seconds, counts };
  } finally {
    await dispose();
  }
}

/**
 * The replay command's path: the stream is written to a temp JSON-lines file (not timed), then a fresh store
 * catches up on a FileEventSource (timed: reading, JSON.parse, decoding, applying, committing).
 */
export async function measureReplay(
  name: string,
  stream: Iterable<unknown>,
  fresh: () => Promise<FreshStore> = freshSqlite,
): Promise<IngestResult> {
  const dir = tempDir('replay');
  const file = join(dir, 'events.jsonl');
  try {
    const out = createWriteStream(file);
    let events = 0;
    let chunk = '';
    for (const raw of stream) {
      chunk += `${JSON.stringify(raw)}\n`;
      events += 1;
      if (chunk.length > 1 << 20) {
        if (!out.write(chunk)) await once(out, 'drain');
        chunk = '';
      }
    }
    out.end(chunk);
    await once(out, 'finish');
    const { store, dispose } = await fresh();
    const source = new FileEventSource(file);
    try {
      const started = performance.now();
      const { totals } = await catchUp(store, source, silentLogger);
      const seconds = (performance.now() - started) / 1000;
      return {
        name,
        path: 'FileEventSource + catchUp',
        events,
        seconds,
        eventsPerSecond: events / seconds,
        counts: totals,
      };
    } finally {
      await source.close();
      await dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
