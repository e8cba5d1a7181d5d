import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { buildDaemonApp, openServices } from '../src/daemon.ts';
import { loadOrCreateToken, TOKEN_FILE, tokenHash } from '../src/http/security.ts';
import { createLogger } from '../src/internal/logger.ts';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import type { Store } from '../src/store/store.ts';
import { openSecurity, TEST_APP_CONFIG } from './helpers/app-options.ts';
import { captureLogger } from './helpers/capture-log.ts';
import { createTestDatabase, postgresAvailable, withClient } from './helpers/postgres.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * Named tokens and the audit trail: revocation and expiry, the Bearer scheme, tokens across two daemons on
 * one PostgreSQL database, and the audit of writes, refusals and replays across a restart on both stores,
 * with never a token in the trail or the log.
 */

type Flags = Record<string, string | boolean>;

/** A dev-network daemon over a data directory (and a database) that outlive it: a restart opens the same. */
async function daemon(dir: string, flags: Flags = {}, logger = createLogger('silent')) {
  const config = loadConfig({ 'data-dir': dir, demo: false, ...flags }, {});
  const services = await openServices(config, logger);
  const app = await buildDaemonApp(config, services, logger);
  const fileToken = readFileSync(join(dir, TOKEN_FILE), 'utf8').trim();
  const call = (
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    token?: string,
    body?: unknown,
    headers = {},
  ) =>
    app.inject({
      method,
      url,
      headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
      ...(body === undefined ? {} : { payload: body as object }),
    });
  return {
    app,
    services,
    fileToken,
    call,
    async create(name: string, scope: string, extra: object = {}) {
      const res = await call('POST', '/tokens', fileToken, { name, scope, ...extra });
      assert.equal(res.statusCode, 200, res.body);
      return (res.json() as { token: string }).token;
    },
    async close() {
      await app.close();
      await services.close();
    },
  };
}

async function revocationAndExpiry(flags: Flags) {
  const tmp = tempDir();
  const d = await daemon(tmp.dir, flags);
  try {
    const read = await d.create('grafana', 'read');
    const whoami = await d.call('GET', '/whoami', read);
    assert.equal(whoami.statusCode, 200, whoami.body);
    assert.deepEqual(whoami.json(), { name: 'grafana', scope: 'read', auth: 'writes' });
    assert.deepEqual((await d.call('GET', '/whoami', d.fileToken)).json(), {
      name: 'api-token',
      scope: 'admin',
      auth: 'writes',
    });
    // A name that is live is taken; the file token's name is never given.
    assert.equal(
      (await d.call('POST', '/tokens', d.fileToken, { name: 'grafana', scope: 'write' })).json().code,
      'token_exists',
    );
    assert.equal(
      (await d.call('POST', '/tokens', d.fileToken, { name: 'api-token', scope: 'read' })).json().code,
      'token_exists',
    );
    // The list shows no secret, and the last use.
    const list = await d.call('GET', '/tokens', d.fileToken);
    assert.ok(
      !list.body.includes(read) && !list.body.includes(tokenHash(read)),
      'no token nor hash in the list',
    );
    const [row] = (list.json() as { tokens: { name: string; state: string; last_used_at: string | null }[] })
      .tokens;
    assert.equal(row?.name, 'grafana');
    assert.equal(row?.state, 'active');
    assert.notEqual(row?.last_used_at, null, 'its use was recorded');
    // Revoked: a wrong token (403 forbidden) from the next request on, and the detail says why.
    assert.equal((await d.call('DELETE', '/tokens/grafana', d.fileToken)).statusCode, 200);
    const revoked = await d.call('GET', '/whoami', read);
    assert.equal(revoked.statusCode, 403);
    assert.equal(revoked.json().code, 'forbidden');
    assert.match(revoked.json().detail, /the token grafana was revoked/);
    assert.equal((await d.call('DELETE', '/tokens/grafana', d.fileToken)).json().code, 'token_not_found');
    // Its name is free again, with a new token; the old one stays refused.
    const again = await d.create('grafana', 'write');
    assert.equal((await d.call('GET', '/whoami', again)).json().scope, 'write');
    assert.equal((await d.call('GET', '/whoami', read)).statusCode, 403);
    // Expired: a token whose expiry has passed (written to the store as one made long ago would be).
    const old = 'ndt_expired-token-for-the-test';
    await d.services.store.createToken({
      name: 'old',
      scope: 'admin',
      hash: tokenHash(old),
      createdAt: Date.now() - 120_000,
      expiresAt: Date.now() - 1,
    });
    const expired = await d.call('GET', '/whoami', old);
    assert.equal(expired.statusCode, 403);
    assert.match(expired.json().detail, /the token old expired at /);
    assert.equal(
      (
        (await d.call('GET', '/tokens', d.fileToken)).json() as { tokens: { name: string; state: string }[] }
      ).tokens.find((t) => t.name === 'old')?.state,
      'expired',
    );
    // A token that expires in a minute works now.
    const soon = await d.create('soon', 'read', { expires_in: 60 });
    assert.equal((await d.call('GET', '/whoami', soon)).statusCode, 200);
  } finally {
    await d.close();
    await tmp.remove();
  }
}

