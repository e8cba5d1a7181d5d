/**
 * Builds dist/, the JavaScript the published package runs (npm pack runs this as prepack; the container
 * image's build stage too). Node strips no types from files under node_modules, so an installed package
 * cannot run src/*.ts as the clone does (docs/DECISIONS.md, "The package carries JavaScript").
 *
 * tsc compiles src/ with its relative `.ts` specifiers rewritten to `.js`; every other file under src/ that
 * the daemon reads at run time beside its modules (the SQL migrations, the console's files) is copied to
 * the same place under dist/, so that paths taken from import.meta.url mean the same file in both.
 *
 *   node scripts/build-package.ts
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');

/**
 * Files under src/ that the daemon reads at run time: not the sources tsc compiles, the console's
 * type-check settings, nor anything of the tests and benchmarks kept beside the code.
 */
function isAsset(file: string): boolean {
  return (
    !file.endsWith('.ts') &&
    !file.endsWith('/tsconfig.json') &&
    !/\.(test|bench)\./.test(file) &&
    !file.includes('/fixtures/')
  );
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

rmSync(DIST, { recursive: true, force: true });
const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
let copied = 0;
for (const file of files(SRC).filter(isAsset)) {
  cpSync(file, join(DIST, relative(SRC, file)));
  copied += 1;
}
if (!existsSync(join(DIST, 'main.js'))) throw new Error('tsc wrote no dist/main.js');
process.stdout.write(
  `built ${relative(ROOT, DIST)}/: the compiled modules and ${copied} files copied from src/\n`,
);
