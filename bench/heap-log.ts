// Samples the daemon's heap spaces and external memory every 50 ms into a file, for finding what drives its
// garbage collections (not for numbers). Loaded into the daemon's main thread with --import:
//
//   BENCH_HEAP_LOG=/tmp/heap.log npm run bench:mixed -- --quick --daemon-flag=--import=./bench/heap-log.ts
//
// Each line: milliseconds since start, then MB used in the old, large-object and new spaces, external
// memory and array buffers (process.memoryUsage). Array buffers that climb across young collections and
// fall only at a mark-compact are held by something old (docs/PERFORMANCE.md, fourth pass).
import { appendFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
import { isMainThread } from 'node:worker_threads';

const file = process.env.BENCH_HEAP_LOG;
if (isMainThread && file) {
  const started = performance.now();
  const mb = (bytes: number) => (bytes / 1048576).toFixed(1);
  setInterval(() => {
    const used = new Map(getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]));
    const memory = process.memoryUsage();
    // A file, not stderr: a write to a full non-blocking pipe would throw inside the daemon.
    appendFileSync(
      file,
      `${Math.round(performance.now() - started)} old=${mb(used.get('old_space') ?? 0)} lo=${mb(used.get('large_object_space') ?? 0)} new=${mb(used.get('new_space') ?? 0)} external=${mb(memory.external)} array_buffers=${mb(memory.arrayBuffers)}\n`,
    );
  }, 50).unref();
}
