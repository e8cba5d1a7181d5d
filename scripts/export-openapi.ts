// Writes docs/openapi.json from the route schemas (npm run openapi); test/openapi.test.ts fails when the
// committed file and the routes drift apart.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/internal/logger.ts';
import { EventHub } from '../src/operations/event-stream.ts';
import { Webhooks } from '../src/operations/webhooks.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';

export const OPENAPI_FILE = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));

/**
 * The OpenAPI document as the daemon serves it at /openapi.json, formatted for the repository: with the
 * default settings (--auth writes), on no network, so that nothing in it depends on one, and with what
 * every daemon serves on every network (GET /events, which needs its event hub, and the /webhooks routes).
 */
export async function renderOpenApi(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'node-daemon-openapi-'));
  const store = new SqliteStore({ dataDir: dir });
  const logger = createLogger('silent');
  const events = new EventHub({ store, log: logger });
  try {
    const defaults = loadConfig({ 'data-dir': dir, network: 'none' }, {});
    const app = await buildApp({
      config: { network: 'none', cacheMb: 0, corsOrigins: [], readyMaxLag: 30, nodeSmallIds: [] },
      store,
      logger,
      events,
      webhooks: new Webhooks({ store }),
      security: {
        auth: defaults.auth,
        tokenFile: join(dir, 'api-token'),
        boundHost: '127.0.0.1',
        allowedHosts: [],
        maxInFlight: 1,
      },
    });
    await app.ready();
    const text = `${JSON.stringify(app.swagger(), null, 2)}\n`;
    await app.close();
    return text;
  } finally {
    events.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  writeFileSync(OPENAPI_FILE, await renderOpenApi());
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}
