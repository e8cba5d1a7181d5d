/**
 * node bench/probes/report-probe.ts [reports]: what a usage report costs when nothing else runs. A daemon on
 * the dev network (pinned to CPU 0, as in the other benchmarks) gets a node and 50 stacks, then this process
 * (pinned to CPU 1) sends the reports one after another over one kept-alive connection, from its main
 * thread. Prints the latency as this client sees it and the daemon's CPU per report. It is the floor that
 * bench:mixed's reporter (a worker thread on a timer, sharing its core with wrk) cannot see below.
 *
 *   node bench/probes/report-probe.ts [REPORTS] [--profile DIR] [--floor] [--rounds N] [--gap MS]
 *                                     [--postgres]
 * --gap waits MS between one report's answer and the next report (default 0: back to back), as an inference
 * server's reports come apart: a report then finds the daemon idle, as it does at 100 reports/s.
 * --postgres runs the daemon on a throwaway PostgreSQL database (on the local server, dropped at the end) and
 * also prints the server's CPU per report: a report's whole cost on that store, without reads around it.
 * --profile runs the daemon under node --cpu-prof and writes its profiles to DIR (bench/run/profile.ts sums
 * one up). --floor also measures the store call alone, through bare node:http and through a plain Fastify
 * route (report-floor-server.ts), in rounds (default 3) that alternate with the daemon: this VM's speed
 * drifts, and the daemon's own request handling is the difference within one run.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { benchArgsAndOperands, usageError } from '../args.ts';
import { countUserAsOurs, databaseTicks, procTicks, TICKS_PER_SECOND } from '../cpu.ts';
import { json } from '../daemon-http.ts';
import { LOAD_CPU, pinSelf } from '../load.ts';
import { DEFAULT_SERVER_URL, ThrowawayDatabases } from '../postgres.ts';
import { percentile } from '../report.ts';
import { freePort, type Server, startDaemon, startPinned } from '../servers.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const NAME = 'bench/probes/report-probe.ts';
const HELP = `Usage: node bench/probes/report-probe.ts [REPORTS] [--profile DIR] [--floor [--rounds N]] [--gap MS]
                                         [--postgres]

What a usage report costs with nothing else running: REPORTS (default 5000) reports one after another to a
daemon on the dev network, after 3000 not counted; the client's latency and the daemon's CPU per report.
  --profile DIR  run the daemon under node --cpu-prof and write its profile to DIR
  --floor        also the store call alone, through bare node:http and plain Fastify, in rounds (--rounds, 3)
  --gap MS       wait MS between a report's answer and the next report (default 0; 10 is 100 reports/s)
  --postgres     the daemon on a throwaway database of the local PostgreSQL server (dropped at the end), and
                 the server's CPU per report too`;
const { values: flags, positionals } = benchArgsAndOperands(NAME, HELP, {
  profile: { type: 'string' },
  floor: { type: 'boolean', default: false },
  rounds: { type: 'string' },
  gap: { type: 'string' },
  postgres: { type: 'boolean', default: false },
});
const reports = Number(positionals[0] ?? 5000);
if (!Number.isInteger(reports) || reports < 1 || positionals.length > 1) {
  usageError(NAME, `REPORTS is one whole number of reports, not ${positionals.join(' ')}`);
}
if (flags.postgres && flags.floor) usageError(NAME, '--floor measures SQLite store calls, not --postgres');
const databases = flags.postgres ? new ThrowawayDatabases(DEFAULT_SERVER_URL) : undefined;
if (databases && !countUserAsOurs('postgres')) {
  usageError(NAME, "--postgres needs the local server's OS user, postgres, to count the server's CPU");
}
const rounds = flags.floor ? Number(flags.rounds ?? 3) : 1;
if (!Number.isInteger(rounds) || rounds < 1)
  usageError(NAME, `--rounds is a number of rounds, 1 or more, not ${flags.rounds}`);
const gapMs = Number(flags.gap ?? 0);
/** The longest idle span measured for --gap's idle CPU. */
const IDLE_MS = 5000;
if (!Number.isFinite(gapMs) || gapMs < 0)
  usageError(NAME, `--gap is a number of milliseconds, 0 or more, not ${flags.gap}`);
