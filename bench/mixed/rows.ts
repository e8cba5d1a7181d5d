/**
 * bench:mixed's rows. A row reads with wrk (50 connections over the node's list and GET /tasks) while the
 * usage reporter and the live stream run, or not, and counts what the daemon, wrk, this process, PostgreSQL
 * and the hypervisor spent meanwhile; a row the hypervisor disturbed is measured again. The interleaved
 * ratio turns the writes off and on within one wrk run.
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { FullnodeDouble } from '../../test/sui/fullnode-double.ts';
import {
  type CpuSnapshot,
  databaseTicks,
  procTicks,
  snapshot,
  type ThreadTimes,
  TICKS_PER_SECOND,
  threadTimes,
} from '../cpu.ts';
import { call } from '../daemon-http.ts';
import { type LoadContext, type LoadResult, type LoadSpec, runOnce } from '../load.ts';
import { percentile } from '../report.ts';
import {
  appliedEvents,
  counterBy,
  slowShares,
  type ThreadShares,
  threadShares,
  usageBuckets,
  youngGc,
} from './metrics.ts';
import {
  SETTLE_SECONDS,
  type Settings,
  STEAL_LIMIT,
  STEAL_RETRIES,
  STREAM_PER_SECOND,
  STREAM_RETRIES,
  WARMUP_SECONDS,
} from './settings.ts';
import { REPORTER_ADDRESS } from './wire.ts';
import { caughtUp, type Daemon, type OwnNode, sleep } from './world.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);

export interface Row {
  label: string;
  reportsPerSecond: number | null;
  stream: boolean;
  reads: LoadResult;
  ratio?: number;
  /** The ratios of the interleaved segments (Workload.interleave), for the rows with writes. */
  interleaved?: number[];
  reports: {
    sent: number;
    p50ms: number;
    p99ms: number;
    failed: number;
    /**
     * The reporter's thread CPU per report sent, in µs (its whole run, a little longer than the row's
     * measured seconds): of the bench's share of the load generator's core, the part that is the reporter.
     */
    reporterCpuUs: number;
    /** Share of the reports the daemon answered within 1 ms and 5 ms, by its own request histogram. */
    servedWithin1ms: number;
    servedWithin5ms: number;
    /** When the reporter ran (s since the epoch), for the reports on the wire (--wire). */
    from: number;
    to: number;
  };
  streamApplied: number;
  cacheHitRate: number;
  /** The daemon's scavenges over the measured seconds: ms of pause per second, and per scavenge. */
  youngGc: { count: number; msPerSecond: number; meanMs: number };
  /** The daemon's CPU time over the measured seconds, in cores (1.0: its core was never idle). */
  daemonCpu: number;
  /** The same for wrk, and for this process (the fullnode double and the reporter), both on CPU 1. */
  wrkCpu: number;
  benchCpu: number;
  /** The PostgreSQL server's processes, in cores (NaN on SQLite). */
  databaseCpu: number;
  /**
   * Time the hypervisor ran something else on the VM's cores (/proc/stat steal, both cores), in cores (NaN
   * off Linux). A row with steal measured a slower machine than its neighbours, not the daemon.
   */
  steal: number;
  /** Still above STEAL_LIMIT after STEAL_RETRIES repeats: its numbers are the VM's, not the daemon's. */
  disturbed?: boolean;
  /** No interleaved ratio was clean of steal: the median is of them all. */
  interleavedDisturbed?: boolean;
  /** The daemon's threads over the measured seconds, in ms per second. */
  threads: ThreadShares;
}

/** What the reporter thread (reporter.ts) answers when told to stop. */
interface Reported {
  sent: number;
  failed: number;
  latencies: number[];
  cpuUs: number;
}

/** The counters a row reads off /metrics before and after its measured seconds. */
interface Counters {
  metrics: string;
  lookups: Map<string, number>;
  applied: number;
}

/** The CPU counters at the start of a row's measured seconds. */
interface CpuMark {
  daemon: number;
  threads: ThreadTimes;
  bench: number;
  wrk: number;
  database: number;
  machine: CpuSnapshot | undefined;
  wall: number;
}

/** The mean reads/s of some rows. */
function mean(rows: Row[]): number {
  return rows.reduce((sum, row) => sum + row.reads.requestsPerSecond, 0) / rows.length;
}

