import type { Logger } from 'pino';
import type { Chain } from '../chain/chain.ts';
import type { LiveIndexer } from '../indexer/run.ts';
import type { NodeEventStore } from '../store/store.ts';

/** Whether the indexer serves fresh state: what /ready answers after the store check, and why not. */
export interface IndexerReadiness {
  ready: boolean;
  lag_seconds: number | null;
  detail: string;
  /** How soon asking again makes sense, when not ready. */
  retryAfterSeconds: number;
}

export function indexerReadiness(
  indexer: LiveIndexer | undefined,
  chain: Chain | undefined,
  maxLag: number,
): IndexerReadiness {
  const unavailable = chain?.unavailableReason?.();
  if (unavailable) return { ready: false, lag_seconds: null, detail: unavailable, retryAfterSeconds: 5 };
  if (!indexer) return { ready: true, lag_seconds: null, detail: 'no chain to follow', retryAfterSeconds: 0 };
  const lag = indexer.lagSeconds();
  if (lag === undefined) {
    return {
      ready: false,
      lag_seconds: null,
      detail: 'the indexer has not caught up with the chain since the daemon started',
      retryAfterSeconds: 2,
    };
  }
  if (lag > maxLag) {
    const error = indexer.lastError ? `; last error: ${indexer.lastError.message}` : '';
    return {
      ready: false,
      lag_seconds: lag,
      detail: `the indexer is ${lag.toFixed(1)} s behind the chain head (more than --ready-max-lag ${maxLag})${error}`,
      retryAfterSeconds: 5,
    };
  }
  return { ready: true, lag_seconds: lag, detail: 'the indexer is at the chain head', retryAfterSeconds: 0 };
}

/**
 * Records an indexer_status node event each time readiness changes, from the daemon that runs the
 * indexer (the others follow the same events). Checked every second: lag grows while nothing happens.
 */
export function watchReadiness(deps: {
  store: Pick<NodeEventStore, 'appendNodeEvents'>;
  indexer: LiveIndexer;
  chain: Chain | undefined;
  maxLag: number;
  log: Logger;
}): () => void {
  let last: boolean | undefined;
  let busy = false;
  const check = async () => {
    if (busy || !deps.indexer.isLeader) return;
    const now = indexerReadiness(deps.indexer, deps.chain, deps.maxLag);
    if (now.ready === last) return;
    busy = true;
    try {
      await deps.store.appendNodeEvents([
        {
          type: 'indexer_status',
          node_small_id: null,
          data: {
            ready: now.ready,
            lag_seconds: now.lag_seconds === null ? null : Math.round(now.lag_seconds * 10) / 10,
            detail: now.detail,
          },
        },
      ]);
      last = now.ready;
    } catch (error) {
      deps.log.warn({ err: error }, 'could not record the indexer status');
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void check(), 1000);
  timer.unref();
  return () => clearInterval(timer);
}
