import { ExitCode } from '../internal/exit-codes.ts';

/**
 * The client commands' exit codes: the daemon's table (src/internal/exit-codes.ts) plus two classes of
 * their own, documented in docs/CLI.md. Proposed for src/internal/exit-codes.ts as `refused` and
 * `unavailable`.
 */
export const ClientExitCode = {
  ...ExitCode,
  /** The daemon refused the request: a 4xx problem (bad value, not allowed now, contract abort). */
  refused: 4,
  /** The daemon could not be reached, did not answer in time, or failed (a 5xx problem). */
  unavailable: 5,
} as const;
