import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Config, loadConfig } from '../src/config.ts';
import { buildDaemonApp, openServices, startDaemon } from '../src/daemon.ts';
import { CliError } from '../src/internal/exit-codes.ts';
import { createLogger } from '../src/internal/logger.ts';
import { main } from '../src/main.ts';
import { captureLogger } from './helpers/capture-log.ts';
import { run } from './helpers/process.ts';
import { writeSuiKeystore } from './helpers/sui-fixtures.ts';
import { tempDir } from './helpers/tmp.ts';
import { FullnodeDouble } from './sui/fullnode-double.ts';

/**
 * atoma-node's config.toml (--atoma-config) and the Sui CLI's client.yaml (--sui-client-config), written
 * here in upstream's formats (upstream-daemon.md §1.6, §3.4, §4.1) with the keys a compose-stack operator
 * has, those this daemon ignores included.
 */

const PACKAGE = '0x8903298ca2b3c3e4f8a1b2c7d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f805208';
const ATOMA_DB = '0x0292ad9f3c3c5a7e4b1d2c3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1eefc5';
const USDC = '0xa1ec7fc00a6f40db9693ad1415d0c193ad3906494428cf252621037bd7117e29';
const BADGE = '0x268e6af9502dcdcaf514bb699c880b37fa1e8d339293bc4f331f2dde54180600';

interface TomlOptions {
  rpc?: string;
  packageId?: string;
  atomaDb?: string;
  suiConfigPath?: string;
  nodeSmallIds?: string;
  databaseUrl?: string | null;
  bind?: string;
  /** Lines put into [atoma_sui] instead of the keys above. */
  atomaSui?: string;
}

/** A config.toml like atoma-node's config.example.toml, filled in by an operator. */
function atomaToml(o: TomlOptions = {}): string {
  const atomaSui =
    o.atomaSui ??
    [
      `http_rpc_node_addr = "${o.rpc ?? 'https://fullnode.testnet.sui.io:443'}"`,
      `atoma_package_id = "${o.packageId ?? PACKAGE}"`,
      `atoma_db = "${o.atomaDb ?? ATOMA_DB}"`,
      `usdc_package_id = "${USDC}"`,
      'request_timeout = { secs = 300, nanos = 0 }',
      'max_concurrent_requests = 10',
      'limit = 100',
      `node_small_ids = ${o.nodeSmallIds ?? '[7, 3]'}`,
      `sui_config_path = "${o.suiConfigPath ?? '/root/.sui/sui_config/client.yaml'}"`,
      'sui_keystore_path = "/root/.sui/sui_config/sui.keystore"',
      'cursor_path = "/app/data/cursor.toml"',
    ].join('\n');
  const database =
    o.databaseUrl === null
      ? ''
      : `database_url = "${o.databaseUrl ?? 'postgres://atoma:s3cret@127.0.0.1:5432/atoma'}"`;
  return `# atoma-node configuration
[atoma_service]
service_bind_address = "0.0.0.0:3000"
models = ["meta-llama/Llama-3.1-70B-Instruct"]
revisions = ["main"]
chat_completions_service_urls = { "meta-llama/Llama-3.1-70B-Instruct" = [["http://vllm:8000", "vllm", 256]] }
heartbeat_url = "https://uptime.example.com/ping"

[atoma_sui]
${atomaSui}

[atoma_state]
${database}

[atoma_daemon]
service_bind_address = "${o.bind ?? '0.0.0.0:3001'}"
node_badges = [["${BADGE}", 7]]

[proxy_config]
proxy_address = "https://api.atoma.network"
node_public_address = "https://node.example.com:3000"
country = "PT"

[atoma_p2p]
heartbeat_interval = { secs = 30, nanos = 0 }
listen_addrs = ["/ip4/0.0.0.0/udp/4001/quic-v1"]
`;
}

interface YamlOptions {
  keystore?: string;
  activeEnv?: string;
  activeAddress?: string;
}

/** A client.yaml as `sui client` writes it. */
function clientYaml(o: YamlOptions = {}): string {
  return `---
keystore:
  File: ${o.keystore ?? 'sui.keystore'}
external_keys: ~
envs:
  - alias: testnet
    rpc: "https://fullnode.testnet.sui.io:443"
    ws: ~
    basic_auth: ~
  - alias: local
    rpc: "http://127.0.0.1:9000"
    ws: ~
    basic_auth: ~
active_env: ${o.activeEnv ?? 'testnet'}
active_address: "${o.activeAddress ?? `0x${'ab'.repeat(32)}`}"
`;
}

