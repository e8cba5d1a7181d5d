import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildApp } from '../src/app.ts';
import { DevNetwork } from '../src/chain/dev/dev-network.ts';
import { loadConfig } from '../src/config.ts';
import { buildDaemonApp, openServices } from '../src/daemon.ts';
import { loadOrCreateToken, TOKEN_FILE } from '../src/http/security.ts';
import { LiveIndexer } from '../src/indexer/run.ts';
import { createLogger } from '../src/internal/logger.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { openSecurity, TEST_APP_CONFIG } from './helpers/app-options.ts';
import { captureLogger } from './helpers/capture-log.ts';
import { run } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

async function daemonApp(flags: Record<string, string | boolean> = {}, logger = createLogger('silent')) {
  const tmp = tempDir();
  const config = loadConfig({ 'data-dir': tmp.dir, demo: false, ...flags }, {});
  const services = await openServices(config, logger);
  const app = await buildDaemonApp(config, services, logger);
  const token = readFileSync(join(tmp.dir, TOKEN_FILE), 'utf8').trim();
  return {
    app,
    services,
    token,
    dir: tmp.dir,
    async close() {
      await app.close();
      await services.close();
      await tmp.remove();
    },
  };
}

describe('authentication', () => {
  it('writes need the token: 401 without it, 403 when wrong, and the problems say where it is', async () => {
    const d = await daemonApp();
    try {
      const missing = await d.app.inject({ method: 'POST', url: '/nodes/register', payload: {} });
      assert.equal(missing.statusCode, 401);
      assert.equal(missing.json().code, 'unauthorized');
      assert.equal(missing.headers['www-authenticate'], 'Bearer');
      assert.match(missing.json().detail, new RegExp(join(d.dir, TOKEN_FILE)));
      const wrong = await d.app.inject({
        method: 'POST',
        url: '/nodes/register',
        payload: {},
        headers: { authorization: `Bearer ${d.token}x` },
      });
      assert.equal(wrong.statusCode, 403);
      assert.equal(wrong.json().code, 'forbidden');
      assert.match(wrong.json().detail, /api-token/);
      const good = await d.app.inject({
        method: 'POST',
        url: '/nodes/register',
        payload: {},
        headers: { authorization: `Bearer ${d.token}` },
      });
      assert.equal(good.statusCode, 200, good.body);
      const usage = await d.app.inject({
        method: 'POST',
        url: '/stacks/1/usage',
        payload: { compute_units: 1 },
      });
      assert.equal(usage.statusCode, 401, 'the usage endpoint is a write too');
      const read = await d.app.inject({ url: '/tasks' });
      assert.equal(read.statusCode, 200, 'reads stay open by default');
    } finally {
      await d.close();
    }
  });

  it('never accepts a token in the query string', async () => {
    const d = await daemonApp();
    try {
      for (const url of [`/nodes/register?token=${d.token}`, `/tasks?access_token=${d.token}`]) {
        const res = await d.app.inject({
          method: url.startsWith('/tasks') ? 'GET' : 'POST',
          url,
          payload: {},
        });
        assert.equal(res.statusCode, 400, url);
        assert.equal(res.json().code, 'token_in_query');
      }
    } finally {
      await d.close();
    }
  });

  it('--auth all requires the token for reads too, except /health and /ready', async () => {
    const d = await daemonApp({ auth: 'all' });
    try {
      assert.equal((await d.app.inject({ url: '/tasks' })).statusCode, 401);
      assert.equal((await d.app.inject({ url: '/metrics' })).statusCode, 401);
      assert.equal(
        (await d.app.inject({ url: '/tasks', headers: { authorization: `Bearer ${d.token}` } })).statusCode,
        200,
      );
      assert.equal((await d.app.inject({ url: '/health' })).statusCode, 200);
      assert.notEqual((await d.app.inject({ url: '/ready' })).statusCode, 401);
      // The router takes /health/ for /health, and so does the guard; a slash does not open a read.
      assert.equal((await d.app.inject({ url: '/health/' })).statusCode, 200);
      assert.notEqual((await d.app.inject({ url: '/ready/' })).statusCode, 401);
      assert.equal((await d.app.inject({ url: '/tasks/' })).statusCode, 401);
    } finally {
      await d.close();
    }
  });

  it('keeps an existing token, and `token rotate` replaces it for the running daemon after a grace it states (--now: at once)', async () => {
    const d = await daemonApp();
    try {
      assert.equal(loadOrCreateToken(d.dir).created, false);
      assert.equal(readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim(), d.token);
      const call = (token: string) =>
        d.app.inject({
          method: 'POST',
          url: '/nodes/register',
          payload: {},
          headers: { authorization: `Bearer ${token}` },
        });
      const rotated = await run(['token', 'rotate', '--data-dir', d.dir]);
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.match(rotated.stdout, /the old one stays valid until \S+ \(600 s; --now cuts at once\)/);
      const fresh = readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim();
      assert.notEqual(fresh, d.token);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      assert.equal((await call(d.token)).statusCode, 200, 'the old token works during the grace');
      assert.equal((await call(fresh)).statusCode, 200, 'and so does the new one');
      // A grace that has passed: the old one is refused.
      const short = await run(['token', 'rotate', '--data-dir', d.dir, '--grace', '1s']);
      assert.equal(short.code, 0, short.stderr);
      const third = readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim();
      await new Promise((resolve) => setTimeout(resolve, 1100));
      assert.equal((await call(third)).statusCode, 200);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.equal((await call(fresh)).statusCode, 403, 'the old token stops working once its grace ends');
      const cut = await run(['token', 'rotate', '--data-dir', d.dir, '--now']);
      assert.equal(cut.code, 0, cut.stderr);
      assert.match(cut.stdout, /the old one is refused at once/);
      const fourth = readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim();
      await new Promise((resolve) => setTimeout(resolve, 1100));
      assert.equal((await call(third)).statusCode, 403, '--now: the old token stops working at once');
      assert.equal((await call(fourth)).statusCode, 200);
      const both = await run(['token', 'rotate', '--data-dir', d.dir, '--now', '--grace', '1m']);
      assert.equal(both.code, 2);
    } finally {
      await d.close();
    }
  });

  it('writes the token file with mode 0600', async () => {
    const d = await daemonApp();
    try {
      const { statSync } = await import('node:fs');
      assert.equal(statSync(join(d.dir, TOKEN_FILE)).mode & 0o777, 0o600);
    } finally {
      await d.close();
    }
  });

  it('refuses --auth none, and anything but --auth all, on a public bind', () => {
    assert.throws(
      () => loadConfig({ host: '0.0.0.0', auth: 'none' }, {}),
      /--auth none is refused when the daemon binds to 0\.0\.0\.0/,
    );
    assert.throws(
      () => loadConfig({ host: '192.168.1.5' }, {}),
      /binding to 192\.168\.1\.5 \(not loopback\) requires --auth all/,
    );
    assert.equal(loadConfig({ host: '0.0.0.0', auth: 'all' }, {}).auth, 'all');
    assert.equal(loadConfig({ host: '127.0.0.2', auth: 'none' }, {}).auth, 'none');
  });
});

