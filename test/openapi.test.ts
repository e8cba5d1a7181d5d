import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { OPENAPI_FILE, renderOpenApi } from '../scripts/export-openapi.ts';

describe('OpenAPI document', () => {
  it('docs/openapi.json matches the routes (run `npm run openapi` after changing a schema)', async () => {
    assert.equal(readFileSync(OPENAPI_FILE, 'utf8'), await renderOpenApi());
  });

  it('documents every route at its real path, and only OpenAPI 3.1 constructs', async () => {
    const spec = JSON.parse(await renderOpenApi()) as {
      openapi: string;
      paths: Record<string, Record<string, { deprecated?: boolean }>>;
    };
    assert.equal(spec.openapi, '3.1.0');
    for (const path of [
      '/tasks',
      '/subscriptions/nodes/{node_id}',
      '/stacks/nodes/{node_id}',
      '/claimed-stacks/nodes/{node_id}',
      '/attestation_disputes/against/nodes/{node_id}',
      '/attestation_disputes/own/nodes/{node_id}',
      '/health',
      '/nodes/register',
      '/nodes/task-unsubscribe',
    ]) {
      assert.ok(path in spec.paths, path);
    }
    // Upstream's openapi.yml paths are answered too, but only as deprecated aliases.
    for (const [path, item] of Object.entries(spec.paths)) {
      const upstreamOnly = path.startsWith('/stacks/stacks') || path.includes('claimed_stacks');
      assert.equal(item.get?.deprecated === true, upstreamOnly, path);
    }
    assert.doesNotMatch(JSON.stringify(spec), /"nullable"/);
  });
});
