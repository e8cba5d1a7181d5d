import type { Logger } from 'pino';
import { type EventSource, type RawEvent, wasLogged } from '../chain/chain.ts';
import { backoffDelay } from '../internal/backoff.ts';
import { FailureLog } from '../internal/failure-log.ts';
import { Listeners } from '../internal/listeners.ts';
import { sameParameters } from '../protocol/constants.ts';
import { rawTransactionOf, transactionOf } from '../protocol/events.ts';
import type {
  Coordination,
  EventLookup,
  IndexerCounts,
  IndexerStore,
  Lease,
  ReadStore,
} from '../store/store.ts';

/** What the indexer asks of the store: its transactions and cursor, the chain state, its lease. */
export type IndexerDeps = IndexerStore & Coordination & Pick<ReadStore, 'getChainState'>;

import { addCounts, applyPage, emptyCounts } from './apply.ts';

/** How often a daemon that does not hold the indexer lease tries to take it. */
const LEASE_RETRY_MS = 1000;
/** How often waitFor re-reads the store, for events another daemon's indexer applies. */
const WAIT_POLL_MS = 100;

/** The most events one indexer transaction gathers from consecutive source pages while catching up. */
export const BATCH_EVENTS = 10_000;
/**
 * At the chain's head, the most events the live indexer applies in one transaction before it lets the
 * event loop answer the requests that arrived meanwhile (see catchUp). On SQLite a transaction is one
 * synchronous stretch: a second's worth of a busy chain (1,000 events, read in one wake-up) held every
 * read and usage report for 25 to 50 ms; 200 events still took 5 to 8 ms, and a usage report's p99 under
 * reads was 18 to 22 ms, 8 to 10 ms with 50. Twenty commits a second instead of five cost nothing visible.
 */
export const HEAD_CHUNK_EVENTS = 50;
/**
 * After a head chunk that held the loop throughout (SQLite's, synchronous), the indexer waits this many
 * times as long as the chunk took before the next: while a wake-up's events go in, it takes at most a
 * quarter of the loop, and the requests the rest.
 *
 * Going from one chunk to the next at once, the chunks held the loop for about 2.5 ms of every 3, and the
 * reads (read-turns.ts: turns of half a millisecond) queued behind a second's worth of them: a read p99 of
 * 25 to 65 ms with the stream alone. Waiting as long as the chunk (half the loop) brought that to 10 to 20
 * ms; three times as long (a quarter), in three alternating pairs of quick runs, took the read p99 at 100
 * reports/s with the stream from 12.6 to 16.2 ms down to 10.3 to 10.6 (DECISIONS.md, "At the chain's head
 * the indexer applies 50 events at a time, and pauses three times as long"). A second's 1,000 events, 20
 * chunks of about a millisecond, then go in over about 80 ms instead of 40: at the head the events have
 * waited up to a second for their wake-up, and a few more milliseconds cost nothing. Catching up (pages
 * with more behind them) does not wait at all. A chunk that waited on its store (PostgreSQL's round trips)
 * left the loop to the requests meanwhile, and its wall time is mostly the server's: pausing after it
 * slowed the indexer at 500 reports/s below the stream's rate.
 */
export const HEAD_PAUSE_FACTOR = 3;
/**
 * While requests arrive (catchUp's `busy`), catching up goes in transactions of at most this many events
 * too, each followed by a pause as long as it held the loop (CATCH_UP_BUSY_PAUSE_FACTOR). A catch-up batch
 * of BATCH_EVENTS in one transaction held the loop for a p99 of 224 to 345 ms on a slow VM, and every read
 * and usage report that arrived meanwhile waited that long (DECISIONS.md, "The indexer commits up to 10,000
 * events at a time while catching up").
 */
export const CATCH_UP_BUSY_CHUNK_EVENTS = 500;
/**
 * After a catch-up chunk that held the loop, the indexer waits this many times as long as it took: half
 * the loop to the requests, half to the backlog (at the head, HEAD_PAUSE_FACTOR gives the requests more,
 * as a second's events are few).
 */