/** The operator's files in a folder: config.toml, and sui_config/ with client.yaml and sui.keystore. */
function files(dir: string, toml: TomlOptions = {}, yaml: YamlOptions = {}) {
  const suiDir = join(dir, 'sui_config');
  mkdirSync(suiDir, { recursive: true });
  const clientConfig = join(suiDir, 'client.yaml');
  writeFileSync(clientConfig, clientYaml(yaml));
  const atomaConfig = join(dir, 'config.toml');
  writeFileSync(atomaConfig, atomaToml({ suiConfigPath: clientConfig, ...toml }));
  return { atomaConfig, clientConfig, suiDir };
}

function sui(config: Config) {
  assert.equal(config.network, 'sui');
  if (config.network !== 'sui') throw new Error('not sui');
  return config.sui;
}

/** The one line and the exit code of a refused start, from main() as the binary runs it. */
async function refusal(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    await main(['start', ...args], env);
  } catch (error) {
    assert.ok(error instanceof CliError, String(error));
    assert.equal(error.exitCode, 2);
    assert.doesNotMatch(error.message, /\n/);
    return error.message;
  }
  assert.fail('the start was not refused');
}

describe('atoma-node config.toml (--atoma-config)', () => {
  it('gives the network, the deployment, the node ids, atoma-state and the port', async () => {
    const tmp = tempDir();
    const { atomaConfig, suiDir } = files(tmp.dir);
    const config = loadConfig({ 'atoma-config': atomaConfig }, { HOME: tmp.dir });
    const s = sui(config);
    assert.equal(s.url, 'https://fullnode.testnet.sui.io:443');
    assert.equal(s.urlSource, `[atoma_sui] http_rpc_node_addr in ${atomaConfig}`);
    assert.equal(s.packageId, PACKAGE);
    assert.equal(s.atomaDbId, ATOMA_DB);
    assert.equal(s.usdcPackageId, USDC);
    // From the client.yaml config.toml names: its keystore, beside it, and its active address.
    assert.equal(s.keystore, join(suiDir, 'sui.keystore'));
    assert.equal(s.address, `0x${'ab'.repeat(32)}`);
    assert.deepEqual(config.nodeSmallIds, [7, 3]);
    assert.deepEqual(config.usageSource, {
      kind: 'atoma-state',
      url: 'postgres://atoma:s3cret@127.0.0.1:5432/atoma',
      pollIntervalMs: 1000,
    });
    assert.equal(config.atomaConfig, atomaConfig);
    // 0.0.0.0:3001 is the inside of the node's container: the port is taken, the daemon stays on loopback.
    assert.equal(config.port, 3001);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.auth, 'writes');
    assert.deepEqual(config.notices, [
      `[atoma_daemon] service_bind_address in ${atomaConfig} is "0.0.0.0:3001": every interface inside ` +
        "atoma-node's container, which compose publishes on this machine's loopback only; this daemon " +
        'listens on 127.0.0.1. To listen on every interface, set --host 0.0.0.0 with --auth all',
    ]);
    assert.ok(Object.isFrozen(config.usageSource) && Object.isFrozen(config.nodeSmallIds));
    await tmp.remove();
  });

  it('ranks a flag, a variable and the JSON config file above config.toml', async () => {
    const tmp = tempDir();
    const { atomaConfig } = files(tmp.dir);
    const json = join(tmp.dir, 'daemon.json');
    writeFileSync(json, JSON.stringify({ 'sui-atoma-db-id': '0x6', 'usage-poll-interval': 0.5 }));
    const other = `0x${'cd'.repeat(32)}`;
    const config = loadConfig(
      { 'sui-url': 'https://fullnode.mainnet.sui.io:443', port: '3101', 'sui-address': other, config: json },
      {
        NODE_DAEMON_ATOMA_CONFIG: atomaConfig,
        HOME: tmp.dir,
        NODE_DAEMON_SUI_PACKAGE_ID: '0x5',
        NODE_DAEMON_NODE_SMALL_IDS: '9',
        NODE_DAEMON_ATOMA_STATE_URL: 'postgres://reader@db.internal/atoma',
      },
    );
    const s = sui(config);
    assert.equal(s.url, 'https://fullnode.mainnet.sui.io:443');
    assert.equal(s.urlSource, '--sui-url');
    assert.equal(s.packageId, `0x${'0'.repeat(63)}5`);
    assert.equal(s.atomaDbId, `0x${'0'.repeat(63)}6`);
    assert.equal(s.address, other, '--sui-address wins over active_address');
    assert.equal(config.port, 3101);
    assert.deepEqual(config.nodeSmallIds, [9]);
    assert.deepEqual(config.usageSource, {
      kind: 'atoma-state',
      url: 'postgres://reader@db.internal/atoma',
      pollIntervalMs: 500,
    });
    assert.equal(config.notices.length, 1, 'the host is still the wildcard of config.toml');
    const host = loadConfig({ 'atoma-config': atomaConfig, host: '::1' }, { HOME: tmp.dir });
    assert.deepEqual([host.host, host.notices], ['::1', []]);
    const dev = loadConfig({ 'atoma-config': atomaConfig, network: 'dev', 'usage-source': 'none' }, {});
    assert.equal(dev.network, 'dev');
    assert.deepEqual(dev.usageSource, { kind: 'none' });
    await tmp.remove();
  });

  it('listens on loopback for the wildcard, and says so once in the log at start', async () => {
    const tmp = tempDir();
    const { atomaConfig } = files(tmp.dir);
    // The port of config.toml is 3001, taken here by the test's neighbours: --port 0 picks a free one.
    const config = loadConfig(
      {
        'atoma-config': atomaConfig,
        network: 'none',
        'usage-source': 'none',
        port: '0',
        'data-dir': join(tmp.dir, 'data'),
      },
      {},
    );
    const log = captureLogger('info');
    const daemon = await startDaemon(config, log.logger);
    try {
      assert.match(daemon.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const warnings = log.lines().filter((l) => Number(l.level) === 40);
      assert.deepEqual(
        warnings.map((l) => l.msg),
        config.notices,
      );
      assert.equal(warnings.length, 1);
    } finally {
      await daemon.close();
      await tmp.remove();
    }
  });

  it('takes a loopback or named host as configured; beyond loopback only with --auth all', async () => {
    const tmp = tempDir();
    const at = (bind: string, flags: Record<string, string> = {}) =>
      loadConfig({ 'atoma-config': files(tmp.dir, { bind }).atomaConfig, ...flags }, {});
    assert.deepEqual([at('127.0.0.1:3005').host, at('127.0.0.1:3005').port], ['127.0.0.1', 3005]);
    assert.deepEqual(at('127.0.0.1:3005').notices, []);
    assert.equal(at('[::1]:3006').host, '::1');
    assert.equal(at('[::]:3007').host, '127.0.0.1', 'the IPv6 wildcard too');
    assert.equal(at('localhost:3001').host, 'localhost');
    const file = join(tmp.dir, 'config.toml');
    assert.throws(
      () => at('10.0.0.5:3001'),
      new CliError(
        `binding to 10.0.0.5 ([atoma_daemon] service_bind_address in ${file}) (not loopback) requires --auth all, so that reads need the API token too`,
      ),
    );
    const open = at('10.0.0.5:3001', { auth: 'all' });
    assert.deepEqual([open.host, open.port, open.auth], ['10.0.0.5', 3001, 'all']);
    await tmp.remove();
  });

  it('reads the node ids exactly, above 2^53 too, and an empty list as none', async () => {
    const tmp = tempDir();
    const ids = (nodeSmallIds: string) =>
      loadConfig({ 'atoma-config': files(tmp.dir, { nodeSmallIds }).atomaConfig }, {}).nodeSmallIds;
    assert.deepEqual(ids('[1]'), [1]);
    assert.deepEqual(ids('[]'), []);
    assert.deepEqual(ids('[9007199254740993]'), [9007199254740993n]);
    const without = files(tmp.dir, {
      atomaSui: `http_rpc_node_addr = "https://f:443"\natoma_package_id = "0x5"\natoma_db = "0x6"`,
    });
    assert.deepEqual(loadConfig({ 'atoma-config': without.atomaConfig }, { HOME: tmp.dir }).nodeSmallIds, []);
    assert.deepEqual(loadConfig({ 'node-small-ids': '4, 2' }, {}).nodeSmallIds, [4, 2]);
    await tmp.remove();
  });
});

