import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { cleanEnv, ROOT, startDaemon } from './helpers/process.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * The package as a new user gets it (docs/DEPLOY.md): `npm pack` builds dist/ (Node strips no types under
 * node_modules), and the tarball installs into a prefix and runs from outside the clone.
 */
const exec = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };

interface PackInfo {
  name: string;
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string }[];
}

/** npm, with the caller's environment minus the daemon's settings. */
async function npm(args: string[], cwd: string, timeout: number): Promise<string> {
  const { stdout } = await exec('npm', args, { cwd, env: cleanEnv(), timeout, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** An older system Node runs the command as most users' will: it re-runs itself on the pinned Node 24. */
function olderSystemNode(): string | undefined {
  const version = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' });
  const major = Number(/^v(\d+)/.exec(version.stdout ?? '')?.[1]);
  return version.status === 0 && major < 24 ? '/usr/bin/node' : undefined;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('the npm package', () => {
  it('packs JavaScript without tests, installs into a prefix, starts, answers and stops outside the clone', async () => {
    const tmp = tempDir('node-daemon-package-');
    try {
      const started = performance.now();
      // prepack builds dist/; its lines come before npm's JSON, which starts on a line of its own.
      const out = await npm(['pack', '--json', '--pack-destination', tmp.dir], ROOT, 180_000);
      const [info] = JSON.parse(out.slice(out.search(/^\[/m))) as PackInfo[];
      assert.ok(info);
      const packSeconds = (performance.now() - started) / 1000;
      assert.equal(info.name, pkg.name);
      assert.notEqual(info.name, 'node-daemon', 'the unscoped name belongs to an unrelated package on npm');
      const paths = info.files.map((f) => f.path);
      // The files the daemon reads beside its modules (the migrations, the console), where src/ has them.
      const assets = filesUnder(join(ROOT, 'src'))
        .map((file) => relative(join(ROOT, 'src'), file))
        .filter((file) => !/\.ts$|tsconfig\.json$|\.(test|bench)\.|(^|\/)fixtures\//.test(file))
        .map((file) => `dist/${file}`);
      assert.ok(assets.some((file) => file.endsWith('.sql')) && assets.includes('dist/console/index.html'));
      for (const expected of [
        'package.json',
        'README.md',
        'bin/node-daemon.js',
        'bin/daemon-node-flags.json',
        'dist/main.js',
        'dist/indexer/file-worker.js',
        ...assets,
      ]) {
        assert.ok(paths.includes(expected), `${expected} is in the tarball`);
      }
      const stray = paths.filter(
        (p) =>
          /^(test|bench|scripts|src|\.ci|\.github)\//.test(p) ||
          p.includes('fixtures') ||
          /\.(test|bench)\.js$/.test(p) ||
          p.endsWith('.ts') ||
          /(^|\/)tsconfig[^/]*\.json$/.test(p) ||
          p === 'package-lock.json' ||
          p === '.npmrc',
      );
      assert.deepEqual(stray, [], 'no tests, benches, fixtures, sources or CI files in the package');

      const prefix = join(tmp.dir, 'prefix');
      const installStarted = performance.now();
      await npm(
        [
          'install',
          '--global',
          '--prefix',
          prefix,
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          join(tmp.dir, info.filename),
        ],
        tmp.dir,
        300_000,
      );
      const installSeconds = (performance.now() - installStarted) / 1000;
      const installed = join(prefix, 'lib', 'node_modules', ...pkg.name.split('/'));
      assert.equal(existsSync(join(installed, 'src')), false);
      // Where deploy/systemd/node-daemon.service runs it from (a global install nests the dependencies).
      assert.ok(
        existsSync(join(installed, 'node_modules', 'node', 'bin', 'node')),
        'the pinned Node is in the package',
      );
      const bin = join(prefix, 'bin', 'node-daemon');
      assert.equal(realpathSync(bin), join(installed, 'bin', 'node-daemon.js'));

      const node = olderSystemNode() ?? process.execPath;
      const version = spawnSync(node, [bin, '--version'], {
        cwd: tmp.dir,
        env: cleanEnv(),
        encoding: 'utf8',
      });
      assert.equal(version.stdout, `${pkg.version}\n`, version.stderr);

      const data = join(tmp.dir, 'data');
      const daemon = await startDaemon(['--data-dir', data], {}, 120_000, node, { bin, cwd: tmp.dir });
      try {
        const health = await fetch(`${daemon.url}/health`);
        assert.equal(health.status, 200);
        assert.deepEqual(await health.json(), { status: 'ok' });
        // The console's files and the migrations were found beside the built modules.
        assert.equal((await fetch(`${daemon.url}/`)).status, 200);
        const { pid } = JSON.parse(readFileSync(join(data, 'daemon.json'), 'utf8')) as { pid: number };
        const runtime = realpathSync(`/proc/${pid}/exe`);
        assert.ok(
          runtime.startsWith(installed) || node === process.execPath,
          `the daemon runs on the package's pinned Node (${runtime})`,
        );
        const status = spawnSync(node, [bin, 'status', '--url', daemon.url, '--data-dir', data], {
          cwd: tmp.dir,
          env: cleanEnv(),
          encoding: 'utf8',
        });
        assert.equal(status.status, 0, status.stderr);
        assert.match(status.stdout, /signer/i);
      } finally {
        daemon.child.kill('SIGTERM');
      }
      const exit = await daemon.exited;
      assert.equal(exit.code, 0, exit.stderr);
      assert.match(exit.stderr, /"msg":"stopped"/);
      assert.deepEqual(
        filesUnder(installed).filter((f) => f.endsWith('.ts') && !f.includes('/node_modules/')),
        [],
      );
      process.stdout.write(
        `# package ${info.filename}: ${(info.size / 1024).toFixed(0)} KiB packed, ${(info.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${info.files.length} files; pack ${packSeconds.toFixed(1)} s, install ${installSeconds.toFixed(1)} s\n`,
      );
    } finally {
      await tmp.remove();
    }
  });
});
