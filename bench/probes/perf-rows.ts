// Where the daemon's CPU went in each row of bench/mixed.ts, from `perf` (which counts only time on the core,
// kernel included, where V8's own profile samples wall time): the samples of `perf script` cut to the rows'
// windows (the '#' lines bench/mixed.ts writes into stall-log.ts's file) and put in one part each, by the
// first rule below that a sample's call chain matches. For finding where time goes, not for numbers.
//
//   BENCH_STALL_MS=off BENCH_STALL_LOG=/tmp/rows.log npm run bench:mixed -- --quick --rows-only --rates 500 \
//     --daemon-flag=--perf-basic-prof --daemon-flag=--import=./bench/probes/stall-log.ts &
//   until pgrep -f 'main.ts start' >/dev/null; do sleep 1; done   # then, until the daemon exits:
//   perf record -k CLOCK_MONOTONIC -e cpu-clock -F 1000 -g -p "$(pgrep -f 'main.ts start')" -o /tmp/perf.data
//   perf script -i /tmp/perf.data -F comm,time,ip,sym | \
//     node bench/probes/perf-rows.ts /tmp/rows.log [--hz 1000]
//
// `-k CLOCK_MONOTONIC` puts perf's timestamps on the clock of the rows' windows; --perf-basic-prof names the
// JIT-compiled frames. Prints, per row, milliseconds of CPU a second per part (a sample is 1/F s of CPU:
// --hz is perf record's -F). Those names can be stale: code that V8 moves or collects leaves its address to
// newer code under the old name (seen: pino's asChindings "called" by pg's query). The kernel's frames and
// the node binary's (Builtins_*, libuv) are right; for which JS function ran, V8's own profile is.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { hz: { type: 'string', default: '1000' } },
});
const [rowsFile] = positionals;
/** perf record's -F: each sample stands for 1/hz s of CPU. */
const sampleHz = Number(flags.hz);
if (!rowsFile || !(sampleHz > 0)) {
  process.stderr.write(
    'usage: perf script -F comm,time,ip,sym | node bench/probes/perf-rows.ts ROWS.log [--hz F]\n',
  );
  process.exit(2);
}

const rows = readFileSync(rowsFile, 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('# '))
  .map((line) => {
    const [, from, to, ...label] = line.split(' ');
    return {
      from: Number(from) / 1e6,
      to: Number(to) / 1e6,
      label: label.join(' '),
      parts: new Map<string, number>(),
    };
  });

/** The parts, in order: a sample goes to the first whose pattern its call chain matches. */
const PARTS: [string, RegExp][] = [
  ['garbage collection', /Heap::|Scavenge|MarkCompact|IncrementalMarking|Sweeper|GCTracer/],
  ['usage reports', /idempotency\.ts|addStackUsage|recordUsage|group-commit\.ts/],
  ['indexer', /src\/indexer\/|sui-network\.ts|event-pages\.ts|protobuf-ts|grpc/],
  ['reads: a body built (a miss)', /loadOnce|listStacksJson|patchedList|patchBody/],
  ['reads: a stack list sent', /sendPieces/],
  ['reads: the rest (checks, /tasks sent)', /sendCached|response-cache\.ts|routes\/reads\.ts/],
  ['responses finishing', /onFinish|afterWrite|resOnFinish|onResFinished/],
  ['requests arriving (parse, route)', /parserOn|llhttp|OnStreamRead|http_parser/],
  ['timers and immediates', /processTimers|listOnTimeout|processImmediate/],
  ['waiting (epoll)', /epoll/],
];

let last: { time: number; comm: string; frames: string[] } | undefined;

function finish(sample: { time: number; comm: string; frames: string[] }): void {
  const row = rows.find((r) => sample.time >= r.from && sample.time < r.to);
  if (!row) return;
  let part: string;
  if (sample.comm !== 'MainThread') part = `thread ${sample.comm}`;
  else {
    const chain = sample.frames.join(' | ');
    part = PARTS.find(([, pattern]) => pattern.test(chain))?.[0] ?? 'other (main thread)';
  }
  row.parts.set(part, (row.parts.get(part) ?? 0) + 1);
}

const input = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
for await (const line of input) {
  if (line.trim() === '') {
    if (last) finish(last);
    last = undefined;
  } else if (!/^\s/.test(line)) {
    // "MainThread  2109.745247: "
    const match = /^(.*?)\s+(\d+\.\d+):/.exec(line);
    if (!match) continue;
    last = { time: Number(match[2]), comm: match[1]!.trim(), frames: [] };
  } else last?.frames.push(line.trim().split(/\s+/).slice(1).join(' '));
}
if (last) finish(last);

for (const row of rows) {
  const seconds = row.to - row.from;
  const msPerSecond = (n: number) => ((n / sampleHz) * 1000) / seconds;
  const total = [...row.parts.values()].reduce((a, b) => a + b, 0);
  process.stdout.write(`${row.label}: ${msPerSecond(total).toFixed(0)} ms/s of CPU (${sampleHz} Hz)\n`);
  for (const [part, n] of [...row.parts].sort((a, b) => b[1] - a[1])) {
    process.stdout.write(`  ${msPerSecond(n).toFixed(1).padStart(7)} ms/s  ${part}\n`);
  }
}
