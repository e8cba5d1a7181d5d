import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

/**
 * The layering of src/ (docs/ARCHITECTURE.md), checked on every import, type-only ones included: a
 * layer may import itself and the layers listed for it, nothing above. Files directly in src/ (main,
 * config, daemon, app) assemble the layers and may import any of them.
 */
const ALLOWED: Record<string, readonly string[]> = {
  internal: [],
  protocol: ['internal'],
  problems: ['internal', 'protocol', 'chain', 'store'],
  schemas: ['internal', 'protocol', 'problems'],
  store: ['internal', 'protocol', 'schemas'],
  chain: ['internal', 'protocol', 'schemas'],
  indexer: ['internal', 'protocol', 'schemas', 'store', 'chain'],
  operations: ['internal', 'protocol', 'problems', 'schemas', 'store', 'chain', 'indexer'],
  http: ['internal', 'protocol', 'problems', 'schemas', 'store', 'chain', 'indexer', 'operations', 'root'],
  // The client talks to the daemon over HTTP; it must not load the daemon's modules (test/cli-imports).
  cli: ['internal', 'problems', 'schemas', 'root'],
};

const SRC = resolve(import.meta.dirname, '../src');
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? files(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** The layer of a file in src/: its first folder, or `root` for the files directly in src/. */
function layer(file: string): string {
  const parts = relative(SRC, file).split('/');
  return parts.length === 1 ? 'root' : parts[0]!;
}

/** The imports of a file (given its text) that break the layering, one line each. */
function violations(file: string, text: string): string[] {
  const from = layer(file);
  if (from === 'root') return [];
  const found: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2]!;
    if (!specifier.startsWith('.')) continue;
    const target = resolve(dirname(file), specifier);
    // Outside src/ (package.json for the version) is not a layer.
    if (relative(SRC, target).startsWith('..')) continue;
    const to = layer(target);
    if (to !== from && !ALLOWED[from]!.includes(to)) {
      found.push(`${relative(SRC, file)} imports ${relative(SRC, target)} (${from} -> ${to})`);
    }
  }
  return found;
}

describe('architecture', () => {
  it('knows every layer of src/', () => {
    const layers = new Set(files(SRC).map(layer));
    layers.delete('root');
    assert.deepEqual([...layers].sort(), Object.keys(ALLOWED).sort());
  });

  it('imports only downward: no layer reaches one above it', () => {
    const found = files(SRC).flatMap((file) => violations(file, readFileSync(file, 'utf8')));
    assert.deepEqual(found, []);
  });

  it('catches an upward import, static, type-only or dynamic (the check itself works)', () => {
    const store = join(SRC, 'store', 'example.ts');
    assert.deepEqual(violations(store, "import { refuse } from '../problems/catalog.ts';"), [
      'store/example.ts imports problems/catalog.ts (store -> problems)',
    ]);
    assert.equal(violations(store, "import type { Writes } from '../operations/writes.ts';").length, 1);
    assert.equal(violations(store, "const m = await import('../http/errors.ts');").length, 1);
    assert.deepEqual(violations(store, "import { U64 } from '../internal/u64.ts';"), []);
    assert.equal(violations(join(SRC, 'internal', 'x.ts'), "import { C } from '../config.ts';").length, 1);
  });
});
