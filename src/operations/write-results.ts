import type { MoveAbort, Operation } from '../chain/chain.ts';
import type { U64 } from '../internal/u64.ts';
import { ERRORS, type ErrorCode, ProblemError, refuse } from '../problems/catalog.ts';
import type { StackResult } from '../schemas/writes.ts';

/**
 * What a multi-stack write answers (try-settle, attestations, claims): each listed stack's result in the
 * order the request listed them, the refusal when none can be acted on, and the problem when every
 * submission failed. Shared by the writes (writes.ts) and the settlement estimate (settle-estimate.ts).
 */

/** One planned transaction of a multi-stack write. */
export interface Planned {
  stack_small_id: U64;
  operation: Operation;
  num_claimed_compute_units?: U64;
}

/** A listed stack that cannot be acted on, and why: nothing is signed for it. */
export function skip(id: U64, code: string, detail: string): StackResult {
  return { stack_small_id: id, status: 'skipped', error: { code, detail } };
}

/**
 * The refusal when no listed stack can be acted on: with the one reason they share when it is in the
 * catalog (a single stack keeps its own code, e.g. already_settled), else `fallback`, and every stack's
 * reason in `results`.
 */
export function nothingToDo(
  fallback: ErrorCode,
  what: string,
  results: StackResult[],
  extensions: Record<string, unknown> = {},
): ProblemError {
  const codes = new Set(results.map((r) => r.error?.code ?? ''));
  const [only = ''] = codes;
  const code = codes.size === 1 && Object.hasOwn(ERRORS, only) ? (only as ErrorCode) : fallback;
  const reasons = new Map<string, number>();
  for (const r of results) reasons.set(r.error?.code ?? '', (reasons.get(r.error?.code ?? '') ?? 0) + 1);
  const detail =
    results.length === 1
      ? results[0]!.error!.detail
      : `none of the ${results.length} listed stacks can be ${what} now (${[...reasons]
          .map(([reason, n]) => `${n} ${reason}`)
          .join(', ')}); each stack's reason is in results`;
  return refuse(code, detail, { parameter: 'stack_small_ids', extensions: { results, ...extensions } });
}

/** A stack's failed submission: its transaction (when one executed) and the problem. */
export type Failure = Pick<StackResult, 'tx_digest' | 'error'>;

export function failure(error: ProblemError): Failure {
  const digest = error.extensions.tx_digest as string | undefined;
  const abort = error.extensions.abort as MoveAbort | undefined;
  return {
    ...(digest === undefined ? {} : { tx_digest: digest }),
    error: { code: error.code, detail: error.message, ...(abort ? { abort } : {}) },
  };
}

/**
 * The problem when every submission failed: an outcome still unknown (the Idempotency-Key stays blocked)
 * before a contract abort (422), before a refusal by the chain (nothing executed).
 */
export function allFailed(results: StackResult[], digests: string[], what: string): ProblemError {
  const failed = results.filter((r) => r.status === 'failed');
  const codes = failed.map((r) => r.error?.code as ErrorCode);
  const code =
    (['chain_outcome_unknown', 'transaction_failed'] as const).find((c) => codes.includes(c)) ??
    codes[0] ??
    'transaction_failed';
  // One failure keeps its own detail (the abort's name and the transaction); more, the first of them.
  const first = failed.find((r) => r.error?.code === code) ?? failed[0];
  // A claim_funds carries many stacks in one transaction: count transactions, not stacks.
  const transactions = new Set(failed.map((r) => r.tx_digest ?? `stack ${r.stack_small_id}`)).size;
  const detail =
    failed.length === 1 && first?.error
      ? first.error.detail
      : transactions === 1
        ? `the ${what} of ${failed.length} stacks failed: ${first?.error?.detail}`
        : `none of the ${transactions} ${what} transactions (${failed.length} stacks) went through; the first: ${first?.error?.detail}`;
  return new ProblemError(code, detail, {
    extensions: {
      tx_digests: digests,
      results,
      ...(first?.error?.abort ? { abort: first.error.abort } : {}),
      ...(failed.length === 1 && first?.tx_digest ? { tx_digest: first.tx_digest } : {}),
    },
    refusal: digests.length === 0 && code !== 'chain_outcome_unknown',
  });
}

/** Sorts per-stack results into the order the request listed the stacks. */
export function ordered(requested: readonly U64[], results: { stack_small_id: U64 }[]): void {
  const order = new Map(requested.map((id, i) => [id, i]));
  results.sort((a, b) => (order.get(a.stack_small_id) ?? 0) - (order.get(b.stack_small_id) ?? 0));
}
