/** What bench:mixed prints: its rows' table, the reports on the wire, and the targets judged from the rows. */
import type { Target } from '../report.ts';
import type { Row } from './rows.ts';
import { OWN_STACKS, type Settings, STEAL_RETRIES, WARMUP_SECONDS } from './settings.ts';
import { type WireReport, wireLatency } from './wire.ts';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A number in a cell: '-' for NaN. */
const cell = (n: number, digits = 2) => (Number.isNaN(n) ? '-' : n.toFixed(digits));

/** The rows' table, under a heading that says what the reads read. */
export function printRows(
  rows: readonly Row[],
  engine: string,
  settings: Settings,
  read: { ownPath: string; ownBytes: number; tasksBytes: number },
): void {
  const { ownPath, ownBytes, tasksBytes } = read;
  console.log(
    `\nMixed workload on ${engine} (${settings.seconds} s a row after ${WARMUP_SECONDS} s warm-up; reads: 50 connections ` +
      `over GET ${ownPath} [${OWN_STACKS} stacks, ${ownBytes.toLocaleString('en-US')} B] and GET /tasks ` +
      `[${tasksBytes.toLocaleString('en-US')} B])\n`,
  );
  console.log(
    '| Writes                       |  Reads/s | Ratio | Interleaved | Read p50 ms | Read p99 ms | Reports sent | Report p50 ms | Report p99 ms | Served <= 1 ms | Served <= 5 ms | Indexer ev/s | Cache hits | Young GC ms/s | per GC ms | Daemon CPU | wrk CPU | Bench CPU | Steal |',
  );
  console.log(
    '| ---------------------------- | -------: | ----: | ----------: | ----------: | ----------: | -----------: | ------------: | ------------: | -------------: | -------------: | -----------: | ---------: | ------------: | --------: | ---------: | ------: | --------: | ----: |',
  );
  for (const r of rows) {
    console.log(
      `| ${r.label.padEnd(28)} | ${cell(r.reads.requestsPerSecond, 0).padStart(8)} | ${cell(r.ratio ?? Number.NaN)} | ` +
        `${(r.interleaved ? cell(median(r.interleaved)) : '-').padStart(11)} | ` +
        `${cell(r.reads.p50ms).padStart(11)} | ${cell(r.reads.p99ms).padStart(11)} | ` +
        `${String(r.reports.sent).padStart(12)} | ${cell(r.reports.p50ms).padStart(13)} | ` +
        `${cell(r.reports.p99ms).padStart(13)} | ${`${cell(r.reports.servedWithin1ms * 100, 1)} %`.padStart(14)} | ` +
        `${`${cell(r.reports.servedWithin5ms * 100, 1)} %`.padStart(14)} | ${String(Math.round(r.streamApplied)).padStart(12)} | ` +
        `${`${cell(r.cacheHitRate * 100, 1)} %`.padStart(10)} | ${cell(r.youngGc.msPerSecond, 1).padStart(13)} | ` +
        `${cell(r.youngGc.meanMs).padStart(9)} | ${`${cell(r.daemonCpu * 100, 0)} %`.padStart(10)} | ` +
        `${`${cell(r.wrkCpu * 100, 0)} %`.padStart(7)} | ${`${cell(r.benchCpu * 100, 0)} %`.padStart(9)} | ` +
        `${`${cell(r.steal * 100, 0)} %`.padStart(5)} |`,
    );
    if (r.disturbed)
      console.log(
        `  (disturbed: the hypervisor took ${cell(r.steal * 100, 0)} % of a core after ${STEAL_RETRIES} repeats)`,
      );
    if (r.interleavedDisturbed)
      console.log('  (interleaved: no segment pair was clean of steal; the median of them all)');
    if (r.reports.failed > 0 || r.reads.non2xx > 0)
      console.log(`  (${r.reports.failed} reports failed, ${r.reads.non2xx} reads not 2xx)`);
  }
}

