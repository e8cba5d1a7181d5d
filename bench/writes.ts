// Write benchmark on the embedded dev network: the daemon runs as an operator runs it (its own process,
// pinned to CPU 0), the client on CPU 1. Measures, per kind of write, throughput and latency percentiles
// of complete requests: validation, signing and execution on the dev chain, and waiting until the
// indexer has applied the transaction's events (the response then says indexed: true).
//
//   node bench/writes.ts [--quick]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from './args.ts';
import { LOAD_CPU, pinSelf } from './load.ts';
import { percentile } from './report.ts';
import { startDaemon } from './servers.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HELP = `Usage: npm run bench:writes -- [--quick]

  --quick   smoke run: 100 of each write and 500 usage reports (a full run: 1,000 and 5,000)`;
const { quick } = benchArgs('bench:writes', HELP, { quick: { type: 'boolean', default: false } });
const N = quick ? 100 : 1000;

/** A POST to the daemon with its token. */
type Post = (path: string, body: unknown) => Promise<Response>;

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
  // The client never competes with the daemon for its core.
  const notPinned = pinSelf(LOAD_CPU);
  if (notPinned !== undefined)
    process.stderr.write(`could not pin the bench to CPU ${LOAD_CPU}: ${notPinned}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'node-daemon-bench-writes-'));
  try {
    // An empty dev network: the bench's task and node are number 1.
    const daemon = await startDaemon(ROOT, { dataDir: dir, network: 'dev', demo: false });
    try {
      const token = readFileSync(join(dir, 'api-token'), 'utf8').trim();
      const post: Post = (path, body) =>
        fetch(`${daemon.origin}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
        });
      await post('/dev/tasks', { role: 0, model_name: 'bench', security_level: 0 });
      await post('/nodes/register', {});
      await post('/nodes/task-subscribe', {
        task_small_id: 1,
        price_per_one_million_compute_units: 1_000_000,
      });
      print(await measureWrites(post));
    } finally {
      await daemon.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each kind of write in turn, on the stacks users buy from node 1 first. */
async function measureWrites(post: Post): Promise<Result[]> {
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
  return results;
}

function print(results: Result[]): void {
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
}

await main();
