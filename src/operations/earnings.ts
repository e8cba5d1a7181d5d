import type { Metrics } from '../internal/metrics.ts';
import { compareU64, normalizeU64, type U64 } from '../internal/u64.ts';
import { DEFAULT_PARAMETERS } from '../protocol/constants.ts';
import { knownFee } from '../protocol/fees.ts';
import type { Earnings, StackStates } from '../schemas/earnings.ts';
import type { LedgerRow, ReadStore } from '../store/store.ts';

/**
 * A node's earnings, from what the indexer recorded of the chain's events: each claim's node fee as the
 * contract computed it (src/protocol/fees.ts), and the fees the node's settled and open stacks will pay
 * at the current fee parameters. Amounts are exact u64 sums; a stack whose terms were never seen is
 * counted, never priced.
 */
export async function nodeEarnings(store: ReadStore, nodeSmallId: U64): Promise<Earnings> {
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
  const settled: Earnings['settled_stacks'] = [];
  let unsettledStacks = 0;
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
    if (state === 'open') {
      if (units !== null && BigInt(units) > 0n) unsettledStacks += 1;
    } else {
      settled.push({
        stack_small_id: row.stack_small_id,
        state,
        num_claimed_compute_units: units ?? 0,
        node_fee_amount: fee === null ? null : normalizeU64(fee),
        claimable_from_epoch: ticket?.claimable_from_epoch ?? null,
      });
    }
    if (fee === null) {
      unpriced[state] += 1;
      continue;
    }
    sums[state === 'open' ? 'unsettled' : state] += fee;
  }
  settled.sort((a, b) => compareU64(a.stack_small_id, b.stack_small_id));
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
    unsettled_stacks: unsettledStacks,
    settled_stacks: settled,
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

/** Smallest units per USDC (6 decimals). */
const MICRO = 1_000_000;
/** An exact amount in the smallest unit as USDC, for metrics (floats; /earnings has the exact amounts). */
const usdc = (amount: U64): number => Number(amount) / MICRO;

/**
 * Updates the earnings metrics of the operator's nodes (call it when /metrics is scraped), in USDC: the
 * pending amounts and the stacks by state as gauges, the all-time amounts as counters. The counters are
 * set to the totals the events give (they only grow), not advanced by sums of floats.
 */
export function earningsMetrics(
  metrics: Metrics,
  store: ReadStore,
  nodes: () => Promise<U64[]>,
): () => Promise<void> {
  return async () => {
    const totals: { node: string; claimed: U64; rewards: U64; refunded: U64 }[] = [];
    // The tasks going away: a node that serves one hears of it (an alert rule reads the gauge).
    const deprecated = new Set(
      (await store.listTasks())
        .filter((t) => t.is_deprecated || t.is_removed)
        .map((t) => String(t.task_small_id)),
    );
    for (const node of await nodes()) {
      const e = await nodeEarnings(store, node);
      const label = String(node);
      const serving = (await store.listSubscriptions(node)).filter((s) =>
        deprecated.has(String(s.task_small_id)),
      );
      metrics.subscriptionsToDeprecatedTasks.set({ node: label }, serving.length);
      for (const state of ['claimable', 'settling', 'disputed', 'unsettled'] as const) {
        metrics.earnings.set({ node: label, state }, usdc(e[state]));
      }
      for (const [state, count] of Object.entries(e.stacks))
        metrics.stacks.set({ node: label, state }, count);
      totals.push({
        node: label,
        claimed: e.claimed,
        rewards: e.attester_rewards,
        refunded: e.refunded_to_users,
      });
    }
    metrics.earningsClaimed.reset();
    metrics.earningsAttesterRewards.reset();
    metrics.earningsRefunded.reset();
    for (const t of totals) {
      metrics.earningsClaimed.inc({ node: t.node }, usdc(t.claimed));
      metrics.earningsAttesterRewards.inc({ node: t.node }, usdc(t.rewards));
      metrics.earningsRefunded.inc({ node: t.node }, usdc(t.refunded));
    }
  };
}
