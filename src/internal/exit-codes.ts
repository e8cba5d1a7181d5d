/** Process exit codes, one table for the daemon and its command line (documented in docs/CLI.md). */
export const ExitCode = {
  ok: 0,
  /** An unexpected failure; the message says what happened. */
  failure: 1,
  /** Bad flags, settings or arguments: nothing was started or changed. */
  usage: 2,
  /** The daemon cannot start: the address or port is taken or not available, or the data dir is in use. */
  listen: 3,
  /** Stopped by SIGINT or SIGTERM before the work was done (replay resumes where it stopped; start had not listened). */
  interrupted: 130,
} as const;

/** An error whose message is one line meant for the operator, with the exit code to leave with. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = ExitCode.usage) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}
