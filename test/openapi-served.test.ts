import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { OPENAPI_FILE } from '../scripts/export-openapi.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';

/**
 * The document a running daemon serves, checked against what that daemon does: the token where it asks
 * for it. Every operation is found in the document itself, so a new route is covered without a change here.
 */

interface Operation {
  security?: Record<string, string[]>[];
  responses: Record<string, { description: string; headers?: Record<string, unknown> }>;
  parameters?: { in: string; name: string; example?: unknown }[];
  requestBody?: { content: Record<string, { example?: unknown }> };
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes?: Record<string, { type: string; scheme?: string }> };
}

async function servedDocument(d: DevDaemon): Promise<Document> {
  // With --auth all the document itself needs the token (only /health and /ready are open).
  const res = await d.get('/openapi.json');
  assert.equal(res.statusCode, 200);
  return res.json() as Document;
}

function operations(doc: Document): { method: string; path: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );
}

/** The path with its parameters filled from their examples (1 where there is none). */
function concrete(path: string, op: Operation): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const example = op.parameters?.find((p) => p.in === 'path' && p.name === name)?.example;
    return String(example ?? 1);
  });
}

const hasBody = (method: string) => method !== 'GET' && method !== 'HEAD';

/** A request without the token. Bodies are text/plain, so an open write stops at 415 and runs nothing. */
function anonymous(d: DevDaemon, method: string, url: string): Promise<LightMyRequestResponse> {
  return d.app.inject({
    method: method as 'GET',
    url,
    ...(hasBody(method) ? { payload: 'x', headers: { 'content-type': 'text/plain' } } : {}),
  });
}

describe('the served OpenAPI document and --auth', () => {
  for (const auth of ['writes', 'all', 'none'] as const) {
    it(`--auth ${auth}: declares the bearer token on exactly the operations that answer 401 without it`, async () => {
      const d = await devDaemon({ auth });
      try {
        const doc = await servedDocument(d);
        const schemes = doc.components.securitySchemes ?? {};
        if (auth === 'none') {
          assert.deepEqual(schemes, {}, 'no token, no scheme');
        } else {
          assert.deepEqual(Object.keys(schemes), ['apiToken']);
          assert.equal(schemes.apiToken?.type, 'http');
          assert.equal(schemes.apiToken?.scheme, 'bearer');
        }
        let secured = 0;
        for (const { method, path, op } of operations(doc)) {
          const res = await anonymous(d, method, concrete(path, op));
          const declared = (op.security ?? []).some((requirement) => 'apiToken' in requirement);
          assert.equal(declared, res.statusCode === 401, `${method} ${path} answered ${res.statusCode}`);
          if (declared) {
            secured += 1;
            assert.ok(op.responses['401'], `${method} ${path} documents 401`);
            assert.ok(op.responses['403'], `${method} ${path} documents 403`);
          }
        }
        assert.ok(auth === 'none' ? secured === 0 : secured > 0);
        // Swagger UI reads the same document: its Authorize button comes from the scheme.
        const ui = await d.get('/docs/json');
        assert.deepEqual(ui.json(), doc);
      } finally {
        await d.close();
      }
    });
  }

  it('the committed docs/openapi.json declares the token as the default --auth writes does', async () => {
    const committed = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as Document;
    const d = await devDaemon();
    try {
      const served = await servedDocument(d);
      assert.deepEqual(committed.components.securitySchemes, served.components.securitySchemes);
      for (const { method, path, op } of operations(committed)) {
        const live = served.paths[path]?.[method.toLowerCase()];
        assert.ok(live, `${method} ${path} is served on dev too`);
        assert.deepEqual(op.security, live.security, `${method} ${path}`);
      }
    } finally {
      await d.close();
    }
  });
});
