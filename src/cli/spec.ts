import type { Daemon } from './connection.ts';

/** The shape of a client command (CommandSpec), what it runs with (Context), and the shared option groups. */

/** One option of a command, as node:util parseArgs takes it, with its help line. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** The value's placeholder in the help, e.g. F for --min-fill F. */
  arg?: string;
  /** A switch that `--no-NAME` turns off (the daemon's --demo / --no-demo). */
  negatable?: boolean;
  describe: string;
}

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

/**
 * A request of the daemon's HTTP API: the method, then the path with {name} for each path parameter, as
 * in `GET /stacks/nodes/{node}`.
 */
export type Route = `${'GET' | 'POST' | 'DELETE'} /${string}`;

/** What a command runs with: its parsed arguments, the daemon, and the output streams. */
export interface Context {
  /** The command's full name, e.g. `stacks` or `dev stack buy`. */
  command: string;
  /** The request the command makes (its spec's route). */
  route: Route;
  values: OptionValues;
  args: string[];
  json: boolean;
  /** --timeout in milliseconds, when given. */
  timeoutMs: number | undefined;
  daemon(): Daemon;
  /** A message of the daemon on one line, naming the commands instead of the HTTP requests it names. */
  cliWords(text: string): string;
  out(text: string): Promise<void>;
  err(text: string): Promise<void>;
}

/**
 * Which shared options a command takes besides the connection and output ones: a chain write takes an
 * Idempotency-Key and gas options, a usage report the key; a read, a dev actor and a control of the
 * daemon (the autopilot's) take neither.
 */
export type Kind = 'read' | 'chain-write' | 'usage-write' | 'dev' | 'control';

export interface CommandSpec {
  /** The full command name: `stacks`, `dev stack buy`. */
  name: string;
  /** The request the command makes; messages of the daemon that name it name the command instead. */
  route: Route;
  /** The synopsis after the name, e.g. `[node] [--min-fill F]`. */
  synopsis: string;
  summary: string;
  /** Paragraphs of the help, each a list of lines. */
  description: string[][];
  arguments?: [string, string][];
  options?: Record<string, OptionSpec>;
  /**
   * Request body fields the daemon's messages may name, and the option of this command that sets each
   * (`num_claimed_compute_units: 'claimed'`): the client prints the option instead of the field.
   */
  fields?: Record<string, string>;
  kind: Kind;
  positionals: { min: number; max: number };
  examples: string[];
  run(ctx: Context): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------
// Shared option groups

export const CONNECTION_OPTIONS: Record<string, OptionSpec> = {
  json: { type: 'boolean', describe: "print the daemon's JSON answer as is (exact digits), one document" },
  url: {
    type: 'string',
    arg: 'URL',
    describe: 'the daemon to talk to (env NODE_DAEMON_URL); default: from its settings',
  },
  token: {
    type: 'string',
    arg: 'TOKEN',
    describe: 'API token (env NODE_DAEMON_TOKEN); default: the file <data dir>/api-token, if any',
  },
  host: {
    type: 'string',
    arg: 'HOST',
    describe: "the daemon's --host setting (env NODE_DAEMON_HOST), default 127.0.0.1",
  },
  port: {
    type: 'string',
    arg: 'PORT',
    describe: "the daemon's --port setting (env NODE_DAEMON_PORT), default 3001",
  },
  'data-dir': {
    type: 'string',
    arg: 'DIR',
    describe: "the daemon's data dir, where its api-token is (env NODE_DAEMON_DATA_DIR)",
  },
  config: { type: 'string', arg: 'FILE', describe: "the daemon's JSON config file (env NODE_DAEMON_CONFIG)" },
  timeout: {
    type: 'string',
    arg: 'SECONDS',
    describe: 'give up waiting for the daemon after this long (default 10 for reads, 30 for writes)',
  },
  help: { type: 'boolean', short: 'h', describe: 'this help' },
};

const IDEMPOTENCY_OPTION: Record<string, OptionSpec> = {
  'idempotency-key': {
    type: 'string',
    arg: 'KEY',
    describe: 'makes a retry safe; default: a fresh key, named when the outcome is unknown',
  },
};

const GAS_OPTIONS: Record<string, OptionSpec> = {
  'gas-budget': {
    type: 'string',
    arg: 'MIST',
    describe: 'gas budget of the transaction; default: the daemon chooses',
  },
  'gas-price': { type: 'string', arg: 'MIST', describe: 'gas price; default: the reference price' },
  gas: { type: 'string', arg: 'COIN', describe: 'the gas coin object id to pay with' },
};

export const BADGE_OPTION: Record<string, OptionSpec> = {
  badge: {
    type: 'string',
    arg: 'BADGE_ID',
    describe: "act for this NodeBadge (0x...); default: the signer's badge with the lowest node id",
  },
};

export function sharedOptions(kind: Kind): Record<string, OptionSpec> {
  switch (kind) {
    case 'chain-write':
      return { ...IDEMPOTENCY_OPTION, ...GAS_OPTIONS };
    case 'usage-write':
      return IDEMPOTENCY_OPTION;
    default:
      return {};
  }
}

/** Every option a command takes: its own, its kind's, and the connection and output ones. */
export function allOptions(spec: CommandSpec): Record<string, OptionSpec> {
  return { ...spec.options, ...sharedOptions(spec.kind), ...CONNECTION_OPTIONS };
}