export const CATCH_UP_BUSY_PAUSE_FACTOR = 1;
/** How recent a request must be for the daemon to count as serving (LiveIndexer.requestArrived). */
const REQUESTS_RECENT_MS = 100;

export interface CatchUpProgress {
  pages: number;
  totals: IndexerCounts;
  cursor: string | null;
  /** The source said it had nothing more: the cursor was at its head. */
  atHead: boolean;
}

function diffCounts(now: IndexerCounts, before: IndexerCounts): IndexerCounts {
  return {
    applied: now.applied - before.applied,
    duplicate: now.duplicate - before.duplicate,
    ignored: now.ignored - before.ignored,
    unknown: now.unknown - before.unknown,
    malformed: now.malformed - before.malformed,
    orphaned: now.orphaned - before.orphaned,
  };
}

/**
 * Reads pages from the source, starting at the store's saved cursor for it, and applies each one until the
 * source has no more. Every page commits with its cursor, so an interruption loses nothing.
 */
export async function catchUp(
  store: IndexerDeps,
  source: EventSource,
  log: Logger,
  options: {
    signal?: AbortSignal;
    onPage?: (progress: CatchUpProgress) => void;
    batchEvents?: number;
    /** At the head, apply at most this many events a transaction, yielding to the event loop between. */
    headChunkEvents?: number;
    /**
     * Whether requests are arriving: while they are, catching up goes in chunks too
     * (CATCH_UP_BUSY_CHUNK_EVENTS), asked before each batch.
     */
    busy?: () => boolean;
  } = {},
): Promise<CatchUpProgress> {
  const saved = await store.getCursor(source.id);
  // Epochs pass and parameters change without events: a page that only says so is committed too.
  let known = await store.getChainState();
  const batchEvents = options.batchEvents ?? BATCH_EVENTS;
  const progress: CatchUpProgress = {
    pages: 0,
    totals: emptyCounts(),
    cursor: saved?.cursor ?? null,
    atHead: false,
  };
  for (;;) {
    if (options.signal?.aborted) break;
    // While the source has more, its pages are gathered into one transaction of up to batchEvents: a
    // commit costs about the same whatever it holds, so catching up goes several times faster, and a
    // crash still loses nothing (the batch commits with the cursor after its last page).
    const batch = await source.readPage(progress.cursor);
    while (batch.hasMore && batch.events.length < batchEvents && !options.signal?.aborted) {
      const next = await source.readPage(batch.nextCursor);
      batch.events.push(...next.events);
      batch.nextCursor = next.nextCursor;
      batch.hasMore = next.hasMore;
      batch.epoch = next.epoch ?? batch.epoch;
      batch.parameters = next.parameters ?? batch.parameters;
    }
    const news =
      (batch.epoch !== undefined && batch.epoch !== known.epoch) ||
      (batch.parameters !== undefined && !sameParameters(batch.parameters, known.parameters));
    if (batch.events.length > 0 || batch.nextCursor !== progress.cursor || news) {
      // At the head, what arrived since the last read goes in short transactions, so that requests are
      // answered between them; so does a catch-up batch while requests arrive. Each but the last saves the
      // cursor just past its last event, so a crash between them resumes exactly there. A source without a
      // cursor for each event keeps the one before the page: after a crash the page is read again and the
      // events already applied are skipped as duplicates (their keys are claimed, or their rows exist).
      const busy = batch.hasMore && options.busy?.() === true;
      const chunks = !batch.hasMore
        ? headChunks(batch.events, options.headChunkEvents)
        : busy
          ? headChunks(batch.events, CATCH_UP_BUSY_CHUNK_EVENTS)
          : [batch.events];
      const pauseFactor = batch.hasMore ? CATCH_UP_BUSY_PAUSE_FACTOR : HEAD_PAUSE_FACTOR;
      let committed = progress.cursor;
      let stopped = false;
      for (const [i, events] of chunks.entries()) {
        const last = i === chunks.length - 1;
        if (!last) committed = events.at(-1)?.cursor ?? committed;
        const started = performance.now();
        // Whether the loop had a turn during the chunk: on PostgreSQL it waits for the server, and the
        // requests are served meanwhile; on SQLite it runs from start to end without one.
        let turned = false;
        const turn = setImmediate(() => {
          turned = true;
        });
        if (last) batch.events = events;
        // Every chunk prices its events with the parameters the source reported for the batch, as the
        // whole batch would; only the last moves the epoch (what settled before it becomes claimable then).
        const page = last
          ? batch
          : { events, nextCursor: committed, hasMore: true, parameters: batch.parameters };
        addCounts(progress.totals, await applyPage(store, source.id, page, log));
        clearImmediate(turn);
        // Stopped: each chunk committed its own cursor, so the rest waits for the next run.
        if (!last && options.signal?.aborted) {
          stopped = true;
          break;
        }
        // The next chunk follows at once after the last at the head; a busy catch-up pauses after every
        // chunk, as the next batch's first follows it. A chunk that held the loop gives it back for longer.
        if (last && !busy) continue;
        if (turned) await new Promise((resolve) => setImmediate(resolve));
        else await pause((performance.now() - started) * pauseFactor);
      }
      if (stopped) {
        progress.cursor = committed;
        options.onPage?.(progress);
        break;
      }
      known = { epoch: batch.epoch ?? known.epoch, parameters: batch.parameters ?? known.parameters };
      progress.pages += 1;
      progress.cursor = batch.nextCursor;
      options.onPage?.(progress);
    }
    if (!batch.hasMore) {
      progress.atHead = true;
      break;
    }
  }
  return progress;
}

