import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import {
  defaultSuiClientConfig,
  type Imported,
  type ImportedSettings,
  readAtomaConfig,
  readSuiClientConfig,
  shown,
} from './atoma-files.ts';
import type { SuiSettings } from './chain/sui/settings.ts';
import { CliError } from './internal/exit-codes.ts';
import { isLoopback } from './internal/net.ts';
import type { U64 } from './internal/u64.ts';
import type { AutopilotSettings } from './operations/autopilot.ts';
import {
  boolean,
  databaseUrl,
  file,
  fraction,
  host,
  hostName,
  httpUrl,
  integer,
  list,
  nodeIds,
  objectId,
  oneOf,
  origin,
  type Parsed,
  path,
  positiveFraction,
  schemaName,
  seconds,
  u64Setting,
} from './setting-values.ts';

/**
 * The daemon's settings. Each comes from, in order of precedence: a command-line flag, an environment
 * variable, the JSON config file, atoma-node's config.toml (--atoma-config), the Sui CLI's client.yaml
 * (--sui-client-config), then the default. They are validated once, frozen and passed down; nothing else
 * in the code base reads process.env. The network's own settings are present by type
 * where that network runs: `config.sui` exists only when `config.network === 'sui'`.
 */
export type Config = CommonConfig & (DevNetworkConfig | SuiNetworkConfig | NoNetworkConfig);

export interface CommonConfig {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  /** PostgreSQL: the schema that holds the store's tables (a database may hold other programs' tables). */
  readonly databaseSchema: string;
  readonly configFile: string | undefined;
  readonly logLevel: LogLevel;
  /** Seconds the daemon waits for in-flight work on SIGINT/SIGTERM before it gives up. */
  readonly shutdownTimeout: number;
  /** Megabytes of serialized read responses kept in memory; 0 turns the cache off. */
  readonly cacheMb: number;
  /**
   * SQLite's commit durability: normal (a commit survives the daemon's crash; a power cut or an OS crash
   * may undo the last ones) or full (each commit is flushed to disk before it is answered).
   */
  readonly sqliteSynchronous: SqliteSynchronous;
  /** Which requests need the API token: writes (default), all, or none (loopback binds only). */
  readonly auth: 'writes' | 'all' | 'none';
  /** Extra host names the daemon answers to (besides its bind address and localhost). */
  readonly allowedHosts: readonly string[];
  /** Origins allowed to call the API from a browser; empty: no CORS headers at all. */
  readonly corsOrigins: readonly string[];
  /** Requests answered at once before the daemon sheds load with 503. */
  readonly maxInFlight: number;
  /** /ready answers 503 while the indexer is more than this many seconds behind the chain head. */
  readonly readyMaxLag: number;
  /** The most events the indexer applies in one transaction while it catches up. */
  readonly indexerBatchEvents: number;
  /** Node events (GET /events) are kept this many days. */
  readonly eventsRetentionDays: number;
  /** The audit trail (GET /audit) keeps its entries this many days. */
  readonly auditRetentionDays: number;
  /** What the autopilot does, and when it judges an action worth it. */
  readonly autopilot: AutopilotSettings;
  /** atoma-node's config.toml the settings were read from, if any (absolute). */
  readonly atomaConfig: string | undefined;
  /**
   * The operator's nodes as configured (--node-small-ids, or node_small_ids of atoma-node's config.toml),
   * in the order given: the first is the CLI's and the console's default node. Empty when none is.
   */
  readonly nodeSmallIds: readonly U64[];
  /** Where stacks' usage comes from besides POST /stacks/{id}/usage. */
  readonly usageSource: UsageSourceSettings;
  /** Warnings about the settings, for the log at start (the config is read before there is a logger). */
  readonly notices: readonly string[];
  /** The signer's SUI (MIST) below which a signer_gas_low event warns the operator. */
  readonly gasWarningMist: bigint;
}

/**
 * none: usage comes only from POST /stacks/{id}/usage. atoma-state: this daemon follows the `stacks` table
 * of atoma-node's atoma-state PostgreSQL database, read-only, every pollIntervalMs.
 */
