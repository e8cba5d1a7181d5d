import { mulberry32 } from '../../../test/helpers/random.ts';
import { listSlice } from './body.ts';
import { ROW, type StackRow, stateOf } from './columns.ts';
import { builtList, changedList } from './kept-list.ts';

/**
 * The stack list module's benchmark row: what its steps cost for one node of STACKS stacks, in process, no
 * store, no HTTP: a regression in the module shows here in seconds, where the store-level benchmarks
 * (`npm run bench`, its body-build rows) take minutes. Run it alone with
 * `node src/store/stack-list/stack-list.bench.ts`; `npm run bench` prints it too.
 *
 * Each step is timed over ROUNDS rounds, in microseconds (median and 99th percentile of the rounds):
 *   - build: the list from whole rows (a node's first listing);
 *   - report: one stack's usage changed (what every read after a usage report does: one piece written again);
 *   - new stack: one stack appended after the last (an indexer page that created one);
 *   - filtered: a list filtered by fill chosen from a kept list whose fills are known (views, no copy);
 *   - page: 100 stacks after the middle one.
 */

export const STACKS = 1000;
const ROUNDS = 2000;

export interface StepTimes {
  p50us: number;
  p99us: number;
}

export interface StackListBench {
  stacks: number;
  rounds: number;
  bodyBytes: number;
  build: StepTimes;
  report: StepTimes;
  newStack: StepTimes;
  filtered: StepTimes;
  page: StepTimes;
}

function row(id: number, already: number): unknown[] {
  return [
    `0x${'ab'.repeat(32)}`,
    id,
    `0x${String(id).padStart(64, '0')}`,
    3,
    7,
    100_000,
    2_000_000,
    already,
    0,
    already === 0 ? 0 : 1 + (already % 97),
    0,
    0,
    0,
    null,
  ];
}

function times(samples: number[]): StepTimes {
  const sorted = samples.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50us: Math.round(at(0.5) * 10) / 10, p99us: Math.round(at(0.99) * 10) / 10 };
}

/** Times fn ROUNDS times (after a warm-up), in microseconds each. */
function timed(fn: (round: number) => unknown): StepTimes {
  for (let i = 0; i < 200; i++) fn(i);
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const started = process.hrtime.bigint();
    fn(i);
    samples.push(Number(process.hrtime.bigint() - started) / 1000);
  }
  return times(samples);
}

export function measureStackList(): StackListBench {
  const rand = mulberry32(47);
  const rows: StackRow[] = Array.from({ length: STACKS }, (_, i) => row(i + 1, Math.floor(rand() * 100_000)));
  const kept = builtList(rows);
  const build = timed(() => builtList(rows));
  const report = timed((round) => {
    const at = round % STACKS;
    const changed = new Map([[at, stateOf(row(at + 1, (rows[at]![ROW.already] as number) + round + 1))]]);
    return changedList(kept, changed, []);
  });
  const newStack = timed((round) => changedList(kept, new Map(), [row(STACKS + 1 + round, 0)]));
  // The kept list's fills are worked out once per body: the first filtered read pays them.
  listSlice(kept.state, kept.list, 0.5, {});
  const filtered = timed(() => listSlice(kept.state, kept.list, 0.5, {}));
  const page = timed(() => listSlice(kept.state, kept.list, undefined, { after: STACKS / 2, limit: 100 }));
  return {
    stacks: STACKS,
    rounds: ROUNDS,
    bodyBytes: kept.list.body.length,
    build,
    report,
    newStack,
    filtered,
    page,
  };
}

/** The row as `npm run bench` prints it. */
export function formatStackList(result: StackListBench): string {
  const step = (name: string, t: StepTimes) =>
    `  ${name.padEnd(34)} p50 ${t.p50us.toFixed(1).padStart(7)} µs   p99 ${t.p99us.toFixed(1).padStart(7)} µs`;
  return [
    `Stack list module (${result.stacks} stacks, ${result.bodyBytes} bytes, ${result.rounds} rounds a step):`,
    step('build from whole rows', result.build),
    step('one stack changed (a usage report)', result.report),
    step('one stack appended', result.newStack),
    step('filtered by fill (views)', result.filtered),
    step('a page of 100', result.page),
  ].join('\n');
}

if (import.meta.main) console.log(formatStackList(measureStackList()));
