import { type DestinationStream, type LevelWithSilent, type Logger, pino } from 'pino';
import pretty from 'pino-pretty';

/** Paths that may hold secrets; pino replaces their values before anything is written. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'token',
];

/**
 * The structured JSON logger, one line per record. It writes to stderr so that stdout stays free for
 * command output (replay's summary, the client commands' tables).
 */
export function createLogger(
  level: LevelWithSilent,
  destination?: DestinationStream,
  options: { pretty?: boolean } = {},
): Logger {
  // On a terminal, readable lines (pino-pretty, synchronous so nothing is lost at exit); else JSON lines.
  const target =
    destination ??
    (options.pretty
      ? pretty({ destination: 2, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid' })
      : undefined);
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    target ?? pino.destination({ dest: 2, sync: true }),
  );
}