export type UsageSourceSettings =
  | { readonly kind: 'none' }
  | { readonly kind: 'atoma-state'; readonly url: string; readonly pollIntervalMs: number };

export const USAGE_SOURCES = ['none', 'atoma-state'] as const;

export const AUTOPILOT_MODES = ['off', 'dry-run', 'on'] as const;
export const SQLITE_SYNCHRONOUS = ['normal', 'full'] as const;
export type SqliteSynchronous = (typeof SQLITE_SYNCHRONOUS)[number];

export interface DevNetworkConfig {
  readonly network: 'dev';
  readonly dev: DevSettings;
}

export interface DevSettings {
  /** The chance (0 to 1) that a SamplingConsensus try-settle samples attesters. */
  readonly samplingProbability: number;
  /** How many attesters a sampled try-settle requests (cross_validation_extra_nodes_count). */
  readonly attestationNodes: number;
  /** Create a small demo world on first start. */
  readonly demo: boolean;
}

export interface SuiNetworkConfig {
  readonly network: 'sui';
  readonly sui: SuiSettings;
}

export interface NoNetworkConfig {
  readonly network: 'none';
}

/** Every flat setting, as the table below parses it; loadConfig assembles the Config from them. */
interface Settings extends Omit<CommonConfig, 'usageSource' | 'notices'> {
  readonly network: Network;
  readonly devSamplingProbability: number;
  readonly devAttestationNodes: number;
  readonly demo: boolean;
  readonly suiUrl: string | undefined;
  readonly suiPackageId: string | undefined;
  readonly suiAtomaDbId: string | undefined;
  readonly suiAtomaDbInitialSharedVersion: number | undefined;
  readonly suiKeystore: string;
  readonly suiAddress: string | undefined;
  readonly suiGasBudgetCap: number;
  readonly suiUsdcPackageId: string | undefined;
  readonly suiClientConfig: string | undefined;
  readonly usageSource: (typeof USAGE_SOURCES)[number];
  readonly atomaStateUrl: string | undefined;
  readonly usagePollInterval: number;
  readonly autopilotMode: AutopilotSettings['mode'];
  readonly autopilotSettleFill: number;
  readonly autopilotSettleIdle: number;
  readonly autopilotMinClaim: bigint;
  readonly autopilotMaxGas: bigint;
  readonly autopilotMaxGasPerDay: bigint;
  readonly gasWarningMist: bigint;
}

export const NETWORKS = ['dev', 'sui', 'none'] as const;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type Network = (typeof NETWORKS)[number];

type Key = Exclude<keyof Settings, 'configFile'>;

interface Setting {
  readonly key: Key;
  /** The flag name without dashes; also the key in the config file. */
  readonly flag: string;
  readonly env: string;
  readonly describe: string;
  readonly parse: (raw: unknown) => Parsed;
  readonly defaultValue: (env: NodeJS.ProcessEnv) => unknown;
  /** A switch: --name / --no-name on the command line. */
  readonly boolean?: boolean;
  /** A refused value is repeated in the message without its password, if it holds one. */
  readonly secret?: boolean;
}