/**
 * Waits at least `ms`, on timers, so that the loop serves its sockets meanwhile. A timer counts from the
 * start of the loop's current turn (libuv's cached time), so it can fire early by as much as the turn had
 * already run: the wait is taken again for what is left.
 */
async function pause(ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now()) {
    await new Promise((resolve) => setTimeout(resolve, left));
  }
}

/**
 * A head batch cut into runs of at most `max` events, each ending where a transaction's events end (a
 * claim's stacks make one node event only when they are applied together); one run when `max` is unset.
 */
function headChunks(events: RawEvent[], max: number | undefined): RawEvent[][] {
  if (max === undefined || events.length <= max) return [events];
  const digest = (e: RawEvent | undefined) =>
    e?.decoded !== undefined ? transactionOf(e.decoded) : rawTransactionOf(e?.raw);
  /** Whether a cut before event i would split a transaction. */
  const inside = (i: number) =>
    i < events.length && digest(events[i]) !== undefined && digest(events[i]) === digest(events[i - 1]);
  const chunks: RawEvent[][] = [];
  let start = 0;
  while (events.length - start > max) {
    // Back to the start of the transaction the cut would split; one longer than max stays whole.
    let end = start + max;
    while (end > start && inside(end)) end -= 1;
    if (end === start) for (end = start + max; inside(end); ) end += 1;
    chunks.push(events.slice(start, end));
    start = end;
  }
  chunks.push(events.slice(start));
  return chunks;
}

/**
 * The indexer of a live chain source, for the daemon's lifetime: catches up, then waits for new events
 * (a wake-up from the chain, or idleMs), and again. Errors back off (capped, jittered); the daemon keeps
 * serving reads meanwhile. Writes wait on it until their transaction's events are applied.
 *
 * Daemons sharing a store take turns: only the holder of the lease `indexer:<source>` applies pages; the
 * others try to take it every second, so when the holder dies another resumes from the saved cursor.
 */
