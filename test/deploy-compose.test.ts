import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse as yamlParse } from 'yaml';
import { type ComposeFile, interpolate, readOverlay } from './helpers/compose.ts';
import { ROOT } from './helpers/process.ts';

/**
 * The compose overlay that joins atoma-node's docker-compose.yaml (deploy/compose/, docs/DEPLOY.md).
 * No Docker engine runs here and atoma-node's images cannot be pulled, so the overlay is read as compose
 * reads it (YAML, then `${NAME:-default}` from the environment) and held to its promises; the image it
 * builds is run the same way (read-only, no capabilities, the Sui config at the node's path) in
 * test/deploy-image.test.ts.
 */

/**
 * What the overlay may use of atoma-node's docker-compose.yaml, by name (../shared/reference/
 * upstream-daemon.md §5.2): its network, its services and its named volumes.
 */
const ATOMA_NODE = {
  networks: ['atoma-network'],
  services: [
    'postgres-db',
    'prometheus',
    'grafana',
    'atoma-node',
    'atoma-node-no-nvidia',
    'atoma-node-sglang',
  ],
  volumes: [
    'postgres-data',
    'grafana_data',
    'sui-config-volume',
    'prometheus-data',
    'loki-data',
    'tempo-data',
  ],
  // Its embedded Rust daemon's port, published on the host's loopback.
  daemonPort: `127.0.0.1:\${ATOMA_DAEMON_PORT:-3001}:3001`,
};

interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
}

function mount(spec: string): Mount {
  const parts = spec.split(':');
  // `${CONFIG_PATH:-./config.toml}` holds a colon of its own.
  const source = spec.startsWith('${') ? spec.slice(0, spec.indexOf('}') + 1) : parts[0]!;
  const [target = '', mode = ''] = spec.slice(source.length + 1).split(':');
  return { source, target, readOnly: mode.split(',').includes('ro') };
}

function isNamed(source: string): boolean {
  return /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(source);
}

