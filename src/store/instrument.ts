import type { Metrics } from '../internal/metrics.ts';
import type { Store } from './store.ts';

const UNTIMED = new Set<string | symbol>(['close', 'dataVersion', 'onNodeEvents']);

type Observe = (seconds: number) => void;
type Method = (...args: unknown[]) => unknown;

/** The method, timed until what it returns settles. */
function timed(observe: Observe, method: Method, self: object): Method {
  return (...args) => {
    const started = performance.now();
    return (method.apply(self, args) as Promise<unknown>).finally(() =>
      observe((performance.now() - started) / 1000),
    );
  };
}

/**
 * The store with every call timed into node_daemon_store_query_duration_seconds, by call name: one
 * wrapper at the interface, so both engines are measured the same way. Each call name's wrapper and
 * histogram series are made once.
 *
 * An indexer transaction is timed as a whole (query="indexerTransaction"), not call by call: the indexer
 * makes a call or two an event inside it, and timing each (a closure, a promise reaction, two clock reads and
 * a histogram observation) cost about 10 % of an event's apply (DECISIONS.md, "Store metrics time an indexer
 * transaction whole, not each call in it").
 */
export function instrumentStore(store: Store, metrics: Metrics): Store {
  const wrappers = new Map<string | symbol, unknown>();
  return new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      let wrapper = wrappers.get(name);
      if (wrapper === undefined) {
        if (UNTIMED.has(name)) {
          // dataVersion runs on every cached read and costs next to nothing; onNodeEvents is not a query.
          wrapper = value.bind(target);
        } else {
          const series = metrics.storeQueryDuration.labels({ query: String(name) });
          wrapper = timed((seconds) => series.observe(seconds), value, target);
        }
        wrappers.set(name, wrapper);
      }
      return wrapper;
    },
  });
}
