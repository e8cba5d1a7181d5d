import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import DAEMON_NODE_FLAGS from '../bin/daemon-node-flags.json' with { type: 'json' };

/** The server under test runs on the first core; the load generator owns the second. */
export const SERVER_CPU = '0';

export interface Server {
  name: string;
  origin: string;
  pid: number;
  /** From spawning it to its first 200 on the ready path, ms. */
  startedInMs: number;
  /** Its resident memory now and at its peak (VmRSS, VmHWM), MB. */
  memory(): { rssMb: number; peakMb: number };
  /** SIGTERM, then SIGKILL if it has not exited after a while. */
  stop(): Promise<void>;
}

/** A process's VmRSS and VmHWM (its peak resident set), MB, from /proc. */
export function memoryOf(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

/** A port nobody listens on right now (the kernel picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function waitFor(url: string, child: ChildProcess, output: () => string, seconds = 60): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${url}: the server exited (${child.exitCode ?? child.signalCode}):\n${output()}`);
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${url} did not answer within ${seconds} s:\n${output()}`);
}

/** How a pinned server is watched: where all its output goes, and how long it may take to be ready. */
export interface PinnedOptions {
  /** A file that keeps all its stdout and stderr (the last 8,000 characters are kept in any case). */
  output?: string;
  /** Seconds until readyPath must answer 200 (default 60). */
  readySeconds?: number;
}

/**
 * Spawns `taskset -c 0 <node> args...` and waits until readyPath answers 200. Should it exit with an error
 * afterwards, other than on stop(), it says so on stderr with the end of its output.
 */
export async function startPinned(
  name: string,
  root: string,
  nodeArgs: string[],
  port: number,
  readyPath: string,
  options: PinnedOptions = {},
): Promise<Server> {
  const node = join(root, 'node_modules/.bin/node');
  const spawnedAt = performance.now();
  const child = spawn('taskset', ['-c', SERVER_CPU, node, ...nodeArgs], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const kept = options.output === undefined ? undefined : createWriteStream(options.output);
  let output = '';
  const keep = (chunk: Buffer) => {
    kept?.write(chunk);
    output = (output + chunk.toString('utf8')).slice(-8000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const origin = `http://127.0.0.1:${port}`;
  const exited = once(child, 'exit');
  try {
    await waitFor(`${origin}${readyPath}`, child, () => output, options.readySeconds);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const startedInMs = performance.now() - spawnedAt;
  let stopping = false;
  child.on('exit', (code) => {
    if (!stopping && code !== 0 && code !== null) {
      process.stderr.write(`${name} exited with ${code}:\n${output}\n`);
    }
  });
  return {
    name,
    origin,
    pid: child.pid!,
    startedInMs,
    memory: () => memoryOf(child.pid!),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      stopping = true;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      if (child.exitCode !== 0) {
        throw new Error(`${name} exited with ${child.exitCode ?? child.signalCode} on SIGTERM:\n${output}`);
      }
    },
  };
}

export interface DaemonOptions {
  dataDir: string;
  cacheMb?: number;
  /** postgres:// URL: the daemon serves that database (--database-url) instead of dataDir's SQLite file. */
  databaseUrl?: string;
  /** Directory for a V8 CPU profile of the daemon (node --cpu-prof), written when it stops. */
  cpuProfDir?: string;
  /** none (default: reads only), dev (the embedded network, for writes), or a Sui fullnode to follow. */
  network?: 'none' | 'dev' | SuiNetwork;
  /** false: the dev network starts empty (--no-demo), for a bench that numbers its own tasks and nodes. */
  demo?: boolean;
  /** Flags for the daemon's node, after the operator's (bin/daemon-node-flags.json). */
  nodeFlags?: string[];
}

/** --network sui's settings: the fullnode, the Atoma deployment on it, the operator's keystore. */
export interface SuiNetwork {
  url: string;
  packageId: string;
  atomaDbId: string;
  keystore: string;
}

function networkArgs(network: DaemonOptions['network']): string[] {
  if (typeof network !== 'object') return ['--network', network ?? 'none'];
  return [
    '--network',
    'sui',
    '--sui-url',
    network.url,
    '--sui-package-id',
    network.packageId,
    '--sui-atoma-db-id',
    network.atomaDbId,
    '--sui-keystore',
    network.keystore,
  ];
}

/** The daemon exactly as an operator starts it, pinned to the server core. */
export async function startDaemon(
  root: string,
  options: DaemonOptions,
  watch: PinnedOptions = {},
): Promise<Server> {
  const port = await freePort();
  const args = [
    ...DAEMON_NODE_FLAGS,
    ...(options.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfDir] : []),
    ...(options.nodeFlags ?? []),
    'src/main.ts',
    'start',
    '--data-dir',
    options.dataDir,
    '--port',
    String(port),
    '--log-level',
    'warn',
    ...networkArgs(options.network),
    ...(options.cacheMb === undefined ? [] : ['--cache-mb', String(options.cacheMb)]),
    ...(options.databaseUrl === undefined ? [] : ['--database-url', options.databaseUrl]),
    ...(options.demo === false ? ['--no-demo'] : []),
  ];
  const engine = options.databaseUrl === undefined ? '' : ' on PostgreSQL';
  const label = options.cacheMb === 0 ? `daemon${engine} (--cache-mb 0)` : `daemon${engine}`;
  return startPinned(label, root, args, port, '/health', watch);
}

/** The plain node:http baseline serving bodyFile for every request. */
export async function startBare(root: string, bodyFile: string): Promise<Server> {
  const port = await freePort();
  return startPinned('bare node:http', root, ['bench/bare-server.ts', String(port), bodyFile], port, '/');
}