/** Reports sent before each measurement (not counted): the code is compiled, the pages are cached. */
const WARM_UP = 3000;
/** Units each stack can take: every report is one unit, spread over 50 stacks. */
const UNITS = Math.ceil((rounds * (reports + WARM_UP)) / 50) + 1;
pinSelf(LOAD_CPU);

interface Target {
  server: Server;
  token: string | undefined;
  stacks: number[];
  dir: string;
}

/** The daemon with a node and 50 stacks of its own, on the dev network. */
async function daemonTarget(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'node-daemon-report-probe-'));
  const databaseUrl = databases ? (await databases.create()).url : undefined;
  const server = await startDaemon(ROOT, {
    dataDir: dir,
    network: 'dev',
    cpuProfDir: flags.profile,
    databaseUrl,
  });
  const token = readFileSync(join(dir, 'api-token'), 'utf8').trim();
  const ok = <T = Record<string, number>>(method: string, path: string, body: unknown) =>
    json<T>(server.origin, method, path, token, body);
  await ok('POST', '/dev/tasks', { role: 0, model_name: 'probe', security_level: 0 });
  const node = (await ok('POST', '/nodes/register', {})).node_small_id!;
  const price = 1_000_000;
  await ok('POST', '/nodes/task-subscribe', { task_small_id: 1, price_per_one_million_compute_units: price });
  const stacks: number[] = [];
  for (let i = 0; i < 50; i++) {
    const stack = await ok('POST', '/dev/stacks', {
      task_small_id: 1,
      num_compute_units: UNITS,
      price_per_one_million_compute_units: price,
      selected_node_id: node,
    });
    stacks.push(stack.stack_small_id!);
  }
  return { server, token, stacks, dir };
}

/** The floor under a report (report-floor-server.ts): the store call alone, via bare node:http or Fastify. */
async function floorTarget(kind: 'bare' | 'fastify'): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'node-daemon-report-floor-'));
  const port = await freePort();
  const server = await startPinned(
    `${kind === 'bare' ? 'bare node:http' : 'plain Fastify'} + store`,
    ROOT,
    ['bench/probes/report-floor-server.ts', kind, String(port), dir, String(UNITS)],
    port,
    '/',
  );
  return { server, token: undefined, stacks: Array.from({ length: 50 }, (_, i) => i + 1), dir };
}

interface Measured {
  /** The server's CPU per report, less what it used idle in a gap as long (idleUs). */
  cpuUs: number;
  /** The server's CPU in a gap of --gap ms with no report (its timers, the dev network's ticks); 0 without. */
  idleUs: number;
  /** PostgreSQL's processes (all of them on this machine), per report; 0 on SQLite. */
  serverUs: number;
  latencies: number[];
}

/** `count` reports one after another over one kept-alive connection; the server's CPU per report. */
async function measure(target: Target, count: number): Promise<Measured> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const send = (i: number) =>
    json(
      target.server.origin,
      'POST',
      `/stacks/${target.stacks[i % target.stacks.length]}/usage`,
      target.token,
      { compute_units: 1 },
      agent,
    );
  try {
    for (let i = 0; i < WARM_UP; i++) await send(i);
    // What the server spends with nothing asked of it, over as many gaps (at most IDLE_MS).
    let idleUs = 0;
    if (gapMs > 0) {
      const idleMs = Math.min(count * gapMs, IDLE_MS);
      const [idleBefore] = procTicks(target.server.pid);
      await sleep(idleMs);
      const usedMs = ((procTicks(target.server.pid)[0] - idleBefore) / TICKS_PER_SECOND) * 1000;
      idleUs = (usedMs / idleMs) * gapMs * 1000;
    }
    const latencies: number[] = [];
    const [before] = procTicks(target.server.pid);
    const serverBefore = databases ? databaseTicks() : 0;
    for (let i = 0; i < count; i++) {
      if (gapMs > 0) await sleep(gapMs);
      const t0 = performance.now();
      await send(i);
      latencies.push(performance.now() - t0);
    }
    const cpuMs = ((procTicks(target.server.pid)[0] - before) / TICKS_PER_SECOND) * 1000;
    const serverMs = databases ? ((databaseTicks() - serverBefore) / TICKS_PER_SECOND) * 1000 : 0;
    return {
      cpuUs: (cpuMs / count) * 1000 - idleUs,
      idleUs,
      serverUs: (serverMs / count) * 1000,
      latencies: latencies.sort((a, b) => a - b),
    };
  } finally {
    agent.destroy();
  }
}

