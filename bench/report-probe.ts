/**
 * node bench/report-probe.ts [reports]: what a usage report costs when nothing else runs. A daemon on the
 * dev network (pinned to CPU 0, as in the other benchmarks) gets a node and 50 stacks, then this process
 * (pinned to CPU 1) sends the reports one after another over one kept-alive connection, from its main
 * thread. Prints the latency as this client sees it and the daemon's CPU per report. It is the floor that
 * bench:mixed's reporter (a worker thread on a timer, sharing its core with wrk) cannot see below.
 *
 *   node bench/report-probe.ts [REPORTS] [--profile DIR]
 * --profile runs the daemon under node --cpu-prof and writes its profiles to DIR (summed by bench/profile.ts).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { procTicks, TICKS_PER_SECOND } from './cpu.ts';
import { json } from './daemon-http.ts';
import { LOAD_CPU } from './load.ts';
import { percentile } from './report.ts';
import { startDaemon } from './servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { profile: { type: 'string' } },
});
const reports = Number(positionals[0] ?? 5000);
spawnSync('taskset', ['-a', '-p', '-c', LOAD_CPU, String(process.pid)]);
const dir = mkdtempSync(join(tmpdir(), 'node-daemon-report-probe-'));
const daemon = await startDaemon(ROOT, { dataDir: dir, network: 'dev', cpuProfDir: flags.profile });
const token = readFileSync(join(dir, 'api-token'), 'utf8').trim();
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

const ok = <T = Record<string, number>>(method: string, path: string, body: unknown) =>
  json<T>(daemon.origin, method, path, token, body, agent);

try {
  await ok('POST', '/dev/tasks', { role: 0, model_name: 'probe', security_level: 0 });
  const node = (await ok('POST', '/nodes/register', {})).node_small_id!;
  const price = 1_000_000;
  await ok('POST', '/nodes/task-subscribe', { task_small_id: 1, price_per_one_million_compute_units: price });
  const stacks: number[] = [];
  for (let i = 0; i < 50; i++) {
    const stack = await ok('POST', '/dev/stacks', {
      task_small_id: 1,
      num_compute_units: reports,
      price_per_one_million_compute_units: price,
      selected_node_id: node,
    });
    stacks.push(stack.stack_small_id!);
  }
  const latencies: number[] = [];
  const [before] = procTicks(daemon.pid);
  for (let i = 0; i < reports; i++) {
    const t0 = performance.now();
    await ok('POST', `/stacks/${stacks[i % stacks.length]}/usage`, { compute_units: 1 });
    latencies.push(performance.now() - t0);
  }
  const cpuMs = ((procTicks(daemon.pid)[0] - before) / TICKS_PER_SECOND) * 1000;
  latencies.sort((a, b) => a - b);
  const ms = (p: number) => percentile(latencies, p).toFixed(3);
  console.log(
    `${reports} sequential usage reports: p50 ${ms(50)} ms, p90 ${ms(90)} ms, p99 ${ms(99)} ms; ` +
      `daemon CPU ${((cpuMs / reports) * 1000).toFixed(0)} µs per report`,
  );
} finally {
  agent.destroy();
  await daemon.stop();
  rmSync(dir, { recursive: true, force: true });
}
