import type { Metrics } from '../internal/metrics.ts';
import { normalizeU64, type U64 } from '../internal/u64.ts';
import { DEFAULT_PARAMETERS } from '../protocol/constants.ts';
import { knownFee } from '../protocol/fees.ts';
import type { Earnings, StackStates } from '../schemas/earnings.ts';
import type { LedgerRow, Store } from '../store/store.ts';

/**
 * A node's earnings, from what the indexer recorded of the chain's events: each claim's node fee as the
 * contract computed it (src/protocol/fees.ts), and the fees the node's settled and open stacks will pay
 * at the current fee parameters. Amounts are exact u64 sums; a stack whose terms were never seen is
 * counted, never priced.
 */
export async function nodeEarnings(store: Store, nodeSmallId: U64): Promise<Earnings> {
  const [{ epoch, parameters }, ledger, rewards] = await Promise.all([
    store.getChainState(),
    store.listLedger(nodeSmallId),
    store.listAttesterRewards(nodeSmallId),
  ]);
  const params = parameters ?? DEFAULT_PARAMETERS;
  const sums = { claimed: 0n, claimable: 0n, settling: 0n, disputed: 0n, unsettled: 0n, refunded: 0n };
  const stacks: StackStates = { open: 0, settling: 0, claimable: 0, claimed: 0, disputed: 0 };
  const unpriced: StackStates = { open: 0, settling: 0, claimable: 0, claimed: 0, disputed: 0 };
  const byEpoch = new Map<U64, { claimed: bigint; stacks_claimed: number }>();
  for (const row of ledger) {
    const state = stackState(row, epoch);
    stacks[state] += 1;
    const ticket = row.ticket;
    if (state === 'claimed') {
      sums.refunded += BigInt(ticket?.user_refund_amount ?? 0);
      const fee = ticket?.node_fee_amount ?? null;
      if (fee === null) {
        unpriced.claimed += 1;
        continue;
      }
      sums.claimed += BigInt(fee);
      if (ticket?.claimed_epoch !== null && ticket?.claimed_epoch !== undefined) {
        const bucket = byEpoch.get(ticket.claimed_epoch) ?? { claimed: 0n, stacks_claimed: 0 };
        bucket.claimed += BigInt(fee);
        bucket.stacks_claimed += 1;
        byEpoch.set(ticket.claimed_epoch, bucket);
      }
      continue;
    }
    const units = state === 'open' ? row.already_computed_units : (ticket?.num_claimed_compute_units ?? null);
    const fee =
      units === null
        ? null
        : knownFee(params, row.terms?.security_level, row.terms?.price_per_one_million_compute_units, units);
    if (fee === null) {
      unpriced[state] += 1;
      continue;
    }
    sums[state === 'open' ? 'unsettled' : state] += fee;
  }
  return {
    node_small_id: nodeSmallId,
    epoch,
    claimed: normalizeU64(sums.claimed),
    claimable: normalizeU64(sums.claimable),
    settling: normalizeU64(sums.settling),
    disputed: normalizeU64(sums.disputed),
    unsettled: normalizeU64(sums.unsettled),
    attester_rewards: normalizeU64(rewards.reduce((sum, r) => sum + BigInt(r.amount), 0n)),
    refunded_to_users: normalizeU64(sums.refunded),
    stacks,
    unpriced,
    by_epoch: [...byEpoch.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([e, bucket]) => ({
        epoch: e,
        claimed: normalizeU64(bucket.claimed),
        stacks_claimed: bucket.stacks_claimed,
      })),
  };
}

/**
 * Where a stack stands (contracts.md §3.5): claimed through either path; disputed (locked for good);
 * settled and claimable from its epoch on, else settling; otherwise open. A ticket whose settle epoch
 * the source never said counts as settling: it is not known to be claimable.
 */
export function stackState(row: LedgerRow, epoch: U64 | null): keyof StackStates {
  const ticket = row.ticket;
  if (row.stack_claimed || ticket?.is_claimed) return 'claimed';
  if (!ticket) return 'open';
  if (ticket.is_in_dispute) return 'disputed';
  const from = ticket.claimable_from_epoch;
  return epoch !== null && from !== null && epoch >= from ? 'claimable' : 'settling';
}

/**
 * Updates the earnings metrics of the operator's nodes (call it when /metrics is scraped): the pending
 * amounts and the stacks by state as gauges, the all-time amounts as counters, advanced by what they grew.
 */
export function earningsMetrics(
  metrics: Metrics,
  store: Store,
  nodes: () => Promise<U64[]>,
): () => Promise<void> {
  const seen = new Map<string, { claimed: bigint; rewards: bigint; refunded: bigint }>();
  return async () => {
    for (const node of await nodes()) {
      const e = await nodeEarnings(store, node);
      const label = String(node);
      for (const state of ['claimable', 'settling', 'disputed', 'unsettled'] as const) {
        metrics.earnings.set({ node: label, state }, Number(e[state]));
      }
      for (const [state, count] of Object.entries(e.stacks))
        metrics.stacks.set({ node: label, state }, count);
      const now = {
        claimed: BigInt(e.claimed),
        rewards: BigInt(e.attester_rewards),
        refunded: BigInt(e.refunded_to_users),
      };
      const before = seen.get(label) ?? { claimed: 0n, rewards: 0n, refunded: 0n };
      if (now.claimed > before.claimed)
        metrics.earningsClaimed.inc({ node: label }, Number(now.claimed - before.claimed));
      if (now.rewards > before.rewards) {
        metrics.earningsAttesterRewards.inc({ node: label }, Number(now.rewards - before.rewards));
      }
      if (now.refunded > before.refunded) {
        metrics.earningsRefunded.inc({ node: label }, Number(now.refunded - before.refunded));
      }
      seen.set(label, now);
    }
  };
}
