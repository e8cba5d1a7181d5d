import type { Logger } from 'pino';
import type { IndexerCounts, Store } from '../store/store.ts';
import { addCounts, applyPage, type EventSource, emptyCounts } from './apply.ts';

/** Capped exponential back-off with full jitter: never a hot loop, never a thundering herd. */
export function backoffDelay(attempt: number, baseMs = 250, capMs = 30_000, random = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.max(baseMs / 2, Math.floor(random() * ceiling));
}

export interface CatchUpProgress {
  pages: number;
  totals: IndexerCounts;
  cursor: string | null;
}

/**
 * Reads pages from the source, starting at the store's saved cursor for it, and applies each one until the
 * source has no more. Every page commits with its cursor, so an interruption loses nothing.
 */
export async function catchUp(
  store: Store,
  source: EventSource,
  log: Logger,
  options: { signal?: AbortSignal; onPage?: (progress: CatchUpProgress) => void } = {},
): Promise<CatchUpProgress> {
  const saved = await store.getCursor(source.id);
  const progress: CatchUpProgress = { pages: 0, totals: emptyCounts(), cursor: saved?.cursor ?? null };
  for (;;) {
    if (options.signal?.aborted) break;
    const page = await source.readPage(progress.cursor);
    if (page.events.length > 0 || page.nextCursor !== progress.cursor) {
      addCounts(progress.totals, await applyPage(store, source.id, page, log));
      progress.pages += 1;
      progress.cursor = page.nextCursor;
      options.onPage?.(progress);
    }
    if (!page.hasMore) break;
  }
  return progress;
}

/**
 * Follows a live source for the daemon's lifetime: catches up, waits idleMs, and again. Errors back off
 * (capped, jittered) and are reported through onError; the daemon keeps serving reads meanwhile.
 */
export async function follow(
  store: Store,
  source: EventSource,
  log: Logger,
  options: { signal: AbortSignal; idleMs?: number; onError?: (error: unknown) => void },
): Promise<void> {
  let failures = 0;
  while (!options.signal.aborted) {
    let wait = options.idleMs ?? 1000;
    try {
      await catchUp(store, source, log, { signal: options.signal });
      failures = 0;
    } catch (error) {
      failures += 1;
      wait = backoffDelay(failures);
      options.onError?.(error);
      log.error({ err: error, retryInMs: wait, failures }, 'indexer page failed; retrying');
    }
    await sleep(wait, options.signal);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