export const SETTINGS: readonly Setting[] = [
  {
    key: 'host',
    flag: 'host',
    env: 'NODE_DAEMON_HOST',
    describe: 'address to listen on',
    parse: host,
    defaultValue: () => '127.0.0.1',
  },
  {
    key: 'port',
    flag: 'port',
    env: 'NODE_DAEMON_PORT',
    describe: 'TCP port to listen on (0 picks a free one)',
    parse: integer(0, 65535),
    defaultValue: () => 3001,
  },
  {
    key: 'dataDir',
    flag: 'data-dir',
    env: 'NODE_DAEMON_DATA_DIR',
    describe: 'directory of the store and the daemon files',
    parse: path,
    defaultValue: (env) => join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'node-daemon'),
  },
  {
    key: 'network',
    flag: 'network',
    env: 'NODE_DAEMON_NETWORK',
    describe: 'chain network: dev (embedded, default), sui (a Sui fullnode) or none (read-only)',
    parse: oneOf(NETWORKS),
    defaultValue: () => 'dev',
  },
  {
    key: 'atomaConfig',
    flag: 'atoma-config',
    env: 'NODE_DAEMON_ATOMA_CONFIG',
    describe: "atoma-node's config.toml: the Sui settings, node ids and atoma-state (docs/SUI.md)",
    parse: file,
    defaultValue: () => undefined,
  },
  {
    key: 'nodeSmallIds',
    flag: 'node-small-ids',
    env: 'NODE_DAEMON_NODE_SMALL_IDS',
    describe: "the operator's node small ids, e.g. 1,2; the first is the CLI's and console's default node",
    parse: nodeIds,
    defaultValue: () => Object.freeze([]),
  },
  {
    key: 'databaseUrl',
    flag: 'database-url',
    env: 'DATABASE_URL',
    describe: 'PostgreSQL URL; unset means the embedded SQLite store',
    parse: databaseUrl,
    defaultValue: () => undefined,
    secret: true,
  },
  {
    key: 'databaseSchema',
    flag: 'database-schema',
    env: 'NODE_DAEMON_DATABASE_SCHEMA',
    describe:
      "PostgreSQL: the schema that holds the store's tables, so it can share a database (atoma-state's too)",
    parse: schemaName,
    defaultValue: () => 'node_daemon',
  },
  {
    key: 'usageSource',
    flag: 'usage-source',
    env: 'NODE_DAEMON_USAGE_SOURCE',
    describe: "where usage comes from: none (POST /stacks/{id}/usage) or atoma-state (atoma-node's database)",
    parse: oneOf(USAGE_SOURCES),
    defaultValue: () => 'none',
  },
  {
    key: 'atomaStateUrl',
    flag: 'atoma-state-url',
    env: 'NODE_DAEMON_ATOMA_STATE_URL',
    describe: "atoma-state: the PostgreSQL URL of atoma-node's database (read only)",
    parse: databaseUrl,
    defaultValue: () => undefined,
    secret: true,
  },
  {
    key: 'usagePollInterval',
    flag: 'usage-poll-interval',
    env: 'NODE_DAEMON_USAGE_POLL_INTERVAL',
    describe: 'atoma-state: seconds between two reads of its stacks',
    parse: seconds,
    defaultValue: () => 1,
  },
  {
    key: 'logLevel',
    flag: 'log-level',
    env: 'NODE_DAEMON_LOG_LEVEL',
    describe: 'log level',
    parse: oneOf(LOG_LEVELS),
    defaultValue: () => 'info',
  },
  {
    key: 'shutdownTimeout',
    flag: 'shutdown-timeout',
    env: 'NODE_DAEMON_SHUTDOWN_TIMEOUT',
    describe: 'seconds to finish in-flight work on SIGINT/SIGTERM',
    parse: integer(1, 3600),
    defaultValue: () => 10,
  },
  {
    key: 'cacheMb',
    flag: 'cache-mb',
    env: 'NODE_DAEMON_CACHE_MB',
    describe: 'megabytes of cached read responses (0 disables)',
    parse: integer(0, 65536),
    defaultValue: () => 64,
  },
  {
    key: 'sqliteSynchronous',
    flag: 'sqlite-synchronous',
    env: 'NODE_DAEMON_SQLITE_SYNCHRONOUS',
    describe:
      'SQLite: full flushes every commit to disk (usage reports survive a power cut); normal does not',
    parse: oneOf(SQLITE_SYNCHRONOUS),
    defaultValue: () => 'normal',
  },
  {
    key: 'devSamplingProbability',
    flag: 'dev-sampling-probability',
    env: 'NODE_DAEMON_DEV_SAMPLING_PROBABILITY',
    describe: 'dev network: chance a SamplingConsensus settlement asks for attestations',
    parse: fraction,
    defaultValue: () => 0.01,
  },
  {
    key: 'devAttestationNodes',
    flag: 'dev-attestation-nodes',
    env: 'NODE_DAEMON_DEV_ATTESTATION_NODES',
    describe: 'dev network: attesters per sampled settlement',
    parse: integer(0, 16),
    defaultValue: () => 1,
  },
  {
    key: 'auth',
    flag: 'auth',
    env: 'NODE_DAEMON_AUTH',
    describe: 'which requests need the API token: writes, all, or none (loopback only)',
    parse: oneOf(['writes', 'all', 'none'] as const),
    defaultValue: () => 'writes',
  },
  {
    key: 'allowedHosts',
    flag: 'allowed-hosts',
    env: 'NODE_DAEMON_ALLOWED_HOSTS',
    describe: 'more host names to answer to (DNS rebinding protection)',
    parse: list('host names', hostName),
    defaultValue: () => Object.freeze([]),
  },
  {
    key: 'corsOrigins',
    flag: 'cors-origins',
    env: 'NODE_DAEMON_CORS_ORIGINS',
    describe: 'browser origins allowed by CORS (default: none)',
    parse: list('origins like https://ops.example.com', origin),
    defaultValue: () => Object.freeze([]),
  },
  {
    key: 'maxInFlight',
    flag: 'max-in-flight',
    env: 'NODE_DAEMON_MAX_IN_FLIGHT',
    describe: 'requests answered at once before shedding load with 503',
    parse: integer(1, 100000),
    defaultValue: () => 256,
  },
  {
    key: 'readyMaxLag',
    flag: 'ready-max-lag',
    env: 'NODE_DAEMON_READY_MAX_LAG',
    describe: 'seconds the indexer may lag the chain head and /ready still say ready',
    parse: integer(1, 86400),
    defaultValue: () => 30,
  },
  {
    key: 'eventsRetentionDays',
    flag: 'events-retention-days',
    env: 'NODE_DAEMON_EVENTS_RETENTION_DAYS',
    describe: 'days the node events of GET /events are kept (a stream resumes within them)',
    parse: integer(1, 3650),
    defaultValue: () => 7,
  },
  {
    key: 'auditRetentionDays',
    flag: 'audit-retention-days',
    env: 'NODE_DAEMON_AUDIT_RETENTION_DAYS',
    describe: 'days the audit trail (GET /audit: every write and admin request) keeps its entries',
    parse: integer(1, 3650),
    defaultValue: () => 90,
  },
  {
    key: 'indexerBatchEvents',
    flag: 'indexer-batch-events',
    env: 'NODE_DAEMON_INDEXER_BATCH_EVENTS',
    describe: 'the most events the indexer applies in one transaction while catching up',
    parse: integer(1, 1_000_000),
    defaultValue: () => 10_000,
  },
  {
    key: 'autopilotMode',
    flag: 'autopilot',
    env: 'NODE_DAEMON_AUTOPILOT',
    describe: 'autopilot: off (default), dry-run (plans only) or on (settles, attests and claims)',
    parse: oneOf(AUTOPILOT_MODES),
    defaultValue: () => 'off',
  },
  {
    key: 'autopilotSettleFill',
    flag: 'autopilot-settle-fill',
    env: 'NODE_DAEMON_AUTOPILOT_SETTLE_FILL',
    describe: 'autopilot: settle a stack once its usage reaches this fraction of its units',
    parse: positiveFraction,
    defaultValue: () => 0.95,
  },
  {
    key: 'autopilotSettleIdle',
    flag: 'autopilot-settle-idle',
    env: 'NODE_DAEMON_AUTOPILOT_SETTLE_IDLE',
    describe: 'autopilot: or once a stack with usage has had none for this many seconds',
    parse: integer(60, 31_536_000),
    defaultValue: () => 3600,
  },
  {
    key: 'autopilotMinClaim',
    flag: 'autopilot-min-claim',
    env: 'NODE_DAEMON_AUTOPILOT_MIN_CLAIM',
    describe: "autopilot: claim a batch only when its node fees reach this (USDC's smallest unit)",
    parse: u64Setting('USDC in its smallest unit (1000000 is 1 USDC)'),
    defaultValue: () => 1_000_000n,
  },
  {
    key: 'autopilotMaxGas',
    flag: 'autopilot-max-gas',
    env: 'NODE_DAEMON_AUTOPILOT_MAX_GAS',
    describe: "autopilot: act only when a transaction's estimated gas stays under this (MIST)",
    parse: u64Setting('MIST (1000000000 is 1 SUI)'),
    defaultValue: () => 50_000_000n,
  },
  {
    key: 'autopilotMaxGasPerDay',
    flag: 'autopilot-max-gas-per-day',
    env: 'NODE_DAEMON_AUTOPILOT_MAX_GAS_PER_DAY',
    describe: 'autopilot: in any 24 hours, sign transactions whose gas adds up to at most this (MIST)',
    parse: u64Setting('MIST (1000000000 is 1 SUI)'),
    // A busy day of a large node, with room (docs/EARNINGS.md, "The daily gas cap").
    defaultValue: () => 50_000_000_000n,
  },
  {
    key: 'gasWarningMist',
    flag: 'gas-warning-mist',
    env: 'NODE_DAEMON_GAS_WARNING_MIST',
    describe: "warn (a signer_gas_low event) when the signer's SUI for gas goes below this (MIST)",
    parse: u64Setting('MIST (1000000000 is 1 SUI)'),
    // About a day of the autopilot's typical spending (docs/EARNINGS.md, "Gas for the signer").
    defaultValue: () => 1_000_000_000n,
  },
  {
    key: 'suiUrl',
    flag: 'sui-url',
    env: 'NODE_DAEMON_SUI_URL',
    describe: 'sui: the fullnode gRPC URL, e.g. https://fullnode.testnet.sui.io:443',
    parse: httpUrl,
    defaultValue: () => undefined,
  },
  {
    key: 'suiPackageId',
    flag: 'sui-package-id',
    env: 'NODE_DAEMON_SUI_PACKAGE_ID',
    describe: 'sui: the Atoma package id (the latest, after an upgrade)',
    parse: objectId,
    defaultValue: () => undefined,
  },
  {
    key: 'suiAtomaDbId',
    flag: 'sui-atoma-db-id',
    env: 'NODE_DAEMON_SUI_ATOMA_DB_ID',
    describe: 'sui: the AtomaDb shared object id',
    parse: objectId,
    defaultValue: () => undefined,
  },
  {
    key: 'suiAtomaDbInitialSharedVersion',
    flag: 'sui-atoma-db-initial-shared-version',
    env: 'NODE_DAEMON_SUI_ATOMA_DB_INITIAL_SHARED_VERSION',
    describe: "sui: AtomaDb's initial shared version (default: discovered)",
    parse: integer(1, Number.MAX_SAFE_INTEGER),
    defaultValue: () => undefined,
  },
  {
    key: 'suiKeystore',
    flag: 'sui-keystore',
    env: 'NODE_DAEMON_SUI_KEYSTORE',
    describe: 'sui: the Sui CLI keystore file',
    parse: path,
    defaultValue: (env) => join(dirname(defaultSuiClientConfig(env)), 'sui.keystore'),
  },
  {
    key: 'suiClientConfig',
    flag: 'sui-client-config',
    env: 'NODE_DAEMON_SUI_CLIENT_CONFIG',
    describe: "sui: the Sui CLI's client.yaml: keystore, active_address, active env's RPC URL",
    parse: file,
    defaultValue: () => undefined,
  },
  {
    key: 'suiAddress',
    flag: 'sui-address',
    env: 'NODE_DAEMON_SUI_ADDRESS',
    describe: "sui: the keystore address that signs (default: client.yaml's active_address, else the first)",
    parse: objectId,
    defaultValue: () => undefined,
  },
  {
    key: 'suiGasBudgetCap',
    flag: 'sui-gas-budget-cap',
    env: 'NODE_DAEMON_SUI_GAS_BUDGET_CAP',
    describe: 'sui: the most MIST one transaction may spend on gas',
    parse: integer(1_000_000, Number.MAX_SAFE_INTEGER),
    defaultValue: () => 1_000_000_000,
  },
  {
    key: 'suiUsdcPackageId',
    flag: 'sui-usdc-package-id',
    env: 'NODE_DAEMON_SUI_USDC_PACKAGE_ID',
    describe: 'sui: the USDC package of the deployment (read from config.toml; not used yet)',
    parse: objectId,
    defaultValue: () => undefined,
  },
  {
    key: 'demo',
    flag: 'demo',
    env: 'NODE_DAEMON_DEMO',
    describe: 'dev network: create a demo world on first start (--no-demo: start empty)',
    parse: boolean,
    defaultValue: () => true,
    boolean: true,
  },
];

