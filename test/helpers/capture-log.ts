import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { createLogger } from '../../src/internal/logger.ts';

/** A real pino logger whose JSON lines are kept in memory for assertions. */
export function captureLogger(level: 'debug' | 'info' | 'warn' = 'debug'): {
  logger: Logger;
  lines: () => Record<string, unknown>[];
} {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const logger = createLogger(level, stream);
  return {
    logger,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
