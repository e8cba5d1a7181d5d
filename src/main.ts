import { mkdirSync } from 'node:fs';
import { CLIENT_COMMANDS, clientHelp, runClient, unknownCommand } from './cli/index.ts';
import { parseOptions } from './cli/parse.ts';
import type { OptionSpec } from './cli/spec.ts';
import { CONFIG_FLAG, type Config, loadConfig, SETTINGS } from './config.ts';
import type { Daemon } from './daemon.ts';
import { parseDuration } from './internal/duration.ts';
import { CliError, ExitCode } from './internal/exit-codes.ts';
import { keepRequestsYoung } from './internal/heap.ts';
import { VERSION } from './internal/version.ts';

// The daemon's own modules (Fastify, the stores, the SDK) load only for the commands that use them, so
// that the client commands start fast.

/** The daemon's own commands; the client's are CLIENT_COMMANDS. */
const DAEMON_COMMANDS = ['start', 'replay', 'token', 'db', 'help', 'version'];

/** The options of the daemon's commands: every setting (a switch also as --no-NAME), help, version. */
const SETTING_OPTIONS: Record<string, OptionSpec> = Object.fromEntries([
  ...SETTINGS.map((s): [string, OptionSpec] => [
    s.flag,
    s.boolean
      ? { type: 'boolean', negatable: true, describe: s.describe }
      : { type: 'string', arg: s.flag.replace(/^.*-/, '').toUpperCase(), describe: s.describe },
  ]),
  [CONFIG_FLAG.flag, { type: 'string', arg: 'FILE', describe: 'JSON file of settings' }],
  ['help', { type: 'boolean', short: 'h', describe: 'the help' }],
  ['grace', { type: 'string', arg: 'D', describe: 'token rotate: how long the old token stays valid (10m)' }],
  ['now', { type: 'boolean', describe: 'token rotate: refuse the old token at once' }],
  ['version', { type: 'boolean', describe: 'the version' }],
]);

const SETTINGS_HELP = [
  ...SETTINGS.map((s) => `  --${s.flag.padEnd(25)} ${s.env.padEnd(36)} ${s.describe}`),
  `  --${CONFIG_FLAG.flag.padEnd(25)} ${CONFIG_FLAG.env.padEnd(36)} JSON file of settings (keys are the flag names)`,
].join('\n');

const HELP = `node-daemon ${VERSION}: the Atoma node operator's local daemon

Usage:
  node-daemon start [settings]          run the daemon (HTTP API on 127.0.0.1:3001)
  node-daemon replay FILE [settings]    apply a JSON-lines file of Sui events to the store, then exit
  node-daemon token rotate [--grace D | --now] [settings]
                                        replace the API token (<data dir>/api-token); the old one stays
                                        valid for --grace (10m), or not at all with --now
  node-daemon token create|list|revoke  named tokens with a scope (ask the running daemon; see below)
  node-daemon db migrate|status         apply or list the PostgreSQL migrations (DATABASE_URL)
  node-daemon help                      this text
  node-daemon --version

Settings (flag, environment variable, meaning); a flag beats the environment, which beats the
config file, which beats atoma-node's config.toml (--atoma-config), which beats the Sui CLI's
client.yaml (--sui-client-config), which beats the default:
${SETTINGS_HELP}

Examples:
  node-daemon start
  node-daemon start --atoma-config ~/atoma-node/config.toml --sui-client-config ~/.sui/sui_config/client.yaml
  NODE_DAEMON_PORT=3002 node-daemon start --data-dir /var/lib/node-daemon
  node-daemon replay test/fixtures/events.jsonl
  curl -s http://127.0.0.1:3001/stacks/nodes/1?min_fill_fraction=0.8

Exit codes: 0 ok, 1 failure, 2 bad usage or settings, 3 cannot listen or the data dir is in use,
130 interrupted (a replay, or a start before it listened).
API reference: http://127.0.0.1:3001/docs once the daemon runs.`;

interface Invocation {
  command: string;
  args: string[];
  flags: Record<string, string | boolean | undefined>;
}

/**
 * The daemon's command line, judged by the client's layer (src/cli/parse.ts), so that a mistake reads
 * the same for every command: `unknown option --prot (did you mean --port?); see node-daemon start
 * --help`. Messages name the command when it comes first, as main() makes sure a command word does.
 */
function parse(argv: string[]): Invocation {
  const first = argv[0];
  const named = first !== undefined && ['start', 'replay', 'token', 'db'].includes(first) ? first : '';
  const parsed = parseOptions(named, SETTING_OPTIONS, argv);
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const [command = values.version ? 'version' : 'help', ...args] = parsed.positionals;
  if (values.help) return { command: 'help', args: [], flags: {} };
  const { help: _help, version: _version, ...flags } = values;
  return { command, args, flags };
}

