import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { ROOT } from './helpers/process.ts';

/**
 * The client commands start fast because they do not load the daemon (Fastify, the stores, the chain
 * SDKs): this checks what importing the client really loads at run time (type-only imports are erased).
 */

/** The modules an import of `entry` loads, as paths relative to the checkout (or bare names). */
function loadedBy(entry: string): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = new Set();
    registerHooks({
      load(url, context, next) {
        seen.add(url);
        return next(url, context);
      },
    });
    await import(${JSON.stringify(new URL(entry, `file://${ROOT}`).href)});
    process.stdout.write('\\n' + JSON.stringify([...seen]));
  `;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  const root = `file://${ROOT}`;
  return (JSON.parse(child.stdout.split('\n').at(-1)!) as string[])
    .filter((url) => !url.startsWith('node:'))
    .map((url) => (url.startsWith(root) ? url.slice(root.length) : url));
}

const DAEMON_ONLY =
  /^(?:src\/(?:http|store|chain|operations|indexer)\/|src\/(?:daemon|app)\.ts$|node_modules\/)/;

describe('client imports', () => {
  for (const entry of ['src/cli/index.ts', 'src/main.ts']) {
    it(`${entry} loads none of the daemon's modules`, () => {
      const loaded = loadedBy(entry);
      assert.ok(
        loaded.some((path) => path.startsWith('src/cli/commands/')),
        `the hook saw the imports: ${loaded}`,
      );
      assert.deepEqual(
        loaded.filter((path) => DAEMON_ONLY.test(path)),
        [],
      );
    });
  }
});
