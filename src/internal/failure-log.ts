import type { Logger } from 'pino';

/**
 * A failure that recurs while something retries (an unreachable fullnode, a store that does not answer),
 * in the log: said once, again only when its reason changes, and once when it stops. The retries between
 * go to debug, so that a fullnode down for an hour is one line and not hundreds with stack traces.
 */
export class FailureLog {
  readonly #log: Logger;
  #reason: string | undefined;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Whether a failure was said and has not stopped since. */
  get failing(): boolean {
    return this.#reason !== undefined;
  }

  /** Says the failure at `level` when its reason is new; at debug when it is the one said last. */
  failed(reason: string, level: 'warn' | 'error', fields: object, message: string): void {
    if (reason === this.#reason) {
      this.#log.debug(fields, message);
      return;
    }
    this.#reason = reason;
    this.#log[level](fields, message);
  }

  /** Says, at info, that the failure said last has stopped; nothing when none was said. */
  recovered(fields: object, message: string): void {
    if (this.#reason === undefined) return;
    this.#reason = undefined;
    this.#log.info(fields, message);
  }

  /** Forgets the failure without a word (something else said that it stopped). */
  clear(): void {
    this.#reason = undefined;
  }
}
