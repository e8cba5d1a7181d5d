import { CliError } from '../internal/exit-codes.ts';
import { seconds, usageError } from './args.ts';
import { ACCESS } from './commands/access.ts';
import { AUTOPILOT } from './commands/autopilot.ts';
import { DEV } from './commands/dev.ts';
import { READS } from './commands/reads.ts';
import { WATCH } from './commands/watch.ts';
import { WEBHOOKS } from './commands/webhooks.ts';
import { WRITES } from './commands/writes.ts';
import {
  type Connection,
  type ConnectionFlags,
  Daemon,
  DaemonProblem,
  resolveConnection,
} from './connection.ts';
import { ClientExitCode } from './exit-codes.ts';
import { oneLine } from './format.ts';
import { type CommandTable, helpText } from './help.ts';
import { parseCommandLine } from './parse.ts';
import { inCliWords } from './routes.ts';
import type { CommandSpec, Context } from './spec.ts';
import { didYouMean } from './suggest.ts';

export { ClientExitCode } from './exit-codes.ts';

/** Every client command, in the order of the help; the groups are the overview's sections. */
export const COMMANDS: readonly CommandSpec[] = [
  ...READS,
  ...WRITES,
  ...AUTOPILOT,
  ...WATCH,
  ...WEBHOOKS,
  ...DEV,
  ...ACCESS,
];
export const GROUPS: CommandTable['groups'] = {
  reads: READS,
  writes: WRITES,
  autopilot: AUTOPILOT,
  live: WATCH,
  webhooks: WEBHOOKS,
  dev: DEV,
  access: ACCESS,
};

/**
 * The help of a client command (`stacks`, `dev stack buy`), of a group (`dev`, `dev task`), or with no
 * argument the overview of all client commands, for `node-daemon --help`.
 */
export function clientHelp(command?: string): string {
  return helpText({ commands: COMMANDS, groups: GROUPS }, command);
}

/** The top-level names of the client commands; `dev` takes subcommands. */
export const CLIENT_COMMANDS: readonly string[] = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0]!))];

export interface ClientIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/**
 * Runs one client command against the daemon and answers the exit code: 0 ok, 2 usage, 4 refused by the
 * daemon, 5 daemon unreachable or failing, 1 unexpected. `argv` is what follows the command name.
 */
export async function runClient(
  command: string,
  argv: string[],
  env: NodeJS.ProcessEnv,
  io: ClientIo,
): Promise<number> {
  const out = writer(io.stdout);
  const err = writer(io.stderr);
  // A reader that goes away (`| head`) must not crash the command: its writes just go nowhere.
  const ignore = () => {};
  io.stdout.on('error', ignore);
  io.stderr.on('error', ignore);
  let json = false;
  let daemon: Daemon | undefined;
  try {
    const { name, rest } = resolveName(command, argv);
    if (wantsHelp(rest)) {
      await out(clientHelp(name));
      return ClientExitCode.ok;
    }
    const spec = COMMANDS.find((c) => c.name === name);
    if (!spec) throw groupError(name, rest);
    const { values, positionals } = parseCommandLine(spec, rest);
    json = values.json === true;
    checkCount(spec, positionals);
    const timeout = typeof values.timeout === 'string' ? seconds(spec.name, values.timeout) : undefined;
    const ctx: Context = {
      command: spec.name,
      route: spec.route,
      values,
      args: positionals,
      json,
      timeoutMs: timeout === undefined ? undefined : Math.round(timeout * 1000),
      daemon() {
        daemon ??= new Daemon(resolveConnection(values as ConnectionFlags, env));
        return daemon;
      },
      cliWords: (text) => inCliWords(oneLine(text), COMMANDS),
      out,
      err,
    };
    await spec.run(ctx);
    return ClientExitCode.ok;
  } catch (error) {
    if (error instanceof CliError) {
      await err(`node-daemon: ${oneLine(error.message)}`);
      return error.exitCode;
    }
    if (error instanceof DaemonProblem) {
      if (json) await out(error.text.trim());
      const { line, exitCode } = describeProblem(error, daemon?.connection, daemon?.underPath());
      await err(`node-daemon: ${line}`);
      return exitCode;
    }
    await err(`node-daemon: unexpected error: ${(error as Error)?.stack ?? String(error)}`);
    return ClientExitCode.failure;
  } finally {
    io.stdout.off('error', ignore);
    io.stderr.off('error', ignore);
  }
}

/** `dev task create ...` → the command `dev task create` and the arguments after it. */
function resolveName(command: string, argv: string[]): { name: string; rest: string[] } {
  if (!CLIENT_COMMANDS.includes(command)) throw new CliError(unknownCommand(command, []));
  const path = [command];
  let i = 0;
  while (i < argv.length) {
    const next = [...path, argv[i]].join(' ');
    if (!COMMANDS.some((c) => c.name === next || c.name.startsWith(`${next} `))) break;
    path.push(argv[i]!);
    i += 1;
  }
  return { name: path.join(' '), rest: argv.slice(i) };
}

