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
  // The usage source: atoma-state, read and mirrored into the store (like the indexer, for usage).
  usage: ['internal', 'store'],
  operations: ['internal', 'protocol', 'problems', 'schemas', 'store', 'chain', 'indexer'],
  http: ['internal', 'problems', 'schemas', 'store', 'chain', 'indexer', 'operations', 'usage', 'root'],
  // The client talks to the daemon over HTTP; it must not load the daemon's modules (test/cli-imports).
  cli: ['internal', 'problems', 'schemas', 'root'],
};

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');
/** The folders whose modules must import one another without a circle. */
const CIRCLE_FREE = ['src', 'bench', 'scripts'].map((dir) => join(ROOT, dir));
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

/** Who imports whom: each module (given its text) and the modules it imports by a relative path. */
function importGraph(sources: ReadonlyMap<string, string>): Map<string, string[]> {
  return new Map([...sources].map(([file, text]) => [file, relativeImports(file, text)]));
}

/**
 * The circles of a graph, one for each knot of nodes that reach one another (Tarjan's strongly connected
 * components): the shortest way from the knot's first node (in sorted order) back to itself, the node
 * repeated at the end. A knot of several circles shows one; the next shows once it is broken.
 */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const knots: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const knot: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      knot.push(member);
    } while (member !== node);
    if (knot.length > 1 || (graph.get(node) ?? []).includes(node)) knots.push(knot.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return knots.sort((a, b) => a[0]!.localeCompare(b[0]!)).map((knot) => shortestCircle(graph, knot));
}

/** The shortest way from a knot's first node back to itself, within the knot (breadth first). */
function shortestCircle(graph: ReadonlyMap<string, readonly string[]>, knot: readonly string[]): string[] {
  const start = knot[0]!;
  const inKnot = new Set(knot);
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]!;
    for (const next of graph.get(node) ?? []) {
      if (next === start) {
        const path = [start];
        for (let at = node; at !== start; at = cameFrom.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (inKnot.has(next) && !cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  throw new Error(`no circle through ${start}`);
}

function read(paths: readonly string[]): Map<string, string> {
  return new Map(paths.map((file) => [file, readFileSync(file, 'utf8')]));
}

/** Synthetic modules for the checks' own tests: paths relative to src/, with their text. */
function modules(texts: Record<string, string>): Map<string, string> {
  return new Map(Object.entries(texts).map(([path, text]) => [join(SRC, path), text]));
}

function shown(circle: readonly string[]): string {
  return circle.map((file) => relative(ROOT, file)).join(' -> ');
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
      tos.filter((to) => !used.get(from)?.has(to)).map((to) => `${from} -> ${to} is listed but not imported`),
    );
    assert.deepEqual(unused, []);
  });

  it('orders the layers one way: the table itself has no circle', () => {
    const table = new Map(
      Object.entries(ALLOWED).map(([from, tos]) => [from, tos.filter((to) => to !== 'root')]),
    );
    assert.deepEqual(circles(table), []);
    // The table before the catalog stood alone: problems read the chain's and the store's errors.
    const before = new Map([...table, ['problems', ['internal', 'protocol', 'chain', 'store']]]);
    assert.deepEqual(circles(before), [['chain', 'schemas', 'problems', 'chain']]);
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

  it('has no import circle in src/, bench/ or scripts/', () => {
    const graph = importGraph(read(CIRCLE_FREE.flatMap((dir) => files(dir, ['.ts', '.js']))));
    assert.deepEqual(circles(graph).map(shown), []);
  });

  it('finds a circle and prints its path, through every kind of import (the check itself works)', () => {
    // Two modules that import each other, one of them only for a type.
    const pair = modules({
      'a.ts': "import { b } from './b.ts';",
      'b.ts': "import type { A } from './a.ts';\nexport const b = 1;",
    });
    assert.deepEqual(circles(importGraph(pair)).map(shown), ['src/a.ts -> src/b.ts -> src/a.ts']);
    // A longer way round, through a re-export, a dynamic import and a folder above.
    const round = modules({
      'x/one.ts': "export { two } from '../y/two.ts';",
      'y/two.ts': "const three = await import('./three.ts');",
      'y/three.ts': "import '../x/one.ts';",
      'y/aside.ts': "import { two } from './two.ts';",
    });
    assert.deepEqual(circles(importGraph(round)).map(shown), [
      'src/x/one.ts -> src/y/two.ts -> src/y/three.ts -> src/x/one.ts',
    ]);
    // A JSDoc type import in the browser console's JavaScript is an import too.
    const jsdoc = modules({
      'app.js': "import { view } from './view.js';",
      'view.js': "/** @typedef {typeof import('./app.js').state} State */",
    });
    assert.equal(circles(importGraph(jsdoc)).length, 1);
    // A module that imports itself, and two separate circles, each shown once.
    const two = modules({
      'self.ts': "import { me } from './self.ts';",
      'p.ts': "import {\n  q,\n} from './q.ts';",
      'q.ts': "import { p } from './p.ts';",
    });
    assert.deepEqual(circles(importGraph(two)).map(shown), [
      'src/p.ts -> src/q.ts -> src/p.ts',
      'src/self.ts -> src/self.ts',
    ]);
  });

  it('passes what only looks like a circle: a diamond, packages, the same name in two folders', () => {
    const diamond = modules({
      'top.ts': "import { l } from './left.ts';\nimport { r } from './right.ts';",
      'left.ts': "import { b } from './bottom.ts';\nimport { readFileSync } from 'node:fs';",
      'right.ts': "import type { B } from './bottom.ts';\nimport Fastify from 'fastify';",
      'bottom.ts': 'export const b = \'import { t } from "./top.ts"\';',
      'x/util.ts': "import { u } from '../y/util.ts';",
      'y/util.ts': "import { v } from './other.ts';",
    });
    assert.deepEqual(circles(importGraph(diamond)), []);
  });
});