async function start(config: Config): Promise<number> {
  keepRequestsYoung();
  const { createLogger } = await import('./internal/logger.ts');
  const logger = createLogger(config.logLevel, undefined, { pretty: process.stderr.isTTY === true });
  // A signal while it starts stops the start where it is (exit 130); a step that does not end (a
  // database that never answers) is given up after the shutdown timeout, or at a second signal.
  const starting = new AbortController();
  let giveUp: (error: CliError) => void = () => {};
  const gaveUp = new Promise<never>((_, reject) => {
    giveUp = reject;
  });
  const interrupted = (signal: NodeJS.Signals) =>
    new CliError(
      `interrupted by ${signal} while starting, before it listened: nothing was served`,
      ExitCode.interrupted,
    );
  const onStartSignal = (signal: NodeJS.Signals) => {
    if (starting.signal.aborted) return giveUp(interrupted(signal));
    logger.info({ signal, timeoutSeconds: config.shutdownTimeout }, 'interrupted while starting; stopping');
    starting.abort(signal);
    setTimeout(() => giveUp(interrupted(signal)), config.shutdownTimeout * 1000).unref();
  };
  // One listener from the first moment to the exit, which hands the signal to the phase's handler:
  // removing a listener drops a signal that arrived but was not dispatched yet, and before this one is
  // added a signal kills the process without a word.
  let onSignal = onStartSignal;
  const dispatch = (signal: NodeJS.Signals) => onSignal(signal);
  process.on('SIGINT', dispatch);
  process.on('SIGTERM', dispatch);
  let daemon: Daemon;
  try {
    // Fastify, the stores and the chain SDKs load here, under the signal handler.
    const { startDaemon } = await import('./daemon.ts');
    daemon = await Promise.race([startDaemon(config, logger, starting.signal), gaveUp]);
  } catch (error) {
    process.off('SIGINT', dispatch);
    process.off('SIGTERM', dispatch);
    throw error;
  }
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now');
        return resolve(ExitCode.failure);
      }
      stopping = true;
      logger.info({ signal, timeoutSeconds: config.shutdownTimeout }, 'shutting down');
      const timer = setTimeout(() => {
        logger.error('in-flight work did not finish within the shutdown timeout; exiting anyway');
        resolve(ExitCode.failure);
      }, config.shutdownTimeout * 1000);
      timer.unref();
      daemon.close().then(
        () => {
          clearTimeout(timer);
          logger.info('stopped');
          resolve(ExitCode.ok);
        },
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          resolve(ExitCode.failure);
        },
      );
    };
    onSignal = stop;
    // A signal that came as it began to listen: it listened, so this is a stop like any other.
    if (starting.signal.aborted) stop(starting.signal.reason as NodeJS.Signals);
  });
}

async function replay(config: Config, args: string[]): Promise<number> {
  if (args.length !== 1) throw new CliError('replay takes exactly one FILE argument; see node-daemon --help');
  const file = args[0]!;
  const { FileEventSource } = await import('./indexer/file-source.ts');
  const { catchUp } = await import('./indexer/run.ts');
  const { createLogger } = await import('./internal/logger.ts');
  const { openStore } = await import('./store/open.ts');
  try {
    FileEventSource.check(file);
  } catch (error) {
    throw new CliError(`cannot replay: ${(error as Error).message}`);
  }
  const logger = createLogger(config.logLevel);
  const store = await openStore(config);
  const source = new FileEventSource(file);
  const started = performance.now();
  // A signal stops the replay between pages; every page already applied stays, with its cursor.
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const { pages, totals } = await catchUp(store, source, logger, { signal: stop.signal });
    const ms = Math.round(performance.now() - started);
    process.stdout.write(
      `${stop.signal.aborted ? 'interrupted' : 'replayed'} ${file}: ${totals.applied} applied, ` +
        `${totals.duplicate} duplicate, ${totals.ignored} ignored, ${totals.unknown} unknown, ` +
        `${totals.malformed} malformed, ${totals.orphaned} orphaned (${pages} pages, ${ms} ms) into ${store.location}\n`,
    );
    if (stop.signal.aborted) {
      process.stderr.write('node-daemon: replay interrupted; run the same command again to resume\n');
      return ExitCode.interrupted;
    }
    return ExitCode.ok;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await source.close();
    await store.close();
  }
}

