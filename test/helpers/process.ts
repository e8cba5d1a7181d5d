import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/node-daemon.js', import.meta.url));
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A loopback port free now, for a daemon that must listen on a known one. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Environment for child daemons: the caller's, minus settings that would leak into the test. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    if (key.startsWith('NODE_DAEMON_') || key === 'DATABASE_URL') delete env[key];
  }
  return { ...env, ...extra };
}

export function waitExit(child: ChildProcess, timeoutMs = 20_000): Promise<Finished> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += String(d);
  });
  child.stderr?.on('data', (d) => {
    stderr += String(d);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`process did not exit within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      // Let the pipes drain.
      setImmediate(() => resolve({ code, signal, stdout, stderr }));
    });
  });
}

/** Runs the node-daemon command to completion. */
export function run(
  args: string[],
  env: Record<string, string> = {},
  node = process.execPath,
): Promise<Finished> {
  const child = spawn(node, [BIN, ...args], {
    env: cleanEnv(env),
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return waitExit(child);
}

/** Starts `node-daemon start` and resolves once it listens, with its URL. */
export async function startDaemon(
  args: string[],
  env: Record<string, string> = {},
  /** How long the daemon may live before the helper kills it (a test that keeps it longer says so). */
  lifetimeMs = 60_000,
  /** The Node that runs the command (an older one re-runs it on the pinned Node 24). */
  node = process.execPath,
  /** Which node-daemon command, run from where: the clone's by default, or an installed package's. */
  at: { bin: string; cwd: string } = { bin: BIN, cwd: ROOT },
): Promise<{ child: ChildProcess; url: string; exited: Promise<Finished> }> {
  const child = spawn(node, [at.bin, 'start', '--port', '0', ...args], {
    env: cleanEnv(env),
    cwd: at.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = waitExit(child, lifetimeMs);
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const onData = (d: Buffer) => {
      seen += String(d);
      const match = /listening on (http:\/\/[^\s"]+)/.exec(seen);
      if (match) {
        child.stderr?.off('data', onData);
        resolve(match[1]!);
      }
    };
    child.stderr?.on('data', onData);
    exited.then((f) => reject(new Error(`daemon exited early (${f.code}): ${f.stderr}`)), reject);
  });
  return { child, url, exited };
}