function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

function groupError(name: string, rest: string[]): CliError {
  const children = [
    ...new Set(
      COMMANDS.filter((c) => c.name.startsWith(`${name} `)).map(
        (c) => c.name.slice(name.length + 1).split(' ')[0]!,
      ),
    ),
  ];
  const next = rest[0];
  if (next === undefined || next.startsWith('-')) {
    return usageError(name, `${name} needs a command: ${children.join(', ')}`);
  }
  const hint = didYouMean(next, children, `${name} `);
  return usageError(
    name,
    `unknown command ${name} ${next}${hint}; the ${name} commands are ${children.join(', ')}`,
  );
}

/**
 * The line for a command that is none of the client's nor of `daemonCommands` (start, replay, ...),
 * naming the nearest one; for src/main.ts.
 */
export function unknownCommand(command: string, daemonCommands: readonly string[]): string {
  return `unknown command ${command}${didYouMean(command, [...CLIENT_COMMANDS, ...daemonCommands])}; see node-daemon --help`;
}

function checkCount(spec: CommandSpec, positionals: string[]): void {
  const { min, max } = spec.positionals;
  if (positionals.length < min) {
    throw usageError(spec.name, `missing arguments: node-daemon ${spec.name} ${spec.synopsis}`);
  }
  if (positionals.length > max) {
    // `autopilot frob`: a command that has subcommands names them.
    if (max === 0 && COMMANDS.some((c) => c.name.startsWith(`${spec.name} `))) {
      throw groupError(spec.name, positionals);
    }
    const extra = positionals.slice(max).join(' ');
    throw usageError(
      spec.name,
      max === 0 ? `${spec.name} takes no arguments (got ${extra})` : `unexpected argument(s): ${extra}`,
    );
  }
}

interface Abort {
  name?: unknown;
  code?: unknown;
  module?: unknown;
}

/**
 * One line for a problem the daemon answered, and the exit code of its class: a 4xx is a refusal (4),
 * anything else (5xx) the daemon failing (5). A 422 names the abort and the transaction.
 */
export function describeProblem(
  error: DaemonProblem,
  connection: Connection | undefined,
  underPath?: string,
): { line: string; exitCode: number } {
  const { problem } = error;
  const detail = inCliWords(oneLine(problem.detail), COMMANDS);
  const url = connection?.url ?? 'the daemon';
  if (error.status >= 400 && error.status < 500) {
    let line = detail;
    const abort = problem.abort as Abort | undefined;
    const digest = typeof problem.tx_digest === 'string' ? problem.tx_digest : undefined;
    if (abort && typeof abort.name === 'string' && !line.includes(abort.name)) {
      line += ` (abort ${abort.name}, code ${String(abort.code)} in ${String(abort.module)})`;
    }
    if (digest !== undefined && !line.includes(digest)) line += `; transaction ${digest}`;
    if (error.status === 401 && connection?.tokenSource === undefined) {
      line +=
        "; this client found no token: pass --token, set NODE_DAEMON_TOKEN, or point --data-dir at the daemon's data dir";
    } else if ((error.status === 401 || error.status === 403) && connection?.tokenSource !== undefined) {
      line += ` (this client sent the token from ${connection.tokenSource})`;
    } else if (error.status === 404 && problem.code === 'not_found') {
      // A route the daemon has, not found: the address is wrong (exit 5, as for no daemon there).
      if (underPath !== undefined)
        return { line: `${line}; ${underPath}`, exitCode: ClientExitCode.unavailable };
      line += error.path.startsWith('/dev/')
        ? `; the dev commands need a daemon on the embedded dev network (--network dev), and ${url} is not`
        : `; is the daemon at ${url} older than this command?`;
    }
    return { line, exitCode: ClientExitCode.refused };
  }
  const parts = [`HTTP ${error.status}`];
  if (typeof problem.code === 'string') parts.push(problem.code);
  if (typeof problem.request_id === 'string') parts.push(`request ${problem.request_id}`);
  const retry = error.headers.get('retry-after');
  const digest =
    typeof problem.tx_digest === 'string' && !detail.includes(problem.tx_digest)
      ? `; transaction ${problem.tx_digest}`
      : '';
  return {
    line: `the daemon at ${url} could not do it: ${detail} (${parts.join(', ')})${digest}${retry ? `; retry in ${retry} s` : ''}`,
    exitCode: ClientExitCode.unavailable,
  };
}

/** Writes one block of text and a newline, and waits until the stream took it. */
function writer(stream: NodeJS.WritableStream): (text: string) => Promise<void> {
  return (text) =>
    new Promise<void>((resolve) => {
      stream.write(text.endsWith('\n') ? text : `${text}\n`, () => resolve());
    });
}