describe('network exposure', () => {
  it('refuses a Host header that is not the daemon (DNS rebinding)', async () => {
    const d = await daemonApp({ 'allowed-hosts': 'node.internal' });
    try {
      const evil = await d.app.inject({ url: '/tasks', headers: { host: 'attacker.example:3001' } });
      assert.equal(evil.statusCode, 403);
      assert.equal(evil.json().code, 'host_not_allowed');
      // The detail names the host it saw and the setting that admits it, flag and environment variable.
      assert.equal(
        evil.json().detail,
        'requests for host attacker.example are refused (DNS rebinding protection); use localhost, or admit ' +
          'attacker.example with --allowed-hosts attacker.example (NODE_DAEMON_ALLOWED_HOSTS=attacker.example; ' +
          'a comma-separated list)',
      );
      for (const host of [
        'localhost:3001',
        '127.0.0.1:3001',
        '[::1]:3001',
        'node.internal:3001',
        'NODE.internal',
      ]) {
        assert.equal((await d.app.inject({ url: '/tasks', headers: { host } })).statusCode, 200, host);
      }
    } finally {
      await d.close();
    }
  });

  it('on every interface, names no wildcard address, and admits a service name given in --allowed-hosts', async () => {
    // As in the container image: 0.0.0.0, and a client that reaches it through a gateway's address.
    const d = await daemonApp({ host: '0.0.0.0', auth: 'all', 'allowed-hosts': 'node-daemon' });
    try {
      const gateway = await d.app.inject({ url: '/health', headers: { host: '10.88.0.1:3001' } });
      assert.equal(gateway.statusCode, 403);
      assert.equal(
        gateway.json().detail,
        'requests for host 10.88.0.1 are refused (DNS rebinding protection); use localhost, or admit 10.88.0.1 ' +
          'with --allowed-hosts 10.88.0.1 (NODE_DAEMON_ALLOWED_HOSTS=10.88.0.1; a comma-separated list)',
      );
      const v6 = await d.app.inject({ url: '/health', headers: { host: '[fd00::5]:3001' } });
      assert.match(
        v6.json().detail,
        /^requests for host \[fd00::5\] are refused .* --allowed-hosts fd00::5 /,
      );
      const named = await d.app.inject({ url: '/health', headers: { host: 'node-daemon:3001' } });
      assert.equal(named.statusCode, 200);
    } finally {
      await d.close();
    }
  });

  it('sends no CORS headers unless an allow-list is configured', async () => {
    const closed = await daemonApp();
    const open = await daemonApp({ 'cors-origins': 'https://ops.example.com' });
    try {
      const origin = { origin: 'https://ops.example.com' };
      assert.equal(
        (await closed.app.inject({ url: '/tasks', headers: origin })).headers['access-control-allow-origin'],
        undefined,
      );
      assert.equal(
        (await open.app.inject({ url: '/tasks', headers: origin })).headers['access-control-allow-origin'],
        'https://ops.example.com',
      );
      const other = await open.app.inject({ url: '/tasks', headers: { origin: 'https://evil.example.com' } });
      assert.equal(other.headers['access-control-allow-origin'], undefined);
    } finally {
      await closed.close();
      await open.close();
    }
  });
});

