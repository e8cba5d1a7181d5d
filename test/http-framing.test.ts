import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type App, buildApp, REQUEST_TIMEOUT_MS } from '../src/app.ts';
import { loadOrCreateToken } from '../src/http/security.ts';
import { createLogger } from '../src/internal/logger.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { openSecurity, TEST_APP_CONFIG } from './helpers/app-options.ts';
import { devDaemon } from './helpers/dev-daemon.ts';
import { type RawExchange, type RawResponse, rawExchange } from './helpers/raw-http.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * What happens below the routes, over real connections: requests Node's HTTP parser refuses, CONNECT,
 * requests that do not arrive whole in time. Each gets a problem like any other error, and its connection
 * is closed. The app runs with a short request timeout so that the timeouts are tested as they run.
 */

const TIMEOUT_MS = 500;

async function setup(requestTimeoutMs?: number) {
  const tmp = tempDir();
  const store = new SqliteStore({ dataDir: tmp.dir });
  const token = readFileSync(loadOrCreateToken(tmp.dir).file, 'utf8').trim();
  const app = await buildApp({
    config: TEST_APP_CONFIG,
    store,
    logger: createLogger('silent'),
    security: openSecurity(tmp.dir, { auth: 'writes' }),
    requestTimeoutMs,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  return {
    app,
    port,
    token,
    host: `Host: 127.0.0.1:${port}\r\n`,
    close: async () => {
      await app.close();
      await store.close();
      await tmp.remove();
    },
  };
}

/** Asserts a raw response is the problem with this status and code, sent whole, and returns its body. */
function assertProblem(
  response: RawResponse | undefined,
  status: number,
  code: string,
): Record<string, unknown> {
  assert.ok(response, `expected a ${status} ${code} answer, got none`);
  assert.equal(response.status, status, response.body.toString());
  assert.match(response.headers['content-type'] ?? '', /^application\/problem\+json/);
  assert.equal(Number(response.headers['content-length']), response.body.length);
  const body = JSON.parse(response.body.toString()) as Record<string, unknown>;
  assert.equal(body.status, status);
  assert.equal(body.code, code, String(body.detail));
  assert.equal(body.type, `urn:node-daemon:problem:${code}`);
  assert.ok(String(body.detail).length > 10);
  assert.equal(body.request_id, response.headers['x-request-id']);
  return body;
}

/** Asserts the exchange is one problem, after which the daemon closed the connection. */
function assertRefused(exchange: RawExchange, status: number, code: string): Record<string, unknown> {
  assert.equal(exchange.responses.length, 1, `one answer, got ${exchange.responses.length}`);
  const body = assertProblem(exchange.responses[0], status, code);
  assert.equal(exchange.responses[0]?.headers.connection, 'close');
  assert.ok(exchange.closed, 'the daemon closes the connection');
  assert.equal(exchange.rest.length, 0, `nothing after the answer: ${exchange.rest.toString()}`);
  return body;
}

describe('HTTP below the routes', () => {
  let ctx: Awaited<ReturnType<typeof setup>>;
  let app: App;
  before(async () => {
    ctx = await setup(TIMEOUT_MS);
    app = ctx.app;
  });
  after(() => ctx.close());

  it('answers what the HTTP parser refuses with a problem, and closes the connection', async (t) => {
    const H = ctx.host;
    const post = (headers: string, body = '{}') =>
      `POST /nodes/register HTTP/1.1\r\n${H}authorization: Bearer ${ctx.token}\r\n${headers}\r\n${body}`;
    const cases: { label: string; request: string; status: number; code: string; parameter?: string }[] = [
      {
        label: 'Content-Length with Transfer-Encoding',
        request: post(
          'content-type: application/json\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n',
          '2\r\n{}\r\n0\r\n\r\n',
        ),
        status: 400,
        code: 'malformed_http',
        parameter: 'transfer-encoding',
      },
      {
        label: 'two Content-Length headers',
        request: post('content-type: application/json\r\ncontent-length: 2\r\ncontent-length: 3\r\n'),
        status: 400,
        code: 'malformed_http',
        parameter: 'content-length',
      },
      {
        label: 'Content-Length not digits',
        request: post('content-type: application/json\r\ncontent-length: 2x\r\n'),
        status: 400,
        code: 'malformed_http',
        parameter: 'content-length',
      },
      {
        label: 'a Transfer-Encoding other than chunked',
        request: post('content-type: application/json\r\ntransfer-encoding: gzip\r\n'),
        status: 400,
        code: 'malformed_http',
        parameter: 'transfer-encoding',
      },
      {
        label: 'a broken chunk in a body the route reads',
        request: post(
          'content-type: application/json\r\ntransfer-encoding: chunked\r\n',
          'zz\r\n{}\r\n0\r\n\r\n',
        ),
        status: 400,
        code: 'malformed_http',
      },
      {
        label: 'a NUL in a header value',
        request: `GET /tasks HTTP/1.1\r\n${H}x-a: a\0b\r\n\r\n`,
        status: 400,
        code: 'malformed_http',
      },
      {
        label: 'a header without a colon',
        request: `GET /tasks HTTP/1.1\r\n${H}oops\r\n\r\n`,
        status: 400,
        code: 'malformed_http',
      },
      {
        label: 'bare LF line ends',
        request: 'GET /tasks HTTP/1.1\nhost: 127.0.0.1\n\n',
        status: 400,
        code: 'malformed_http',
      },
      {
        label: 'a TLS handshake',
        request: '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03',
        status: 400,
        code: 'malformed_http',
      },
      {
        label: 'no Host',
        request: 'GET /tasks HTTP/1.1\r\n\r\n',
        status: 400,
        code: 'malformed_http',
        parameter: 'host',
      },
      {
        label: 'two Hosts',
        request: `GET /tasks HTTP/1.1\r\n${H}${H}\r\n`,
        status: 400,
        code: 'malformed_http',
        parameter: 'host',
      },
      {
        label: 'a huge header',
        request: `GET /tasks HTTP/1.1\r\n${H}x-big: ${'a'.repeat(20_000)}\r\n\r\n`,
        status: 431,
        code: 'headers_too_large',
      },
      {
        label: 'a huge URL',
        request: `GET /tasks?${'a'.repeat(20_000)}=1 HTTP/1.1\r\n${H}\r\n`,
        status: 431,
        code: 'headers_too_large',
      },
      {
        label: 'an Expect the daemon cannot meet',
        request: post('content-type: application/json\r\ncontent-length: 2\r\nexpect: 200-ok\r\n'),
        status: 417,
        code: 'expectation_failed',
        parameter: 'expect',
      },
      {
        label: 'HTTP/3',
        request: `GET /tasks HTTP/3.0\r\n${H}\r\n`,
        status: 505,
        code: 'http_version_not_supported',
      },
      {
        label: "HTTP/2's preface",
        request: 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
        status: 505,
        code: 'http_version_not_supported',
      },
      { label: 'HTTP/1.2', request: `GET /tasks HTTP/1.2\r\n${H}\r\n`, status: 400, code: 'malformed_http' },
    ];
    for (const c of cases) {
      const exchange = await rawExchange(ctx.port, Buffer.from(c.request, 'latin1'));
      await t.test(c.label, () => {
        const body = assertRefused(exchange, c.status, c.code);
        assert.equal(body.parameter, c.parameter);
      });
    }
    const metrics = await app.inject({ url: '/metrics' });
    assert.match(
      metrics.body,
      /node_daemon_http_requests_total\{route="unmatched",method="unknown",status="400"\} \d+/,
    );
  });

  it('answers methods it does not take, CONNECT and lowercase ones included, with 405 and Allow (404 off its paths)', async () => {
    const H = ctx.host;
    const cases: [string, number, string | undefined, string][] = [
      [`get /tasks HTTP/1.1\r\n${H}\r\n`, 405, 'GET, HEAD', '/tasks'],
      [`FOO /tasks/ HTTP/1.1\r\n${H}\r\n`, 405, 'GET, HEAD', '/tasks/'],
      [`post /nodes/register HTTP/1.1\r\n${H}content-length: 0\r\n\r\n`, 405, 'POST', '/nodes/register'],
      [`get /no/such/path HTTP/1.1\r\n${H}\r\n`, 404, undefined, '/no/such/path'],
      [
        'CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n',
        405,
        'GET, HEAD, POST, DELETE',
        'example.com:443',
      ],
      [`CONNECT /tasks HTTP/1.1\r\n${H}\r\n`, 405, 'GET, HEAD', '/tasks'],
    ];
    for (const [request, status, allow, instance] of cases) {
      const exchange = await rawExchange(ctx.port, request);
      const body = assertRefused(exchange, status, status === 405 ? 'method_not_allowed' : 'not_found');
      assert.equal(exchange.responses[0]?.headers.allow, allow, request);
      assert.equal(body.instance, instance);
    }
    // What the parser knows but no route takes is answered the same way, through the routes.
    const trace = await app.inject({
      method: 'TRACE' as 'GET',
      url: '/tasks',
      headers: { authorization: `Bearer ${ctx.token}` },
    });
    assert.equal(trace.statusCode, 405);
    assert.equal(trace.headers.allow, 'GET, HEAD');
    const lower = await rawExchange(ctx.port, `get /tasks HTTP/1.1\r\n${H}\r\n`);
    assert.match(String(JSON.parse(lower.responses[0]?.body.toString() ?? '{}').detail), /case-sensitive/);
  });

  it('refuses a request that is not whole in time with 408 within a small margin, even one that trickles', async () => {
    const H = ctx.host;
    const post = `POST /nodes/register HTTP/1.1\r\n${H}authorization: Bearer ${ctx.token}\r\ncontent-type: application/json\r\n`;
    const [shortBody, partialHead, slow] = await Promise.all([
      rawExchange(ctx.port, `${post}content-length: 10\r\n\r\n{}`),
      rawExchange(ctx.port, `GET /tasks HTTP/1.1\r\n${H}`),
      // A byte every 50 ms keeps the connection busy, but the limit is on the whole request.
      rawExchange(ctx.port, [`${post}content-length: 100\r\n\r\n`, ...' '.repeat(99)], { paceMs: 50 }),
    ]);
    for (const [exchange, instance] of [
      [shortBody, '/nodes/register'],
      [partialHead, '*'],
      [slow, '/nodes/register'],
    ] as const) {
      const body = assertRefused(exchange, 408, 'request_timeout');
      assert.equal(body.instance, instance);
      assert.ok(exchange.elapsedMs >= TIMEOUT_MS - 5, `not before the limit: ${exchange.elapsedMs} ms`);
      // Within a second of the limit even on a loaded machine (Node's own check came up to 30 s late).
      assert.ok(exchange.elapsedMs < TIMEOUT_MS + 1000, `soon after the limit: ${exchange.elapsedMs} ms`);
    }
  });

  it('an answer given before the body was read stands: a broken body then closes the connection, unanswered', async () => {
    const H = ctx.host;
    // No token: 401 at once; the chunked body that follows is broken.
    const exchange = await rawExchange(
      ctx.port,
      `POST /nodes/register HTTP/1.1\r\n${H}content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    );
    assert.equal(exchange.responses.length, 1);
    assertProblem(exchange.responses[0], 401, 'unauthorized');
    assert.ok(exchange.closed);
    assert.equal(exchange.rest.length, 0);
    // Cut short instead: the same.
    const cut = await rawExchange(
      ctx.port,
      `POST /nodes/register HTTP/1.1\r\n${H}content-type: application/json\r\ncontent-length: 10\r\n\r\n{`,
      { halfClose: true },
    );
    assert.equal(cut.responses.length, 1);
    assertProblem(cut.responses[0], 401, 'unauthorized');
  });

  it('a request cut short while its body is read is refused as malformed', async () => {
    const exchange = await rawExchange(
      ctx.port,
      `POST /nodes/register HTTP/1.1\r\n${ctx.host}authorization: Bearer ${ctx.token}\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n{`,
      { halfClose: true },
    );
    const body = assertRefused(exchange, 400, 'malformed_http');
    assert.equal(body.instance, '/nodes/register');
  });

  it('answers the good requests of a pipeline, then the bad one, on the same connection', async () => {
    const H = ctx.host;
    const exchange = await rawExchange(
      ctx.port,
      `GET /health HTTP/1.1\r\n${H}\r\nGET /tasks?x=1 HTTP/1.1\r\n${H}\r\nget /health HTTP/1.1\r\n${H}\r\n`,
    );
    assert.deepEqual(
      exchange.responses.map((r) => r.status),
      [200, 400, 405],
    );
    assertProblem(exchange.responses[1], 400, 'invalid_parameter');
    const body = assertProblem(exchange.responses[2], 405, 'method_not_allowed');
    assert.equal(body.instance, '/health');
    assert.ok(exchange.closed);
  });

  it('holds odd request targets to what HTTP/1.1 allows', async () => {
    const H = ctx.host;
    // The asterisk form is for OPTIONS only.
    const star = await rawExchange(ctx.port, `GET * HTTP/1.1\r\n${H}\r\n`);
    assertRefused(star, 400, 'malformed_http');
    const options = await rawExchange(ctx.port, `OPTIONS * HTTP/1.1\r\n${H}\r\n`, { responses: 1 });
    assertProblem(options.responses[0], 405, 'method_not_allowed');
    // An absolute-form target names its host, which the Host check then holds (RFC 9112, section 3.2.2).
    const foreign = await rawExchange(ctx.port, `GET http://evil.example/tasks HTTP/1.1\r\n${H}\r\n`, {
      responses: 1,
    });
    assertProblem(foreign.responses[0], 403, 'host_not_allowed');
    const own = await rawExchange(ctx.port, `GET http://127.0.0.1:${ctx.port}/tasks HTTP/1.1\r\n${H}\r\n`, {
      responses: 1,
    });
    assert.equal(own.responses[0]?.status, 200);
    const missing = await rawExchange(
      ctx.port,
      `GET http://127.0.0.1:${ctx.port}/nope HTTP/1.1\r\n${H}\r\n`,
      {
        responses: 1,
      },
    );
    assertProblem(missing.responses[0], 404, 'not_found');
  });

  it('refuses a compressed body with 415, naming Content-Encoding', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/nodes/register',
      headers: {
        authorization: `Bearer ${ctx.token}`,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      payload: '{}',
    });
    assert.equal(res.statusCode, 415);
    assert.equal(res.json().code, 'unsupported_media_type');
    assert.equal(res.json().parameter, 'content-encoding');
  });
});

describe('HEAD /events', () => {
  it('answers the head of an event stream, and ends', async () => {
    const d = await devDaemon();
    try {
      const port = new URL(await d.app.listen({ host: '127.0.0.1', port: 0 })).port;
      const exchange = await rawExchange(Number(port), `HEAD /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, {
        head: true,
      });
      assert.equal(exchange.responses[0]?.status, 200);
      assert.match(exchange.responses[0]?.headers['content-type'] ?? '', /^text\/event-stream/);
      assert.ok(exchange.closed, 'the connection closes at once');
    } finally {
      await d.close();
    }
  });
});

describe('the request time limit', () => {
  it('is the promised 30 s for the head and the whole request, checked every second', async () => {
    const ctx = await setup();
    try {
      assert.equal(REQUEST_TIMEOUT_MS, 30_000);
      const server = ctx.app.server as typeof ctx.app.server & { connectionsCheckingInterval: number };
      assert.equal(server.requestTimeout, REQUEST_TIMEOUT_MS);
      assert.equal(server.headersTimeout, REQUEST_TIMEOUT_MS);
      assert.ok(server.connectionsCheckingInterval <= 1000, String(server.connectionsCheckingInterval));
    } finally {
      await ctx.close();
    }
  });
});
