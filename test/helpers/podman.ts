import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * Podman as it works on our machines (/work/shared/reference/containers.md): rootful, with runc (crun
 * refuses this cgroup layout) and a containers.conf of our own (the default open-files ulimit is above
 * what the sandbox allows). No registry is reachable, so the Debian base is made here with debootstrap,
 * once: it is kept under /var/tmp (and as an image), keyed by its recipe.
 */
const exec = promisify(execFile);

/** Where the base's root file system and our containers.conf are kept between runs. */
export const CACHE_DIR = '/var/tmp/node-daemon-test';

/**
 * What debootstrap leaves that an image does not need, as the public slim image leaves it out: the
 * downloaded packages, apt's lists (a build runs apt-get update), documentation, manuals and translations.
 */
const SLIM_PATHS = [
  'var/cache/apt/archives',
  'var/lib/apt/lists',
  'usr/share/doc',
  'usr/share/man',
  'usr/share/locale',
];

/** The base image's recipe: change it and the key changes, so a new base is made. */
const BASE_RECIPE = { tool: 'debootstrap', variant: 'minbase', suite: 'bookworm', slim: SLIM_PATHS };
const BASE_KEY = createHash('sha256').update(JSON.stringify(BASE_RECIPE)).digest('hex').slice(0, 12);
export const BASE_IMAGE = `localhost/node-daemon-test-base:${BASE_RECIPE.suite}-${BASE_KEY}`;

const CONTAINERS_CONF = `# node-daemon's tests (test/helpers/podman.ts): see /work/shared/reference/containers.md
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
`;

/** The environment podman runs with: our containers.conf. */
function podmanEnv(): NodeJS.ProcessEnv {
  mkdirSync(CACHE_DIR, { recursive: true });
  const file = join(CACHE_DIR, 'containers.conf');
  if (!existsSync(file) || readFileSync(file, 'utf8') !== CONTAINERS_CONF)
    writeFileSync(file, CONTAINERS_CONF);
  return { ...process.env, CONTAINERS_CONF: file };
}

/** Why the image cannot be built and run here, or undefined when it can. */
export function podmanMissing(): string | undefined {
  for (const tool of ['podman', 'runc', 'debootstrap']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0 && !existsSync(`/usr/sbin/${tool}`)) {
      return `${tool} is not installed (apt-get install podman runc debootstrap)`;
    }
  }
  if (process.getuid?.() !== 0) return 'podman here runs rootful and debootstrap needs root: run as root';
  return undefined;
}

export interface Output {
  stdout: string;
  stderr: string;
}

/** Runs podman with runc and our containers.conf; rejects with its stderr when it fails. */
export async function podman(args: string[], timeoutMs = 120_000): Promise<Output> {
  try {
    return await exec('podman', ['--runtime', 'runc', ...args], {
      env: podmanEnv(),
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    const e = error as Error & Partial<Output>;
    throw new Error(`podman ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`.trim());
  }
}

async function imageExists(ref: string): Promise<boolean> {
  return (
    spawnSync('podman', ['--runtime', 'runc', 'image', 'exists', ref], { env: podmanEnv() }).status === 0
  );
}

/** The Debian mirror apt already uses here (deb822 or one-line form), else Debian's own. */
function debianMirror(): string {
  for (const [file, pattern] of [
    ['/etc/apt/sources.list.d/debian.sources', /^URIs:\s*(\S+)/m],
    ['/etc/apt/sources.list', /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/m],
  ] as const) {
    const match = existsSync(file) ? pattern.exec(readFileSync(file, 'utf8')) : null;
    if (match) return match[1]!;
  }
  return 'http://deb.debian.org/debian';
}

/** Empties SLIM_PATHS under a root file system, keeping the directories themselves. */
export function slim(root: string): void {
  for (const path of SLIM_PATHS) {
    const dir = join(root, path);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir)) {
      // apt expects its archives' partial/ directory and its lock files.
      if (entry === 'partial' || entry === 'lock') continue;
      rmSync(join(dir, entry), { recursive: true, force: true });
    }
  }
}

/**
 * The Debian base image, made at most once per recipe: debootstrap writes a root file system (about 45 s),
 * kept as a tarball under /var/tmp, which podman imports. Returns how it was had: 'cached' (the image was
 * there), 'imported' (from the kept tarball) or 'made'.
 */
export async function debianBase(): Promise<'cached' | 'imported' | 'made'> {
  if (await imageExists(BASE_IMAGE)) return 'cached';
  const tarball = join(CACHE_DIR, `debian-base-${BASE_RECIPE.suite}-${BASE_KEY}.tar`);
  let how: 'imported' | 'made' = 'imported';
  if (!existsSync(tarball)) {
    how = 'made';
    const root = join(CACHE_DIR, `debian-base-${BASE_KEY}.${process.pid}`);
    rmSync(root, { recursive: true, force: true });
    try {
      await exec(
        'debootstrap',
        [`--variant=${BASE_RECIPE.variant}`, BASE_RECIPE.suite, root, debianMirror()],
        { timeout: 600_000, maxBuffer: 64 * 1024 * 1024 },
      );
      slim(root);
      // Written whole, then renamed: a run cut short leaves no half tarball for the next one to trust.
      await exec('tar', ['-C', root, '-cf', `${tarball}.tmp`, '.'], { timeout: 300_000 });
      renameSync(`${tarball}.tmp`, tarball);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
  await podman(['import', tarball, BASE_IMAGE], 300_000);
  return how;
}
