// Write benchmark on the embedded dev network: the daemon runs as an operator runs it (its own process,
// pinned to CPU 0), the client on CPU 1. Measures, per kind of write, throughput and latency percentiles
// of complete requests: validation, signing and execution on the dev chain, and waiting until the
// indexer has applied the transaction's events (the response then says indexed: true).
//
//   node bench/writes.ts [--quick]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import DAEMON_NODE_FLAGS from '../bin/daemon-node-flags.json' with { type: 'json' };
import { benchArgs } from './args.ts';
import { percentile } from './report.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HELP = `Usage: npm run bench:writes -- [--quick]

  --quick   smoke run: 100 of each write and 500 usage reports (a full run: 1,000 and 5,000)`;
const { quick } = benchArgs('bench:writes', HELP, { quick: { type: 'boolean', default: false } });
const N = quick ? 100 : 1000;

async function startDaemon(dataDir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const args = [
    '-c',
    '0',
    process.execPath,
    ...DAEMON_NODE_FLAGS,
    join(ROOT, 'src/main.ts'),
    'start',
    '--port',
    '0',
    '--data-dir',
    dataDir,
  ];
  const child = spawn('taskset', [...args, '--no-demo', '--log-level', 'info'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stderr.on('data', (d) => {
      seen += String(d);
      const match = /listening on (http:\/\/[^\s"]+)/.exec(seen);
      if (match) resolve(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`daemon exited with ${code}: ${seen}`)));
  });
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        child.on('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

interface Result {
  name: string;
  count: number;
  seconds: number;
  p50: number;
  p99: number;
}

async function measure(
  name: string,
  count: number,
  request: (i: number) => Promise<Response>,
): Promise<Result> {
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const res = await request(i);
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${name} #${i}: ${res.status} ${body}`);
    latencies.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { name, count, seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function main(): Promise<void> {
  if (process.env.BENCH_CHILD !== '1') {
    // Re-run pinned to CPU 1 so that the client never competes with the daemon for its core.
    const child = spawn(
      'taskset',
      ['-c', '1', process.execPath, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
      {
        stdio: 'inherit',
        env: { ...process.env, BENCH_CHILD: '1' },
      },
    );
    child.on('exit', (code) => process.exit(code ?? 1));
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'node-daemon-bench-writes-'));
  const daemon = await startDaemon(dir);
  const token = readFileSync(join(dir, 'api-token'), 'utf8').trim();
  const post = (path: string, body: unknown) =>
    fetch(`${daemon.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
  try {
    await post('/dev/tasks', { role: 0, model_name: 'bench', security_level: 0 });
    await post('/nodes/register', {});
    await post('/nodes/task-subscribe', { task_small_id: 1, price_per_one_million_compute_units: 1_000_000 });
    const stacks: number[] = [];
    const buy = await measure('user buys a stack (POST /dev/stacks)', N, (i) =>
      post('/dev/stacks', {
        task_small_id: 1,
        num_compute_units: 1_000_000,
        price_per_one_million_compute_units: 1_000_000 + i,
        selected_node_id: 1,
      }).then(async (res) => {
        const copy = res.clone();
        stacks.push(((await copy.json()) as { stack_small_id: number }).stack_small_id);
        return res;
      }),
    );
    const results: Result[] = [buy];
    results.push(
      await measure('usage report (POST /stacks/{id}/usage, off-chain)', N * 5, (i) =>
        post(`/stacks/${stacks[i % stacks.length]}/usage`, { compute_units: 100 }),
      ),
    );
    results.push(
      await measure('price update (POST /nodes/task-update-subscription)', N, (i) =>
        post('/nodes/task-update-subscription', {
          task_small_id: 1,
          price_per_one_million_compute_units: 1_000_000 + (i % 7),
        }),
      ),
    );
    results.push(
      await measure('try-settle, one stack per request (POST /nodes/try-settle-stacks)', N, (i) =>
        post('/nodes/try-settle-stacks', { stack_small_ids: [stacks[i]] }),
      ),
    );
    await post('/dev/epoch', {});
    results.push(
      await measure('claim, ten stacks per request (POST /nodes/claim-funds)', N / 10, (i) =>
        post('/nodes/claim-funds', { stack_small_ids: stacks.slice(i * 10, i * 10 + 10) }),
      ),
    );
    process.stdout.write(
      `\nwrite benchmark, dev network, sequential client (${quick ? 'quick' : 'full'} run)\n`,
    );
    process.stdout.write(
      `${'write'.padEnd(68)} ${'count'.padStart(6)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}\n`,
    );
    for (const r of results) {
      process.stdout.write(
        `${r.name.padEnd(68)} ${String(r.count).padStart(6)} ${(r.count / r.seconds).toFixed(0).padStart(8)} ${r.p50.toFixed(2).padStart(8)} ${r.p99.toFixed(2).padStart(8)}\n`,
      );
    }
  } finally {
    await daemon.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
