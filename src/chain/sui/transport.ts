import { RpcError } from '@mysten/sui/grpc';

/**
 * How a call to the fullnode failed, as far as the adapter must know: a request that provably never left
 * this machine (safe to send again), one the fullnode refused (nothing executed), or an unknown outcome.
 */

export type Failure = 'not_sent' | 'refused' | 'unknown';

/** The prefix of the error the adapter's fetch throws when a request provably never left this machine. */
const NOT_SENT = 'request not sent: ';
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

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

/** fetch, with the failures that prove the request never left marked so that they are told apart. */
export const markingFetch: typeof fetch = (input, init) =>
  fetch(input, init).catch((error: unknown) => {
    const cause = (error as { cause?: { code?: unknown } }).cause;
    const code = typeof cause?.code === 'string' ? cause.code : undefined;
    if (code && NOT_SENT_CODES.has(code)) throw new Error(`${NOT_SENT}${code}`);
    throw error;
  });