/** The rows with writes have their ratios; the no-writes rows get theirs to the mean of them all. */
export function noWritesRatios(rows: Row[]): void {
  // The no-writes rows' own ratios are to the mean of them all: how far the VM drifted in this pass.
  const base = mean(rows.filter((row) => row.reportsPerSecond === null));
  for (const row of rows) if (row.reportsPerSecond === null) row.ratio = row.reads.requestsPerSecond / base;
}

/** The workload on one daemon: its rows and their interleaved ratios. */
export class Workload {
  readonly #settings: Settings;
  readonly #daemon: Daemon;
  readonly #double: FullnodeDouble;
  readonly #node: OwnNode;
  readonly #ctx: LoadContext;
  /** Repeats of rows with the stream left: the stream's stacks were bought for STREAM_RETRIES of them. */
  #streamRetries = STREAM_RETRIES;

  constructor(
    settings: Settings,
    daemon: Daemon,
    double: FullnodeDouble,
    node: OwnNode,
    at: { root: string; tmp: string },
  ) {
    this.#settings = settings;
    this.#daemon = daemon;
    this.#double = double;
    this.#node = node;
    this.#ctx = { tool: 'wrk', root: at.root, tmp: at.tmp, warmupSeconds: 0 };
  }

  /**
   * The rows, in order: no writes; each rate's with the stream, each followed by no writes again (its
   * throughput is given as a ratio to the mean of the two around it: this VM's speed drifts by up to 2x
   * within a minute); the first rate's reports without the stream, then without reads; the stream alone.
   */
  async rows(): Promise<Row[]> {
    const rates = this.#settings.rates;
    // A pass of everything a row does, not kept. V8 compiles the daemon's code on the stream's and the
    // reports' paths, and the WAL fills enough to start the checkpoint worker: a few percent of the core for
    // seconds, once per process (perf showed both in the first row with writes). The first row then
    // measures the daemon as it runs, not as it starts.
    const highest = Math.max(...rates);
    await this.#measure('warm-up (not kept)', highest > 0 ? highest : null, true);
    const rows: Row[] = [];
    let before = await this.#steady('no writes', null, false);
    rows.push(before);
    for (const rate of rates) {
      const row = await this.#steady(rate === 0 ? 'stream only' : `${rate} reports/s + stream`, rate, true);
      const after = await this.#steady('no writes', null, false);
      row.ratio = row.reads.requestsPerSecond / mean([before, after]);
      rows.push(row, after);
      before = after;
    }
    const floorRate = rates.find((rate) => rate > 0);
    if (floorRate !== undefined) {
      // The reports under the 50 readers without the live stream: the write target as the issue words it
      // (a report's latency while 50 connections read), and what of the row above it the stream adds.
      rows.push(await this.#steady(`${floorRate} reports/s, no stream`, floorRate, false));
      // The floor of a report's latency as the reporter sees it: the same reports with no read waiting.
      rows.push(await this.#steady(`${floorRate} reports/s, no reads`, floorRate, false, false));
    }
    // What the live stream costs the daemon alone: its CPU over the events it applied, with nothing else.
    if (rates.includes(0)) rows.push(await this.#steady('stream only, no reads', 0, true, false));
    return rows;
  }

  /** The interleaved ratios of every row that reads with both kinds of writes. */
  async interleave(rows: Row[]): Promise<void> {
    for (const row of rows) {
      const read = !Number.isNaN(row.reads.requestsPerSecond);
      if (read && row.reportsPerSecond !== null && row.stream) row.interleaved = await this.#interleaved(row);
    }
  }

  /** A row, measured again while the hypervisor took more than STEAL_LIMIT of a core during it. */
  async #steady(label: string, reportsPerSecond: number | null, stream: boolean, reading = true) {
    let row = await this.#measure(label, reportsPerSecond, stream, reading);
    for (let retry = 0; retry < STEAL_RETRIES && row.steal > STEAL_LIMIT; retry++) {
      if (stream && this.#streamRetries-- <= 0) break;
      log(`  ${label}: the hypervisor took ${(row.steal * 100).toFixed(0)} % of a core; measuring it again`);
      row = await this.#measure(label, reportsPerSecond, stream, reading);
    }
    if (row.steal > STEAL_LIMIT) row.disturbed = true;
    return row;
  }

  /** Runs one row: reads with wrk while the reports and the stream (if any) run; stops them after. */
  async #measure(
    label: string,
    reportsPerSecond: number | null,
    stream: boolean,
    reading = true,
  ): Promise<Row> {
    const { seconds } = this.#settings;
    const { pid } = this.#daemon.server;
    const writes = this.#startWrites(reportsPerSecond, stream);
    const trace = this.#tracer();
    if (reading) await runOnce(this.#ctx, this.#readSpec(WARMUP_SECONDS));
    else await sleep(WARMUP_SECONDS);
    trace('warmed up');
    const before = await this.#counters();
    trace('counted');
    const mark = markCpu(pid);
    // Without reads, the row shows what a report costs the client when nothing waits ahead of it.
    const reads = reading ? await runOnce(this.#ctx, this.#readSpec(seconds)) : await noReads(seconds);
    const cores = (ticks: number) => ticks / TICKS_PER_SECOND / ((performance.now() - mark.wall) / 1000);
    const daemonCpu = cores(procTicks(pid)[0] - mark.daemon);
    const threads = threadShares(mark.threads, threadTimes(pid), performance.now() - mark.wall);
    const [benchAfter, wrkAfter] = procTicks('self');
    const databaseAfter = databaseTicks();
    const machineAfter = snapshot();
    trace('measured');
    const after = await this.#counters();
    trace('counted again');
    trace(`slow shares: ${slowShares(after.metrics, before.metrics)}`);
    const reported = await writes.stop();
    const delta = (k: string) => (after.lookups.get(k) ?? 0) - (before.lookups.get(k) ?? 0);
    const total = [...after.lookups.keys()].reduce((sum, k) => sum + delta(k), 0);
    const served = usageBuckets(after.metrics, before.metrics);
    const latencies = reported.latencies.sort((a, b) => a - b);
    const row: Row = {
      label,
      reportsPerSecond,
      stream,
      reads,
      reports: {
        sent: reported.sent,
        p50ms: percentile(latencies, 50),
        p99ms: percentile(latencies, 99),
        failed: reported.failed,
        reporterCpuUs: reported.sent === 0 ? Number.NaN : reported.cpuUs / reported.sent,
        servedWithin1ms: served.within1ms,
        servedWithin5ms: served.within5ms,
        from: reported.from,
        to: reported.to,
      },
      streamApplied: (after.applied - before.applied) / seconds,
      cacheHitRate: total === 0 ? Number.NaN : delta('hit') / total,
      youngGc: youngGc(after.metrics, before.metrics, seconds),
      daemonCpu,
      wrkCpu: cores(wrkAfter - mark.wrk),
      benchCpu: cores(benchAfter - mark.bench),
      databaseCpu: this.#settings.postgres ? cores(databaseAfter - mark.database) : Number.NaN,
      steal:
        mark.machine && machineAfter ? cores(machineAfter.stealTicks - mark.machine.stealTicks) : Number.NaN,
      threads,
    };
    // The reports the daemon answered a second: the reporter's rate over its whole run, warm-up included.
    log(rowLine(row, reading, reported.sent / (reported.to - reported.from), this.#settings.postgres));
    // Let the indexer finish what the stream left before the next row.
    await caughtUp(this.#daemon);
    return row;
  }

  /**
   * The ratio once more, against this VM's drift, which moves a 4 to 10 s row by ±30 % on its own: one
   * wrk run across segments with the writes (reports and stream) off and on in turn, off first and
   * last. The daemon's own count of the reads it answered gives each segment's rate; each on-segment is
   * compared with the mean of the off-segments on either side, and the median of those ratios is kept.
   * An on-segment is left out when the hypervisor took more than STEAL_LIMIT of a core during it or
   * either of its off-segments (all are kept, and the row marked, when none is clean).
   */
  async #interleaved(row: Row): Promise<number[]> {
    const { pairs, segmentSeconds } = this.#settings;
    const reporter = row.reportsPerSecond ? this.#startReporter(row.reportsPerSecond, true) : undefined;
    let on = false;
    let running = true;
    const stream = awaitedLater(
      this.#releaseStream(
        () => on,
        () => running,
      ),
    );
    const segments = 2 * pairs + 1;
    const load = awaitedLater(
      runOnce(
        this.#ctx,
        this.#readSpec(Math.ceil(WARMUP_SECONDS + segments * (SETTLE_SECONDS + segmentSeconds) + 2)),
      ),
    );
    await sleep(WARMUP_SECONDS);
    const rates: number[] = [];
    const steals: number[] = [];
    for (let i = 0; i < segments; i++) {
      on = i % 2 === 1;
      reporter?.worker.postMessage(on ? 'resume' : 'pause');
      await sleep(SETTLE_SECONDS);
      const a = await this.#readsAnswered();
      await sleep(segmentSeconds);
      const b = await this.#readsAnswered();
      rates.push(((b.n - a.n) * 1000) / (b.at - a.at));
      steals.push((b.steal - a.steal) / TICKS_PER_SECOND / ((b.at - a.at) / 1000));
    }
    on = false;
    reporter?.worker.postMessage('stop');
    await reporter?.done;
    await reporter?.worker.terminate();
    running = false;
    await stream;
    await load;
    const ratios: number[] = [];
    const clean: number[] = [];
    for (let i = 1; i < segments; i += 2) {
      const ratio = rates[i]! / ((rates[i - 1]! + rates[i + 1]!) / 2);
      ratios.push(ratio);
      if (Math.max(steals[i - 1]!, steals[i]!, steals[i + 1]!) <= STEAL_LIMIT) clean.push(ratio);
    }
    log(
      `  interleaved, ${row.label}: reads/s ` +
        `${rates.map((r) => Math.round(r)).join(', ')} (off, on, ...); ratios ${ratios.map((r) => r.toFixed(2)).join(', ')}; ` +
        `steal ${steals.map((x) => `${(x * 100).toFixed(0)} %`).join(', ')}; ${clean.length} of ${ratios.length} ratios clean`,
    );
    await caughtUp(this.#daemon);
    if (clean.length > 0) return clean;
    row.interleavedDisturbed = true;
    return ratios;
  }

  /** The reads the daemon answered so far (its own count), when, and the hypervisor's steal by then. */
  async #readsAnswered(): Promise<{ n: number; at: number; steal: number }> {
    const routes = counterBy(await this.#metrics(), 'node_daemon_http_requests_total', 'route');
    let n = 0;
    for (const [route, count] of routes) if (/^\/(stacks\/nodes|tasks)/.test(route)) n += count;
    return { n, at: performance.now(), steal: snapshot()?.stealTicks ?? Number.NaN };
  }

  /**
   * Starts a row's writes: the reporter at `rate` a second (none for null or 0), and the stream's release
   * when `stream`; stop() ends both and gives what the reporter answered and when it ran.
   */
  #startWrites(rate: number | null, stream: boolean) {
    let running = true;
    const from = Date.now() / 1000;
    const reporter = rate ? this.#startReporter(rate) : undefined;
    // The stream's transactions were executed beforehand and are held by the double.
    const background = stream
      ? awaitedLater(
          this.#releaseStream(
            () => true,
            () => running,
          ),
        )
      : undefined;
    return {
      stop: async (): Promise<Reported & { from: number; to: number }> => {
        running = false;
        reporter?.worker.postMessage('stop');
        const [reported] = reporter ? await reporter.done : [{ sent: 0, failed: 0, latencies: [], cpuUs: 0 }];
        await reporter?.worker.terminate();
        const to = Date.now() / 1000;
        await background;
        return { ...reported, from, to };
      },
    };
  }

  /** The usage reporter (reporter.ts) in its own thread, at `rate` a second, started or paused. */
  #startReporter(rate: number, paused = false) {
    const { origin, token } = this.#daemon;
    const worker = new Worker(new URL('./reporter.ts', import.meta.url), {
      workerData: {
        origin,
        token,
        rate,
        stacks: this.#node.own,
        paused,
        from: this.#settings.wire ? REPORTER_ADDRESS : undefined,
      },
    });
    const done = awaitedLater(once(worker, 'message') as Promise<[Reported]>);
    return { worker, done };
  }

  /**
   * Releases the stream's held transactions at the stream's rate while `on()` says so, until `running()`
   * says no more, so that the indexer meets them as a live chain's.
   */
  async #releaseStream(on: () => boolean, running: () => boolean): Promise<void> {
    let activeMs = 0;
    let released = 0;
    let last = performance.now();
    while (running()) {
      const now = performance.now();
      if (on()) activeMs += now - last;
      last = now;
      const due = Math.floor((activeMs / 1000) * STREAM_PER_SECOND);
      if (due > released) {
        if (this.#double.heldEvents < due - released) throw new Error('the stream ran out of held events');
        await this.#double.releaseEvents(due - released);
        released = due;
      }
      await sleep(0.01);
    }
  }

  async #metrics(): Promise<string> {
    return (await call(this.#daemon.origin, 'GET', '/metrics', this.#daemon.token)).text;
  }

  /** The daemon's /metrics text, its response cache's lookups by outcome, and the events it applied. */
  async #counters(): Promise<Counters> {
    const metrics = await this.#metrics();
    return {
      metrics,
      lookups: counterBy(metrics, 'node_daemon_http_cache_lookups_total', 'outcome'),
      applied: appliedEvents(metrics),
    };
  }

  #readSpec(seconds: number): LoadSpec {
    return { origin: this.#daemon.origin, paths: [this.#node.ownPath, '/tasks'], seconds, connections: 50 };
  }

  /** BENCH_TRACE=1: logs a row's steps, by this row's clock and the daemon's. */
  #tracer(): (what: string) => void {
    const t0 = performance.now();
    const { spawned } = this.#daemon;
    return (what) => {
      if (process.env.BENCH_TRACE) {
        log(
          `    ${((performance.now() - t0) / 1000).toFixed(1)} s ${what} (daemon's ${Math.round(performance.now() - spawned)} ms)`,
        );
      }
    };
  }
}

/**
 * A promise the row awaits at its end. Its failure meanwhile (the stream out of held events, wrk gone) then
 * fails the run there, through its clean-up, instead of ending the process as an unhandled rejection that
 * leaves the daemon running.
 */
function awaitedLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/** The CPU counters at the start of a row's measured seconds: the daemon's, its threads', ours, wrk's, PostgreSQL's. */
function markCpu(pid: number): CpuMark {
  const [daemon] = procTicks(pid);
  const threads = threadTimes(pid);
  const [bench, wrk] = procTicks('self');
  return {
    daemon,
    threads,
    bench,
    wrk,
    database: databaseTicks(),
    machine: snapshot(),
    wall: performance.now(),
  };
}

/** A row without reads: its seconds pass, and there is no read to count. */
function noReads(seconds: number): Promise<LoadResult> {
  return new Promise((resolve) =>
    setTimeout(
      () =>
        resolve({
          tool: 'wrk',
          requests: 0,
          requestsPerSecond: Number.NaN,
          p50ms: Number.NaN,
          p99ms: Number.NaN,
          bytesPerSecond: 0,
          non2xx: 0,
          socketErrors: 0,
          timeouts: 0,
          command: '(no reads)',
        }),
      seconds * 1000,
    ),
  );
}

/** A row's line in the log, with a live event's or a report's cost where the row has nothing else. */
function rowLine(row: Row, reading: boolean, reportRate: number, postgres: boolean): string {
  const { reads, reports, threads, youngGc: gc } = row;
  return (
    `  ${row.label}: ${Math.round(reads.requestsPerSecond)} req/s, p99 ${reads.p99ms.toFixed(2)} ms; ` +
    `reports p50 ${reports.p50ms.toFixed(2)} / p99 ${reports.p99ms.toFixed(2)} ms; ` +
    `indexer ${Math.round(row.streamApplied)} ev/s` +
    (row.stream && !reading && !row.reportsPerSecond
      ? ` (${Math.round((row.daemonCpu * 1e6) / row.streamApplied)} µs of daemon CPU an event)`
      : '') +
    // What a report costs the daemon's core, counted by the kernel: a V8 profile of this row counts
    // less than half of it (PERFORMANCE.md, "Where the time goes").
    (!row.stream && !reading && reports.sent > 0
      ? ` (${Math.round((row.daemonCpu * 1e6) / reportRate)} µs of daemon CPU a report, ` +
        `${Math.round((threads.mainRun * 1e3) / reportRate)} of them the event loop's)`
      : '') +
    `; cache hits ${(row.cacheHitRate * 100).toFixed(1)} %; ` +
    `young GC ${gc.msPerSecond.toFixed(1)} ms/s (${gc.count} × ${gc.meanMs.toFixed(2)} ms); ` +
    `daemon CPU ${(row.daemonCpu * 100).toFixed(0)} %, wrk ${(row.wrkCpu * 100).toFixed(0)} %, ` +
    `bench ${(row.benchCpu * 100).toFixed(0)} %` +
    (reports.sent > 0 ? ` (reporter ${Math.round(reports.reporterCpuUs)} µs a report)` : '') +
    (postgres ? `, PostgreSQL ${(row.databaseCpu * 100).toFixed(0)} %` : '') +
    `, hypervisor steal ${(row.steal * 100).toFixed(0)} %` +
    `; event loop ${threads.mainRun.toFixed(0)} ms/s on the core, ` +
    `${threads.mainWait.toFixed(0)} ms/s waiting for it; checkpoints ${threads.checkpoint.toFixed(0)} ms/s, ` +
    `other threads ${threads.others.toFixed(0)} ms/s (${threads.busiest})`
  );
}
