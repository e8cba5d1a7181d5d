import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { buildDaemonApp, openServices, type Services } from '../../src/daemon.ts';
import { TOKEN_FILE } from '../../src/http/security.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { tempDir } from './tmp.ts';

/** A daemon on the embedded dev network, in a temporary data directory, driven through app.inject. */
export interface DevDaemon {
  app: App;
  services: Services;
  dir: string;
  get(url: string): Promise<LightMyRequestResponse>;
  post(url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  del(url: string, body?: unknown): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function devDaemon(
  flags: Record<string, string | boolean> = {},
  dir = tempDir(),
): Promise<DevDaemon> {
  const config = loadConfig({ 'data-dir': dir.dir, demo: false, ...flags }, {});
  const logger = createLogger('silent');
  const services = await openServices(config, logger);
  const app = await buildDaemonApp(config, services, logger);
  // Writes need the API token the daemon created in its data directory; the helper sends it like a client.
  const token = readFileSync(join(dir.dir, TOKEN_FILE), 'utf8').trim();
  const send = (
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    app.inject({
      method,
      url,
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
    });
  return {
    app,
    services,
    dir: dir.dir,
    get: (url) => send('GET', url),
    post: (url, body, headers) => send('POST', url, body ?? {}, headers),
    del: (url, body) => send('DELETE', url, body ?? {}),
    async close() {
      await app.close();
      await services.close();
      await dir.remove();
    },
  };
}

/**
 * Registers node 1 on a new task and buys `count` stacks assigned to it (1,000 units each, at 2 USDC per
 * million); with `used`, reports that many units on each. Their small ids, in order.
 */
export async function nodeWithStacks(d: DevDaemon, count: number, used?: number): Promise<number[]> {
  const ok = (res: LightMyRequestResponse) => {
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as Record<string, unknown>;
  };
  ok(await d.post('/dev/tasks', { role: 0, model_name: 'm', security_level: 0 }));
  ok(await d.post('/nodes/register'));
  ok(await d.post('/nodes/task-subscribe', { task_small_id: 1, price_per_one_million_compute_units: 1 }));
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const bought = ok(
      await d.post('/dev/stacks', {
        task_small_id: 1,
        num_compute_units: 1000,
        price_per_one_million_compute_units: 2_000_000,
        selected_node_id: 1,
      }),
    );
    const id = bought.stack_small_id as number;
    if (used !== undefined) ok(await d.post(`/stacks/${id}/usage`, { compute_units: used }));
    ids.push(id);
  }
  return ids;
}
