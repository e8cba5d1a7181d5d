/**
 * node bench/probes/webhook-probe.ts [OPS]: what a webhook receiver that never answers (it accepts the connection
 * and never replies) costs the API. A daemon on the dev network (pinned to CPU 0) gets a node and 50 stacks;
 * this process (CPU 1) then sends reads (GET /stacks/nodes/{node}) and usage reports, one after another over
 * one kept-alive connection, while a task is created every 100 ms (a node event each), first with no
 * webhook endpoint, then with 10 endpoints on a receiver that never answers (every event to each: the
 * sender holds 8 connections open for 15 s each, retries, and claims on every event). Prints p50/p99 of
 * both kinds of request in each phase, from one run.
 *
 *   node bench/probes/webhook-probe.ts [OPS]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { benchArgsAndOperands, usageError } from '../args.ts';
import { call, json } from '../daemon-http.ts';
import { LOAD_CPU, pinSelf } from '../load.ts';
import { log, percentile, table } from '../report.ts';
import { startDaemon } from '../servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const NAME = 'bench/probes/webhook-probe.ts';
const HELP = `Usage: node bench/probes/webhook-probe.ts [OPS]

Reads and usage reports (OPS of each per phase, default 1500, after 300 not counted) with no webhook
endpoint, then with 10 endpoints on a receiver that never answers, while a task is created every 100 ms.`;
const { positionals } = benchArgsAndOperands(NAME, HELP, {});
const ops = Number(positionals[0] ?? 1500);
if (!Number.isInteger(ops) || ops < 1) usageError(NAME, `OPS is a whole number, not ${positionals[0]}`);
const WARM_UP = 300;
const ENDPOINTS = 10;
pinSelf(LOAD_CPU);

// The receiver that never answers: it accepts each connection, reads the request and never replies.
const sockets = new Set<Socket>();
const silent = createServer((socket) => {
  sockets.add(socket);
  socket.resume();
  socket.on('error', () => undefined);
  socket.on('close', () => sockets.delete(socket));
});
await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
const silentPort = (silent.address() as { port: number }).port;

const dir = mkdtempSync(join(tmpdir(), 'node-daemon-webhook-probe-'));
const server = await startDaemon(ROOT, { dataDir: dir, network: 'dev', demo: false });
const token = readFileSync(join(dir, 'api-token'), 'utf8').trim();
const ok = <T = Record<string, number>>(method: string, path: string, body?: unknown) =>
  json<T>(server.origin, method, path, token, body);
try {
  await ok('POST', '/dev/tasks', { role: 0, model_name: 'probe', security_level: 0 });
  const node = (await ok('POST', '/nodes/register', {})).node_small_id!;
  await ok('POST', '/nodes/task-subscribe', {
    task_small_id: 1,
    price_per_one_million_compute_units: 1_000_000,
  });
  const stacks: number[] = [];
  for (let i = 0; i < 50; i++) {
    const stack = await ok('POST', '/dev/stacks', {
      task_small_id: 1,
      num_compute_units: 1_000_000,
      price_per_one_million_compute_units: 1_000_000,
      selected_node_id: node,
    });
    stacks.push(stack.stack_small_id!);
  }

  // Node events all along: a task every 100 ms (a chain write, indexed, then a task_added event).
  let generating = true;
  let made = 0;
  const generator = (async () => {
    while (generating) {
      await ok('POST', '/dev/tasks', { role: 0, model_name: `gen-${made}`, security_level: 0 });
      made += 1;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  async function phase(): Promise<{ reads: number[]; reports: number[] }> {
    const reads: number[] = [];
    const reports: number[] = [];
    for (let i = 0; i < WARM_UP + ops; i++) {
      let t = performance.now();
      const read = await call(server.origin, 'GET', `/stacks/nodes/${node}`, token, undefined, agent);
      if (read.status !== 200) throw new Error(`read: ${read.status}`);
      if (i >= WARM_UP) reads.push(performance.now() - t);
      t = performance.now();
      const stack = stacks[i % stacks.length];
      const report = await call(
        server.origin,
        'POST',
        `/stacks/${stack}/usage`,
        token,
        { compute_units: 1 },
        agent,
      );
      if (report.status !== 200) throw new Error(`report: ${report.status} ${report.text}`);
      if (i >= WARM_UP) reports.push(performance.now() - t);
    }
    return { reads: reads.sort((a, b) => a - b), reports: reports.sort((a, b) => a - b) };
  }

  const without = await phase();
  const eventsBefore = made;
  for (let i = 0; i < ENDPOINTS; i++) {
    const res = await call(server.origin, 'POST', '/webhooks', token, {
      url: `http://127.0.0.1:${silentPort}/never`,
      description: `silent ${i}`,
    });
    if (res.status !== 201) throw new Error(`POST /webhooks: ${res.status} ${res.text}`);
  }
  const withSilent = await phase();
  generating = false;
  await generator;
  const metrics = (await call(server.origin, 'GET', '/metrics', token)).text;
  const pending = /^node_daemon_webhook_deliveries_pending (\d+)/m.exec(metrics)?.[1];
  const retried =
    /^node_daemon_webhook_deliveries_total\{outcome="retried"\} (\d+)/m.exec(metrics)?.[1] ?? '0';
  const ms = (v: number) => v.toFixed(2);
  log(
    table(
      ['phase', 'read p50 ms', 'read p99 ms', 'report p50 ms', 'report p99 ms'],
      [
        [
          'no webhook endpoint',
          ...[without.reads, without.reports].flatMap((l) => [ms(percentile(l, 50)), ms(percentile(l, 99))]),
        ],
        [
          `${ENDPOINTS} endpoints, receiver never answers`,
          ...[withSilent.reads, withSilent.reports].flatMap((l) => [
            ms(percentile(l, 50)),
            ms(percentile(l, 99)),
          ]),
        ],
      ],
      new Set([1, 2, 3, 4]),
    ),
  );
  log(
    `${ops} reads and ${ops} reports per phase; ${made} tasks made (${made - eventsBefore} during the second phase); ` +
      `at the end ${pending ?? '?'} deliveries pending, ${retried} attempts failed and retried, ` +
      `${sockets.size} connections held open by the sender`,
  );
} finally {
  await server.stop();
  for (const s of sockets) s.destroy();
  silent.close();
  rmSync(dir, { recursive: true, force: true });
}
