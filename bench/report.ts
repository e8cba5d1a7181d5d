/**
 * What the benchmarks print and write: the log, the failures, percentiles, number and table formatting, the
 * marks for measurements other processes disturbed, the targets, the machine description and the results
 * file. npm run bench's own tables are in run/tables.ts.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { DISTURBED_PERCENT, type ForeignLoad } from './cpu.ts';

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
