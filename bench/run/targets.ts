/** npm run bench's targets: the measurements judged against the engine's goals, and the notes they bring. */
import type { ForeignLoad } from '../cpu.ts';
import { fmt, isDisturbed, type Target } from '../report.ts';
import type { MeasuredBodyBuild } from './body-build.ts';
import { type Engine, onEngine } from './engine.ts';
import type { HttpRow, MeasuredIngest } from './measure.ts';

type Goals = Engine['targets'];

/** Judges the measurements against the engine's targets; pushes the notes that go with them. */
export function judge(
  engine: Engine,
  rows: readonly HttpRow[],
  ingest: readonly MeasuredIngest[],
  bodyBuild: MeasuredBodyBuild | undefined,
  build: { eventsPerSecond: number } | undefined,
  notes: string[],
): Target[] {
  const goals = engine.targets;
  const targets: Target[] = [];
  if (goals.tasksRatio !== undefined) targets.push(...tasksRatioTargets(rows, goals.tasksRatio, notes));
  targets.push(...ingestTargets(goals, ingest, build));
  targets.push(...bodyBuildTargets(goals, bodyBuild, notes));
  targets.push(...stacksTargets(goals, rows));
  if (goals.tasksRatio === undefined) tasksReference(engine, rows, notes);
  return targets;
}

/** Each timed ingest run of the streams, and the data set's build, against their rates. */
function ingestTargets(
  goals: Goals,
  ingest: readonly MeasuredIngest[],
  build: { eventsPerSecond: number } | undefined,
): Target[] {
  const targets: Target[] = [];
  const ingestTarget = (name: string, eventsPerSecond: number, goal: number, otherLoad?: ForeignLoad) => {
    targets.push({
      name: `ingest ${name}`,
      goal: `>= ${fmt(goal, 0)} events/s`,
      value: `${fmt(eventsPerSecond, 0)} events/s`,
      pass: eventsPerSecond >= goal,
      disturbed: isDisturbed(otherLoad),
    });
  };
  const streamGoal = goals.streamEventsPerSecond;
  if (streamGoal !== undefined) {
    for (const r of ingest.filter((r) => !r.cold)) {
      ingestTarget(`${r.name}, ${r.path}`, r.eventsPerSecond, streamGoal, r.otherLoad);
    }
  }
  if (goals.buildEventsPerSecond !== undefined && build) {
    ingestTarget(
      'HTTP data set build, applyPage into one growing database',
      build.eventsPerSecond,
      goals.buildEventsPerSecond,
    );
  }
  return targets;
}

/** A node's list body rebuilt after each kind of change, p50; the first build is noted, not judged. */
function bodyBuildTargets(goals: Goals, bodyBuild: MeasuredBodyBuild | undefined, notes: string[]): Target[] {
  const bodyGoal = goals.bodyBuildP50Ms;
  if (bodyGoal === undefined || !bodyBuild) return [];
  const targets = (
    [
      ['after a usage report', bodyBuild.afterReport],
      ['after an indexer page', bodyBuild.afterIndexer],
      ['after a new stack', bodyBuild.afterNewStack],
    ] as const
  ).map(([when, t]) => ({
    name: `${fmt(bodyBuild.stacksPerNode, 0)}-stack list body rebuilt ${when}, p50 (issue 13)`,
    goal: `<= ${bodyGoal} ms`,
    value: `${fmt(t.p50ms, 3)} ms (p99 ${fmt(t.p99ms, 2)}, max ${fmt(t.maxMs, 2)} ms)`,
    pass: t.p50ms <= bodyGoal,
    disturbed: isDisturbed(bodyBuild.otherLoad),
  }));
  notes.push(
    `list body: a node's list built the first time (whole rows, once per node while the store keeps what ` +
      `it read) took p50 ${fmt(bodyBuild.firstSight.p50ms, 2)} ms; shown, not judged.`,
  );
  return targets;
}

/** Every /stacks row's p99, the cached one against the bare server's, and the uncached rotation's. */
function stacksTargets(goals: Goals, rows: readonly HttpRow[]): Target[] {
  const targets: Target[] = rows
    .filter((r) => r.id.startsWith('stacks-'))
    .map((row) => ({
      name: `p99 ${row.label}, ${row.server}`,
      goal: `<= ${goals.stacksP99Ms} ms`,
      value: row.result ? `${fmt(row.result.p99ms, 2)} ms` : 'not measured',
      pass: row.result ? row.result.p99ms <= goals.stacksP99Ms : undefined,
      disturbed: isDisturbed(row.otherLoad),
    }));
  const byId = (id: string) => rows.find((r) => r.id === id);
  const cached = byId('stacks-fixed-cached');
  const bare = byId('floor-stacks-bare');
  if (goals.cachedStacksP99VsBare !== undefined && cached?.result && bare?.result) {
    const ratio = cached.result.p99ms / bare.result.p99ms;
    targets.push({
      name: `p99 ${cached.label}, daemon / bare node:http (same bytes)`,
      goal: `<= ${goals.cachedStacksP99VsBare.toFixed(1)}x`,
      value: `${ratio.toFixed(2)}x (${fmt(cached.result.p99ms, 2)} / ${fmt(bare.result.p99ms, 2)} ms)`,
      pass: ratio <= goals.cachedStacksP99VsBare,
      disturbed: isDisturbed(cached.otherLoad) || isDisturbed(bare.otherLoad),
    });
  }
  const rotating = byId('stacks-rotating-uncached');
  if (goals.uncachedRotatingP99Ms !== undefined && rotating?.result) {
    targets.push({
      name: `p99 ${rotating.label}, ${rotating.server} (issue 13)`,
      goal: `<= ${goals.uncachedRotatingP99Ms} ms`,
      value: `${fmt(rotating.result.p99ms, 2)} ms`,
      pass: rotating.result.p99ms <= goals.uncachedRotatingP99Ms,
      disturbed: isDisturbed(rotating.otherLoad),
    });
  }
  return targets;
}