/** The same reports as tcpdump saw them on the loopback interface (--wire). */
export function printWire(rows: readonly Row[], onWire: WireReport[]): void {
  console.log(
    '\nThe same reports on the wire (tcpdump on lo: from the request leaving the reporter to the answer leaving the daemon)\n',
  );
  console.log(
    '| Writes                       | Reports seen | Client p50 ms | Client p99 ms | Wire p50 ms | Wire p99 ms |',
  );
  console.log(
    '| ---------------------------- | -----------: | ------------: | ------------: | ----------: | ----------: |',
  );
  for (const r of rows) {
    if (!r.reportsPerSecond) continue;
    const seen = wireLatency(onWire, r.reports.from, r.reports.to);
    console.log(
      `| ${r.label.padEnd(28)} | ${String(seen.count).padStart(12)} | ${cell(r.reports.p50ms).padStart(13)} | ` +
        `${cell(r.reports.p99ms).padStart(13)} | ${cell(seen.p50ms).padStart(11)} | ${cell(seen.p99ms).padStart(11)} |`,
    );
  }
}

/**
 * The workload's targets, judged from the rows measured: at 100 reports/s the reads' ratio (the row's and,
 * when measured, the interleaved median) at least 0.8 and their p99 at most 15 ms; at 500 reports/s the
 * ratio at least 0.6; on SQLite, a report's p50 at most 1 ms and p99 at most 5 ms while 50 connections read
 * (the "reports/s, no stream" row), on the wire when it was captured, else as the reporter saw it. A rate
 * not measured in this run is not judged.
 */
function mixedTargets(rows: readonly Row[], engine: string, onWire: WireReport[] | undefined): Target[] {
  const targets: Target[] = [];
  const ratioTargets = (rate: number, goal: number) => {
    const row = rows.find((r) => r.reportsPerSecond === rate && r.stream && r.ratio !== undefined);
    if (row === undefined) return row;
    const disturbed = row.disturbed === true;
    targets.push({
      name: `${row.label}: reads' ratio to no writes (row)`,
      goal: `>= ${goal}`,
      value: row.ratio!.toFixed(3),
      pass: row.ratio! >= goal,
      disturbed,
    });
    if (row.interleaved) {
      const m = median(row.interleaved);
      targets.push({
        name: `${row.label}: reads' ratio to no writes (interleaved median)`,
        goal: `>= ${goal}`,
        value: `${m.toFixed(3)} (${row.interleaved.map((r) => r.toFixed(2)).join(', ')})`,
        pass: m >= goal,
        disturbed: row.interleavedDisturbed === true,
      });
    }
    return row;
  };
  const at100 = ratioTargets(100, 0.8);
  if (at100) {
    targets.push({
      name: `${at100.label}: read p99`,
      goal: '<= 15 ms',
      value: `${at100.reads.p99ms.toFixed(2)} ms`,
      pass: at100.reads.p99ms <= 15,
      disturbed: at100.disturbed === true,
    });
  }
  ratioTargets(500, 0.6);
  const reports = rows.find((r) => r.reportsPerSecond && !r.stream && r.label.endsWith('no stream'));
  if (engine === 'SQLite' && reports) {
    const seen = onWire ? wireLatency(onWire, reports.reports.from, reports.reports.to) : reports.reports;
    const where = onWire ? 'on the wire' : "the reporter's clock";
    targets.push({
      name: `${reports.label}: report p50 / p99 (${where})`,
      goal: '<= 1 / 5 ms',
      value: `${seen.p50ms.toFixed(2)} / ${seen.p99ms.toFixed(2)} ms`,
      pass: seen.p50ms <= 1 && seen.p99ms <= 5,
      disturbed: reports.disturbed === true,
    });
  }
  return targets;
}

/** The targets' table, when this run measured a rate that has targets. */
export function printTargets(
  rows: readonly Row[],
  engine: string,
  onWire: WireReport[] | undefined,
  quick: boolean,
): void {
  const targets = mixedTargets(rows, engine, onWire);
  if (targets.length === 0) return;
  console.log(`\nTargets on ${engine} (issue 13)\n`);
  console.log('| Target | Goal | Measured | Result |');
  console.log('| --- | --- | --- | --- |');
  for (const t of targets) {
    const result = `${t.pass ? 'PASS' : 'MISS'}${t.disturbed ? ' (disturbed: steal)' : ''}`;
    console.log(`| ${t.name} | ${t.goal} | ${t.value} | ${result} |`);
  }
  if (quick) console.log('\n(--quick: rows of 4 s; the full run is the one to judge by.)');
}
