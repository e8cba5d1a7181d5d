/**
 * The measurements themselves: ingest runs and load runs, each taken when the machine is quiet and repeated
 * (within a patience budget) when other processes disturbed it.
 */
import { DISTURBED_PERCENT, type ForeignLoad, foreignLoad, snapshot, waitForQuiet } from '../cpu.ts';
import type { IngestResult } from '../ingest.ts';
import { type LoadContext, type LoadResult, runOnce, warmUp } from '../load.ts';
import { disturbance, fail, fmt, isDisturbed, log, warn } from '../report.ts';
import type { Server } from '../servers.ts';

/** Connections the load generator keeps open. */
export const CONNECTIONS = 50;
/** Longest wait, before each measurement, for other processes on the machine to quiet down. */
const QUIET_WAIT_SECONDS = 30;
/**
 * Total seconds a run may spend waiting for quiet and repeating disturbed measurements; once spent, each
 * measurement runs once (flagged when disturbed), so a busy machine cannot make the run last forever.
 */
const PATIENCE_SECONDS = 180;
let patienceUsed = 0;
const patienceLeft = () => PATIENCE_SECONDS - patienceUsed;
/** Seconds spent so far waiting for a quiet machine and repeating disturbed measurements. */
export const patienceSecondsUsed = () => Math.round(patienceUsed);
/** Repeats of a measurement that other processes disturbed. */
const RETRIES = 2;

/** One HTTP measurement: a server loaded on one path, or rotating over several. */
export interface HttpRow {
  id: string;
  label: string;
  server: string;
  paths: string[];
  /** Size of one response body (the first path's), bytes. */
  bodyBytes?: number;
  /** Items in one response (the first path's). */
  items?: number;
  result?: LoadResult;
  /** CPU other processes used during the measured run (not the warm-up). */
  otherLoad?: ForeignLoad;
  quietWaitSeconds?: number;
  attempts?: number;
  error?: string;
}

export type MeasuredIngest = IngestResult & { otherLoad?: ForeignLoad };

/** Loads server with each row in turn (after a warm-up); results and failures are recorded in the rows. */
export async function runRows(
  ctx: LoadContext,
  server: Server,
  rows: HttpRow[],
  seconds: number,
): Promise<void> {
  for (const row of rows) {
    log(`  ${row.label} on ${server.name}: ${seconds} s (after ${ctx.warmupSeconds} s warm-up)`);
    try {
      const spec = { origin: server.origin, paths: row.paths, seconds, connections: CONNECTIONS };
      row.attempts = 0;
      await untilUndisturbed(async () => {
        row.quietWaitSeconds = await quiet(server.pid);
        await warmUp(ctx, spec);
        const before = snapshot(server.pid);
        const result = await runOnce(ctx, spec);
        const otherLoad = foreignLoad(before, snapshot(server.pid));
        row.attempts! += 1;
        if (result.non2xx > 0) throw new Error(`${result.non2xx} responses were not 2xx`);
        if (result.requests === 0) throw new Error('no request completed');
        log(
          `    ${fmt(result.requestsPerSecond, 0)} req/s, p50 ${fmt(result.p50ms, 2)} ms, p99 ${fmt(result.p99ms, 2)} ms` +
            (result.timeouts + result.socketErrors > 0
              ? `, ${result.timeouts} timeouts, ${result.socketErrors} socket errors`
              : '') +
            disturbance(otherLoad),
        );
        if (row.result === undefined || lessDisturbed(otherLoad, row.otherLoad)) {
          row.result = result;
          row.otherLoad = otherLoad;
        }
        return { kept: row.otherLoad, seconds: ctx.warmupSeconds + seconds };
      });
    } catch (error) {
      row.error = fail(`${row.label} on ${server.name}`, error);
    }
  }
}

const lessDisturbed = (load: ForeignLoad | undefined, than: ForeignLoad | undefined) =>
  (load?.otherPercent ?? 0) < (than?.otherPercent ?? 0);

/**
 * Measures until the kept measurement is undisturbed: a disturbed one is repeated at most RETRIES times,
 * and not at all once the patience budget is spent. attempt measures once, keeps its result when it is the
 * least disturbed so far, and returns the load of the one kept and the seconds the attempt took.
 */
async function untilUndisturbed(
  attempt: () => Promise<{ kept: ForeignLoad | undefined; seconds: number }>,
): Promise<void> {
  for (let n = 0; ; n++) {
    const { kept, seconds } = await attempt();
    if (!isDisturbed(kept) || n === RETRIES) return;
    if (patienceLeft() <= 0) {
      log('    (no repeat: the patience budget for a busy machine is spent)');
      return;
    }
    patienceUsed += seconds;
    log('    repeating it');
  }
}

/** Waits for other processes to calm down before a measurement; says so when they do not. */
async function quiet(serverPid?: number): Promise<number | undefined> {
  const limit = Math.max(2, Math.min(QUIET_WAIT_SECONDS, patienceLeft()));
  const started = performance.now();
  const waited = await waitForQuiet(serverPid, limit);
  // The first second of sampling is part of every measurement; only the rest is waiting.
  patienceUsed += Math.max(0, (performance.now() - started) / 1000 - 1);
  if (waited === undefined) {
    warn(
      `    other processes kept using >= ${DISTURBED_PERCENT}% of a core for ${Math.round(limit)} s; measuring anyway`,
    );
  } else if (waited > 1) {
    log(`    waited ${waited} s for other processes to quiet down`);
  }
  return waited;
}

/** Runs each ingest measurement (repeated when disturbed, the least disturbed kept); failures are recorded. */
export async function measureIngest(
  ingestRuns: [string, () => Promise<IngestResult>][],
): Promise<MeasuredIngest[]> {
  const ingest: MeasuredIngest[] = [];
  for (const [what, go] of ingestRuns) {
    try {
      let best: MeasuredIngest | undefined;
      await untilUndisturbed(async () => {
        await quiet();
        const before = snapshot();
        const r = await go();
        const otherLoad = foreignLoad(before, snapshot());
        if (r.counts.applied !== r.events)
          throw new Error(`only ${r.counts.applied} of ${r.events} applied: ${JSON.stringify(r.counts)}`);
        log(
          `  ${what}: ${fmt(r.eventsPerSecond, 0)} events/s (${fmt(r.seconds, 2)} s)${disturbance(otherLoad)}`,
        );
        if (best === undefined || lessDisturbed(otherLoad, best.otherLoad)) best = { ...r, otherLoad };
        return { kept: best.otherLoad, seconds: r.seconds };
      });
      if (best) ingest.push(best);
    } catch (error) {
      fail(`ingest ${what}`, error);
    }
  }
  return ingest;
}