/** Where GET /tasks's ratio is no target, the one round's ratio as a note. */
function tasksReference(engine: Engine, rows: readonly HttpRow[], notes: string[]): void {
  const td = rows.find((r) => r.id === 'tasks-daemon')?.result;
  const tb = rows.find((r) => r.id === 'tasks-bare')?.result;
  if (td && tb) {
    notes.push(
      `GET /tasks, daemon${onEngine(engine)} / bare node:http, one round: ` +
        `${(td.requestsPerSecond / tb.requestsPerSecond).toFixed(2)} ` +
        `(${fmt(td.requestsPerSecond, 0)} / ${fmt(tb.requestsPerSecond, 0)} req/s); ` +
        `a reference, not a ${engine.name ? `${engine.name} ` : ''}target.`,
    );
  }
}

/**
 * GET /tasks, daemon against bare node:http, over the rounds measured: the throughput ratio, and server
 * CPU per request as a cross-check independent of the load generator.
 */
function tasksRatioTargets(rows: readonly HttpRow[], minRatio: number, notes: string[]): Target[] {
  const byId = (id: string) => rows.find((r) => r.id === id);
  // The ratio of the summed throughputs over the rounds; each round's ratio is shown too.
  const rounds = [
    [byId('tasks-daemon'), byId('tasks-bare')],
    [byId('tasks-daemon-2'), byId('tasks-bare-2')],
  ].filter(([d, b]) => d?.result && b?.result) as [HttpRow, HttpRow][];
  const disturbed = rounds.some(([d, b]) => isDisturbed(d.otherLoad) || isDisturbed(b.otherLoad));
  const rps = (row: HttpRow) => row.result!.requestsPerSecond;
  const daemonSum = rounds.reduce((sum, [d]) => sum + rps(d), 0);
  const bareSum = rounds.reduce((sum, [, b]) => sum + rps(b), 0);
  const ratio = rounds.length > 0 ? daemonSum / bareSum : undefined;
  // When wrk saturates its core before the bare server does, the throughput ratio flatters the daemon;
  // the server CPU per request does not.
  const cpuPerRequest = (row: HttpRow) =>
    (row.otherLoad?.serverCpuSeconds ?? Number.NaN) / row.result!.requests;
  const daemonCpu = rounds.reduce((sum, [d]) => sum + cpuPerRequest(d), 0) / rounds.length;
  const bareCpu = rounds.reduce((sum, [, b]) => sum + cpuPerRequest(b), 0) / rounds.length;
  const cpuRatio =
    rounds.length > 0 && Number.isFinite(bareCpu / daemonCpu) ? bareCpu / daemonCpu : undefined;
  if (rounds.some(([, b]) => (b.otherLoad?.clientPercent ?? 0) >= 95)) {
    notes.push(
      'wrk used >= 95% of its core against the bare server: the load generator, not the server, limited the ' +
        'bare baseline, so the throughput ratio flatters the daemon; the CPU-per-request cross-check does not.',
    );
  }
  return [
    {
      name: 'GET /tasks throughput, daemon / bare node:http',
      goal: `>= ${minRatio.toFixed(2)}`,
      value:
        ratio === undefined
          ? 'not measured'
          : `${ratio.toFixed(2)} (${fmt(daemonSum / rounds.length, 0)} / ${fmt(bareSum / rounds.length, 0)} req/s; ` +
            `rounds ${rounds.map(([d, b]) => (rps(d) / rps(b)).toFixed(2)).join(', ')})`,
      pass: ratio === undefined ? undefined : ratio >= minRatio,
      disturbed,
    },
    {
      name: 'GET /tasks server CPU per request, bare / daemon (cross-check)',
      goal: `>= ${minRatio.toFixed(2)}`,
      value:
        cpuRatio === undefined
          ? 'not measured'
          : `${cpuRatio.toFixed(2)} (${fmt(bareCpu * 1e6, 0)} / ${fmt(daemonCpu * 1e6, 0)} us of CPU 0 per request)`,
      pass: cpuRatio === undefined ? undefined : cpuRatio >= minRatio,
      disturbed,
    },
  ];
}
