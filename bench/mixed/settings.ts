/** What a bench:mixed run measures, and for how long: from its flags, and the constants of the workload. */

/** The run's flags, as bench/mixed.ts parsed them, and what follows from --quick. */
export interface Settings {
  quick: boolean;
  postgres: boolean;
  /** Also the reports on the wire (tcpdump). */
  wire: boolean;
  /** Without the interleaved ratio. */
  rowsOnly: boolean;
  /** Usage reports per second for the rows with writes. */
  rates: number[];
  /** Seconds a row is measured, after WARMUP_SECONDS. */
  seconds: number;
  /** Stacks of peer nodes bought before the measurement, so that the store is not only ours. */
  backgroundStacks: number;
  /** The interleaved ratio's pairs of segments with the writes off and on. */
  pairs: number;
  /** Seconds each segment is counted for, after SETTLE_SECONDS. */
  segmentSeconds: number;
  /** The PostgreSQL server to work from. */
  serverUrl: string;
  pinPostgres: boolean;
  /** A directory for the daemon's V8 CPU profiles. */
  profile?: string;
  /** Flags for the daemon's node. */
  daemonFlags: string[];
  /** A file that keeps all the daemon's stdout and stderr. */
  daemonOutput?: string;
}

export const WARMUP_SECONDS = 2;
export const OWN_STACKS = 1000;
export const STREAM_PER_SECOND = 1000;
/** The indexer reads once a second: what the stream released just before is applied in the next second. */
export const SETTLE_SECONDS = 1.5;
/**
 * The hypervisor's steal (/proc/stat, both cores) above which a row or segment measured a slower VM, not
 * the daemon: a tenth of a core. This VM's "drift" was steal: rows at half speed had 50 to 80 % of a core
 * stolen, their neighbours 0 to 9 %. Such a row is measured again, at most STEAL_RETRIES times, and is
 * marked when it stays disturbed; a disturbed segment is left out of the interleaved ratio.
 */
export const STEAL_LIMIT = 0.1;
export const STEAL_RETRIES = 2;
/** Repeats of rows with the stream, in all: the stream's stacks are bought for them beforehand. */
export const STREAM_RETRIES = 3;

/** The live stream's transactions the run needs, bought beforehand and held until a row releases them. */
export function streamStacksFor(settings: Settings): number {
  const rowSeconds = WARMUP_SECONDS + settings.seconds + 5;
  return (
    (settings.rates.length *
      // A row, and the on-segments of its interleaved ratio (plus time to read /metrics), with margins;
      (rowSeconds + settings.pairs * (SETTLE_SECONDS + settings.segmentSeconds) + 5) +
      // the warm-up pass before the rows, and the stream's row without reads.
      rowSeconds * (settings.rates.includes(0) ? 2 : 1) +
      // and the rows measured again for steal.
      rowSeconds * STREAM_RETRIES) *
    STREAM_PER_SECOND
  );
}