describe('the compose overlay', () => {
  const overlay = readOverlay();
  const service = overlay.services['node-daemon'];

  it('adds one service, node-daemon, built from deploy/Containerfile', () => {
    assert.deepEqual(Object.keys(overlay.services), ['node-daemon']);
    assert.ok(service);
    assert.equal(service.build?.dockerfile, 'deploy/Containerfile');
    assert.equal(interpolate(service.build?.context ?? ''), './node-daemon');
  });

  it('publishes on the host loopback only, the container port 3001', () => {
    assert.ok(service?.ports && service.ports.length > 0);
    for (const port of service.ports) {
      const [ip, host, container] = interpolate(port).split(':');
      assert.equal(ip, '127.0.0.1', `${port} binds loopback`);
      assert.equal(host, '3001');
      assert.equal(container, '3001');
    }
    // Both default to the host's 3001; each side has its own variable to move it (docs/DEPLOY.md).
    const ours = interpolate(service.ports[0]!, { ATOMA_DAEMON_PORT: '3101' }).split(':')[1];
    const theirs = interpolate(ATOMA_NODE.daemonPort, { ATOMA_DAEMON_PORT: '3101' }).split(':')[1];
    assert.notEqual(ours, theirs);
    const moved = interpolate(service.ports[0]!, { NODE_DAEMON_HOST_PORT: '3002' }).split(':')[1];
    assert.equal(moved, '3002');
    const deploy = readFileSync(join(ROOT, 'docs', 'DEPLOY.md'), 'utf8');
    assert.match(deploy, /ATOMA_DAEMON_PORT/);
    assert.match(deploy, /NODE_DAEMON_HOST_PORT/);
  });

  it("joins atoma-node's network and uses only what atoma-node's file and its own define", () => {
    assert.deepEqual(service?.networks, ['atoma-network']);
    for (const network of service?.networks ?? []) {
      assert.ok(ATOMA_NODE.networks.includes(network) || overlay.networks?.[network] !== undefined, network);
    }
    for (const dependency of Object.keys(service?.depends_on ?? {})) {
      assert.ok(ATOMA_NODE.services.includes(dependency), `${dependency} is a service of atoma-node`);
    }
    assert.ok(service?.depends_on?.['postgres-db'], 'atoma-state, the usage source, runs first');
    for (const { source } of (service?.volumes ?? []).map(mount).filter((m) => isNamed(m.source))) {
      assert.ok(
        ATOMA_NODE.volumes.includes(source) || Object.hasOwn(overlay.volumes ?? {}, source),
        `volume ${source} is defined`,
      );
    }
  });

  it('keeps its data in a named volume of its own, and reads the node’s files read-only', () => {
    const mounts = (service?.volumes ?? []).map(mount);
    const data = mounts.find((m) => m.target === '/var/lib/node-daemon');
    assert.ok(data && isNamed(data.source) && !data.readOnly, 'the data dir is a named volume');
    assert.ok(Object.hasOwn(overlay.volumes ?? {}, data.source));
    assert.ok(!ATOMA_NODE.volumes.includes(data.source), 'not one of the node’s volumes');
    const config = mounts.find((m) => interpolate(m.source) === './config.toml');
    const sui = mounts.find((m) => m.source === 'sui-config-volume');
    assert.ok(config?.readOnly && sui?.readOnly, 'config.toml and the Sui config are mounted read-only');

    // The flags point into those mounts: --atoma-config at config.toml, --sui-client-config at the
    // client.yaml of the node's Sui config volume, mounted where atoma-node's container has it.
    const command = service?.command ?? [];
    assert.equal(command[0], 'start');
    const flag = (name: string) => command[command.indexOf(name) + 1];
    assert.equal(flag('--atoma-config'), config?.target);
    assert.equal(sui?.target, '/root/.sui/sui_config');
    assert.equal(flag('--sui-client-config'), `${sui?.target}/client.yaml`);
  });

  it('answers to its service name, runs without privileges, and is given time to stop', () => {
    const hosts = (service?.environment?.NODE_DAEMON_ALLOWED_HOSTS ?? '').split(',');
    assert.ok(hosts.includes('node-daemon'), 'the service name passes the Host check');
    assert.equal(service?.environment?.NODE_DAEMON_AUTH, undefined, 'the image’s --auth all stays');
    assert.equal(service?.read_only, true);
    assert.deepEqual(service?.cap_drop, ['ALL']);
    assert.ok(service?.security_opt?.includes('no-new-privileges:true'));
    // The daemon's --shutdown-timeout is 10 s by default; compose's default grace is also 10 s.
    const grace = Number(/^(\d+)s$/.exec(service?.stop_grace_period ?? '')?.[1]);
    assert.ok(grace > 10, `stop_grace_period ${service?.stop_grace_period}`);
  });
});

describe('the monitoring overlay', () => {
  const file = join(ROOT, 'deploy', 'compose', 'docker-compose.monitoring.yaml');
  const parse = (text: string) => yamlParse(text) as ComposeFile;

  it("adds only mounts to atoma-node's own prometheus and grafana, of files that exist here", () => {
    const overlay = parse(readFileSync(file, 'utf8'));
    assert.deepEqual(Object.keys(overlay.services).sort(), ['grafana', 'prometheus']);
    for (const [name, service] of Object.entries(overlay.services)) {
      assert.ok(ATOMA_NODE.services.includes(name), `${name} is a service of atoma-node's stack`);
      assert.deepEqual(
        Object.keys(service),
        ['volumes'],
        `${name}: mounts only, its image stays atoma-node's`,
      );
      for (const volume of service.volumes ?? []) {
        const [source, target, mode] = interpolate(volume, { NODE_DAEMON_SRC: ROOT }).split(':');
        assert.equal(mode, 'ro', `${volume}: read-only`);
        assert.ok(target?.startsWith('/'));
        // The repository's files it mounts exist (the token is the operator's own file).
        if (source?.startsWith(ROOT)) assert.ok(existsSync(source), `${source} exists`);
      }
    }
    const prometheus = overlay.services.prometheus?.volumes?.map((v) => interpolate(v).split(':')[1]) ?? [];
    assert.ok(prometheus.includes('/etc/prometheus/node-daemon'), 'the rules where DEPLOY.md says');
    const grafana = overlay.services.grafana?.volumes?.map((v) => interpolate(v).split(':')[1]) ?? [];
    assert.ok(
      grafana.includes('/var/lib/grafana/dashboards/node-daemon'),
      'the dashboard where its provisioning looks',
    );
  });
});