/** `db migrate` applies pending migrations; `db status` lists them. PostgreSQL only (SQLite migrates at open). */
async function db(config: Config, args: string[]): Promise<number> {
  const [action] = args;
  if (args.length !== 1 || (action !== 'migrate' && action !== 'status')) {
    throw new CliError('usage: node-daemon db migrate|status (with DATABASE_URL or --database-url)');
  }
  if (config.databaseUrl === undefined) {
    throw new CliError(
      'db migrate and db status work on PostgreSQL (set DATABASE_URL or --database-url); the embedded SQLite store migrates itself at start',
    );
  }
  const { migrate, migrationStatus, redactUrl } = await import('./store/postgres/migrations.ts');
  const schema = config.databaseSchema;
  const where = `${redactUrl(config.databaseUrl)}, schema ${schema}`;
  try {
    if (action === 'migrate') {
      const { applied, moved } = await migrate(config.databaseUrl, schema);
      if (moved.length > 0) {
        process.stdout.write(`${where}: moved the store from schema public into it (${moved.join(', ')})\n`);
      }
      process.stdout.write(
        applied.length === 0 ? `${where}: up to date\n` : `${where}: applied ${applied.join(', ')}\n`,
      );
      return ExitCode.ok;
    }
    const states = await migrationStatus(config.databaseUrl, schema);
    process.stdout.write(`the store: ${where}\n`);
    for (const m of states) {
      process.stdout.write(
        `${String(m.version).padStart(4, '0')}  ${m.state.padEnd(8)} ${m.name}${m.appliedAt ? `  (${m.appliedAt})` : ''}\n`,
      );
    }
    const bad = states.filter((m) => m.state === 'changed' || m.state === 'unknown');
    return bad.length > 0 ? ExitCode.failure : ExitCode.ok;
  } catch (error) {
    throw new CliError(
      `${action} failed on ${where}: ${(error as Error).message.replace(/\s*\n\s*/g, ' ')}`,
      ExitCode.failure,
    );
  }
}

async function token(config: Config, args: string[], flags: RotateFlags): Promise<number> {
  if (args.length !== 1 || args[0] !== 'rotate') {
    throw new CliError(
      'usage: node-daemon token rotate [--grace D | --now] [--data-dir DIR]; token create|list|revoke ask the running daemon',
    );
  }
  const { DEFAULT_ROTATE_GRACE_MS, rotateToken } = await import('./http/security.ts');
  if (flags.now && flags.grace !== undefined)
    throw new CliError('token rotate takes --grace D or --now, not both');
  let graceMs = DEFAULT_ROTATE_GRACE_MS;
  if (flags.now) graceMs = 0;
  else if (flags.grace !== undefined) {
    const parsed = parseDuration(flags.grace);
    if (parsed === undefined) {
      throw new CliError(
        `--grace must be a duration such as 90s, 10m or 1h (0 cuts at once); got ${JSON.stringify(flags.grace)}`,
      );
    }
    graceMs = parsed;
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const now = Date.now();
  const file = rotateToken(config.dataDir, graceMs, now);
  const old =
    graceMs === 0
      ? 'the old one is refused at once'
      : `the old one stays valid until ${new Date(now + graceMs).toISOString()} (${Math.round(graceMs / 1000)} s; --now cuts at once)`;
  process.stdout.write(
    `replaced the API token in ${file}; a running daemon uses the new one within a second, and ${old}\n`,
  );
  return ExitCode.ok;
}

interface RotateFlags {
  grace?: string | undefined;
  now?: boolean | undefined;
}

export async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  // The client commands parse their own flags (--json, --url, ...).
  const [first, ...rest] = argv;
  // `token rotate` works on the data directory's file; `token create|list|revoke` are the daemon's routes.
  const localToken = first === 'token' && (rest[0] === 'rotate' || rest[0] === undefined);
  if (first !== undefined && CLIENT_COMMANDS.includes(first) && !localToken) {
    return runClient(first, rest, env, { stdout: process.stdout, stderr: process.stderr });
  }
  if (first === 'help' && rest[0] !== undefined && CLIENT_COMMANDS.includes(rest[0])) {
    process.stdout.write(`${clientHelp(rest.join(' '))}\n`);
    return ExitCode.ok;
  }
  // A mistyped command is named (with the nearest one) before its options are judged.
  if (first !== undefined && !first.startsWith('-') && !DAEMON_COMMANDS.includes(first)) {
    throw new CliError(unknownCommand(first, DAEMON_COMMANDS));
  }
  const { command, args, flags: parsedFlags } = parse(argv);
  const { grace, now, ...flags } = parsedFlags;
  if (command !== 'token' && (grace !== undefined || now !== undefined)) {
    throw new CliError(`--grace and --now are options of token rotate, not of ${command}`);
  }
  switch (command) {
    case 'help':
      process.stdout.write(`${HELP}\n\n${clientHelp()}\n`);
      return ExitCode.ok;
    case 'version':
      process.stdout.write(`${VERSION}\n`);
      return ExitCode.ok;
    case 'start':
      if (args.length > 0)
        throw new CliError(`start takes no arguments (got ${args.join(' ')}); see node-daemon start --help`);
      return start(loadConfig(flags, env));
    case 'replay':
      return replay(loadConfig(flags, env), args);
    case 'token':
      return token(loadConfig(flags, env), args, {
        grace: typeof grace === 'string' ? grace : undefined,
        now: now === true,
      });
    case 'db':
      return db(loadConfig(flags, env), args);
    default:
      throw new CliError(unknownCommand(command, DAEMON_COMMANDS));
  }
}

if (import.meta.main) {
  main(process.argv.slice(2), process.env).then(
    (code) => process.exit(code),
    (error: unknown) => {
      if (error instanceof CliError) {
        process.stderr.write(`node-daemon: ${error.message}\n`);
        process.exit(error.exitCode);
      }
      process.stderr.write(`node-daemon: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
      process.exit(ExitCode.failure);
    },
  );
}
