import type { U64 } from '../internal/u64.ts';
import { add, div, mul, sub, U64ArithmeticError } from './arithmetic.ts';
import { ONE_MILLION_COMPUTE_UNITS, PERMILLE, type ProtocolParameters, SecurityLevel } from './constants.ts';

/**
 * What a stack costs and pays (contracts.md §4), in the smallest USDC unit, computed as the contract
 * computes it: u64 arithmetic in the same order (an intermediate overflow aborts, U64ArithmeticError), and
 * floor division where the contract divides.
 */

type Charges = Pick<
  ProtocolParameters,
  'sampling_consensus_charge_permille' | 'cross_validation_extra_nodes_charge_permille'
>;

/**
 * What the buyer pays into the fee treasury for `units` at `price` per million (§4.1):
 * base = floor(price x units / 1e6); SamplingConsensus adds both surcharges (1.212x by default).
 */
export function stackPaymentAmount(params: Charges, level: number, price: bigint, units: bigint): bigint {
  const base = div(mul(price, units), ONE_MILLION_COMPUTE_UNITS);
  if (level !== SecurityLevel.SamplingConsensus) return base;
  const charge = add(
    params.sampling_consensus_charge_permille,
    params.cross_validation_extra_nodes_charge_permille,
  );
  return div(mul(base, charge), PERMILLE);
}

/**
 * calculate_stack_fee_amount (§4.2): the fee of `units` at `price`. The node is paid fee(claimed) and the
 * buyer refunded fee(bought - claimed). SamplingConsensus pays the 1.2x sampling charge, never the 12‰.
 */
export function stackFeeAmount(
  params: Pick<ProtocolParameters, 'sampling_consensus_charge_permille'>,
  level: number,
  price: bigint,
  units: bigint,
): bigint {
  if (level === SecurityLevel.SamplingConsensus) {
    return div(
      mul(mul(units, price), params.sampling_consensus_charge_permille),
      ONE_MILLION_COMPUTE_UNITS * PERMILLE,
    );
  }
  return div(mul(units, price), ONE_MILLION_COMPUTE_UNITS);
}

/** The buyer's refund at claim time: the fee of the units bought but not claimed (§4.2). */
export function stackRefundAmount(
  params: Pick<ProtocolParameters, 'sampling_consensus_charge_permille'>,
  level: number,
  price: bigint,
  bought: bigint,
  claimed: bigint,
): bigint {
  return stackFeeAmount(params, level, price, sub(bought, claimed));
}

/**
 * What one requested attester that did attest is credited when the stack is claimed (§2.9, §4.2):
 * floor(node fee / k), k = cross_validation_extra_nodes_count at claim time. The contract divides only for
 * an attester that attested, so k = 0 aborts only then. A node listed twice is credited twice.
 */
export function attesterReward(
  params: Pick<ProtocolParameters, 'cross_validation_extra_nodes_count'>,
  nodeFee: bigint,
): bigint {
  return div(nodeFee, params.cross_validation_extra_nodes_count);
}

/**
 * The fee of `units` on a stack of `level` at `price`, when it can be known: null when the level or the
 * price was never seen (a stack first met mid-history), or when the contract could not compute it either
 * (u64 overflow: such a claim aborts on chain). Never a guess.
 */
export function knownFee(
  params: Pick<ProtocolParameters, 'sampling_consensus_charge_permille'>,
  level: number | null | undefined,
  price: U64 | null | undefined,
  units: U64,
): bigint | null {
  if (level === null || level === undefined || price === null || price === undefined) return null;
  try {
    return stackFeeAmount(params, level, BigInt(price), BigInt(units));
  } catch (error) {
    if (error instanceof U64ArithmeticError) return null;
    throw error;
  }
}
