// Logs the daemon's event-loop stalls into a file, for finding what holds the loop (not for numbers). A 1 ms
// timer notes when it fires; a gap above BENCH_STALL_MS (default 10) is one loop turn that ran that long,
// and is written as its start and end on the monotonic clock in microseconds, the clock of a V8 CPU
// profile, so that stall-profile.ts can cut the profile's samples to the stalls:
//
//   BENCH_STALL_LOG=/tmp/stalls.log npm run bench:mixed -- --quick --rows-only --profile /tmp/prof \
//     --daemon-flag=--import=./bench/probes/stall-log.ts
//   node bench/probes/stall-profile.ts /tmp/prof/<the main thread's>.cpuprofile /tmp/stalls.log
//
// It also writes the main thread's garbage collections, as `gc FROM TO KIND` on the same clock (KIND: minor,
// major, incremental or weakcb), so that the rows can tell a stall that was a pause from one that was work.
//
// The timer wakes the loop about 850 times a second: in a row with no reads that is most of what the loop
// does (strace: 14.5 epoll_pwait a report at 100 reports/s, against 3.75 without it), so the daemon's CPU in
// such a row is overstated. BENCH_STALL_MS=off keeps the GC lines and bench/mixed.ts's row lines (all that
// perf-rows.ts needs) without the timer.
import { appendFileSync } from 'node:fs';
import { constants, PerformanceObserver, performance } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

const file = process.env.BENCH_STALL_LOG;
if (isMainThread && file) {
  if (process.env.BENCH_STALL_MS !== 'off') {
    const threshold = BigInt(Math.round(Number(process.env.BENCH_STALL_MS ?? 10) * 1e6));
    let last = process.hrtime.bigint();
    setInterval(() => {
      const now = process.hrtime.bigint();
      // A file, not stderr: a write to a full non-blocking pipe would throw inside the daemon.
      if (now - last > threshold) appendFileSync(file, `${last / 1000n} ${now / 1000n}\n`);
      last = now;
    }, 1).unref();
  }

  // performance.now() counts from the time origin on the same monotonic clock as hrtime.
  const originMicros = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  const kinds = new Map([
    [constants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
    [constants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
    [constants.NODE_PERFORMANCE_GC_WEAKCB, 'weakcb'],
  ]);
  new PerformanceObserver((list) => {
    let text = '';
    for (const entry of list.getEntries()) {
      const from = Math.round(originMicros + entry.startTime * 1000);
      const kind = kinds.get((entry as unknown as { detail: { kind: number } }).detail.kind) ?? 'other';
      text += `gc ${from} ${from + Math.round(entry.duration * 1000)} ${kind}\n`;
    }
    appendFileSync(file, text);
  }).observe({ entryTypes: ['gc'] });
}
