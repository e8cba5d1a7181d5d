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