describe('named tokens', () => {
  it('revocation and expiry take effect at once (SQLite)', () => revocationAndExpiry({}));

  it('a token without the Bearer scheme is told the scheme is missing; a wrong one is wrong', async () => {
    const tmp = tempDir();
    const d = await daemon(tmp.dir);
    try {
      const raw = await d.app.inject({
        method: 'POST',
        url: '/autopilot/resume',
        headers: { authorization: d.fileToken },
      });
      assert.equal(raw.statusCode, 401);
      assert.equal(raw.json().code, 'unauthorized');
      assert.match(raw.json().detail, /lacks the Bearer scheme: send Authorization: Bearer <token>/);
      const basic = await d.app.inject({
        method: 'POST',
        url: '/autopilot/resume',
        headers: { authorization: `Basic ${Buffer.from(`x:${d.fileToken}`).toString('base64')}` },
      });
      assert.match(basic.json().detail, /must use the Bearer scheme/);
      const wrong = await d.call('POST', '/autopilot/resume', 'ndt_nope');
      assert.equal(wrong.statusCode, 403);
      assert.match(wrong.json().detail, /^the API token is wrong/);
      // A read token on a write: its own code, naming the scope needed.
      const read = await d.create('reader', 'read');
      const scoped = await d.call('POST', '/autopilot/resume', read);
      assert.equal(scoped.statusCode, 403);
      assert.equal(scoped.json().code, 'insufficient_scope');
      assert.match(
        scoped.json().detail,
        /needs a token with scope write or admin; the token reader has scope read/,
      );
    } finally {
      await d.close();
      await tmp.remove();
    }
  });
});

/** Every audit row, and every token row, as text: what must never hold a token. */
async function auditText(store: Store): Promise<string> {
  const rows = await store.listAudit({ limit: 100_000 });
  return JSON.stringify(rows) + JSON.stringify(await store.listTokens());
}