describe('readiness, status and metrics', () => {
  /**
   * The app over a dev network and a live indexer that is not started (it polls every 20 ms once it is),
   * ready while at most a second behind; no writes. close() ends them all.
   */
  async function devIndexerApp() {
    const tmp = tempDir();
    const store = new SqliteStore({ dataDir: tmp.dir });
    const dev = DevNetwork.open({
      dataDir: tmp.dir,
      signerAddress: `0x${'1'.repeat(64)}`,
      samplingProbability: 0,
      attestationNodes: 1,
    });
    const logger = createLogger('silent');
    const indexer = new LiveIndexer(store, dev.events, logger, { idleMs: 20 });
    const app = await buildApp({
      config: { ...TEST_APP_CONFIG, network: 'dev', readyMaxLag: 1 },
      store,
      logger,
      indexer,
      chain: dev,
      security: openSecurity(tmp.dir),
    });
    const close = async () => {
      await app.close();
      await dev.close();
      await store.close();
      await tmp.remove();
    };
    return { app, indexer, close };
  }

  it('/ready answers 503 until the indexer has caught up, then 200', async () => {
    const { app, indexer, close } = await devIndexerApp();
    try {
      const before = await app.inject({ url: '/ready' });
      assert.equal(before.statusCode, 503);
      assert.equal(before.json().code, 'not_ready');
      assert.match(before.json().detail, /has not caught up/);
      indexer.start();
      let ready = before;
      for (let i = 0; i < 100 && ready.statusCode !== 200; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        ready = await app.inject({ url: '/ready' });
      }
      assert.equal(ready.statusCode, 200);
      assert.equal(ready.json().status, 'ready');
      await indexer.stop();
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const stale = await app.inject({ url: '/ready' });
      assert.equal(stale.statusCode, 503, 'a stopped indexer falls behind');
      assert.match(stale.json().detail, /behind the chain head/);
    } finally {
      await close();
    }
  });

  it('tells the indexer while requests arrive, so that it catches up in short transactions', async () => {
    const { app, indexer, close } = await devIndexerApp();
    try {
      assert.equal(indexer.serving, false, 'no request yet');
      assert.equal((await app.inject({ url: '/tasks' })).statusCode, 200);
      assert.equal(indexer.serving, true, 'a read arrived');
      await new Promise((resolve) => setTimeout(resolve, 150));
      assert.equal(indexer.serving, false, 'none for a tenth of a second');
      // A write this app cannot serve (no writes on it): any request counts, however it is answered.
      await app.inject({ method: 'POST', url: '/nodes/register', payload: {} });
      assert.equal(indexer.serving, true, 'a write arrived');
    } finally {
      await close();
    }
  });

  it('/status tells version, network, signer, badges, store, indexer position and lag, balances, uptime', async () => {
    const d = await daemonApp();
    try {
      await d.app.inject({
        method: 'POST',
        url: '/nodes/register',
        payload: {},
        headers: { authorization: `Bearer ${d.token}` },
      });
      const status = (await d.app.inject({ url: '/status' })).json();
      assert.match(status.version, /^\d+\.\d+\.\d+$/);
      assert.equal(status.network, 'dev');
      assert.match(status.signer_address, /^0x[0-9a-f]{64}$/);
      assert.equal(status.badges.length, 1);
      assert.equal(status.store.engine, 'sqlite');
      assert.equal(status.indexer.source, 'dev');
      assert.equal(status.indexer.lag_events, 0);
      assert.ok(status.indexer.events.applied >= 1);
      assert.equal(status.indexer.last_error, null);
      assert.equal(typeof status.uptime_seconds, 'number');
      assert.equal(typeof status.balances.USDC, 'number');
    } finally {
      await d.close();
    }
  });

  it('/metrics counts requests by route, method and status, with latency histograms', async () => {
    const d = await daemonApp();
    try {
      await d.app.inject({ url: '/tasks' });
      await d.app.inject({ url: '/stacks/nodes/abc' });
      const text = (await d.app.inject({ url: '/metrics' })).body;
      assert.match(text, /node_daemon_http_requests_total\{route="\/tasks",method="GET",status="200"\} 1/);
      assert.match(
        text,
        /node_daemon_http_requests_total\{route="\/stacks\/nodes\/:node_id",method="GET",status="400"\} 1/,
      );
      assert.match(
        text,
        /node_daemon_http_request_duration_seconds_bucket\{le="0\.005",route="\/tasks",method="GET"\}/,
      );
      assert.match(text, /node_daemon_store_query_duration_seconds_count\{query="listTasks"\} \d+/);
      assert.match(text, /node_daemon_indexer_events_total\{outcome="ignored"\} \d+/);
      assert.match(text, /node_daemon_process_cpu_seconds_total/);
      await d.app.inject({
        method: 'POST',
        url: '/nodes/register',
        payload: {},
        headers: { authorization: `Bearer ${d.token}` },
      });
      const after = (await d.app.inject({ url: '/metrics' })).body;
      assert.match(after, /node_daemon_submissions_total\{operation="register_node",outcome="success"\} 1/);
      assert.match(after, /node_daemon_submission_duration_seconds_count\{operation="register_node"\} 1/);
    } finally {
      await d.close();
    }
  });
});