export const CONFIG_FLAG = { flag: 'config', env: 'NODE_DAEMON_CONFIG' } as const;

/** Raw flag values as given on the command line, keyed by flag name (switches are booleans). */
export type FlagValues = Readonly<Record<string, string | boolean | undefined>>;

/** Where a setting's value is looked for, in order. */
interface Sources {
  readonly flags: FlagValues;
  readonly env: NodeJS.ProcessEnv;
  readonly file: Record<string, unknown>;
  readonly configFile: string | undefined;
  /** What atoma-node's config.toml and the Sui CLI's client.yaml give. */
  readonly imported: ImportedSettings;
}

/** The value a setting was given, and where, or undefined when none was. */
function given(setting: Setting, sources: Sources): Imported | undefined {
  const fromFlag = sources.flags[setting.flag];
  if (fromFlag !== undefined) {
    return { raw: fromFlag, source: fromFlag === false ? `--no-${setting.flag}` : `--${setting.flag}` };
  }
  const fromEnv = sources.env[setting.env];
  if (fromEnv !== undefined && fromEnv !== '') return { raw: fromEnv, source: setting.env };
  if (Object.hasOwn(sources.file, setting.flag)) {
    return { raw: sources.file[setting.flag], source: `"${setting.flag}" in ${sources.configFile}` };
  }
  return sources.imported[setting.flag];
}

