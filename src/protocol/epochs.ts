import { normalizeU64, type U64 } from '../internal/u64.ts';
import { STACK_DISPUTE_SETTLEMENT_DELAY } from './constants.ts';

/**
 * A stack try-settled in epoch E can be claimed from E + 1 and attested until E + 1 (contracts.md §3.5):
 * the epoch from which the ticket is claimable. The ticket's own dispute_settled_at_epoch holds this
 * value on chain, but the StackSettlementTicketEvent reports the epoch of the last attestation in that
 * field, so the daemon keeps the claimable epoch under its own name.
 */
export function claimableFromEpoch(settledEpoch: U64): U64 {
  return normalizeU64(BigInt(settledEpoch) + STACK_DISPUTE_SETTLEMENT_DELAY);
}