describe("the Sui CLI's client.yaml (--sui-client-config)", () => {
  it("gives the keystore beside it, the active address and the active env's RPC URL", async () => {
    const tmp = tempDir();
    const { clientConfig, suiDir } = files(tmp.dir, {}, { activeEnv: 'local' });
    const config = loadConfig(
      {
        network: 'sui',
        'sui-client-config': clientConfig,
        'sui-package-id': '0x5',
        'sui-atoma-db-id': '0x6',
      },
      {},
    );
    const s = sui(config);
    assert.equal(s.url, 'http://127.0.0.1:9000');
    assert.equal(s.urlSource, `the rpc of env "local" (active_env) in ${clientConfig}`);
    assert.equal(s.keystore, join(suiDir, 'sui.keystore'));
    assert.equal(s.address, `0x${'ab'.repeat(32)}`);
    assert.deepEqual(config.usageSource, { kind: 'none' }, 'client.yaml implies no usage source');
    // An absolute keystore path is taken as it is.
    writeFileSync(clientConfig, clientYaml({ keystore: '/srv/keys/sui.keystore' }));
    const absolute = loadConfig(
      {
        network: 'sui',
        'sui-client-config': clientConfig,
        'sui-package-id': '0x5',
        'sui-atoma-db-id': '0x6',
      },
      {},
    );
    assert.equal(sui(absolute).keystore, '/srv/keys/sui.keystore');
    await tmp.remove();
  });

  it('is read from ~/.sui/sui_config where it exists, for --network sui, unless the keystore is named', async () => {
    const tmp = tempDir();
    const home = join(tmp.dir, 'home');
    const suiDir = join(home, '.sui', 'sui_config');
    const ids = { network: 'sui', 'sui-package-id': '0x5', 'sui-atoma-db-id': '0x6' };
    // Not there: the keystore's default place, the first key, and the URL must be given.
    assert.throws(() => loadConfig(ids, { HOME: home }), /--network sui needs --sui-url/);
    const none = loadConfig({ ...ids, 'sui-url': 'https://f:443' }, { HOME: home });
    assert.deepEqual([sui(none).keystore, sui(none).address], [join(suiDir, 'sui.keystore'), undefined]);
    mkdirSync(suiDir, { recursive: true });
    writeFileSync(join(suiDir, 'client.yaml'), clientYaml());
    const found = sui(loadConfig(ids, { HOME: home }));
    assert.deepEqual(
      [found.url, found.keystore, found.address],
      ['https://fullnode.testnet.sui.io:443', join(suiDir, 'sui.keystore'), `0x${'ab'.repeat(32)}`],
    );
    const named = sui(
      loadConfig({ ...ids, 'sui-url': 'https://f:443', 'sui-keystore': '/k/sui.keystore' }, { HOME: home }),
    );
    assert.deepEqual(
      [named.keystore, named.address],
      ['/k/sui.keystore', undefined],
      'another keystore: not its address',
    );
    writeFileSync(join(suiDir, 'client.yaml'), 'keystore: [');
    assert.equal(loadConfig({}, { HOME: home }).network, 'dev', 'not read for another network');
    await tmp.remove();
  });

  it('signs with the active address, whichever key of the keystore it is', async () => {
    const tmp = tempDir('atoma-config-');
    const { atomaConfig, suiDir } = files(tmp.dir);
    const keys = writeSuiKeystore(join(suiDir, 'sui.keystore'), 3);
    const active = keys[1]!.toSuiAddress();
    const double = await FullnodeDouble.start({ dataDir: join(tmp.dir, 'chain'), signerAddress: active });
    const { atomaConfig: withDouble } = files(
      tmp.dir,
      { rpc: double.url, packageId: double.packageId, atomaDb: double.atomaDbId },
      { activeAddress: active },
    );
    assert.equal(withDouble, atomaConfig);
    const config = loadConfig(
      { 'atoma-config': atomaConfig, 'data-dir': join(tmp.dir, 'data'), 'usage-source': 'none' },
      {},
    );
    const logger = createLogger('silent');
    const services = await openServices(config, logger);
    const app = await buildDaemonApp(config, services, logger);
    try {
      assert.equal(services.chain?.signerAddress, active);
      assert.notEqual(active, keys[0]!.toSuiAddress());
      const status = (await app.inject({ url: '/status' })).json();
      assert.equal(status.signer_address, active);
    } finally {
      await app.close();
      await services.close();
      await double.close();
      await tmp.remove();
    }
  });
});

