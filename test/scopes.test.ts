import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { appRoutes } from '../src/app.ts';
import {
  declaredScope,
  grants,
  type RouteScope,
  requiredScope,
  SCOPES,
  type Scope,
} from '../src/http/scopes.ts';
import { TOKEN_FILE } from '../src/http/security.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';

/**
 * The scope table against the app's own routes: every route the app serves (read from the app, not a list
 * here) declares a scope, and every route answers each scope's token, the file token and no token as the
 * table says. A new route without a scope in src/http/scopes.ts fails the first assertion.
 */

/** A concrete path for a route: each parameter a value its schema takes. */
function pathOf(url: string): string {
  return url
    .replace(/:name/g, 'no-such-token')
    .replace(/:[A-Za-z_]+/g, '1')
    .replace(/\*$/, 'x');
}

async function createToken(d: DevDaemon, scope: Scope): Promise<string> {
  const res = await d.post('/tokens', { name: `t-${scope}`, scope });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json() as { token: string; scope: string };
  assert.equal(body.scope, scope);
  assert.match(body.token, /^ndt_/);
  return body.token;
}

/** Whether the route's answer to a granted request may be awaited (the event stream never ends). */
const STREAMS = new Set(['GET /events', 'HEAD /events']);

async function walk(d: DevDaemon, auth: 'all' | 'writes') {
  const tokens = new Map<string, string | undefined>([['none', undefined]]);
  for (const scope of SCOPES) tokens.set(scope, await createToken(d, scope));
  tokens.set('file', readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim());
  const routes = appRoutes(d.app).filter((r) => r.method !== 'OPTIONS');
  assert.ok(routes.length > 40, `the app's routes were read (${routes.length})`);
  let checked = 0;
  for (const { method, url } of routes) {
    const key = `${method} ${url}`;
    const declared = declaredScope(method, url);
    assert.notEqual(declared, undefined, `${key} declares no scope: add it to src/http/scopes.ts`);
    const needed = requiredScope(method, url) as RouteScope;
    const open = url === '/health' || url === '/ready';
    const console = url === '/' || url.startsWith('/console/');
    const isRead = method === 'GET' || method === 'HEAD';
    const always = needed === 'admin' || needed === 'token';
    const needsToken = always || (!open && !(isRead && (auth === 'writes' || console)));
    for (const [holder, token] of tokens) {
      const held: Scope | undefined =
        holder === 'none' ? undefined : holder === 'file' ? 'admin' : (holder as Scope);
      const label = `${key} with ${holder === 'none' ? 'no token' : `a ${holder} token`} (--auth ${auth}, needs ${needed})`;
      const refused = needsToken && (held === undefined || !grants(held, needed));
      if (STREAMS.has(key) && !refused) continue;
      const res = await d.app.inject({
        method: method as 'GET',
        url: pathOf(url),
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        ...(isRead || method === 'DELETE' ? {} : { payload: {} }),
      });
      checked += 1;
      if (!needsToken) {
        assert.ok(![401, 403].includes(res.statusCode), `${label}: answered ${res.statusCode} ${res.body}`);
      } else if (held === undefined) {
        assert.equal(res.statusCode, 401, `${label}: ${res.body}`);
        if (method !== 'HEAD') assert.equal(res.json().code, 'unauthorized');
      } else if (!grants(held, needed)) {
        assert.equal(res.statusCode, 403, `${label}: ${res.body}`);
        if (method === 'HEAD') continue;
        const problem = res.json() as { code: string; detail: string };
        assert.equal(problem.code, 'insufficient_scope', label);
        assert.match(
          problem.detail,
          new RegExp(`needs a token with scope ${needed === 'admin' ? 'admin' : `.*${needed}`}`),
          label,
        );
        assert.match(problem.detail, new RegExp(`has scope ${held}`), label);
      } else {
        assert.ok(![401, 403].includes(res.statusCode), `${label}: answered ${res.statusCode} ${res.body}`);
      }
    }
  }
  return checked;
}

describe('scopes, route by route', () => {
  for (const auth of ['all', 'writes'] as const) {
    it(`every route declares a scope and answers every scope's token, the file token and none as declared (--auth ${auth})`, async () => {
      const d = await devDaemon({ auth });
      try {
        const checked = await walk(d, auth);
        assert.ok(checked > 200, `${checked} requests`);
      } finally {
        await d.close();
      }
    });
  }

  it("the served document says each operation's scope", async () => {
    const d = await devDaemon({ auth: 'all' });
    try {
      const doc = (await d.get('/openapi.json')).json() as {
        paths: Record<
          string,
          Record<string, { 'x-required-scope'?: string; description?: string; security?: unknown }>
        >;
      };
      const scopes: Record<string, string | undefined> = {};
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(item)) {
          scopes[`${method.toUpperCase()} ${path}`] = op['x-required-scope'];
          assert.ok(op['x-required-scope'], `${method} ${path} has x-required-scope`);
          assert.match(
            op.description ?? '',
            /Scope: /,
            `${method} ${path} says its scope in its description`,
          );
        }
      }
      assert.equal(scopes['GET /tasks'], 'read');
      assert.equal(scopes['POST /stacks/{stack_small_id}/usage'], 'usage');
      assert.equal(scopes['POST /nodes/claim-funds'], 'write');
      assert.equal(scopes['POST /autopilot/run'], 'write');
      assert.equal(scopes['POST /dev/gas'], 'admin');
      assert.equal(scopes['GET /audit'], 'admin');
      assert.equal(scopes['DELETE /tokens/{name}'], 'admin');
      assert.equal(scopes['GET /whoami'], 'token');
    } finally {
      await d.close();
    }
  });

  it('a route nobody declared is closed: refused as admin, and the walk above names it', async () => {
    const d = await devDaemon({ auth: 'all' });
    try {
      // A route added the way a new feature would add one, without a line in src/http/scopes.ts.
      d.app.post('/undeclared-for-the-test', async () => ({ ok: true }));
      assert.equal(declaredScope('POST', '/undeclared-for-the-test'), undefined);
      assert.ok(
        appRoutes(d.app).some((r) => r.url === '/undeclared-for-the-test'),
        'the walk sees it',
      );
      const writer = await createToken(d, 'write');
      const res = await d.app.inject({
        method: 'POST',
        url: '/undeclared-for-the-test',
        headers: { authorization: `Bearer ${writer}` },
      });
      assert.equal(res.statusCode, 403);
      assert.equal(res.json().code, 'insufficient_scope');
      assert.equal((await d.post('/undeclared-for-the-test')).statusCode, 200, 'an admin token passes');
    } finally {
      await d.close();
    }
  });

  it('grants: admin everything, write all but admin, read and usage only their own', () => {
    assert.ok(grants('admin', 'admin'));
    assert.ok(grants('write', 'usage') && grants('write', 'read') && !grants('write', 'admin'));
    assert.ok(grants('read', 'read') && !grants('read', 'usage') && !grants('read', 'write'));
    assert.ok(grants('usage', 'usage') && !grants('usage', 'read'));
    for (const scope of SCOPES) assert.ok(grants(scope, 'token'));
  });
});