describe('logs and limits', () => {
  it('never logs tokens, keys or Authorization headers, and ties problems to request ids', async () => {
    const log = captureLogger('debug');
    const d = await daemonApp({ 'log-level': 'trace' }, log.logger);
    try {
      const headers = { authorization: `Bearer ${d.token}`, 'x-request-id': 'trace-me-1' };
      await d.app.inject({ method: 'POST', url: '/nodes/register', payload: {}, headers });
      const bad = await d.app.inject({
        method: 'POST',
        url: '/nodes/register',
        payload: {},
        headers: { authorization: 'Bearer nope' },
      });
      assert.equal(bad.headers['x-request-id'], bad.json().request_id);
      await d.app.inject({ url: `/tasks?token=${d.token}` });
      const text = JSON.stringify(log.lines());
      assert.ok(log.lines().length > 0);
      assert.ok(!text.includes(d.token), 'the token is not in the logs');
      assert.ok(!text.includes('Bearer'), 'no Authorization header in the logs');
      const key = readFileSync(join(d.dir, 'signer.key'), 'utf8').trim();
      assert.ok(!text.includes(key), 'the signer key is not in the logs');
      assert.ok(text.includes('trace-me-1'), 'the caller-supplied request id is in the logs');
    } finally {
      await d.close();
    }
  });

  it('sheds a burst beyond --max-in-flight with 503 and Retry-After, then recovers', async () => {
    const d = await daemonApp({ 'max-in-flight': '3' });
    try {
      const headers = { authorization: `Bearer ${d.token}` };
      const burst = await Promise.all(
        Array.from({ length: 12 }, () =>
          d.app.inject({ method: 'POST', url: '/nodes/register', payload: {}, headers }),
        ),
      );
      const shed = burst.filter((r) => r.statusCode === 503);
      assert.ok(shed.length > 0, 'some were shed');
      assert.ok(burst.filter((r) => r.statusCode === 200).length > 0, 'some were served');
      for (const r of shed) {
        assert.equal(r.json().code, 'overloaded');
        assert.equal(r.headers['retry-after'], '1');
      }
      const after = await d.app.inject({ method: 'POST', url: '/nodes/register', payload: {}, headers });
      assert.equal(after.statusCode, 200, 'recovered once the burst ended');
      const metrics = (await d.app.inject({ url: '/metrics' })).body;
      assert.match(metrics, new RegExp(`node_daemon_http_requests_shed_total ${shed.length}`));
      // Every request of the burst was let go: in flight now is the scrape itself.
      assert.match(metrics, /\nnode_daemon_http_requests_in_flight 1\n/);
    } finally {
      await d.close();
    }
  });
});