describe('usage source settings', () => {
  it('defaults to none, with a 1 s poll; atoma-state needs its URL', async () => {
    assert.deepEqual(loadConfig({}, {}).usageSource, { kind: 'none' });
    assert.deepEqual(
      loadConfig(
        {
          'usage-source': 'atoma-state',
          'atoma-state-url': 'postgresql://r@h/atoma',
          'usage-poll-interval': '2',
        },
        {},
      ).usageSource,
      { kind: 'atoma-state', url: 'postgresql://r@h/atoma', pollIntervalMs: 2000 },
    );
    assert.equal(
      await refusal(['--usage-source', 'atoma-state']),
      "--usage-source atoma-state needs --atoma-state-url (NODE_DAEMON_ATOMA_STATE_URL), the PostgreSQL URL of atoma-node's atoma-state database",
    );
    assert.equal(
      await refusal(['--usage-poll-interval', '0']),
      'invalid --usage-poll-interval: "0" is not accepted; expected a number of seconds from 0.1 to 3600, like 1 or 0.5',
    );
    assert.equal(
      await refusal(['--usage-source', 'kafka']),
      'invalid --usage-source: "kafka" is not accepted; expected one of none, atoma-state',
    );
  });

  it('never repeats the password of a refused URL', async () => {
    const message = await refusal([], {
      NODE_DAEMON_ATOMA_STATE_URL: 'mysql://atoma:hunter2@db/atoma?password=hunter2',
    });
    assert.equal(
      message,
      'invalid NODE_DAEMON_ATOMA_STATE_URL: "mysql://atoma:***@db/atoma?password=***" is not accepted; expected a postgres:// or postgresql:// URL',
    );
  });
});

