import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ROOT } from './helpers/process.ts';

/** What `npm ci` on a fresh machine (npm 11 on the system's Node 20) needs, declared rather than defaulted. */
describe('the install', () => {
  const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as {
    dependencies: Record<string, string>;
    allowScripts?: Record<string, boolean>;
  };
  const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, 'utf8')) as {
    packages: Record<string, { version?: string; hasInstallScript?: boolean }>;
  };

  it('approves, in allowScripts, exactly the install scripts it needs: the pinned Node runtime', () => {
    // npm announced that dependencies' install scripts will not run unless approved; the runtime is one.
    const withScripts = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && entry.hasInstallScript)
      .map(([path]) => path.replace(/^.*node_modules\//, ''));
    assert.deepEqual(withScripts, ['node'], 'a new dependency with an install script needs a decision');
    assert.deepEqual(pkg.allowScripts, { node: true });
    assert.match(pkg.dependencies.node ?? '', /^24\.\d+\.\d+$/, 'the runtime is pinned to an exact Node 24');
  });

  it('keeps npm to errors, since its engine checks run against the Node that runs npm', () => {
    const npmrc = readFileSync(`${ROOT}.npmrc`, 'utf8');
    assert.match(npmrc, /^loglevel=error$/m);
  });
});
