import type { Chain, Simulation } from '../chain/chain.ts';
import { normalizeU64, type U64 } from '../internal/u64.ts';
import { describeAbort } from '../protocol/aborts.ts';
import { DEFAULT_PARAMETERS } from '../protocol/constants.ts';
import { knownFee } from '../protocol/fees.ts';
import type { SettleEstimate, StackResult } from '../schemas/writes.ts';
import type { ReadStore } from '../store/store.ts';
import { ordered, type Planned } from './write-results.ts';

/**
 * What settling stacks would do, with nothing signed (POST /nodes/try-settle-stacks/estimate): for each
 * stack the writes' checks would settle (`planned`), the units it claims, the node fee and the buyer's
 * refund at the claim (by the contract's formula), and the gas of its transaction as the chain simulates it
 * (null when the chain cannot simulate now), or the abort the chain would meet; the others as skipped.
 */
export async function estimateSettlements(
  deps: { store: Pick<ReadStore, 'getChainState' | 'getStackTerms'>; chain: Pick<Chain, 'simulate'> },
  requested: readonly U64[],
  planned: readonly Planned[],
  skips: readonly StackResult[],
): Promise<SettleEstimate> {
  const parameters = (await deps.store.getChainState()).parameters ?? DEFAULT_PARAMETERS;
  const results: SettleEstimate['results'] = skips.map((r) => ({
    stack_small_id: r.stack_small_id,
    status: 'skipped',
    ...(r.error ? { error: r.error } : {}),
  }));
  let fees = 0n;
  let gas = 0n;
  for (const plan of planned) {
    const id = plan.stack_small_id;
    const claimed = plan.num_claimed_compute_units!;
    const terms = await deps.store.getStackTerms(id);
    const feeOf = (units: U64 | bigint) =>
      knownFee(
        parameters,
        terms?.security_level,
        terms?.price_per_one_million_compute_units,
        normalizeU64(BigInt(units)),
      );
    const fee = feeOf(claimed);
    const refund = terms === undefined ? null : feeOf(BigInt(terms.num_compute_units) - BigInt(claimed));
    let simulation: Simulation | null = null;
    try {
      simulation = await deps.chain.simulate(plan.operation);
    } catch {
      // The chain cannot simulate now: the estimate says so (gas unknown) rather than fail.
    }
    fees += fee ?? 0n;
    gas += simulation?.gas ?? 0n;
    results.push({
      stack_small_id: id,
      status: simulation?.abort ? 'would_abort' : 'ready',
      num_claimed_compute_units: claimed,
      node_fee_amount: fee === null ? null : normalizeU64(fee),
      user_refund_amount: refund === null ? null : normalizeU64(refund),
      gas_estimate: simulation === null ? null : normalizeU64(simulation.gas),
      ...(simulation?.abort
        ? {
            error: {
              code: 'would_abort',
              detail: `the chain would abort it now: ${describeAbort(simulation.abort)}`,
              abort: simulation.abort,
            },
          }
        : {}),
    });
  }
  ordered(requested, results);
  return { results, total: { node_fee_amount: normalizeU64(fees), gas_estimate: normalizeU64(gas) } };
}