describe('refusals of the operator files: exit 2 and one line naming the file and the key', () => {
  it('stops the binary with exit 2 and the one line', async () => {
    const tmp = tempDir();
    const missing = join(tmp.dir, 'nowhere', 'config.toml');
    const result = await run(['start', '--atoma-config', missing, '--data-dir', join(tmp.dir, 'data')], {
      HOME: tmp.dir,
    });
    assert.equal(result.code, 2);
    assert.equal(result.stderr, `node-daemon: cannot read atoma-node's config ${missing}: no such file\n`);
    await tmp.remove();
  });

  const cases: [string, (dir: string) => { args: string[]; line: string }][] = [
    [
      'a config.toml that does not parse',
      (dir) => {
        const file = join(dir, 'config.toml');
        writeFileSync(file, atomaToml().replace('atoma_db = "', 'atoma_db = '));
        return {
          args: ['--atoma-config', file],
          line: `atoma-node's config ${file} is not valid TOML: line 12: illegal character in numeric literal`,
        };
      },
    ],
    [
      'a required key missing',
      (dir) => {
        const { atomaConfig } = files(dir, {
          atomaSui: `http_rpc_node_addr = "https://f:443"\natoma_package_id = "${PACKAGE}"`,
        });
        return {
          args: ['--atoma-config', atomaConfig],
          line: `${atomaConfig} has no [atoma_sui] atoma_db, which --network sui needs; or give --sui-atoma-db-id`,
        };
      },
    ],
    [
      'no [atoma_state] database_url',
      (dir) => {
        const { atomaConfig } = files(dir, { databaseUrl: null });
        return {
          args: ['--atoma-config', atomaConfig],
          line: `${atomaConfig} has no [atoma_state] database_url, which the atoma-state usage source reads; give --atoma-state-url, or --usage-source none`,
        };
      },
    ],
    [
      'node_small_ids of the wrong type',
      (dir) => {
        const { atomaConfig } = files(dir, { nodeSmallIds: '"7"' });
        return {
          args: ['--atoma-config', atomaConfig],
          line: `invalid [atoma_sui] node_small_ids in ${atomaConfig}: "7" is not accepted; expected an array of node small ids, like [1, 2]`,
        };
      },
    ],
    [
      'an id of the wrong type',
      (dir) => {
        const { atomaConfig } = files(dir, {
          atomaSui: `http_rpc_node_addr = "https://f:443"\natoma_package_id = "${PACKAGE}"\natoma_db = 42`,
        });
        return {
          args: ['--atoma-config', atomaConfig],
          line: `invalid [atoma_sui] atoma_db in ${atomaConfig}: 42 is not accepted; expected a quoted string`,
        };
      },
    ],
    [
      'an id that is not one',
      (dir) => {
        const { atomaConfig } = files(dir, { packageId: '0xatoma' });
        return {
          args: ['--atoma-config', atomaConfig],
          line: `invalid [atoma_sui] atoma_package_id in ${atomaConfig}: "0xatoma" is not accepted; expected a 0x-prefixed hex object id`,
        };
      },
    ],
    [
      'a service_bind_address without its port',
      (dir) => {
        const { atomaConfig } = files(dir, { bind: '0.0.0.0' });
        return {
          args: ['--atoma-config', atomaConfig],
          line: `invalid [atoma_daemon] service_bind_address in ${atomaConfig}: "0.0.0.0" is not accepted; expected host:port, like "127.0.0.1:3001"`,
        };
      },
    ],
    [
      'a section that is not a table',
      (dir) => {
        const file = join(dir, 'config.toml');
        writeFileSync(file, 'atoma_state = "postgres://db/atoma"\n');
        return {
          args: ['--atoma-config', file],
          line: `invalid atoma_state in ${file}: "postgres://db/atoma" is not accepted; expected a table ([atoma_state])`,
        };
      },
    ],
    [
      "config.toml's client.yaml is not on this machine (a container path)",
      (dir) => {
        const container = join(dir, 'container', 'root', '.sui', 'sui_config', 'client.yaml');
        const { atomaConfig } = files(dir, { suiConfigPath: container });
        return {
          args: ['--atoma-config', atomaConfig],
          line: `cannot read the Sui client config ${container}: no such file (named by [atoma_sui] sui_config_path in ${atomaConfig}); give --sui-client-config the client.yaml of this machine`,
        };
      },
    ],
    [
      'a client.yaml that is not there',
      (dir) => {
        const file = join(dir, 'client.yaml');
        return {
          args: ['--sui-client-config', file],
          line: `cannot read the Sui client config ${file}: no such file (named by --sui-client-config); give --sui-client-config the client.yaml of this machine`,
        };
      },
    ],
    [
      'a client.yaml that does not parse',
      (dir) => {
        const { clientConfig } = files(dir);
        writeFileSync(clientConfig, clientYaml().replace('  - alias: local', '  alias: local'));
        return {
          args: ['--network', 'sui', '--sui-client-config', clientConfig],
          line: `the Sui client config ${clientConfig} is not valid YAML: line 10: All mapping items must start at the same column`,
        };
      },
    ],
    [
      'a client.yaml without its keystore',
      (dir) => {
        const { clientConfig } = files(dir);
        writeFileSync(clientConfig, clientYaml().replace(/keystore:\n {2}File: sui.keystore\n/, ''));
        return {
          args: ['--sui-client-config', clientConfig],
          line: `the Sui client config ${clientConfig} has no keystore: expected keystore: { File: <the path of sui.keystore> }`,
        };
      },
    ],
    [
      'a client.yaml whose keystore is in memory',
      (dir) => {
        const { clientConfig } = files(dir);
        writeFileSync(clientConfig, clientYaml().replace(/ {2}File: sui.keystore/, '  InMem: {}'));
        return {
          args: ['--sui-client-config', clientConfig],
          line: `invalid keystore in ${clientConfig}: {"InMem":{}} is not accepted; expected a keystore file, as { File: <the path of sui.keystore> }`,
        };
      },
    ],
    [
      'an active_env that is not among its envs',
      (dir) => {
        const { clientConfig } = files(dir, {}, { activeEnv: 'mainnet' });
        return {
          args: ['--sui-client-config', clientConfig],
          line: `invalid active_env in ${clientConfig}: "mainnet" is not one of its envs (aliases: "testnet", "local")`,
        };
      },
    ],
    [
      'an active_address that is not an address',
      (dir) => {
        const { clientConfig } = files(dir, {}, { activeAddress: 'operator' });
        return {
          args: [
            '--network',
            'sui',
            '--sui-client-config',
            clientConfig,
            '--sui-package-id',
            '0x5',
            '--sui-atoma-db-id',
            '0x6',
          ],
          line: `invalid active_address in ${clientConfig}: "operator" is not accepted; expected a 0x-prefixed hex object id`,
        };
      },
    ],
  ];
  for (const [name, make] of cases) {
    it(`refuses ${name}`, async () => {
      const tmp = tempDir();
      const { args, line } = make(tmp.dir);
      const message = await refusal([...args, '--data-dir', join(tmp.dir, 'data')], { HOME: tmp.dir });
      assert.equal(message, line);
      await tmp.remove();
    });
  }
});
