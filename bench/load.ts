import { execFile, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const WRK = '/usr/bin/wrk';
/** The load generator runs on the second core; the server under test owns the first. */
export const LOAD_CPU = '1';

/** Pins every thread of this process to cpu (taskset); undefined once done, else why it could not. */
export function pinSelf(cpu: string): string | undefined {
  const pinned = spawnSync('taskset', ['-a', '-p', '-c', cpu, String(process.pid)], { encoding: 'utf8' });
  return pinned.status === 0 ? undefined : pinned.stderr.trim() || `taskset exited with ${pinned.status}`;
}

export interface LoadSpec {
  /** Base URL, e.g. http://127.0.0.1:4000 */
  origin: string;
  /** One path, or several to rotate over (one request each, in turn). */
  paths: string[];
  seconds: number;
  connections: number;
}

export interface LoadResult {
  tool: 'wrk' | 'autocannon';
  requests: number;
  requestsPerSecond: number;
  p50ms: number;
  p99ms: number;
  /** Response bytes per second. */
  bytesPerSecond: number;
  non2xx: number;
  socketErrors: number;
  timeouts: number;
  command: string;
}

export type LoadTool = 'wrk' | 'autocannon';

export function pickTool(): LoadTool {
  return existsSync(WRK) ? 'wrk' : 'autocannon';
}

const TIME_UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const SIZE_UNITS: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 };

/** "812.00us", "1.52ms", "2.01s" -> milliseconds. */
export function toMs(value: string, unit: string): number {
  const factor = TIME_UNITS[unit];
  if (factor === undefined) throw new Error(`unknown wrk time unit ${unit}`);
  return Number(value) * factor;
}

/** Parses wrk's --latency report. Throws when a number the benchmark needs is missing. */
export function parseWrk(output: string): Omit<LoadResult, 'tool' | 'command'> {
  const need = (re: RegExp, what: string): RegExpExecArray => {
    const m = re.exec(output);
    if (!m) throw new Error(`wrk output has no ${what}:\n${output}`);
    return m;
  };
  const percentile = (p: string) => {
    const m = need(new RegExp(`^\\s*${p}%\\s+([0-9.]+)(us|ms|s|m|h)\\s*$`, 'm'), `${p}% latency`);
    return toMs(m[1]!, m[2]!);
  };
  const total = need(/^\s*(\d+) requests in /m, 'request count');
  const rps = need(/^Requests\/sec:\s+([0-9.]+)/m, 'Requests/sec');
  const transfer = need(/^Transfer\/sec:\s+([0-9.]+)([KMGT]?B)/m, 'Transfer/sec');
  const sockets = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(output);
  return {
    requests: Number(total[1]),
    requestsPerSecond: Number(rps[1]),
    p50ms: percentile('50'),
    p99ms: percentile('99'),
    bytesPerSecond: Number(transfer[1]) * (SIZE_UNITS[transfer[2]!] ?? 1),
    non2xx: non2xx ? Number(non2xx[1]) : 0,
    socketErrors: sockets ? Number(sockets[1]) + Number(sockets[2]) + Number(sockets[3]) : 0,
    timeouts: sockets ? Number(sockets[4]) : 0,
  };
}

async function runWrk(spec: LoadSpec, script: string): Promise<LoadResult> {
  const args = ['-c', LOAD_CPU, WRK, '-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--latency'];
  // wrk's default 2 s timeout would drop (not count) the slowest responses of an uncached run.
  args.push('--timeout', '30s');
  if (spec.paths.length > 1) args.push('-s', script);
  args.push(`${spec.origin}${spec.paths[0]}`);
  if (spec.paths.length > 1) args.push('--', ...spec.paths);
  const { stdout } = await run('taskset', args, { maxBuffer: 16 * 1024 * 1024 });
  const shown =
    spec.paths.length > 1 ? `${args.slice(0, -spec.paths.length).join(' ')} <paths>` : args.join(' ');
  return { tool: 'wrk', command: `taskset ${shown}`, ...parseWrk(stdout) };
}

interface AutocannonJson {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  throughput: { average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

async function runAutocannon(spec: LoadSpec, root: string, tmp: string): Promise<LoadResult> {
  const bin = join(root, 'node_modules/autocannon/autocannon.js');
  const args = ['-c', LOAD_CPU, join(root, 'node_modules/.bin/node'), bin];
  args.push('-c', String(spec.connections), '-d', String(spec.seconds), '-j', '-t', '30');
  if (spec.paths.length > 1) {
    const har = join(tmp, 'rotate.har');
    const entries = spec.paths.map((p) => ({
      request: { method: 'GET', url: `${spec.origin}${p}`, headers: [] },
    }));
    writeFileSync(har, JSON.stringify({ log: { entries } }));
    args.push('--har', har);
  }
  args.push(`${spec.origin}${spec.paths[0]}`);
  const { stdout } = await run('taskset', args, { maxBuffer: 64 * 1024 * 1024 });
  const json = JSON.parse(stdout) as AutocannonJson;
  return {
    tool: 'autocannon',
    command: `taskset ${args.join(' ')}`,
    requests: json.requests.total,
    requestsPerSecond: json.requests.average,
    p50ms: json.latency.p50,
    p99ms: json.latency.p99,
    bytesPerSecond: json.throughput.average,
    non2xx: json.non2xx,
    socketErrors: json.errors,
    timeouts: json.timeouts,
  };
}

export interface LoadContext {
  tool: LoadTool;
  root: string;
  tmp: string;
  warmupSeconds: number;
}

/** One load run; its results are what the load generator printed. */
export function runOnce(ctx: LoadContext, spec: LoadSpec): Promise<LoadResult> {
  return ctx.tool === 'wrk'
    ? runWrk(spec, join(ctx.root, 'bench/rotate.lua'))
    : runAutocannon(spec, ctx.root, ctx.tmp);
}

/** Warms the URL(s) up for ctx.warmupSeconds (results discarded). */
export async function warmUp(ctx: LoadContext, spec: LoadSpec): Promise<void> {
  if (ctx.warmupSeconds > 0) await runOnce(ctx, { ...spec, seconds: ctx.warmupSeconds });
}
