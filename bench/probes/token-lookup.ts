/**
 * What a named token costs a read: GET /tasks under --auth all, by app.inject, with the file token (no
 * store lookup) and with a named token (one lookup by hash per request), on SQLite and on PostgreSQL
 * (DATABASE_URL). Usage: node bench/probes/token-lookup.ts [requests]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/app.ts';
import { loadOrCreateToken } from '../../src/http/security.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { openStore } from '../../src/store/open.ts';

const HELP = `Usage: node bench/probes/token-lookup.ts [REQUESTS]

GET /tasks under --auth all, REQUESTS (default 5000) sequential requests through app.inject, with the file
token and with a named token, on SQLite and, when DATABASE_URL is set, on PostgreSQL.`;
const arg = process.argv[2];
if (arg === '--help' || arg === '-h') {
  console.log(HELP);
  process.exit(0);
}
const n = Number(arg ?? 5000);
if (!Number.isInteger(n) || n <= 0) {
  console.error(`token-lookup: REQUESTS must be a positive integer, not ${arg}; see --help`);
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'token-lookup-'));
loadOrCreateToken(dir);
const fileToken = readFileSync(join(dir, 'api-token'), 'utf8').trim();
for (const url of [undefined, process.env.DATABASE_URL].filter((u, i) => i === 0 || u !== undefined)) {
  const store = await openStore({ dataDir: dir, databaseUrl: url });
  const app = await buildApp({
    config: { network: 'none', cacheMb: 64, corsOrigins: [], readyMaxLag: 30, nodeSmallIds: [] },
    store,
    logger: createLogger('silent'),
    security: {
      auth: 'all',
      tokenFile: join(dir, 'api-token'),
      boundHost: '127.0.0.1',
      allowedHosts: [],
      maxInFlight: 256,
    },
  });
  const made = await app.inject({
    method: 'POST',
    url: '/tokens',
    headers: { authorization: `Bearer ${fileToken}` },
    payload: { name: `probe-${Date.now()}`, scope: 'read' },
  });
  const named = (made.json() as { token: string }).token;
  const time = async (token: string) => {
    for (let i = 0; i < 500; i += 1)
      await app.inject({ url: '/tasks', headers: { authorization: `Bearer ${token}` } });
    const started = performance.now();
    for (let i = 0; i < n; i += 1) {
      const res = await app.inject({ url: '/tasks', headers: { authorization: `Bearer ${token}` } });
      if (res.statusCode !== 200) throw new Error(res.body);
    }
    return ((performance.now() - started) * 1000) / n;
  };
  const file = await time(fileToken);
  const namedUs = await time(named);
  console.log(
    `${store.engine}: GET /tasks ${file.toFixed(1)} µs with the file token, ${namedUs.toFixed(1)} µs with a named token (${n} requests each)`,
  );
  await app.close();
  await store.close();
}
rmSync(dir, { recursive: true, force: true });
