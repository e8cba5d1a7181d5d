import { type Static, Type } from 'typebox';
import { Nullable, StringEnum, U64 } from './common.ts';

/** The autopilot as the operator sees it (GET /autopilot, POST /autopilot/run). */

const Kind = StringEnum(['settle', 'direct_claim', 'claim', 'attest'], {
  description:
    'settle: try_settle_stack; direct_claim: claim_funds_for_stacks (confidential compute); claim: claim_funds; attest: submit_stack_settlement_attestation',
});

export const PlanItemSchema = Type.Object({
  action: Kind,
  node_small_id: U64(),
  stack_small_ids: Type.Array(U64()),
  will: StringEnum(['act', 'skip'], { description: 'act: the autopilot does it (when on); skip: it waits' }),
  reason: Type.String({ description: 'Why it acts, or why it waits' }),
  node_fee_amount: Nullable(U64(), 'What the action pays the node (settle: what the stack will claim)'),
  gas_estimate: Nullable(U64(), 'Estimated gas of the transaction, MIST'),
});

export const ActionSchema = Type.Object({
  id: Type.Integer(),
  at: Type.String({ description: 'When it was decided (ISO 8601)' }),
  updated_at: Type.String(),
  action: Kind,
  node_small_id: U64(),
  stack_small_ids: Type.Array(U64()),
  status: StringEnum(['pending', 'succeeded', 'failed', 'not_executed', 'skipped', 'planned'], {
    description:
      'pending: submitted, outcome not recorded yet; not_executed: found without effect after a restart; skipped: decided not to act; planned: what a dry run would do',
  }),
  reason: Type.String(),
  node_fee_amount: Nullable(U64()),
  gas_estimate: Nullable(U64()),
  gas_used: Nullable(
    U64(),
    'The gas its transactions used, MIST, net of the storage rebate (null until known)',
  ),
  tx_digests: Type.Array(Type.String()),
  error: Nullable(Type.String()),
});

export const AutopilotSchema = Type.Object({
  mode: StringEnum(['off', 'dry-run', 'on']),
  state: StringEnum(['off', 'standby', 'idle', 'running', 'halted'], {
    description:
      'standby: another daemon sharing the store runs the autopilot; halted: stopped after repeated contract aborts (POST /autopilot/resume)',
  }),
  halted_reason: Nullable(Type.String()),
  policy: Type.Object({
    settle_fill: Type.Number({ description: '--autopilot-settle-fill' }),
    settle_idle_seconds: Type.Integer({ description: '--autopilot-settle-idle' }),
    min_claim: U64("--autopilot-min-claim, USDC's smallest unit"),
    max_gas: U64('--autopilot-max-gas, MIST'),
    max_gas_per_day: U64('--autopilot-max-gas-per-day, MIST'),
  }),
  gas_budget: Type.Object(
    {
      per_day: U64('--autopilot-max-gas-per-day, MIST'),
      spent: U64('The gas its transactions used in the last 24 hours (a pending one at its estimate), MIST'),
      remaining: U64('What is left of the budget now, MIST'),
      paused: Type.Boolean({ description: 'Whether it waits because the next action would pass the budget' }),
      needed: Nullable(U64(), 'While paused: the gas of the action that waits, MIST'),
      frees_at: Nullable(
        Type.String(),
        'While paused: when that action fits again; otherwise when the oldest spending leaves the 24 hours (ISO 8601)',
      ),
    },
    { description: 'The daily gas cap: in any 24 hours its transactions use at most per_day' },
  ),
  epoch: Nullable(U64(), 'The current epoch as indexed'),
  last_pass: Nullable(
    Type.Object({
      at: Type.String(),
      trigger: Type.String({ description: 'What started it: start, indexer, usage, timer, run' }),
      acted: Type.Boolean({ description: 'Whether it could act (mode on, not halted)' }),
      actions: Type.Integer({ description: 'Transactions it submitted' }),
      duration_ms: Type.Number(),
    }),
  ),
  next_pass_at: Nullable(Type.String(), 'When a timer will run the next pass (an idle stack, a back-off)'),
  plan: Type.Array(PlanItemSchema, { description: 'What it would do now' }),
  recent_actions: Type.Array(ActionSchema, { description: 'Newest first' }),
});

export const RunResultSchema = Type.Object({
  mode: StringEnum(['off', 'dry-run', 'on']),
  acted: Type.Boolean({ description: 'false in dry-run and off (and when halted): it only planned' }),
  plan: Type.Array(PlanItemSchema),
  actions: Type.Array(ActionSchema, { description: 'What it did in this pass' }),
});

export type PlanItem = Static<typeof PlanItemSchema>;
export type ActionView = Static<typeof ActionSchema>;
export type AutopilotStatus = Static<typeof AutopilotSchema>;
export type RunResult = Static<typeof RunResultSchema>;
