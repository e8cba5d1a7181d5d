/**
 * What bench:mixed reads off the daemon between two moments: its /metrics text (counters, the request and
 * store histograms, its young collections) and its threads' scheduler times.
 */
import { CHECKPOINT_THREAD } from '../../src/store/sqlite/checkpointer.ts';
import type { ThreadTimes } from '../cpu.ts';

/** The sum of a counter's samples in /metrics text, per label value of `label`. */
export function counterBy(metrics: string, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^${name}\\{([^}]*)\\} ([0-9.e+]+)$`, 'gm');
  for (const m of metrics.matchAll(re)) {
    const value = new RegExp(`${label}="([^"]*)"`).exec(m[1]!)?.[1] ?? '';
    out.set(value, (out.get(value) ?? 0) + Number(m[2]));
  }
  return out;
}

/** The events the indexer applied, in /metrics text. */
export function appliedEvents(metrics: string): number {
  return counterBy(metrics, 'node_daemon_indexer_events_total', 'outcome').get('applied') ?? 0;
}

/**
 * A histogram's samples between two /metrics texts, summed over the series of `metric` whose labels include
 * `label` (e.g. route="/stacks/:stack_small_id/usage"): the count at or under each bucket bound (`le`), and
 * the total.
 */
function histogramDelta(
  after: string,
  before: string,
  metric: string,
  label: string,
): { within: (le: string) => number; total: number } {
  const buckets = (text: string) => {
    const out = new Map<string, number>();
    for (const m of text.matchAll(new RegExp(`^${metric}_bucket\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
      if (!m[1]!.includes(label)) continue;
      const le = /le="([^"]*)"/.exec(m[1]!)?.[1] ?? '';
      out.set(le, (out.get(le) ?? 0) + Number(m[2]));
    }
    return out;
  };
  const a = buckets(after);
  const b = buckets(before);
  const within = (le: string) => (a.get(le) ?? 0) - (b.get(le) ?? 0);
  return { within, total: within('+Inf') };
}

/**
 * The daemon's own view of the usage reports between two /metrics texts: the share answered within 1 ms
 * and within 5 ms (node_daemon_http_request_duration_seconds, route /stacks/:stack_small_id/usage).
 */
export function usageBuckets(after: string, before: string): { within1ms: number; within5ms: number } {
  const { within, total } = histogramDelta(
    after,
    before,
    'node_daemon_http_request_duration_seconds',
    'route="/stacks/:stack_small_id/usage"',
  );
  return total === 0
    ? { within1ms: Number.NaN, within5ms: Number.NaN }
    : { within1ms: within('0.001') / total, within5ms: within('0.005') / total };
}

/**
 * Where the slow reads' time went, by the daemon's own clocks between two /metrics texts: for the stacks
 * route as the daemon timed it and for the store calls a read makes (topicVersions, the one round trip a
 * loop turn's reads share on PostgreSQL; listStacksJson, a list read or reloaded) and a report's, the
 * calls' number and the share of them over 5, 10 and 25 ms. For digging (BENCH_TRACE); the histograms'
 * buckets are coarse.
 */
export function slowShares(after: string, before: string): string {
  const series: [string, string, string][] = [
    ['stacks route', 'node_daemon_http_request_duration_seconds', 'route="/stacks/nodes/:node_id"'],
    ...['topicVersions', 'listStacksJson', 'addStackUsage'].map((query): [string, string, string] => [
      query,
      'node_daemon_store_query_duration_seconds',
      `query="${query}"`,
    ]),
  ];
  return series
    .map(([name, metric, label]) => {
      const { within, total } = histogramDelta(after, before, metric, label);
      const over = (le: string) =>
        total === 0 ? '-' : `${(((total - within(le)) / total) * 100).toFixed(2)} %`;
      return `${name} ${total}: over 5 ms ${over('0.005')}, 10 ms ${over('0.01')}, 25 ms ${over('0.025')}`;
    })
    .join('; ');
}

/**
 * The daemon's young-generation collections between two /metrics texts (node_daemon_nodejs_gc_duration_seconds,
 * kind "minor"): their number, and the event loop's time stopped in them per second and per collection.
 */
export function youngGc(
  after: string,
  before: string,
  seconds: number,
): { count: number; msPerSecond: number; meanMs: number } {
  const read = (text: string, part: 'sum' | 'count') =>
    Number(
      new RegExp(`^node_daemon_nodejs_gc_duration_seconds_${part}\\{kind="minor"\\} (\\S+)$`, 'm').exec(
        text,
      )?.[1] ?? 0,
    );
  const count = read(after, 'count') - read(before, 'count');
  const ms = (read(after, 'sum') - read(before, 'sum')) * 1000;
  return { count, msPerSecond: ms / seconds, meanMs: count === 0 ? Number.NaN : ms / count };
}

/**
 * The daemon's threads over a row's measured seconds, in ms per second: the event loop's time on the core
 * and waiting for it, the WAL checkpoint worker's time, and the rest (V8's compiler and GC helpers, libuv's
 * pool) together, with the busiest three of them named.
 */
export interface ThreadShares {
  mainRun: number;
  mainWait: number;
  checkpoint: number;
  others: number;
  busiest: string;
}

/** The daemon's threads between two readings, in ms per second of wallMs. */
export function threadShares(before: ThreadTimes, after: ThreadTimes, wallMs: number): ThreadShares {
  const shares = { mainRun: 0, mainWait: 0, checkpoint: 0, others: 0, busiest: '' };
  const perSecond = (ns: number) => ns / 1e6 / (wallMs / 1000);
  const others: [string, number][] = [];
  for (const [name, t] of after) {
    const b = before.get(name) ?? { runNs: 0, waitNs: 0 };
    const run = perSecond(t.runNs - b.runNs);
    if (name === 'MainThread') {
      shares.mainRun = run;
      shares.mainWait = perSecond(t.waitNs - b.waitNs);
    } else if (name === CHECKPOINT_THREAD) shares.checkpoint = run;
    else {
      shares.others += run;
      others.push([name, run]);
    }
  }
  shares.busiest = others
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([name, ms]) => `${name} ${ms.toFixed(0)}`)
    .join(', ');
  return shares;
}
