// Where a daemon's stalls went: the samples of a V8 CPU profile that fall inside the windows stall-log.ts
// wrote, against all the profile's samples. Prints, for the stalls and for the whole run, the share of
// samples per area (the frame nearest the root that names one of ours or a library) and the heaviest
// functions by inclusive time, then the ten longest stalls with their heaviest functions.
//
//   node bench/probes/stall-profile.ts PROFILE.cpuprofile|- STALLS.log [--row TEXT] [--top N]
// The log's '#' lines are the rows' measured windows (bench/mixed.ts writes them): the stalls of each row
// are counted first, and --row keeps only the stalls in the rows whose label contains TEXT (by default, all
// the rows' stalls, without the daemon's start and the bench's setup).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { row: { type: 'string', default: '' }, top: { type: 'string', default: '25' } },
});
const [profileFile, stallFile] = positionals;
if (!profileFile || !stallFile) {
  process.stderr.write(
    'usage: node bench/probes/stall-profile.ts PROFILE.cpuprofile|- STALLS.log [--row TEXT] [--top N]\n',
  );
  process.exit(2);
}
const top = Number(flags.top);
const lines = readFileSync(stallFile, 'utf8').split('\n').filter(Boolean);
const rows = lines
  .filter((line) => line.startsWith('# '))
  .map((line) => {
    const [, from, to, ...label] = line.split(' ');
    return { from: Number(from), to: Number(to), label: label.join(' ') };
  });
// stall-log.ts's garbage collections: [from, to, kind].
const gcs = lines
  .filter((line) => line.startsWith('gc '))
  .map((line) => {
    const [, from, to, kind] = line.split(' ');
    return [Number(from), Number(to), kind ?? ''] as const;
  });
const allStalls = lines
  .filter((line) => !line.startsWith('#') && !line.startsWith('gc '))
  .map((line) => line.split(' ').map(Number) as [number, number])
  .sort((a, b) => a[0] - b[0]);
const within = (row: { from: number; to: number }) => allStalls.filter(([a]) => a >= row.from && a < row.to);
/** Milliseconds of the collections (of a kind, or all) that overlap the windows. */
const gcWithin = (windows: (readonly [number, number])[], kind?: string) => {
  let micros = 0;
  for (const [from, to, k] of gcs) {
    if (kind !== undefined && k !== kind) continue;
    for (const [a, b] of windows) micros += Math.max(0, Math.min(to, b) - Math.max(from, a));
  }
  return micros / 1000;
};
for (const row of rows) {
  const windows = within(row);
  const mine = windows.map(([a, b]) => (b - a) / 1000);
  const whole = [[row.from, row.to] as const];
  const gc =
    gcs.length === 0
      ? ''
      : `; GC ${gcWithin(whole).toFixed(0)} ms (major ${gcWithin(whole, 'major').toFixed(0)} ms), ${gcWithin(windows).toFixed(0)} ms of it in stalls`;
  process.stdout.write(
    `${row.label.padEnd(28)} ${mine.length} stalls, ${mine.filter((ms) => ms > 10).length} over 10 ms, ${mine.reduce((x, y) => x + y, 0).toFixed(0)} ms in ${((row.to - row.from) / 1e6).toFixed(1)} s, longest ${Math.max(0, ...mine).toFixed(1)} ms${gc}\n`,
  );
}
const stalls = rows.filter((row) => row.label.includes(flags.row)).flatMap(within);
// '-' for the profile: the rows' counts alone.
if (profileFile === '-') process.exit(0);
const profile = JSON.parse(readFileSync(profileFile, 'utf8')) as CpuProfile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n: ProfileNode) => {
  const { functionName, url, lineNumber } = n.callFrame;
  const file = url.replace(/^.*\/(node_modules|src|bench|test)\//, '$1/');
  return `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim();
};
/** The stack of a sample's leaf, root first. */
const stackOf = (id: number): ProfileNode[] => {
  const out: ProfileNode[] = [];
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) out.push(byId.get(at)!);
  return out.reverse();
};

interface Tally {
  samples: number;
  inclusive: Map<string, number>;
  self: Map<string, number>;
}
const tally = (): Tally => ({ samples: 0, inclusive: new Map(), self: new Map() });
const add = (t: Tally, id: number) => {
  t.samples++;
  const stack = stackOf(id);
  const seen = new Set<string>();
  for (const n of stack) {
    const name = label(n);
    if (seen.has(name)) continue;
    seen.add(name);
    t.inclusive.set(name, (t.inclusive.get(name) ?? 0) + 1);
  }
  const leaf = label(stack.at(-1)!);
  t.self.set(leaf, (t.self.get(leaf) ?? 0) + 1);
};

const all = tally();
const inStalls = tally();
const perStall = stalls.map(() => tally());
let time = profile.startTime;
let s = 0;
for (let i = 0; i < profile.samples.length; i++) {
  time += profile.timeDeltas[i]!;
  const id = profile.samples[i]!;
  add(all, id);
  while (s < stalls.length && stalls[s]![1] < time) s++;
  if (s < stalls.length && stalls[s]![0] <= time) {
    add(inStalls, id);
    add(perStall[s]!, id);
  }
}

const show = (title: string, t: Tally, map: 'inclusive' | 'self', n: number) => {
  process.stdout.write(`\n${title} (${t.samples} samples)\n`);
  const rows = [...t[map]].sort((a, b) => b[1] - a[1]).slice(0, n);
  for (const [name, count] of rows) {
    const there = (all[map].get(name) ?? 0) / (all.samples || 1);
    process.stdout.write(
      `  ${((100 * count) / (t.samples || 1)).toFixed(1).padStart(5)} %  (run ${(100 * there).toFixed(1).padStart(5)} %)  ${name}\n`,
    );
  }
};
const total = stalls.reduce((sum, [a, b]) => sum + (b - a), 0) / 1000;
process.stdout.write(
  `${stalls.length} stalls, ${total.toFixed(0)} ms in all; profile ${((time - profile.startTime) / 1e6).toFixed(1)} s\n`,
);
show('inclusive, in stalls', inStalls, 'inclusive', top);
show('self, in stalls', inStalls, 'self', top);
const longest = stalls
  .map((w, i) => ({ w, t: perStall[i]! }))
  .sort((a, b) => b.w[1] - b.w[0] - (a.w[1] - a.w[0]))
  .slice(0, 10);
for (const { w, t } of longest) {
  show(
    `stall of ${((w[1] - w[0]) / 1000).toFixed(1)} ms at ${((w[0] - profile.startTime) / 1e6).toFixed(2)} s`,
    t,
    'inclusive',
    12,
  );
}
