import {
  ChainOutcomeUnknownError,
  ChainRejectedError,
  ChainUnavailableError,
  type Submission,
} from '../chain/chain.ts';
import { ProblemError, refuse } from '../problems/catalog.ts';
import { describeAbort } from '../protocol/aborts.ts';
import { StoreError } from '../store/errors.ts';

/**
 * The one mapping from the errors of the layers below (the chain, the store) to the catalog: what a
 * caller is told, whichever operation met them. Anything else is not a known failure and stays as it is
 * (the HTTP layer answers it with a logged 500). It lives with its users (the operations, and the HTTP
 * error handler above them) rather than beside the catalog, so that the catalog depends on nothing.
 */
export function problemFromError(error: unknown): ProblemError | undefined {
  if (error instanceof ProblemError) return error;
  if (error instanceof ChainUnavailableError) {
    // Nothing was executed, so retrying (even with the same Idempotency-Key) is safe.
    return refuse('chain_unavailable', `the chain is unavailable: ${error.message}; retry shortly`, {
      retryAfterSeconds: error.retryAfterSeconds,
      cause: error,
    });
  }
  if (error instanceof ChainOutcomeUnknownError) {
    // The transaction was sent and may have executed: never safe to retry blindly.
    return new ProblemError(
      'chain_outcome_unknown',
      `the transaction ${error.digest} was sent but its outcome is unknown (${error.message}); check it on chain before retrying`,
      { extensions: { tx_digest: error.digest } },
    );
  }
  if (error instanceof ChainRejectedError) {
    const parameter = error.code.startsWith('gas_budget')
      ? 'gas_budget'
      : error.code.startsWith('gas_price')
        ? 'gas_price'
        : 'gas';
    return refuse('gas_rejected', error.message, { parameter });
  }
  if (error instanceof StoreError && error.retryable) {
    return new ProblemError('store_unavailable', 'the store is busy; retry shortly', {
      retryAfterSeconds: 1,
    });
  }
  return undefined;
}

/** A transaction that executed and failed (a Move abort): a 422 with the abort, the digest and the gas. */
export function abortProblem(submission: Submission, what: string): ProblemError {
  const abort = submission.abort ?? { name: 'unknown', code: 0, module: 'unknown' };
  return new ProblemError(
    'transaction_failed',
    `${what} failed on chain: ${describeAbort(abort)}; transaction ${submission.digest}`,
    { extensions: { tx_digest: submission.digest, abort, gas_used: submission.gas_used } },
  );
}
