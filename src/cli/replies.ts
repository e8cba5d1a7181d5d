/**
 * The daemon's replies as the client reads them. Kept loose (unknown where the client only prints a
 * value) and in this one file, so that they can give way to types derived from the server's schemas
 * (src/http/schemas.ts, imported as types only: the client must not load the server).
 */

/** A JSON object of a reply, read by field name. */
export type Json = Record<string, unknown>;

/** gas_used of a transaction result, in MIST. */
export interface GasUsed {
  computation_cost?: unknown;
  storage_cost?: unknown;
  storage_rebate?: unknown;
}

/** One stack's outcome in a multi-stack write (settle, attest): results[] of the reply or the problem. */
export interface StackResult {
  stack_small_id: unknown;
  status: 'success' | 'failed' | 'skipped';
  tx_digest?: string;
  num_claimed_compute_units?: unknown;
  error?: { code: string; detail: string; abort?: { name: string; code: unknown; module: string } };
}

/** One claimed stack of a claim: claimed[] of the reply. */
export interface ClaimedStack {
  stack_small_id: unknown;
  path: string;
  num_claimed_compute_units?: unknown;
}

/** One stack a claim left out: not_claimable[] of the reply or the problem. */
export interface NotClaimableStack {
  stack_small_id: unknown;
  reason: string;
  detail: string;
  claimable_from_epoch?: unknown;
}