export class LiveIndexer {
  readonly #store: IndexerDeps;
  readonly #source: EventSource;
  readonly #log: Logger;
  /** Its failures, said once per reason (an unreachable source fails at every retry). */
  readonly #failures: FailureLog;
  readonly #idleMs: number;
  readonly #stop = new AbortController();
  readonly #waiters = new Set<() => void>();
  readonly #applied = new Listeners();
  #wake: (() => void) | undefined;
  #woken = false;
  #running: Promise<void> | undefined;
  #lease: (Lease & { signal: AbortSignal }) | undefined;
  readonly #batchEvents: number;
  readonly #onCounts: ((counts: IndexerCounts) => void) | undefined;
  readonly #onError: (() => void) | undefined;
  /** The last error and when it happened, for status reports; cleared by the next good page. */
  lastError: { message: string; at: string } | undefined;
  /** When the source last said it had no more events: the indexer was at the chain head then. */
  lastCaughtUpAt: number | undefined;
  /** When the last HTTP request arrived (requestArrived), for catching up in chunks while they do. */
  #lastRequest = Number.NEGATIVE_INFINITY;

  constructor(
    store: IndexerDeps,
    source: EventSource,
    log: Logger,
    options: {
      idleMs?: number;
      batchEvents?: number;
      onCounts?: (counts: IndexerCounts) => void;
      onError?: () => void;
    } = {},
  ) {
    this.#store = store;
    this.#source = source;
    this.#log = log;
    this.#failures = new FailureLog(log);
    this.#idleMs = options.idleMs ?? 1000;
    this.#batchEvents = options.batchEvents ?? BATCH_EVENTS;
    this.#onCounts = options.onCounts;
    this.#onError = options.onError;
  }

  get sourceId(): string {
    return this.#source.id;
  }

  /** A request arrived: for REQUESTS_RECENT_MS the indexer catches up in chunks (catchUp's `busy`). */
  requestArrived(): void {
    this.#lastRequest = performance.now();
  }

  /** Whether a request arrived within REQUESTS_RECENT_MS: catching up then goes in chunks. */
  get serving(): boolean {
    return performance.now() - this.#lastRequest < REQUESTS_RECENT_MS;
  }

  /** Whether this process holds the indexer lease (and so is the one applying events). */
  get isLeader(): boolean {
    return this.#lease !== undefined;
  }

  /** Seconds since the indexer was last at the chain head (undefined: not yet since start). */
  lagSeconds(now = Date.now()): number | undefined {
    return this.lastCaughtUpAt === undefined ? undefined : Math.max(0, (now - this.lastCaughtUpAt) / 1000);
  }