async function auditTrail(flags: Flags) {
  const tmp = tempDir();
  const capture = captureLogger('debug');
  let d = await daemon(tmp.dir, flags, capture.logger);
  const secrets: string[] = [d.fileToken];
  try {
    const writer = await d.create('claims', 'write');
    const reader = await d.create('grafana', 'read');
    secrets.push(writer, reader);
    // A write with a transaction, then its replay by the same Idempotency-Key.
    const key = { 'idempotency-key': 'audit-key-1', 'content-type': 'application/json' };
    const first = await d.call('POST', '/nodes/register', writer, {}, key);
    assert.equal(first.statusCode, 200, first.body);
    const digest = (first.json() as { tx_digest: string }).tx_digest;
    const replay = await d.call('POST', '/nodes/register', writer, {}, key);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    // Refusals: no token, a wrong one, a read token on a write, a bad body.
    assert.equal((await d.call('POST', '/nodes/claim-funds', undefined, {})).statusCode, 401);
    assert.equal((await d.call('POST', '/nodes/claim-funds', 'ndt_wrong', {})).statusCode, 403);
    assert.equal((await d.call('POST', '/nodes/claim-funds', reader, {})).statusCode, 403);
    assert.equal((await d.call('POST', '/nodes/claim-funds', writer, { nope: 1 })).statusCode, 400);
    // A read is not audited (with --auth writes it needs no token); an admin read is.
    assert.equal((await d.call('GET', '/tasks', reader)).statusCode, 200);
    // A restart: what was written survives it, and a normal shutdown loses nothing pending.
    await d.close();
    d = await daemon(tmp.dir, flags, capture.logger);
    const page = await d.call('GET', '/audit', d.fileToken);
    assert.equal(page.statusCode, 200, page.body);
    const entries = (page.json() as { entries: Record<string, unknown>[] }).entries.reverse();
    const brief = entries.map(
      (e) => `${e.token ?? '-'} ${e.method} ${e.route} ${e.status} ${e.problem_code ?? ''}`,
    );
    assert.deepEqual(brief, [
      'api-token POST /tokens 200 ',
      'api-token POST /tokens 200 ',
      'claims POST /nodes/register 200 ',
      'claims POST /nodes/register 200 ',
      '- POST /nodes/claim-funds 401 unauthorized',
      '- POST /nodes/claim-funds 403 forbidden',
      'grafana POST /nodes/claim-funds 403 insufficient_scope',
      'claims POST /nodes/claim-funds 400 invalid_body',
    ]);
    const [, , registered, replayed] = entries;
    assert.equal(registered?.tx_digest, digest);
    assert.match(String(registered?.gas_used), /^-?\d+$/);
    assert.equal(registered?.idempotent_replay, false);
    assert.equal(replayed?.idempotent_replay, true);
    assert.equal(replayed?.tx_digest, digest);
    assert.equal(typeof registered?.request_id, 'string');
    // Filters: by token, by outcome, by route, by time; paging.
    const q = async (query: string) => {
      const res = await d.call('GET', `/audit?${query}`, d.fileToken);
      assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
      return res.json() as { entries: unknown[]; next_before: number | null };
    };
    assert.equal((await q('token_name=claims')).entries.length, 3);
    assert.equal((await q('outcome=denied')).entries.length, 3);
    assert.equal((await q('outcome=failed')).entries.length, 1);
    assert.equal((await q('route=/nodes/register')).entries.length, 2);
    assert.equal((await q(`until=${new Date(Date.now() - 3_600_000).toISOString()}`)).entries.length, 0);
    const firstPage = await q('limit=2');
    assert.equal(firstPage.entries.length, 2);
    assert.notEqual(firstPage.next_before, null);
    assert.equal((await q(`limit=2&before=${firstPage.next_before}`)).entries.length, 2);
    // The admin reads of the trail are audited themselves.
    await d.close();
    d = await daemon(tmp.dir, flags, capture.logger);
    assert.ok((await q('route=/audit')).entries.length >= 6);
    // Never a token, nor its hash, in the trail, the token table or the log.
    const text = await auditText(d.services.store);
    const log = JSON.stringify(capture.lines());
    for (const secret of secrets) {
      assert.ok(!text.includes(secret), 'no token in the audit trail or the token list');
      assert.ok(!log.includes(secret), 'no token in the log');
    }
    assert.ok(capture.lines().length > 10, 'the log was written (debug lines per request)');
  } finally {
    await d.close();
    await tmp.remove();
  }
}

