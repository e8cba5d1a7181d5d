/**
 * Store failures, translated at the store boundary from the driver's codes (SQLite extended result codes,
 * PostgreSQL SQLSTATE), never from message text. Loops retry only retryable ones.
 */
export class StoreError extends Error {
  /** Stable project code, e.g. store_busy, store_io, store_closed. */
  readonly code: string;
  readonly retryable: boolean;
  constructor(code: string, message: string, retryable: boolean, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
    this.code = code;
    this.retryable = retryable;
  }
}

// Primary SQLite result codes (the low byte of an extended code); https://sqlite.org/rescode.html
const SQLITE_RETRYABLE: Record<number, string> = { 5: 'store_busy', 6: 'store_locked' };
const SQLITE_FATAL: Record<number, string> = {
  8: 'store_read_only',
  10: 'store_io',
  11: 'store_corrupt',
  13: 'store_full',
  14: 'store_cannot_open',
  19: 'store_constraint',
  26: 'store_not_a_database',
};

/** Translates an error thrown by node:sqlite; anything else passes through unchanged. */
export function fromSqliteError(error: unknown): unknown {
  if (error instanceof StoreError) return error;
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  if (typeof errcode !== 'number') return error;
  const primary = errcode & 0xff;
  const message = `SQLite: ${(error as Error).message}`;
  const retryable = SQLITE_RETRYABLE[primary];
  if (retryable) return new StoreError(retryable, message, true, { cause: error });
  return new StoreError(SQLITE_FATAL[primary] ?? 'store_error', message, false, { cause: error });
}
