import type { Metrics } from '../internal/metrics.ts';
import type { IndexerTx, Store } from './store.ts';

const UNTIMED = new Set<string | symbol>(['close', 'dataVersion', 'onNodeEvents']);

function timed<T>(metrics: Metrics, query: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const observe = () => metrics.storeQueryDuration.observe({ query }, (performance.now() - started) / 1000);
  return run().finally(observe);
}

function instrumentTx(tx: IndexerTx, metrics: Metrics): IndexerTx {
  return new Proxy(tx, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => timed(metrics, `tx.${String(name)}`, () => value.apply(target, args));
    },
  });
}

/**
 * The store with every call timed into node_daemon_store_query_duration_seconds, by call name: one
 * wrapper at the interface, so both engines are measured the same way.
 */
export function instrumentStore(store: Store, metrics: Metrics): Store {
  return new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      // dataVersion runs on every cached read and costs next to nothing; onNodeEvents is not a query.
      if (typeof value !== 'function' || UNTIMED.has(name))
        return typeof value === 'function' ? value.bind(target) : value;
      if (name === 'indexerTransaction') {
        return (fn: (tx: IndexerTx) => Promise<unknown>) =>
          timed(metrics, 'indexerTransaction', () =>
            target.indexerTransaction((tx) => fn(instrumentTx(tx, metrics))),
          );
      }
      return (...args: unknown[]) => timed(metrics, String(name), () => value.apply(target, args));
    },
  });
}