  /** Events the chain has after the saved cursor, counted up to `cap` (reads pages from the source). */
  async pendingEvents(cap = 10_000): Promise<{ count: number; capped: boolean }> {
    let cursor = (await this.#store.getCursor(this.#source.id))?.cursor ?? null;
    let count = 0;
    for (;;) {
      const page = await this.#source.readPage(cursor);
      count += page.events.length;
      if (!page.hasMore || count >= cap) return { count, capped: page.hasMore };
      cursor = page.nextCursor;
    }
  }

  start(): void {
    this.#running ??= this.#loop();
  }

  /** New events may be available: read now instead of at the next idle tick. */
  wake(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /** Resolves true once every one of these events is applied, false after timeoutMs. */
  waitFor(events: readonly EventLookup[], timeoutMs: number): Promise<boolean> {
    return this.waitUntil(() => this.#store.hasEvents(events), timeoutMs);
  }

  /** Resolves true once check() holds, re-asked after each page and on a poll; false after timeoutMs. */
  async waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
    if (await check()) return true;
    return new Promise<boolean>((resolve) => {
      const ask = () => {
        check().then(
          (done) => done && finish(true),
          () => undefined,
        );
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      // Another daemon's indexer may be the one applying them: read the store too, not only our pages.
      const poll = setInterval(ask, WAIT_POLL_MS);
      const finish = (result: boolean) => {
        clearTimeout(timer);
        clearInterval(poll);
        this.#waiters.delete(ask);
        resolve(result);
      };
      this.#waiters.add(ask);
      this.wake();
    });
  }

  /** Calls back after every committed page; returns the function that stops it. */
  onApplied(listener: () => void): () => void {
    return this.#applied.on(listener);
  }

  /** Stops after the page in progress (which commits with its cursor). */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
    await this.#lease?.release();
    this.#lease = undefined;
    await this.#source.close?.();
  }

  async #loop(): Promise<void> {
    const signal = this.#stop.signal;
    let failures = 0;
    while (!signal.aborted) {
      let wait = this.#idleMs;
      this.#woken = false;
      let following = false;
      try {
        const lease = this.#lease ?? (await this.#takeLease());
        if (lease === undefined) {
          following = true;
          wait = LEASE_RETRY_MS;
          // The holder indexes into the shared store; at its head, so is this daemon (for /ready).
          if ((await this.pendingEvents(1)).count === 0) this.lastCaughtUpAt = Date.now();
        } else {
          await this.#catchUp(lease.signal);
        }
        if (failures > 0) this.#failures.recovered({ failures }, 'the indexer reads and applies again');
        failures = 0;
        this.lastError = undefined;
      } catch (error) {
        failures += 1;
        this.#onError?.();
        wait = backoffDelay(failures);
        const message = (error as Error).message;
        this.lastError = { message, at: new Date().toISOString() };
        // The chain adapter has said its own failures (an unreachable fullnode) once already.
        if (wasLogged(error))
          this.#log.debug({ reason: message, retryInMs: wait, failures }, 'indexer page failed; retrying');
        else
          this.#failures.failed(
            message,
            'error',
            { err: error, retryInMs: wait, failures },
            'indexer page failed; retrying',
          );
      }
      if (!following && this.#woken && failures === 0) continue;
      // While backing off from errors, or waiting for the lease, wake-ups do not shorten the wait.
      await this.#sleep(wait, !following && failures === 0);
    }
  }

  /** Applies pages until the source is at its head, or stop(), or the lease is lost. */
  async #catchUp(leaseLost: AbortSignal): Promise<void> {
    const signal = this.#stop.signal;
    let last = emptyCounts();
    const progress = await catchUp(this.#store, this.#source, this.#log, {
      batchEvents: this.#batchEvents,
      headChunkEvents: HEAD_CHUNK_EVENTS,
      busy: () => this.serving,
      signal: AbortSignal.any([signal, leaseLost]),
      onPage: ({ totals }) => {
        this.#onCounts?.(diffCounts(totals, last));
        last = { ...totals };
        for (const check of this.#waiters) check();
        this.#applied.emit();
      },
    });
    if (!signal.aborted && progress.atHead) this.lastCaughtUpAt = Date.now();
  }

  /** Tries to take the indexer lease; its signal aborts (stopping after the page in progress) if lost. */
  async #takeLease(): Promise<(Lease & { signal: AbortSignal }) | undefined> {
    const lease = await this.#store.tryLease(`indexer:${this.#source.id}`);
    if (lease === undefined) return undefined;
    const lost = new AbortController();
    const held = { ...lease, signal: lost.signal };
    this.#lease = held;
    this.#log.info({ source: this.#source.id }, 'took the indexer lease: this daemon indexes');
    lease.lost.then(() => {
      if (this.#lease !== held) return;
      this.#lease = undefined;
      lost.abort();
      this.#log.warn({ source: this.#source.id }, 'lost the indexer lease; trying to take it again');
    }, ignore);
    return held;
  }

  /** Waits ms, or until stop(); when wakeable, a wake-up ends the wait early. */
  async #sleep(ms: number, wakeable: boolean): Promise<void> {
    const signal = this.#stop.signal;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
      if (wakeable) this.#wake = done;
    });
    this.#wake = undefined;
  }
}

const ignore = () => undefined;
