import { RpcError } from '@mysten/sui/grpc';

/**
 * How a call to the fullnode failed, as far as the adapter must know: a request that provably never left
 * this machine (safe to send again), one the fullnode refused (nothing executed), or an unknown outcome;
 * and the failure in plain words, said once.
 */

export type Failure = 'not_sent' | 'refused' | 'unknown';

/** The prefix of the error the adapter's fetch throws when a request provably never left this machine. */
const NOT_SENT = 'request not sent: ';
/** fetch's own refusal of a port it never connects to (the WHATWG "bad port" list, e.g. 1 or 6000). */
export const BAD_PORT = 'BAD_PORT';
/** The network error codes (Node's and undici's) that prove the request never left, in plain words. */
const NOT_SENT_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found (DNS)',
  EAI_AGAIN: 'DNS lookup failed for now',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EADDRNOTAVAIL: 'address not available',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  [BAD_PORT]: 'fetch refuses to connect to this port',
};

/** Sorts a failed call by what it proves about the request. */
export function failureOf(error: unknown): Failure {
  if (!(error instanceof RpcError)) return 'unknown';
  if (error.message.startsWith(NOT_SENT)) return 'not_sent';
  switch (error.code) {
    case 'INVALID_ARGUMENT':
    case 'FAILED_PRECONDITION':
    case 'NOT_FOUND':
    case 'ALREADY_EXISTS':
    case 'PERMISSION_DENIED':
    case 'UNAUTHENTICATED':
    case 'OUT_OF_RANGE':
    case 'UNIMPLEMENTED':
    case 'RESOURCE_EXHAUSTED':
    case 'ABORTED':
      return 'refused';
    default:
      return 'unknown';
  }
}

/** The network error code of a request that never left (ECONNREFUSED, BAD_PORT, ...), else undefined. */
export function notSentCode(error: unknown): string | undefined {
  const message = (error as Error | undefined)?.message;
  return typeof message === 'string' && message.startsWith(NOT_SENT)
    ? message.slice(NOT_SENT.length)
    : undefined;
}

/** A failed call in plain words, e.g. "connection refused (ECONNREFUSED)" or "no answer within 15 s". */
export function describeFailure(error: unknown, timeoutMs?: number): string {
  const answer = notGrpcAnswer(error);
  if (answer !== undefined) return `it answers, but not with gRPC (${answer})`;
  const code = notSentCode(error);
  if (code !== undefined) {
    const words = NOT_SENT_WORDS[code];
    return words && code !== BAD_PORT ? `${words} (${code})` : (words ?? code);
  }
  if (error instanceof RpcError && error.code === 'DEADLINE_EXCEEDED') {
    return timeoutMs === undefined ? 'no answer in time' : `no answer within ${timeoutMs / 1000} s`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** The prefix of the error the adapter's fetch throws when the URL answers, but not as a gRPC server. */
const NOT_GRPC = 'not a gRPC answer: ';
/**
 * Answers that say "not now" rather than "not gRPC here": a rate limit, a timeout, a server error or a
 * gateway whose server is down. A fullnode behind a proxy answers them in plain HTTP too, and they pass.
 */
const TRANSIENT = (status: number) => status === 408 || status === 429 || status >= 500;

/**
 * What answered instead of gRPC (e.g. "HTTP 200 application/json", a JSON-RPC-only fullnode), when the
 * call failed because the URL serves something else; else undefined.
 */
export function notGrpcAnswer(error: unknown): string | undefined {
  const message = (error as Error | undefined)?.message;
  return typeof message === 'string' && message.startsWith(NOT_GRPC)
    ? message.slice(NOT_GRPC.length)
    : undefined;
}

/**
 * fetch, with the failures that prove the request never left marked so that they are told apart, and an
 * answer that is not gRPC's (no grpc-status, not a gRPC content type) marked as such: the URL is then not
 * a sui.rpc.v2 endpoint, which no retry mends.
 */
export const markingFetch: typeof fetch = (input, init) =>
  fetch(input, init).then(
    (response) => {
      const type = response.headers.get('content-type') ?? '';
      if (
        response.headers.has('grpc-status') ||
        type.startsWith('application/grpc') ||
        TRANSIENT(response.status)
      ) {
        return response;
      }
      // The body is not read: release the connection.
      response.body?.cancel().catch(() => undefined);
      throw new Error(`${NOT_GRPC}HTTP ${response.status}${type ? ` ${type.split(';')[0]}` : ''}`);
    },
    (error: unknown) => {
      const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
      const code =
        typeof cause?.code === 'string' ? cause.code : cause?.message === 'bad port' ? BAD_PORT : undefined;
      if (code && code in NOT_SENT_WORDS) throw new Error(`${NOT_SENT}${code}`);
      // undici says only "fetch failed"; its cause says what (e.g. "other side closed").
      const detail = typeof cause?.message === 'string' ? cause.message : code;
      if (error instanceof TypeError && detail) throw new Error(`fetch failed (${detail})`, { cause: error });
      throw error;
    },
  );
