import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Every metric the daemon exports, declared in this one module: prefixed `node_daemon_`, unit-suffixed.
 * One registry per daemon instance (not prom-client's global one), so tests and several apps in one
 * process do not mix their numbers.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'node_daemon_' });
  const registers = [registry];
  return {
    registry,
    httpRequests: new Counter({
      name: 'node_daemon_http_requests_total',
      help: 'HTTP requests answered, by route pattern, method and status code',
      labelNames: ['route', 'method', 'status'] as const,
      registers,
    }),
    httpDuration: new Histogram({
      name: 'node_daemon_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route pattern and method',
      labelNames: ['route', 'method'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    httpShed: new Counter({
      name: 'node_daemon_http_requests_shed_total',
      help: 'Requests refused with 503 because too many were in flight',
      registers,
    }),
    httpInFlight: new Gauge({
      name: 'node_daemon_http_requests_in_flight',
      help: 'Requests being answered now',
      registers,
    }),
    indexerEvents: new Counter({
      name: 'node_daemon_indexer_events_total',
      help: 'Events read by the indexer, by outcome (applied, duplicate, ignored, unknown, malformed, orphaned)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    indexerErrors: new Counter({
      name: 'node_daemon_indexer_errors_total',
      help: 'Indexer pages that failed and were retried after a back-off',
      registers,
    }),
    indexerLag: new Gauge({
      name: 'node_daemon_indexer_lag_seconds',
      help: 'Seconds since the indexer last found itself at the head of its event source',
      registers,
    }),
    submissions: new Counter({
      name: 'node_daemon_submissions_total',
      help: 'Chain submissions by operation and outcome (success, failure, rejected, unavailable)',
      labelNames: ['operation', 'outcome'] as const,
      registers,
    }),
    submissionDuration: new Histogram({
      name: 'node_daemon_submission_duration_seconds',
      help: 'Time from submission to a final transaction, by operation',
      labelNames: ['operation'] as const,
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    storeQueryDuration: new Histogram({
      name: 'node_daemon_store_query_duration_seconds',
      help: 'Time of store calls, by call',
      labelNames: ['query'] as const,
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
