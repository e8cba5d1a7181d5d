import { normalizeU64, type U64 } from '../internal/u64.ts';
import { EMPTY_HASH, extendHash } from './proofs.ts';

/**
 * A stack's off-chain usage and its running request hash: what the node served on it. Nothing on chain
 * counts it (contracts.md §5); it bounds what try-settle may claim (claimed <= num_compute_units), and
 * the proofs are built from the hash.
 */

export interface StackUsage {
  num_compute_units: U64;
  already_computed_units: U64;
  num_total_messages: U64;
}

export interface RequestRecord {
  total_hash: Uint8Array;
  num_requests: U64;
}

export type UsageChange =
  | {
      status: 'recorded';
      already_computed_units: U64;
      num_total_messages: U64;
      record: RequestRecord;
    }
  | { status: 'over_capacity' };

/**
 * One more served request of `units` on a stack: the usage and the message count grow, the request's hash
 * extends the running hash. Refused when the total would exceed the stack's capacity.
 */
export function addUsage(
  stack: StackUsage,
  record: RequestRecord | undefined,
  units: U64,
  requestHash: Uint8Array,
): UsageChange {
  const total = BigInt(stack.already_computed_units) + BigInt(units);
  if (total > BigInt(stack.num_compute_units)) return { status: 'over_capacity' };
  return {
    status: 'recorded',
    already_computed_units: normalizeU64(total),
    num_total_messages: normalizeU64(BigInt(stack.num_total_messages) + 1n),
    record: {
      total_hash: extendHash(record?.total_hash ?? EMPTY_HASH, requestHash),
      num_requests: record ? normalizeU64(BigInt(record.num_requests) + 1n) : 1,
    },
  };
}

/** already_computed_units / num_compute_units; a stack with no capacity counts as full. */
export function fillFraction(
  usage: Pick<StackUsage, 'num_compute_units' | 'already_computed_units'>,
): number {
  const capacity = Number(usage.num_compute_units);
  return capacity === 0 ? 1 : Number(usage.already_computed_units) / capacity;
}
