import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { CliError } from './internal/exit-codes.ts';

/**
 * The operator's existing files, read as settings: atoma-node's `config.toml` (--atoma-config) and the Sui
 * CLI's `client.yaml` (--sui-client-config), in the formats of upstream-daemon.md §1.6, §3.4 and §4.1.
 * Each gives values keyed by the flag of the setting they stand for; config.ts ranks them below flags,
 * variables and this daemon's own JSON file, and validates them like any other value. Keys this daemon
 * has no use for are ignored; a file that does not parse, or a key of the wrong type, stops the start in
 * one line naming the file, the key and, for a syntax error, the line.
 */

/** A setting's value as one of the operator's files gives it. */
export interface Imported {
  readonly raw: unknown;
  /** Where it comes from, for messages: `[atoma_sui] atoma_db in /etc/atoma/config.toml`. */
  readonly source: string;
  /** Said in the log at start when this value is the one used. */
  readonly notice?: string;
}

/** Values keyed by flag name (`sui-url`, `port`, ...). */
export type ImportedSettings = Readonly<Record<string, Imported>>;

// The parsers load only when a file is read: the client commands import config.ts and must stay light
// (test/cli-imports.test.ts).
const require = createRequire(import.meta.url);

/** A value as the message shows it (TOML's large integers are bigints, which JSON cannot write). */
export function shown(raw: unknown): string {
  if (typeof raw === 'bigint') return String(raw);
  return JSON.stringify(raw, (_key, value: unknown) => (typeof value === 'bigint' ? Number(value) : value));
}

function read(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory, not a file' : (code ?? '');
    throw new CliError(`cannot read ${what} ${file}: ${reason || (error as Error).message}`);
  }
}

function wrongType(source: string, raw: unknown, expected: string): CliError {
  return new CliError(`invalid ${source}: ${shown(raw)} is not accepted; expected ${expected}`);
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** The upstream key that gives each setting, by section of config.toml. */
const ATOMA_KEYS = {
  atoma_sui: {
    http_rpc_node_addr: 'sui-url',
    atoma_package_id: 'sui-package-id',
    atoma_db: 'sui-atoma-db-id',
    usdc_package_id: 'sui-usdc-package-id',
    sui_config_path: 'sui-client-config',
  },
  atoma_state: { database_url: 'atoma-state-url' },
} as const;

/** Addresses that mean every interface: inside atoma-node's container, not on the machine it runs on. */
const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/**
 * atoma-node's config.toml as settings: the Sui network and the atoma-state usage source it implies, the
 * fullnode and the Atoma deployment from [atoma_sui], the node ids, atoma-state's URL, and the address
 * of [atoma_daemon].
 */
export function readAtomaConfig(file: string): ImportedSettings {
  const { parse, TomlError } = require('smol-toml') as typeof import('smol-toml');
  const text = read(file, "atoma-node's config");
  let toml: Record<string, unknown>;
  try {
    // TOML integers are i64; a node id above 2^53 stays exact as a bigint.
    toml = parse(text, { integersAsBigInt: 'asNeeded' });
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const reason = error.message.split('\n')[0]!.replace(/^Invalid TOML document: /, '');
    throw new CliError(`atoma-node's config ${file} is not valid TOML: line ${error.line}: ${reason}`);
  }
  const implied = `--atoma-config ${file}`;
  const settings: Record<string, Imported> = {
    network: { raw: 'sui', source: implied },
    'usage-source': { raw: 'atoma-state', source: implied },
  };
  const section = (name: string): Record<string, unknown> => {
    const value = toml[name];
    if (value === undefined) return {};
    if (!isTable(value)) throw wrongType(`${name} in ${file}`, value, `a table ([${name}])`);
    return value;
  };
  for (const [name, keys] of Object.entries(ATOMA_KEYS)) {
    const table = section(name);
    for (const [key, flag] of Object.entries(keys)) {
      const raw = table[key];
      if (raw === undefined) continue;
      const source = `[${name}] ${key} in ${file}`;
      if (typeof raw !== 'string') throw wrongType(source, raw, 'a quoted string');
      // A relative path is the file's own: relative to the folder of config.toml.
      settings[flag] = { raw: flag === 'sui-client-config' ? resolve(dirname(file), raw) : raw, source };
    }
  }
  const ids = section('atoma_sui').node_small_ids;
  if (ids !== undefined) {
    const source = `[atoma_sui] node_small_ids in ${file}`;
    const integer = (id: unknown) =>
      (typeof id === 'number' && Number.isInteger(id)) || typeof id === 'bigint';
    if (!Array.isArray(ids) || !ids.every(integer)) {
      throw wrongType(source, ids, 'an array of node small ids, like [1, 2]');
    }
    settings['node-small-ids'] = { raw: ids.map(String), source };
  }
  const bind = section('atoma_daemon').service_bind_address;
  if (bind !== undefined)
    Object.assign(settings, bindAddress(bind, `[atoma_daemon] service_bind_address in ${file}`));
  return settings;
}

/**
 * service_bind_address, "host:port", as --host and --port. A wildcard host is the inside of atoma-node's
 * container, which compose publishes on the machine's loopback only (upstream-daemon.md §5.2): the daemon
 * stays on loopback there too, and says how to listen beyond it (docs/DECISIONS.md).
 */
function bindAddress(raw: unknown, source: string): ImportedSettings {
  const match = typeof raw === 'string' ? /^(?:\[([^\]]*)\]|([^:]*)):([0-9]{1,5})$/.exec(raw.trim()) : null;
  if (!match) throw wrongType(source, raw, 'host:port, like "127.0.0.1:3001"');
  const host = match[1] ?? match[2]!;
  const port = { raw: match[3], source };
  if (!WILDCARDS.has(host)) return { host: { raw: host, source }, port };
  return {
    port,
    host: {
      raw: '127.0.0.1',
      source,
      notice:
        `${source} is ${shown(raw)}: every interface inside atoma-node's container, which compose ` +
        "publishes on this machine's loopback only; this daemon listens on 127.0.0.1. To listen on every " +
        'interface, set --host 0.0.0.0 with --auth all',
    },
  };
}

