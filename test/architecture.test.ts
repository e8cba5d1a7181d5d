import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

/**
 * The layering of src/ (docs/ARCHITECTURE.md), checked on every import, type-only ones included: a
 * layer may import itself and the layers listed for it, and the table lists exactly what each layer
 * imports, so that it says what is true. Files directly in src/ (main, config, daemon, app) assemble
 * the layers and may import any of them. The error catalog (problems/) imports nothing: the mapping of
 * the chain's and the store's errors to it lives with its users, in operations/.
 */
const ALLOWED: Record<string, readonly string[]> = {
  internal: [],
  protocol: ['internal'],
  problems: [],
  schemas: ['internal', 'problems'],
  store: ['internal', 'protocol', 'schemas'],
  chain: ['internal', 'protocol', 'schemas'],
  indexer: ['internal', 'protocol', 'store', 'chain'],
  operations: ['internal', 'protocol', 'problems', 'schemas', 'store', 'chain', 'indexer'],
  http: ['internal', 'problems', 'schemas', 'store', 'chain', 'indexer', 'operations', 'root'],
  // The client talks to the daemon over HTTP; it must not load the daemon's modules (test/cli-imports).
  cli: ['internal', 'problems', 'schemas', 'root'],
};

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');
/**
 * An import's specifier: `import … from`, `export … from`, a bare `import '…'`, and `import('…')`,
 * which is a dynamic import in code and a type import in the console's JSDoc.
 */
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'|(?:^|\n)\s*import\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g;

function files(dir: string, endings: readonly string[]): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? files(join(dir, entry.name), endings)
      : endings.some((ending) => entry.name.endsWith(ending))
        ? [join(dir, entry.name)]
        : [],
  );
}

/** The files a module imports by a relative path (given its text), resolved: packages are not ours. */
function relativeImports(file: string, text: string): string[] {
  const targets: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2] ?? match[3]!;
    if (specifier.startsWith('.')) targets.push(resolve(dirname(file), specifier));
  }
  return targets;
}

/** The layer of a file in src/: its first folder, or `root` for the files directly in src/. */
function layer(file: string): string {
  const parts = relative(SRC, file).split('/');
  return parts.length === 1 ? 'root' : parts[0]!;
}

/** The layers each layer of src/ imports (given every file's text), itself left out. */
function layerImports(sources: ReadonlyMap<string, string>): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const [file, text] of sources) {
    const from = layer(file);
    for (const target of relativeImports(file, text)) {
      // Outside src/ (package.json for the version) is not a layer.
      if (relative(SRC, target).startsWith('..')) continue;
      const to = layer(target);
      if (to !== from) found.set(from, (found.get(from) ?? new Set()).add(to));
    }
  }
  return found;
}

/** The imports of a file (given its text) that break the layering, one line each. */
function violations(file: string, text: string): string[] {
  const from = layer(file);
  if (from === 'root') return [];
  return relativeImports(file, text)
    .filter((target) => !relative(SRC, target).startsWith('..'))
    .filter((target) => layer(target) !== from && !ALLOWED[from]!.includes(layer(target)))
    .map((target) => `${relative(SRC, file)} imports ${relative(SRC, target)} (${from} -> ${layer(target)})`);
}

function read(paths: readonly string[]): Map<string, string> {
  return new Map(paths.map((file) => [file, readFileSync(file, 'utf8')]));
}

describe('architecture', () => {
  it('knows every layer of src/', () => {
    const layers = new Set(files(SRC, ['.ts']).map(layer));
    layers.delete('root');
    assert.deepEqual([...layers].sort(), Object.keys(ALLOWED).sort());
  });

  it('imports only downward: no layer reaches one above it', () => {
    const found = [...read(files(SRC, ['.ts']))].flatMap(([file, text]) => violations(file, text));
    assert.deepEqual(found, []);
  });

  it('says exactly what is true: every layer imports each layer listed for it', () => {
    const used = layerImports(read(files(SRC, ['.ts'])));
    const unused = Object.entries(ALLOWED).flatMap(([from, tos]) =>
      tos.filter((to) => !used.get(from)?.has(to)).map((to) => `${from} -> ${to}`),
    );
    assert.deepEqual(unused, [], 'a layer listed as imported that is not: take it out of ALLOWED');
  });

  it('catches an upward import, static, type-only or dynamic (the check itself works)', () => {
    const store = join(SRC, 'store', 'example.ts');
    assert.deepEqual(violations(store, "import { refuse } from '../operations/from-error.ts';"), [
      'store/example.ts imports operations/from-error.ts (store -> operations)',
    ]);
    assert.equal(violations(store, "import type { Writes } from '../operations/writes.ts';").length, 1);
    assert.equal(violations(store, "const m = await import('../http/errors.ts');").length, 1);
    assert.equal(violations(store, "import '../http/errors.ts';").length, 1);
    assert.deepEqual(violations(store, "import { U64 } from '../internal/u64.ts';"), []);
    assert.equal(violations(join(SRC, 'internal', 'x.ts'), "import { C } from '../config.ts';").length, 1);
    assert.equal(
      violations(join(SRC, 'problems', 'x.ts'), "import { U } from '../internal/u64.ts';").length,
      1,
    );
  });
});
