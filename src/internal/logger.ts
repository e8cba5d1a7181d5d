import { type DestinationStream, type Logger, pino } from 'pino';
import type { LogLevel } from '../config.ts';

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
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 2, sync: true }),
  );
}
