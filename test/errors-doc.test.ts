import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ERRORS } from '../src/problems/catalog.ts';

describe('error catalog', () => {
  it('docs/ERRORS.md lists exactly the catalog codes, with their statuses', () => {
    const doc = readFileSync(new URL('../docs/ERRORS.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]);
    assert.deepEqual(
      rows,
      Object.entries(ERRORS).map(([code, { status }]) => [code, status]),
    );
  });
});