/** The default client.yaml, where the Sui CLI keeps it. */
export function defaultSuiClientConfig(env: NodeJS.ProcessEnv): string {
  return join(env.HOME || homedir(), '.sui', 'sui_config', 'client.yaml');
}

/** YAML's spellings of null, as the failsafe schema leaves them (strings). */
const NULLS = new Set(['', '~', 'null', 'Null', 'NULL']);

/**
 * The Sui CLI's client.yaml as settings: its keystore file (relative to the client.yaml's folder), its
 * active_address (the signer) and its active env's RPC URL. `named` says which setting named the file.
 */
export function readSuiClientConfig(file: string, named: string): ImportedSettings {
  const { parseDocument } = require('yaml') as typeof import('yaml');
  let text: string;
  try {
    text = read(file, 'the Sui client config');
  } catch (error) {
    if (!(error instanceof CliError) || !error.message.endsWith('no such file')) throw error;
    throw new CliError(
      `${error.message} (named by ${named}); give --sui-client-config the client.yaml of this machine`,
    );
  }
  // Failsafe: every scalar a string, so that an address written without quotes is not read as a number.
  const document = parseDocument(text, { schema: 'failsafe', uniqueKeys: true });
  const [problem] = document.errors;
  if (problem) {
    const reason = problem.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    throw new CliError(
      `the Sui client config ${file} is not valid YAML: line ${problem.linePos?.[0].line ?? '?'}: ${reason}`,
    );
  }
  const yaml: unknown = document.toJS();
  if (!isTable(yaml)) throw wrongType(file, yaml, 'a mapping of keystore, envs, active_env, active_address');
  const value = (raw: unknown) => (typeof raw === 'string' && NULLS.has(raw.trim()) ? undefined : raw);
  const settings: Record<string, Imported> = {};

  const keystore = value(yaml.keystore);
  const keystoreSource = `keystore.File in ${file}`;
  if (keystore === undefined) {
    throw new CliError(
      `the Sui client config ${file} has no keystore: expected keystore: { File: <the path of sui.keystore> }`,
    );
  }
  const path = isTable(keystore) ? value(keystore.File) : undefined;
  if (typeof path !== 'string') {
    throw wrongType(
      `keystore in ${file}`,
      keystore,
      'a keystore file, as { File: <the path of sui.keystore> }',
    );
  }
  settings['sui-keystore'] = { raw: resolve(dirname(file), expandHome(path)), source: keystoreSource };

  const address = value(yaml.active_address);
  if (address !== undefined) {
    settings['sui-address'] = { raw: address, source: `active_address in ${file}` };
  }

  const active = value(yaml.active_env);
  if (active !== undefined) {
    const envs = value(yaml.envs) ?? [];
    if (!Array.isArray(envs) || !envs.every(isTable)) {
      throw wrongType(`envs in ${file}`, envs, 'a list of { alias, rpc }');
    }
    const env = envs.find((e) => e.alias === active);
    if (env === undefined) {
      const aliases = envs.map((e) => shown(e.alias)).join(', ') || 'none';
      throw new CliError(
        `invalid active_env in ${file}: ${shown(active)} is not one of its envs (aliases: ${aliases})`,
      );
    }
    const rpc = value(env.rpc);
    if (rpc !== undefined) {
      settings['sui-url'] = { raw: rpc, source: `the rpc of env ${shown(active)} (active_env) in ${file}` };
    }
  }
  return settings;
}

function expandHome(path: string): string {
  return path === '~' || path.startsWith('~/') ? join(homedir(), path.slice(1)) : path;
}