describe('the audit trail', () => {
  it('records writes, refusals and replays, survives a restart, and holds no token (SQLite)', () =>
    auditTrail({}));

  it('prunes entries past the retention', async () => {
    const tmp = tempDir();
    const d = await daemon(tmp.dir);
    try {
      const day = 24 * 3600 * 1000;
      const entry = (at: number) => ({
        at,
        token_name: null,
        method: 'POST',
        route: '/x',
        request_id: 'r',
        status: 401,
        problem_code: 'unauthorized',
        tx_digest: null,
        gas_used: null,
        idempotent_replay: false,
      });
      await d.services.store.appendAudit([
        entry(Date.now() - 100 * day),
        entry(Date.now() - 80 * day),
        entry(Date.now()),
      ]);
      assert.equal(await d.services.store.pruneAudit(Date.now() - 90 * day), 1);
      assert.equal((await d.services.store.listAudit({ route: '/x', limit: 10 })).length, 2);
    } finally {
      await d.close();
      await tmp.remove();
    }
  });
});

if (await postgresAvailable('named tokens and the audit trail on PostgreSQL')) {
  describe('on PostgreSQL', () => {
    it('revocation and expiry take effect at once', async () => {
      const db = (await createTestDatabase())!;
      try {
        await revocationAndExpiry({ 'database-url': db.url });
      } finally {
        await db.drop();
      }
    });

    it('the audit trail records writes, refusals and replays, survives a restart, and holds no token', async () => {
      const db = (await createTestDatabase())!;
      try {
        await auditTrail({ 'database-url': db.url });
      } finally {
        await db.drop();
      }
    });

    it('two daemons on one database: a token made on one works on the other, and its revocation holds there at once', async () => {
      const db = (await createTestDatabase())!;
      const tmpA = tempDir();
      const tmpB = tempDir();
      const logger = createLogger('silent');
      loadOrCreateToken(tmpA.dir);
      loadOrCreateToken(tmpB.dir);
      const stores = [await PostgresStore.open({ url: db.url }), await PostgresStore.open({ url: db.url })];
      const apps = await Promise.all(
        stores.map((store, i) =>
          buildApp({
            config: TEST_APP_CONFIG,
            store,
            logger,
            security: openSecurity(i === 0 ? tmpA.dir : tmpB.dir, { auth: 'all' }),
          }),
        ),
      );
      try {
        const [a, b] = apps as [(typeof apps)[0], (typeof apps)[0]];
        const fileA = readFileSync(join(tmpA.dir, 'api-token'), 'utf8').trim();
        const made = await a.inject({
          method: 'POST',
          url: '/tokens',
          headers: { authorization: `Bearer ${fileA}` },
          payload: { name: 'shared', scope: 'read' },
        });
        assert.equal(made.statusCode, 200, made.body);
        const token = (made.json() as { token: string }).token;
        const onB = () => b.inject({ url: '/tasks', headers: { authorization: `Bearer ${token}` } });
        assert.equal((await onB()).statusCode, 200, 'made on A, used on B');
        const revoked = await a.inject({
          method: 'DELETE',
          url: '/tokens/shared',
          headers: { authorization: `Bearer ${fileA}` },
        });
        assert.equal(revoked.statusCode, 200, revoked.body);
        const refused = await onB();
        assert.equal(refused.statusCode, 403, 'revoked on A: refused on B at the next request');
        assert.match(refused.json().detail, /revoked/);
        // B's own file token is B's: A does not know it.
        const fileB = readFileSync(join(tmpB.dir, 'api-token'), 'utf8').trim();
        assert.equal(
          (await a.inject({ url: '/tasks', headers: { authorization: `Bearer ${fileB}` } })).statusCode,
          403,
        );
        // The hash is what the table holds.
        const stored = await withClient(db.url, (c) => c.query('SELECT * FROM api_tokens'));
        assert.equal(stored.rows[0].token_hash, tokenHash(token));
        assert.ok(!JSON.stringify(stored.rows).includes(token));
      } finally {
        for (const app of apps) await app.close();
        for (const store of stores) await store.close();
        await db.drop();
        await tmpA.remove();
        await tmpB.remove();
      }
    });
  });
}
