/**
 * What npm run bench prints and writes: the log, the failures, number and table formatting, the marks for
 * measurements other processes disturbed, the ingest, HTTP and targets tables, the summary, the machine
 * description and the results file.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { DISTURBED_PERCENT, type ForeignLoad } from './cpu.ts';
import type { HttpRow, MeasuredIngest } from './measure.ts';

/**
 * The p-th percentile of ascending samples by nearest rank: the smallest sample with at least p % of them at
 * or below it (the 99th of 100 for p99, not the largest); NaN for none.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const log = (line: string) => process.stdout.write(`${line}\n`);
export const warn = (line: string) => process.stderr.write(`${line}\n`);

/** What could not be measured, in the order it failed; a run with any exits 1. */
export const failures: string[] = [];

/** Records a failure to measure what, says so on stderr, and returns the error's message. */
export function fail(what: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  failures.push(`${what}: ${message}`);
  warn(`bench: could not measure ${what}: ${message}`);
  return message;
}

export interface Target {
  name: string;
  goal: string;
  value: string;
  pass: boolean | undefined;
  /** Other processes used the machine during the measurement: the number is not trustworthy. */
  disturbed: boolean;
}

export const isDisturbed = (load: ForeignLoad | undefined) =>
  load !== undefined && load.otherPercent >= DISTURBED_PERCENT;

/** The mark after a measurement's line when other processes (or the hypervisor) took CPU meanwhile. */
export function disturbance(load: ForeignLoad | undefined): string {
  if (!load) return '';
  return isDisturbed(load)
    ? ` [DISTURBED: other processes used ${load.otherPercent}% of a core meanwhile]`
    : load.stealPercent >= DISTURBED_PERCENT
      ? ` [hypervisor steal ${load.stealPercent}%]`
      : '';
}

/** The "other CPU" cell: the share of a core other processes used, marked when that disturbed the number. */
export function otherCpu(load: ForeignLoad | undefined): string {
  if (!load) return '-';
  return `${load.otherPercent}%${isDisturbed(load) ? ' !' : ''}`;
}

