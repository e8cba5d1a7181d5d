import type { U64 } from '../internal/u64.ts';

/** The autopilot's actions as the store records them (AutopilotStore), before each is submitted and after. */

export type AutopilotActionKind = 'settle' | 'claim' | 'direct_claim' | 'attest';
export type AutopilotActionStatus =
  | 'pending'
  | 'succeeded'
  | 'failed'
  | 'not_executed'
  | 'skipped'
  | 'planned';

/** One action of the autopilot, as recorded before it is submitted and completed after. */
export interface AutopilotAction {
  id: number;
  at: number;
  updated_at: number;
  kind: AutopilotActionKind;
  node_small_id: U64;
  stack_small_ids: U64[];
  status: AutopilotActionStatus;
  reason: string;
  node_fee_amount: U64 | null;
  gas_estimate: U64 | null;
  /** The gas its transactions used, MIST, net of the storage rebate (null until known). */
  gas_used: U64 | null;
  tx_digests: string[];
  error: string | null;
}

/** An action that spent, or may have spent, the signer's gas: what the daily gas cap counts. */
export interface AutopilotSpending {
  at: number;
  node_small_id: U64;
  status: AutopilotActionStatus;
  gas_estimate: U64 | null;
  gas_used: U64 | null;
}
