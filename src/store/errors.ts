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

// PostgreSQL SQLSTATE codes; https://www.postgresql.org/docs/current/errcodes-appendix.html
const PG_RETRYABLE: Record<string, string> = {
  '40001': 'store_serialization_failure',
  '40P01': 'store_deadlock',
  // node_daemon_created_guard (migration 0010): a stack the transaction creates was created meanwhile.
  NDS01: 'store_created_meanwhile',
  '55P03': 'store_lock_not_available',
  '57P01': 'store_server_shutdown',
  '57P02': 'store_server_shutdown',
  '57P03': 'store_cannot_connect_now',
  '53300': 'store_too_many_connections',
};
const PG_FATAL: Record<string, string> = {
  '53100': 'store_full',
  '3D000': 'store_no_database',
};
/** By SQLSTATE class (the first two characters), when the code itself has no entry above. */
const PG_RETRYABLE_CLASS: Record<string, string> = { '08': 'store_connection' };
const PG_FATAL_CLASS: Record<string, string> = {
  '23': 'store_constraint',
  '42': 'store_query',
  '28': 'store_auth',
};
/** Socket errors of the connection to the server (Node's errno codes): the server may come back. */
const SOCKET_RETRYABLE: Record<string, string> = {
  ECONNREFUSED: 'store_unreachable',
  ECONNRESET: 'store_connection_reset',
  ETIMEDOUT: 'store_timeout',
  EPIPE: 'store_connection_reset',
  EHOSTUNREACH: 'store_unreachable',
  ENETUNREACH: 'store_unreachable',
  EAI_AGAIN: 'store_unreachable',
};
// Five characters, digits and capitals; no SQLSTATE class starts with E, which every Node errno code does.
const SQLSTATE = /^[0-9A-DF-Z][0-9A-Z]{4}$/;

/**
 * Translates an error thrown by node-postgres (`pg`): a server error by its SQLSTATE, a socket error by its
 * errno code. Anything else passes through unchanged.
 */
export function fromPostgresError(error: unknown): unknown {
  if (error instanceof StoreError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return error;
  const detail = (error as Error).message || code;
  const socket = SOCKET_RETRYABLE[code];
  if (socket) return new StoreError(socket, `PostgreSQL: ${detail}`, true, { cause: error });
  if (!SQLSTATE.test(code)) return error;
  const message = `PostgreSQL: ${detail} (SQLSTATE ${code})`;
  const retryable = PG_RETRYABLE[code] ?? PG_RETRYABLE_CLASS[code.slice(0, 2)];
  if (retryable) return new StoreError(retryable, message, true, { cause: error });
  const fatal = PG_FATAL[code] ?? PG_FATAL_CLASS[code.slice(0, 2)] ?? 'store_error';
  return new StoreError(fatal, message, false, { cause: error });
}

/**
 * Errors of opening a connection: translated by code, and otherwise (pg's connect timeout, a pool that
 * has no client free in time, carry no code) a retryable store_connect_failed.
 */
export function connectError(error: unknown): StoreError {
  const translated = fromPostgresError(error);
  if (translated instanceof StoreError) return translated;
  const message = error instanceof Error ? error.message : String(error);
  return new StoreError('store_connect_failed', `PostgreSQL: ${message}`, true, { cause: error });
}

/**
 * Errors of a statement: translated by code; and a plain Error from pg that carries neither a SQLSTATE nor
 * an errno code is how it reports a connection that broke (terminated by the server, or already unusable):
 * retryable, as the pool replaces the connection.
 */
export function statementError(error: unknown): unknown {
  const translated = fromPostgresError(error);
  // pg's DatabaseError (a subclass, with a SQLSTATE) was translated above; only a plain Error is left.
  if (translated !== error || !(error instanceof Error) || error.constructor !== Error) return translated;
  return new StoreError('store_connection_lost', `PostgreSQL: ${error.message}`, true, { cause: error });
}