export function fmt(n: number | undefined, digits: number): string {
  if (n === undefined || !Number.isFinite(n)) return '-';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function table(header: string[], rows: string[][], right: Set<number>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** The columns from first on, right-aligned: the numbers. */
const numbersFrom = (header: readonly string[], first: number) =>
  new Set(header.map((_, i) => i).filter((i) => i >= first));

/** The database server's CPU cell, for the runs that show it (databaseColumn set). */
const databaseCpu = (databaseColumn: string | undefined, load: ForeignLoad | undefined): string[] =>
  databaseColumn === undefined
    ? []
    : [load?.databasePercent === undefined ? '-' : `${load.databasePercent}%`];

/**
 * The ingest table: each ingest run, then the HTTP data set's build when this run built it. databaseColumn
 * heads a column of the database server's CPU, for an engine that runs one.
 */
export function ingestTable(
  title: string,
  ingest: readonly MeasuredIngest[],
  build: { events: number; seconds: number; eventsPerSecond: number } | undefined,
  databaseColumn?: string,
): string {
  const header = [
    title,
    'path',
    'events',
    'seconds',
    'events/s',
    ...(databaseColumn === undefined ? [] : [databaseColumn]),
    'other CPU',
  ];
  const rows = ingest.map((r) => [
    r.name,
    r.path,
    fmt(r.events, 0),
    fmt(r.seconds, 2),
    fmt(r.eventsPerSecond, 0),
    ...databaseCpu(databaseColumn, r.otherLoad),
    otherCpu(r.otherLoad),
  ]);
  if (build) {
    rows.push([
      'HTTP data set build (tasks + stacks)',
      'applyPage',
      fmt(build.events, 0),
      fmt(build.seconds, 2),
      fmt(build.eventsPerSecond, 0),
      ...databaseCpu(databaseColumn, undefined),
      '-',
    ]);
  }
  return table(header, rows, numbersFrom(header, 2));
}

/** The HTTP table: one line per measurement, NOT MEASURED (and why) where there is no result. */
export function httpTable(rows: readonly HttpRow[], databaseColumn?: string): string {
  const header = [
    'HTTP',
    'server',
    'body bytes',
    'items',
    'req/s',
    'p50 ms',
    'p99 ms',
    'CPU server/load',
    ...(databaseColumn === undefined ? [] : [databaseColumn]),
    'other CPU',
  ];
  return table(
    header,
    rows.map((r) => [
      r.label,
      r.server,
      fmt(r.bodyBytes, 0),
      fmt(r.items, 0),
      r.result ? fmt(r.result.requestsPerSecond, 0) : `NOT MEASURED: ${r.error ?? 'skipped'}`,
      fmt(r.result?.p50ms, 2),
      fmt(r.result?.p99ms, 2),
      r.otherLoad ? `${r.otherLoad.serverPercent}% / ${r.otherLoad.clientPercent}%` : '-',
      ...databaseCpu(databaseColumn, r.otherLoad),
      otherCpu(r.otherLoad),
    ]),
    numbersFrom(header, 2),
  );
}

/** Prints the targets table and notes how many measurements other processes disturbed. */
export function reportTargets(
  title: string,
  targets: readonly Target[],
  measured: readonly { otherLoad?: ForeignLoad | undefined }[],
  notes: string[],
): void {
  log('');
  log(
    table(
      [title, 'goal', 'measured', 'result'],
      targets.map((t) => [
        t.name,
        t.goal,
        t.value,
        (t.pass === undefined ? 'NOT MEASURED' : t.pass ? 'PASS' : 'MISS') +
          (t.disturbed ? ' (disturbed)' : ''),
      ]),
      new Set(),
    ),
  );
  const disturbedCount = measured.filter((r) => isDisturbed(r.otherLoad)).length;
  if (disturbedCount > 0) {
    notes.push(
      `${disturbedCount} measurement(s) ran while other processes used >= ${DISTURBED_PERCENT}% of a core ` +
        '(column "other CPU"): repeat the run on a quiet machine before trusting them.',
    );
  }
}

/** The code (commit, and whether src/ has uncommitted changes), the machine and the load generator. */
export function machine(root: string) {
  let wrk = 'not installed';
  try {
    execFileSync('/usr/bin/wrk', ['-v'], { stdio: 'pipe' });
  } catch (error) {
    // wrk -v prints its version and exits 1.
    const out = String((error as { stdout?: Buffer }).stdout ?? '');
    wrk = out.split('\n')[0]?.trim() || wrk;
  }
  let commit = 'unknown';
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, stdio: 'pipe' })
      .toString()
      .trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root, stdio: 'pipe' })
      .toString()
      .split('\n')
      .filter((line) => line.trim() !== '').length;
    commit = dirty > 0 ? `${head} + ${dirty} uncommitted file(s) in src/` : head;
  } catch {
    // Not a git checkout.
  }
  return {
    commit,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 1024 ** 3),
    kernel: release(),
    node: process.version,
    wrk,
  };
}

/** The count of PASS, MISS and not measured, then the notes. */
export function reportSummary(targets: readonly Target[], notes: readonly string[]): void {
  const misses = targets.filter((t) => t.pass === false).length;
  const passes = targets.filter((t) => t.pass === true).length;
  log(`\n${passes} PASS, ${misses} MISS, ${targets.length - passes - misses} not measured`);
  for (const note of notes) log(`note: ${note}`);
}

/** Writes the run's results to file as JSON (fields whose value is undefined are left out). */
export function writeResults(file: string, results: Record<string, unknown>): void {
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  log(`\nwrote ${file}`);
}

/** Says which measurements failed; returns the run's exit code, 1 when any did. */
export function exitCode(): number {
  if (failures.length === 0) return 0;
  warn(`\nbench: ${failures.length} measurement(s) failed:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
  return 1;
}
