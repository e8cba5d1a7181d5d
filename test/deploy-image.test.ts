import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readOverlay } from './helpers/compose.ts';
import { BASE_IMAGE, debianBase, podman, podmanMissing } from './helpers/podman.ts';
import { ROOT } from './helpers/process.ts';

/**
 * The container image (deploy/Containerfile, docs/DEPLOY.md), built with podman on a Debian base made here
 * (no registry is reachable: test/helpers/podman.ts), run, and asked from the host. Skipped when podman is
 * not there, unless NODE_DAEMON_REQUIRE_DEPLOY=1 (CI), which makes that skip a failure.
 */
const CONTAINERFILE = join(ROOT, 'deploy', 'Containerfile');
const IMAGE = 'localhost/node-daemon:test';
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const SYSTEMD_IMAGE = 'localhost/node-daemon-test-systemd:test';
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string };

interface Instruction {
  keyword: string;
  args: string;
}

/** The Containerfile's instructions per stage, continuation lines joined and comments dropped. */
function stages(text: string): Instruction[][] {
  const joined = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ');
  const result: Instruction[][] = [[]];
  for (const line of joined.split('\n')) {
    const match = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!match) continue;
    const instruction = { keyword: match[1]!, args: match[2]!.trim() };
    if (instruction.keyword === 'FROM') result.push([]);
    result.at(-1)!.push(instruction);
  }
  return result;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitForHealth(url: string, timeoutMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      if (response.status === 200) return (performance.now() - started) / 1000;
    } catch {
      // Not listening yet.
    }
    if (performance.now() - started > timeoutMs) throw new Error(`${url}/health did not answer 200 in time`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * podman run's form of how the compose overlay runs the service (deploy/compose/): its environment, a
 * read-only root with a scratch /tmp, no capabilities, no new privileges, and the node's Sui config
 * volume (here a directory) where the overlay mounts it. atoma-node's network, postgres-db and the
 * --atoma-config flags are not here: the container runs on the dev network.
 */
function overlayRunArgs(suiConfigDir: string): string[] {
  const service = readOverlay().services['node-daemon']!;
  const args = Object.entries(service.environment ?? {}).flatMap(([key, value]) => [
    '--env',
    `${key}=${value}`,
  ]);
  if (service.read_only) args.push('--read-only');
  for (const path of service.tmpfs ?? []) args.push('--tmpfs', path);
  for (const cap of service.cap_drop ?? []) args.push('--cap-drop', cap);
  for (const option of service.security_opt ?? []) args.push('--security-opt', option.replace(':true', ''));
  const sui = (service.volumes ?? []).find((v) => v.startsWith('sui-config-volume:'));
  assert.ok(sui, 'the overlay mounts the node’s Sui config volume');
  args.push('--volume', sui.replace('sui-config-volume', suiConfigDir));
  return args;
}

/** Skips the test (or fails it, in CI) when podman cannot run here; true when it can. */
function canRunPodman(t: { skip: (message: string) => void }): boolean {
  const missing = podmanMissing();
  if (missing === undefined) return true;
  if (process.env.NODE_DAEMON_REQUIRE_DEPLOY === '1') {
    assert.fail(`NODE_DAEMON_REQUIRE_DEPLOY=1 but the image cannot be built here: ${missing}`);
  }
  t.skip(`the image test needs podman: ${missing} (CI sets NODE_DAEMON_REQUIRE_DEPLOY=1)`);
  return false;
}

/** Polls until check() is true, or fails after timeoutMs with what it last saw. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > timeoutMs) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('the container image', () => {
  const [global, build, runtime] = stages(readFileSync(CONTAINERFILE, 'utf8'));
  const flags = JSON.parse(readFileSync(join(ROOT, 'bin', 'daemon-node-flags.json'), 'utf8')) as string[];

  it('is two stages on a base that is a build argument, public Debian slim by default', () => {
    assert.deepEqual(global, [{ keyword: 'ARG', args: 'BASE=debian:bookworm-slim' }]);
    assert.match(build?.[0]?.args ?? '', /^\$\{BASE\} AS build$/);
    assert.match(runtime?.[0]?.args ?? '', /^\$\{BASE\}$/);
  });

  it('runs as a user of its own, with the data dir a volume, on every interface with the token and the Host check', () => {
    const runtimeText = runtime!.map((i) => `${i.keyword} ${i.args}`).join('\n');
    const user = runtime!.filter((i) => i.keyword === 'USER').at(-1)?.args;
    assert.ok(user !== undefined && user !== 'root' && user !== '0', `USER ${user}`);
    assert.match(runtimeText, /^VOLUME \["\/var\/lib\/node-daemon"\]$/m);
    assert.match(runtimeText, /NODE_DAEMON_DATA_DIR=\/var\/lib\/node-daemon\b/);
    assert.match(runtimeText, /NODE_DAEMON_HOST=0\.0\.0\.0\b/);
    // Off loopback the daemon requires the token for everything but /health and /ready.
    assert.match(runtimeText, /NODE_DAEMON_AUTH=all\b/);
    assert.doesNotMatch(runtimeText, /NODE_DAEMON_AUTH=none|ALLOWED_HOSTS=\*/);
    // No build tools in the runtime stage: nothing installed there, no npm.
    assert.doesNotMatch(runtimeText, /apt-get install|\bnpm\b/);
  });

  it('starts the daemon with the Node options of bin/daemon-node-flags.json and checks health without curl', () => {
    const entrypoint = JSON.parse(runtime!.find((i) => i.keyword === 'ENTRYPOINT')!.args) as string[];
    assert.deepEqual(entrypoint, ['/usr/local/bin/node', ...flags, '/opt/node-daemon/bin/node-daemon.js']);
    const healthcheck = runtime!.find((i) => i.keyword === 'HEALTHCHECK')!.args;
    const exec = /CMD (\[.*\])$/.exec(healthcheck);
    assert.ok(exec, 'the HEALTHCHECK is in exec form');
    const command = JSON.parse(exec[1]!) as string[];
    assert.equal(command[0], '/usr/local/bin/node');
    assert.match(command.join(' '), /\/health/);
    assert.doesNotMatch(healthcheck, /curl|wget/);
  });

  it('builds with podman, answers /health from the host, refuses a write without the token, admits its service name', async (t) => {
    if (!canRunPodman(t)) return;
    const timings: string[] = [];
    let started = performance.now();
    const base = await debianBase();
    timings.push(`base ${base} in ${((performance.now() - started) / 1000).toFixed(0)} s`);

    started = performance.now();
    const secret = existsSync(CA_BUNDLE) ? ['--secret', `id=ca,src=${CA_BUNDLE}`] : [];
    await podman(
      [
        'build',
        '--format',
        'docker',
        '--network',
        'host',
        ...secret,
        '--build-arg',
        `BASE=${BASE_IMAGE}`,
        '--tag',
        IMAGE,
        '--file',
        CONTAINERFILE,
        ROOT,
      ],
      20 * 60_000,
    );
    timings.push(`build ${((performance.now() - started) / 1000).toFixed(0)} s`);
    const [size, user] = (
      await podman(['image', 'inspect', IMAGE, '--format', '{{.Size}} {{.Config.User}}'])
    ).stdout
      .trim()
      .split(' ');
    assert.equal(user, 'node-daemon');
    timings.push(`image ${(Number(size) / 1e6).toFixed(0)} MB`);
    // No compiler and no npm in what runs: only the base and the package.
    const tools = await podman([
      'run',
      '--rm',
      '--entrypoint',
      'sh',
      IMAGE,
      '-c',
      'command -v npm gcc cc make curl; true',
    ]);
    assert.equal(tools.stdout.trim(), '');

    const port = await freePort();
    const name = `node-daemon-test-${process.pid}`;
    const url = `http://127.0.0.1:${port}`;
    // A Sui config directory where the overlay mounts atoma-node's, readable as that volume's would be.
    const sui = mkdtempSync(join(tmpdir(), 'node-daemon-sui-'));
    chmodSync(sui, 0o755);
    writeFileSync(join(sui, 'client.yaml'), 'keystore:\n  File: /root/.sui/sui_config/sui.keystore\n');
    await podman([
      'run',
      '--detach',
      '--name',
      name,
      '--publish',
      `127.0.0.1:${port}:3001`,
      ...overlayRunArgs(sui),
      IMAGE,
    ]);
    try {
      timings.push(`healthy after ${(await waitForHealth(url, 120_000)).toFixed(1)} s`);
      const write = await fetch(`${url}/nodes/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(write.status, 401);
      assert.match(write.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const problem = (await write.json()) as { code: string; detail: string };
      assert.equal(problem.code, 'unauthorized');
      assert.match(problem.detail, /\/var\/lib\/node-daemon\/api-token/);
      // Reads need it too off loopback (--auth all); /health does not.
      assert.equal((await fetch(`${url}/tasks`)).status, 401);

      // The service name other containers use, admitted by NODE_DAEMON_ALLOWED_HOSTS.
      const named = await fetch(`${url}/health`, { headers: { host: 'node-daemon:3001' } });
      assert.equal(named.status, 200);
      // The container's own address, as a client that goes around the published port names it: refused,
      // with the setting that would admit it.
      const address = (
        await podman(['inspect', name, '--format', '{{.NetworkSettings.IPAddress}}'])
      ).stdout.trim();
      if (address !== '') {
        const direct = await fetch(`http://${address}:3001/health`);
        assert.equal(direct.status, 403);
        const refusal = (await direct.json()) as { code: string; detail: string };
        assert.equal(refusal.code, 'host_not_allowed');
        assert.match(
          refusal.detail,
          new RegExp(`host ${address.replaceAll('.', '\\.')} .*NODE_DAEMON_ALLOWED_HOSTS`),
        );
      }

      // The node's Sui config at the node's path, through /root, as the image's user.
      assert.match(
        (await podman(['exec', name, 'cat', '/root/.sui/sui_config/client.yaml'])).stdout,
        /keystore/,
      );

      // The operator's client inside the container finds the daemon and its token in the volume.
      const status = await podman(['exec', name, 'node-daemon', 'status']);
      assert.match(status.stdout, /network:\s+dev/);
      const token = (await podman(['exec', name, 'cat', '/var/lib/node-daemon/api-token'])).stdout.trim();
      const authorized = await fetch(`${url}/tasks`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(authorized.status, 200);
      await podman(['healthcheck', 'run', name]);

      started = performance.now();
      await podman(['stop', '--time', '20', name]);
      const exit = (await podman(['inspect', name, '--format', '{{.State.ExitCode}}'])).stdout.trim();
      assert.equal(exit, '0', 'SIGTERM stops it cleanly');
      timings.push(`stopped in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      const logs = await podman(['logs', name]);
      assert.match(logs.stdout + logs.stderr, /"msg":"stopped"/);
    } finally {
      await podman(['rm', '--force', name]).catch(() => {});
      rmSync(sui, { recursive: true, force: true });
    }
    process.stdout.write(`# image: ${timings.join(', ')}\n`);
  });

  it('runs under the systemd unit and its sandbox, stops on SIGTERM, is not restarted after exit 2', async (t) => {
    if (!canRunPodman(t)) return;
    // systemd as PID 1 in a container, with the unit and the package where a global npm install puts it
    // (the image's /opt/node-daemon is that tree: package.json, bin, dist and the production node_modules).
    const context = mkdtempSync(join(tmpdir(), 'node-daemon-systemd-'));
    const name = `node-daemon-test-systemd-${process.pid}`;
    const timings: string[] = [];
    try {
      writeFileSync(
        join(context, 'Containerfile'),
        `ARG BASE
ARG PACKAGE
FROM \${PACKAGE} AS package
FROM \${BASE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd \\
 && rm -rf /var/lib/apt/lists/*
COPY node-daemon.sysusers /etc/sysusers.d/node-daemon.conf
RUN systemd-sysusers
COPY --from=package /opt/node-daemon /usr/local/lib/node_modules/${pkg.name}
COPY node-daemon.service /etc/systemd/system/node-daemon.service
RUN systemctl enable node-daemon.service
CMD ["/lib/systemd/systemd"]
`,
      );
      for (const file of ['node-daemon.service', 'node-daemon.sysusers']) {
        writeFileSync(join(context, file), readFileSync(join(ROOT, 'deploy', 'systemd', file)));
      }
      let started = performance.now();
      await podman(
        [
          'build',
          '--network',
          'host',
          '--build-arg',
          `BASE=${BASE_IMAGE}`,
          '--build-arg',
          `PACKAGE=${IMAGE}`,
          '--tag',
          SYSTEMD_IMAGE,
          context,
        ],
        10 * 60_000,
      );
      timings.push(`build ${((performance.now() - started) / 1000).toFixed(0)} s`);
      await podman(['run', '--detach', '--name', name, '--systemd', 'always', SYSTEMD_IMAGE]);
      const sh = async (command: string) => (await podman(['exec', name, 'sh', '-c', command])).stdout.trim();
      const show = async (...properties: string[]) =>
        Object.fromEntries(
          (await sh(`systemctl show ${properties.map((p) => `-p ${p}`).join(' ')} node-daemon`))
            .split('\n')
            .map((line) => line.split('=', 2) as [string, string]),
        ) as Record<string, string>;
      const node = `/usr/local/lib/node_modules/${pkg.name}/node_modules/node/bin/node`;
      const health = () =>
        sh(
          `${node} -e "fetch('http://127.0.0.1:3001/health').then((r) => console.log(r.status), () => console.log(0))"`,
        );

      started = performance.now();
      await until('the unit is active and /health answers', async () => (await health()) === '200');
      timings.push(`healthy after ${((performance.now() - started) / 1000).toFixed(1)} s`);
      const { MainPID: pid } = await show('MainPID');
      const status = await sh(`cat /proc/${pid}/status`);
      assert.match(status, /^NoNewPrivs:\s+1$/m);
      assert.match(status, /^Seccomp:\s+2$/m, 'the system call filter is on');
      assert.match(status, /^CapEff:\s+0+$/m);
      assert.equal(await sh(`stat -c %U /proc/${pid}`), 'node-daemon');
      assert.notEqual(await sh(`readlink /proc/${pid}/ns/mnt`), await sh('readlink /proc/1/ns/mnt'));

      await sh('systemctl stop node-daemon');
      assert.deepEqual(await show('Result', 'ExecMainStatus'), { Result: 'success', ExecMainStatus: '0' });
      assert.match(await sh('journalctl -u node-daemon -o cat -n 20'), /"msg":"stopped"/);

      // A setting it refuses: exit 2, and no restart after RestartSec.
      await sh('mkdir -p /etc/node-daemon && echo NODE_DAEMON_PORT=abc > /etc/node-daemon/node-daemon.env');
      await sh('systemctl start node-daemon || true');
      await until(
        'the refused start has failed',
        async () => (await show('ActiveState')).ActiveState === 'failed',
      );
      await new Promise((resolve) => setTimeout(resolve, 6000));
      assert.deepEqual(await show('ActiveState', 'ExecMainStatus', 'NRestarts'), {
        ActiveState: 'failed',
        ExecMainStatus: '2',
        NRestarts: '0',
      });
      await sh('rm /etc/node-daemon/node-daemon.env && systemctl reset-failed node-daemon');

      // What holds: MemoryDenyWriteExecute=yes kills V8 at start (SIGTRAP, restarted in vain); with
      // --jitless, which writes no machine code, it runs.
      const dropIn = '/etc/systemd/system/node-daemon.service.d';
      await sh(
        `mkdir -p ${dropIn} && printf '[Service]\\nMemoryDenyWriteExecute=yes\\n' > ${dropIn}/mdwe.conf && systemctl daemon-reload`,
      );
      await sh('systemctl start node-daemon || true');
      await until('V8 has died under MemoryDenyWriteExecute=yes', async () => {
        const now = await show('ExecMainCode', 'ExecMainStatus');
        // Killed (2) or dumped (3) by SIGTRAP (5).
        return (now.ExecMainCode === '2' || now.ExecMainCode === '3') && now.ExecMainStatus === '5';
      });
      await sh(`systemctl stop node-daemon; systemctl reset-failed node-daemon`);
      const execStart = (await sh('systemctl cat node-daemon | grep ^ExecStart=/')).replace(
        'node/bin/node ',
        'node/bin/node --jitless ',
      );
      await sh(
        `printf '[Service]\\nExecStart=\\n${execStart}\\n' >> ${dropIn}/mdwe.conf && systemctl daemon-reload`,
      );
      await sh('systemctl start node-daemon');
      await until('--jitless runs under MemoryDenyWriteExecute=yes', async () => (await health()) === '200');
    } finally {
      await podman(['rm', '--force', name]).catch(() => {});
      rmSync(context, { recursive: true, force: true });
    }
    process.stdout.write(`# systemd in a container: ${timings.join(', ')}\n`);
  });
});
