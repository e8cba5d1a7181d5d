import type { Chain } from '../chain/chain.ts';
import type { LiveIndexer } from '../indexer/run.ts';

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
  now = Date.now(),
): IndexerReadiness {
  const unavailable = chain?.unavailableReason?.();
  if (unavailable) return { ready: false, lag_seconds: null, detail: unavailable, retryAfterSeconds: 5 };
  if (!indexer) return { ready: true, lag_seconds: null, detail: 'no chain to follow', retryAfterSeconds: 0 };
  const lag = indexer.lagSeconds(now);
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
