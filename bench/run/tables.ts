/** npm run bench's tables: the ingest runs, the HTTP measurements, the targets, and the summary. */
import { DISTURBED_PERCENT, type ForeignLoad } from '../cpu.ts';
import { fmt, isDisturbed, log, type Target, table } from '../report.ts';
import type { HttpRow, MeasuredIngest } from './measure.ts';

/** The "other CPU" cell: the share of a core other processes used, marked when that disturbed the number. */
function otherCpu(load: ForeignLoad | undefined): string {
  if (!load) return '-';
  return `${load.otherPercent}%${isDisturbed(load) ? ' !' : ''}`;
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

/** The count of PASS, MISS and not measured, then the notes. */
export function reportSummary(targets: readonly Target[], notes: readonly string[]): void {
  const misses = targets.filter((t) => t.pass === false).length;
  const passes = targets.filter((t) => t.pass === true).length;
  log(`\n${passes} PASS, ${misses} MISS, ${targets.length - passes - misses} not measured`);
  for (const note of notes) log(`note: ${note}`);
}