/** A setting's value: the one given, validated, else its default. Throws CliError naming the source. */
function resolveSetting(setting: Setting, sources: Sources): { value: unknown; given?: Imported } {
  const found = given(setting, sources);
  if (found === undefined) return { value: setting.defaultValue(sources.env) };
  const parsed = setting.parse(found.raw);
  if (!parsed.ok) {
    const value = setting.secret ? withoutPassword(shown(found.raw)) : shown(found.raw);
    throw new CliError(`invalid ${found.source}: ${value} is not accepted; expected ${parsed.accepted}`);
  }
  return { value: parsed.value, given: found };
}

/** A URL's password masked, even in a URL that does not parse (a refused value may not). */
function withoutPassword(text: string): string {
  return text.replace(/(\/\/[^/@:]*:)[^/@]*@/, '$1***@').replace(/([?&]password=)[^&"]*/gi, '$1***');
}

function settingOf(key: Key): Setting {
  return SETTINGS.find((s) => s.key === key)!;
}

/**
 * What the operator's existing files say: atoma-node's config.toml when --atoma-config names it, and the
 * Sui CLI's client.yaml when a setting (or config.toml's sui_config_path) names it, else the Sui CLI's
 * own where it exists, for --network sui, when nothing names the keystore. config.toml wins over
 * client.yaml (its fullnode is the node's own).
 */
function importFiles(sources: Sources): ImportedSettings {
  const atomaConfig = resolveSetting(settingOf('atomaConfig'), sources).value as string | undefined;
  const toml = atomaConfig === undefined ? {} : readAtomaConfig(atomaConfig);
  const withToml = { ...sources, imported: toml };
  const named = resolveSetting(settingOf('suiClientConfig'), withToml);
  let client: ImportedSettings = {};
  if (named.given !== undefined) {
    client = readSuiClientConfig(named.value as string, named.given.source);
  } else if (
    resolveSetting(settingOf('network'), withToml).value === 'sui' &&
    given(settingOf('suiKeystore'), withToml) === undefined
  ) {
    const fallback = defaultSuiClientConfig(sources.env);
    if (existsSync(fallback)) client = readSuiClientConfig(fallback, 'the Sui CLI default');
  }
  return { ...client, ...toml };
}

/**
 * Resolves the settings from flags, environment, config file and the operator's atoma-node files. Throws
 * CliError with one line that names the setting (or the file and key), the value and what is accepted.
 */
export function loadConfig(flags: FlagValues, env: NodeJS.ProcessEnv): Config {
  const flag = flags[CONFIG_FLAG.flag];
  const configFile = (typeof flag === 'string' ? flag : undefined) ?? nonEmpty(env[CONFIG_FLAG.env]);
  const file = configFile === undefined ? {} : readConfigFile(resolve(configFile));
  let sources: Sources = { flags, env, file, configFile, imported: {} };
  sources = { ...sources, imported: importFiles(sources) };
  const values: Record<string, unknown> = {
    configFile: configFile === undefined ? undefined : resolve(configFile),
  };
  const from: Partial<Record<Key, string>> = {};
  const notices: string[] = [];
  for (const setting of SETTINGS) {
    const resolved = resolveSetting(setting, sources);
    values[setting.key] = resolved.value;
    if (resolved.given) from[setting.key] = resolved.given.source;
    if (resolved.given?.notice) notices.push(resolved.given.notice);
  }
  const settings = values as unknown as Settings;
  checkExposure(settings, from.host);
  if (settings.databaseUrl !== undefined && settings.sqliteSynchronous !== 'normal') {
    throw new CliError(
      `--sqlite-synchronous ${settings.sqliteSynchronous} is for the SQLite store; with a database URL, ` +
        "PostgreSQL's own synchronous_commit decides (on by default: every commit is flushed)",
    );
  }
  return Object.freeze(assemble(settings, from, Object.freeze(notices)));
}

/** The Config of the chosen network, from the flat settings and where each was given. */
function assemble(
  settings: Settings,
  from: Partial<Record<Key, string>>,
  notices: readonly string[],
): Config {
  const common: CommonConfig = {
    host: settings.host,
    port: settings.port,
    dataDir: settings.dataDir,
    databaseUrl: settings.databaseUrl,
    databaseSchema: settings.databaseSchema,
    configFile: settings.configFile,
    logLevel: settings.logLevel,
    shutdownTimeout: settings.shutdownTimeout,
    cacheMb: settings.cacheMb,
    sqliteSynchronous: settings.sqliteSynchronous,
    auth: settings.auth,
    allowedHosts: settings.allowedHosts,
    corsOrigins: settings.corsOrigins,
    maxInFlight: settings.maxInFlight,
    readyMaxLag: settings.readyMaxLag,
    indexerBatchEvents: settings.indexerBatchEvents,
    eventsRetentionDays: settings.eventsRetentionDays,
    auditRetentionDays: settings.auditRetentionDays,
    autopilot: Object.freeze({
      mode: settings.autopilotMode,
      settleFill: settings.autopilotSettleFill,
      settleIdleSeconds: settings.autopilotSettleIdle,
      minClaim: settings.autopilotMinClaim,
      maxGas: settings.autopilotMaxGas,
      maxGasPerDay: settings.autopilotMaxGasPerDay,
    }),
    atomaConfig: settings.atomaConfig,
    nodeSmallIds: settings.nodeSmallIds,
    usageSource: Object.freeze(usageSource(settings)),
    notices,
    gasWarningMist: settings.gasWarningMist,
  };
  switch (settings.network) {
    case 'dev':
      return {
        ...common,
        network: 'dev',
        dev: Object.freeze({
          samplingProbability: settings.devSamplingProbability,
          attestationNodes: settings.devAttestationNodes,
          demo: settings.demo,
        }),
      };
    case 'sui':
      return { ...common, network: 'sui', sui: Object.freeze(suiSettings(settings, from)) };
    case 'none':
      if (common.autopilot.mode !== 'off') {
        throw new CliError(
          `--autopilot ${common.autopilot.mode} needs a chain to act on; --network none serves reads only`,
        );
      }
      return { ...common, network: 'none' };
  }
}

/** The atoma-state source needs its database's URL: a flag, or config.toml's [atoma_state] database_url. */
function usageSource(settings: Settings): UsageSourceSettings {
  if (settings.usageSource === 'none') return { kind: 'none' };
  const url = settings.atomaStateUrl;
  if (url === undefined) {
    throw new CliError(
      settings.atomaConfig === undefined
        ? "--usage-source atoma-state needs --atoma-state-url (NODE_DAEMON_ATOMA_STATE_URL), the PostgreSQL URL of atoma-node's atoma-state database"
        : `${settings.atomaConfig} has no [atoma_state] database_url, which the atoma-state usage source reads; give --atoma-state-url, or --usage-source none`,
    );
  }
  return { kind: 'atoma-state', url, pollIntervalMs: Math.round(settings.usagePollInterval * 1000) };
}

/** --network sui needs to know which fullnode and which Atoma deployment. */
function suiSettings(settings: Settings, from: Partial<Record<Key, string>>): SuiSettings {
  const { suiUrl: url, suiPackageId: packageId, suiAtomaDbId: atomaDbId } = settings;
  if (url === undefined || packageId === undefined || atomaDbId === undefined) {
    const missing = (
      [
        [url, '--sui-url', 'http_rpc_node_addr'],
        [packageId, '--sui-package-id', 'atoma_package_id'],
        [atomaDbId, '--sui-atoma-db-id', 'atoma_db'],
      ] as const
    ).filter(([value]) => value === undefined);
    const flags = missing.map(([, flag]) => flag).join(', ');
    if (settings.atomaConfig !== undefined) {
      const keys = missing.map(([, , key]) => key).join(', ');
      throw new CliError(
        `${settings.atomaConfig} has no [atoma_sui] ${keys}, which --network sui needs; or give ${flags}`,
      );
    }
    throw new CliError(`--network sui needs ${flags} (see docs/SUI.md for where to find them)`);
  }
  const version = settings.suiAtomaDbInitialSharedVersion;
  return {
    url,
    urlSource: from.suiUrl ?? '--sui-url',
    packageId,
    atomaDbId,
    atomaDbInitialSharedVersion: version === undefined ? undefined : BigInt(version),
    keystore: settings.suiKeystore,
    keystoreSource:
      from.suiKeystore ??
      'the default of --sui-keystore, as neither NODE_DAEMON_SUI_KEYSTORE nor a config file set it',
    address: settings.suiAddress,
    gasBudgetCap: BigInt(settings.suiGasBudgetCap),
    usdcPackageId: settings.suiUsdcPackageId,
  };
}

/** The daemon signs with the operator's wallet: off loopback, every request must carry the token. */
function checkExposure(config: Settings, hostSource: string | undefined): void {
  if (isLoopback(config.host)) return;
  const host = hostSource?.includes(' in ') ? `${config.host} (${hostSource})` : config.host;
  if (config.auth === 'none') {
    throw new CliError(
      `--auth none is refused when the daemon binds to ${host}; it is allowed on loopback only`,
    );
  }
  if (config.auth !== 'all') {
    throw new CliError(
      `binding to ${host} (not loopback) requires --auth all, so that reads need the API token too`,
    );
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new CliError(`cannot read the config file ${file}: ${reason}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliError(`the config file ${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CliError(`the config file ${file} must hold a JSON object of settings`);
  }
  const known = new Set(SETTINGS.map((s) => s.flag));
  for (const key of Object.keys(parsed)) {
    if (!known.has(key)) {
      throw new CliError(`unknown setting "${key}" in ${file}; accepted: ${[...known].join(', ')}`);
    }
  }
  return parsed as Record<string, unknown>;
}
