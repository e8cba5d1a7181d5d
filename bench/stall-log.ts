// Logs the daemon's event-loop stalls into a file, for finding what holds the loop (not for numbers). A 1 ms
// timer notes when it fires; a gap above BENCH_STALL_MS (default 10) is one loop turn that ran that long,
// and is written as its start and end on the monotonic clock in microseconds, the clock of a V8 CPU
// profile, so that bench/stall-profile.ts can cut the profile's samples to the stalls:
//
//   BENCH_STALL_LOG=/tmp/stalls.log npm run bench:mixed -- --quick --rows-only --profile /tmp/prof \
//     --daemon-flag=--import=./bench/stall-log.ts
//   node bench/stall-profile.ts /tmp/prof/<the main thread's>.cpuprofile /tmp/stalls.log
import { appendFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.BENCH_STALL_LOG;
if (isMainThread && file) {
  const threshold = BigInt(Math.round(Number(process.env.BENCH_STALL_MS ?? 10) * 1e6));
  let last = process.hrtime.bigint();
  setInterval(() => {
    const now = process.hrtime.bigint();
    // A file, not stderr: a write to a full non-blocking pipe would throw inside the daemon.
    if (now - last > threshold) appendFileSync(file, `${last / 1000n} ${now / 1000n}\n`);
    last = now;
  }, 1).unref();
}
