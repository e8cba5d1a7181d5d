import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { tempDir } from './helpers/tmp.ts';

describe('configuration', () => {
  it('defaults to loopback port 3001, the dev network and the XDG data directory', () => {
    const config = loadConfig({}, {});
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 3001);
    assert.equal(config.network, 'dev');
    assert.deepEqual(
      config.network === 'dev' && [
        config.dev.samplingProbability,
        config.dev.attestationNodes,
        config.dev.demo,
      ],
      [0.01, 1, true],
    );
    assert.equal(config.dataDir, join(homedir(), '.local', 'share', 'node-daemon'));
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.sqliteSynchronous, 'normal');
    assert.ok(Object.isFrozen(config));
    assert.equal(loadConfig({}, { XDG_DATA_HOME: '/srv/xdg' }).dataDir, '/srv/xdg/node-daemon');
  });

  it('takes a flag over the environment over the config file over the default', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'daemon.json');
    writeFileSync(file, JSON.stringify({ port: 4000, host: '::1', 'log-level': 'debug', 'cache-mb': 0 }));
    const fromFile = loadConfig({ config: file }, {});
    assert.deepEqual(
      [fromFile.port, fromFile.host, fromFile.logLevel, fromFile.cacheMb],
      [4000, '::1', 'debug', 0],
    );
    const fromEnv = loadConfig({}, { NODE_DAEMON_CONFIG: file, NODE_DAEMON_PORT: '5000' });
    assert.deepEqual([fromEnv.port, fromEnv.host], [5000, '::1']);
    const fromFlag = loadConfig({ config: file, port: '6000' }, { NODE_DAEMON_PORT: '5000' });
    assert.equal(fromFlag.port, 6000);
    assert.equal(fromFlag.configFile, file);
    assert.equal(loadConfig({}, { NODE_DAEMON_PORT: '' }).port, 3001, 'an empty variable counts as unset');
    await remove();
  });

  it('reads switches as --demo / --no-demo and from the environment', () => {
    const dev = (flags: Record<string, string | boolean>, env: Record<string, string>) => {
      const config = loadConfig(flags, env);
      assert.equal(config.network, 'dev');
      return config.network === 'dev' ? config.dev : undefined;
    };
    assert.equal(dev({ demo: false }, {})?.demo, false);
    assert.equal(dev({}, { NODE_DAEMON_DEMO: 'false' })?.demo, false);
    assert.equal(dev({ demo: true }, { NODE_DAEMON_DEMO: 'false' })?.demo, true);
    assert.equal(dev({ 'dev-sampling-probability': '1' }, {})?.samplingProbability, 1);
  });

  it('gives the Sui settings only to --network sui, normalized', () => {
    const id = `0x${'Ab'.repeat(2)}`;
    const config = loadConfig(
      {
        network: 'sui',
        'sui-url': 'https://fullnode.example:443/',
        'sui-package-id': id,
        'sui-atoma-db-id': '0x6',
        'sui-address': id,
      },
      {},
    );
    assert.equal(config.network, 'sui');
    if (config.network !== 'sui') return;
    assert.equal(config.sui.url, 'https://fullnode.example:443');
    assert.equal(config.sui.packageId, `0x${'0'.repeat(60)}abab`);
    assert.equal(config.sui.atomaDbId, `0x${'0'.repeat(63)}6`);
    assert.equal(config.sui.address, config.sui.packageId);
    assert.equal(config.sui.gasBudgetCap, 1_000_000_000n);
    assert.equal(config.sui.atomaDbInitialSharedVersion, undefined);
    assert.equal('sui' in loadConfig({}, {}), false);
  });

  it('says which setting named the Sui keystore, for the message when it is missing', () => {
    const base = {
      network: 'sui',
      'sui-url': 'https://f:443',
      'sui-package-id': '0x5',
      'sui-atoma-db-id': '0x6',
    };
    const fromFlag = loadConfig({ ...base, 'sui-keystore': '/k/flag.keystore' }, {});
    const fromEnv = loadConfig(base, { NODE_DAEMON_SUI_KEYSTORE: '/k/env.keystore' });
    assert.ok(fromFlag.network === 'sui' && fromEnv.network === 'sui');
    assert.equal(fromFlag.sui.keystoreSource, '--sui-keystore');
    assert.equal(fromEnv.sui.keystoreSource, 'NODE_DAEMON_SUI_KEYSTORE');
  });

  it('resolves the data directory to an absolute path', () => {
    assert.equal(loadConfig({ 'data-dir': 'rel/dir' }, {}).dataDir, join(process.cwd(), 'rel/dir'));
  });

  const refusals: [Record<string, string>, Record<string, string>, RegExp][] = [
    [{ port: '70000' }, {}, /^invalid --port: "70000" is not accepted; expected an integer from 0 to 65535$/],
    [
      {},
      { NODE_DAEMON_PORT: 'abc' },
      /^invalid NODE_DAEMON_PORT: "abc" is not accepted; expected an integer/,
    ],
    [{ port: '-1' }, {}, /invalid --port: "-1"/],
    [
      { network: 'mainnet' },
      {},
      /^invalid --network: "mainnet" is not accepted; expected one of dev, sui, none$/,
    ],
    [
      {},
      { NODE_DAEMON_HOST: 'not a host!' },
      /invalid NODE_DAEMON_HOST: "not a host!".*IP address or a host name/,
    ],
    [
      {},
      { DATABASE_URL: 'mysql://x' },
      /invalid DATABASE_URL: "mysql:\/\/x".*postgres:\/\/ or postgresql:\/\/ URL/,
    ],
    [
      { 'log-level': 'loud' },
      {},
      /invalid --log-level: "loud".*one of fatal, error, warn, info, debug, trace, silent/,
    ],
    [{ 'shutdown-timeout': '0' }, {}, /invalid --shutdown-timeout: "0".*from 1 to 3600/],
    [
      { 'dev-sampling-probability': '1.5' },
      {},
      /invalid --dev-sampling-probability: "1.5".*a number from 0 to 1/,
    ],
    [{}, { NODE_DAEMON_DEMO: 'maybe' }, /invalid NODE_DAEMON_DEMO: "maybe".*true or false/],
    [{ 'sui-package-id': 'xyz' }, {}, /invalid --sui-package-id: "xyz".*0x-prefixed hex object id/],
    [
      {},
      { NODE_DAEMON_SUI_ATOMA_DB_ID: `0x${'g'.repeat(64)}` },
      /invalid NODE_DAEMON_SUI_ATOMA_DB_ID: .*0x-prefixed hex object id/,
    ],
    [{ 'sui-url': 'fullnode' }, {}, /invalid --sui-url: "fullnode".*http:\/\/ or https:\/\/ URL/],
    [{ 'sui-url': 'ftp://x' }, {}, /invalid --sui-url: "ftp:\/\/x".*http:\/\/ or https:\/\/ URL/],
    [{ 'sui-gas-budget-cap': '0' }, {}, /invalid --sui-gas-budget-cap: "0".*from 1000000 to/],
    [{ network: 'sui' }, {}, /^--network sui needs --sui-url, --sui-package-id, --sui-atoma-db-id/],
    [{ 'sqlite-synchronous': 'off' }, {}, /invalid --sqlite-synchronous: "off".*one of normal, full/],
    [
      { 'sqlite-synchronous': 'full' },
      { DATABASE_URL: 'postgres://db/x' },
      /^--sqlite-synchronous full is for the SQLite store; .*PostgreSQL's own synchronous_commit/,
    ],
  ];
  for (const [flags, env, message] of refusals) {
    it(`refuses ${JSON.stringify({ ...flags, ...env })} in one line naming the setting`, () => {
      assert.throws(
        () => loadConfig(flags, env),
        (error: Error) => {
          assert.equal(error.name, 'CliError');
          assert.doesNotMatch(error.message, /\n/);
          assert.match(error.message, message);
          return true;
        },
      );
    });
  }

  it('refuses a bad config file: missing, not JSON, not an object, unknown key, bad value', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'c.json');
    assert.throws(
      () => loadConfig({ config: file }, {}),
      /cannot read the config file .*c\.json: no such file/,
    );
    writeFileSync(file, '{ port: 1 }');
    assert.throws(() => loadConfig({ config: file }, {}), /is not valid JSON/);
    writeFileSync(file, '[1]');
    assert.throws(() => loadConfig({ config: file }, {}), /must hold a JSON object/);
    writeFileSync(file, '{"prot": 1}');
    assert.throws(
      () => loadConfig({ config: file }, {}),
      /unknown setting "prot" in .*; accepted: host, port/,
    );
    writeFileSync(file, '{"port": "x"}');
    assert.throws(() => loadConfig({ config: file }, {}), /invalid "port" in .*c\.json: "x" is not accepted/);
    await remove();
  });
});