type Kind = 'daemon' | 'bare' | 'fastify';
const kinds: readonly Kind[] = flags.floor ? ['daemon', 'bare', 'fastify'] : ['daemon'];

/** Every kind's server up at once, each measured in turn, round after round; each kind's rounds. */
async function measureRounds(): Promise<Map<Kind, Measured[]>> {
  const targets = new Map<Kind, Target>();
  const results = new Map<Kind, Measured[]>();
  try {
    for (const kind of kinds)
      targets.set(kind, kind === 'daemon' ? await daemonTarget() : await floorTarget(kind));
    for (let round = 0; round < rounds; round++) {
      for (const kind of kinds) {
        const measured = await measure(targets.get(kind)!, reports);
        results.set(kind, [...(results.get(kind) ?? []), measured]);
      }
    }
    return results;
  } finally {
    for (const target of targets.values()) {
      try {
        await target.server.stop();
      } finally {
        rmSync(target.dir, { recursive: true, force: true });
      }
    }
    await databases?.dropAll();
  }
}

const pace = gapMs > 0 ? ` ${gapMs} ms apart` : '';
const idle = (us: number) => (gapMs > 0 ? ` (less ${us.toFixed(0)} µs used idle in a gap)` : '');
const ms = (latencies: number[], p: number) => percentile(latencies, p).toFixed(3);

/** The daemon alone: its one round's latencies and CPU per report. */
function printDaemon({ cpuUs, idleUs, serverUs, latencies }: Measured): void {
  console.log(
    `${reports} sequential usage reports${pace}${databases ? ' on PostgreSQL' : ''}: p50 ${ms(latencies, 50)} ms, p90 ${ms(latencies, 90)} ms, p99 ${ms(latencies, 99)} ms; ` +
      `daemon CPU ${cpuUs.toFixed(0)} µs per report${idle(idleUs)}` +
      (databases ? `, PostgreSQL's ${serverUs.toFixed(0)} µs` : ''),
  );
}

/** --floor: each server's CPU per report over the rounds, and the differences between them. */
function printFloor(results: Map<Kind, Measured[]>): void {
  const mean = (kind: Kind, of: (m: Measured) => number = (m) => m.cpuUs) => {
    const all = results.get(kind)!;
    return all.reduce((sum, m) => sum + of(m), 0) / all.length;
  };
  console.log(`${reports} sequential usage reports${pace} a round, ${rounds} rounds; server CPU per report:`);
  const names = {
    daemon: 'the daemon',
    bare: 'bare node:http + store call',
    fastify: 'plain Fastify + store call',
  };
  for (const kind of kinds) {
    const all = results.get(kind)!;
    const p50 = all.map((m) => ms(m.latencies, 50)).join(', ');
    console.log(
      `  ${names[kind].padEnd(28)} ${all
        .map((m) => m.cpuUs.toFixed(0))
        .join(', ')
        .padEnd(
          16,
        )} µs (mean ${mean(kind).toFixed(0)}); client p50 ${p50} ms${idle(mean(kind, (m) => m.idleUs))}`,
    );
  }
  console.log(
    `  the daemon beyond plain Fastify: ${(mean('daemon') - mean('fastify')).toFixed(0)} µs per report; Fastify beyond bare node:http: ${(mean('fastify') - mean('bare')).toFixed(0)} µs`,
  );
}

const results = await measureRounds();
if (flags.floor) printFloor(results);
else printDaemon(results.get('daemon')![0]!);
