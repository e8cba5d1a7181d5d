import {
  amount,
  type Column,
  digits,
  duration,
  epochText,
  fractionPercent,
  idList,
  keyValues,
  oneLine,
  plural,
  shortId,
  sui,
  table,
  timestamp,
  when,
} from '../format.ts';
import type { ActionView, AutopilotStatus, PlanItem, RunResult } from '../replies.ts';
import { plainWrite, read, show } from '../request.ts';
import type { CommandSpec } from '../spec.ts';

/** The autopilot: what it would do now and what it did (a read), one pass on demand, the resume. */

/** A pass may submit a transaction per action, each awaited: longer than a single write. */
const RUN_TIMEOUT_MS = 120_000;
/** The newest recorded actions a table shows (the daemon sends up to 50; --json has them all). */
const RECENT_ROWS = 10;

const MODES: Record<AutopilotStatus['mode'], string> = {
  off: 'off: it neither plans nor acts (start the daemon with --autopilot dry-run or on)',
  'dry-run': 'dry-run: it plans and records what it would do, and submits nothing',
  on: 'on: it settles, attests and claims by itself',
};

function stateLine(status: AutopilotStatus): string {
  switch (status.state) {
    case 'halted':
      return `halted: ${oneLine(status.halted_reason ?? 'repeated contract aborts')}; \`node-daemon autopilot resume\` lets it act again`;
    case 'standby':
      return 'standby: another daemon sharing the store runs the autopilot';
    case 'running':
      return 'running a pass';
    default:
      return status.state;
  }
}

/** The daily gas cap: what is left, and when it frees up (or, paused, when the next action fits). */
function gasBudgetLine(budget: AutopilotStatus['gas_budget']): string {
  const left = `${sui(budget.remaining)} left of ${sui(budget.per_day)} a day (--autopilot-max-gas-per-day)`;
  if (budget.paused) {
    return `paused: ${left}, the next action needs ${sui(budget.needed ?? 0)}; it frees up ${budget.frees_at === null ? 'later' : when(budget.frees_at)}`;
  }
  return budget.frees_at === null
    ? `${left}, nothing spent in 24 hours`
    : `${left}; more frees up ${when(budget.frees_at)}`;
}

function lastPass(pass: AutopilotStatus['last_pass']): string {
  if (pass === null) return 'none yet';
  const did = pass.acted ? `acted: ${plural(pass.actions, 'transaction')}` : 'planned only';
  return `${when(pass.at)}, started by ${pass.trigger}; ${did} (${pass.duration_ms} ms)`;
}

const PLAN_COLUMNS: Column<PlanItem>[] = [
  { header: 'ACTION', value: (p) => p.action },
  { header: 'NODE', align: 'right', value: (p) => digits(p.node_small_id) },
  { header: 'STACKS', value: (p) => idList(p.stack_small_ids) },
  { header: 'WILL', value: (p) => p.will },
  { header: 'NODE FEE', align: 'right', value: (p) => amount(p.node_fee_amount) },
  { header: 'GAS', align: 'right', value: (p) => (p.gas_estimate === null ? '-' : sui(p.gas_estimate)) },
  { header: 'REASON', value: (p) => oneLine(p.reason) },
];

function planTable(plan: readonly PlanItem[]): string {
  return plan.length === 0 ? '(nothing to do)' : table(plan, PLAN_COLUMNS);
}

/** An action's outcome in a word or two: its transactions when it went through, else the error or why. */
function actionDetail(action: ActionView): string {
  const digests = action.tx_digests.map(shortId).join(', ');
  if (action.status === 'failed') {
    const error = oneLine(action.error ?? action.reason);
    return digests === '' ? error : `${error} (transaction ${digests})`;
  }
  if (action.status === 'succeeded' || action.status === 'pending') return digests;
  return oneLine(action.reason);
}

function actionsTable(actions: readonly ActionView[]): string {
  return table(actions, [
    { header: 'TIME', value: (a) => timestamp(a.at) },
    { header: 'ACTION', value: (a) => a.action },
    { header: 'STACKS', value: (a) => idList(a.stack_small_ids) },
    { header: 'STATUS', value: (a) => a.status },
    { header: 'NODE FEE', align: 'right', value: (a) => amount(a.node_fee_amount) },
    { header: 'DETAIL', value: actionDetail },
  ]);
}

function statusText(status: AutopilotStatus): string {
  const { policy } = status;
  const recent = status.recent_actions.slice(0, RECENT_ROWS);
  const older = status.recent_actions.length - recent.length;
  return [
    keyValues([
      ['mode', MODES[status.mode] ?? status.mode],
      ['state', stateLine(status)],
      ['epoch', epochText(status.epoch)],
      [
        'settles',
        `a stack once its usage reaches ${fractionPercent(policy.settle_fill)} of its units, or ${duration(policy.settle_idle_seconds)} after its last usage`,
      ],
      ['claims', `a batch once its node fees reach ${amount(policy.min_claim)}`],
      ['gas', `acts only when a transaction's estimated gas is at most ${sui(policy.max_gas)}`],
      // A daemon older than the daily gas cap does not send it.
      ...(status.gas_budget ? [['gas budget', gasBudgetLine(status.gas_budget)] as [string, string]] : []),
      ['last pass', lastPass(status.last_pass)],
      [
        'next pass',
        status.next_pass_at === null ? 'when the chain or the usage changes' : when(status.next_pass_at),
      ],
    ]),
    `What it would do now:\n${planTable(status.plan)}`,
    status.recent_actions.length === 0
      ? 'Recent actions: none'
      : `Recent actions, newest first:\n${actionsTable(recent)}${older > 0 ? `\n(${older} older in --json)` : ''}`,
  ].join('\n\n');
}

function runText(result: RunResult): string {
  let headline: string;
  if (result.acted) {
    headline =
      result.actions.length === 0
        ? 'ran a pass: nothing to act on'
        : `ran a pass: ${plural(result.actions.length, 'action')}`;
  } else if (result.mode === 'on') {
    headline =
      'ran a pass that only planned: the autopilot is halted, or another daemon sharing the store runs it (see `node-daemon autopilot`)';
  } else {
    headline = `ran a pass that only planned (mode ${result.mode}); nothing was submitted`;
  }
  const parts = [headline];
  if (result.actions.length > 0) parts.push(`What it did:\n${actionsTable(result.actions)}`);
  parts.push(`${result.acted ? 'The plan' : 'What it would do'}:\n${planTable(result.plan)}`);
  return parts.join('\n\n');
}

const POLICY_NOTE = [
  "The policy is the daemon's: --autopilot off|dry-run|on, --autopilot-settle-fill,",
  "--autopilot-settle-idle, --autopilot-min-claim (USDC's smallest unit) and --autopilot-max-gas (MIST).",
];

export const AUTOPILOT: CommandSpec[] = [
  {
    name: 'autopilot',
    route: 'GET /autopilot',
    synopsis: '',
    summary: "the autopilot's mode, policy and passes, what it would do now and what it did",
    description: [
      [
        'Shows the autopilot (GET /autopilot): its mode (off, dry-run: plans only, on: acts) and state',
        '(idle, running, standby behind another daemon, halted after repeated contract aborts with the',
        'reason), its policy in words (fees in USDC, gas in SUI), the last and the next pass; then its plan',
        'as a table (action, node, stacks, whether it will act or waits, the node fee, the estimated gas,',
        `the reason), and its ${RECENT_ROWS} most recent actions (time, action, stacks, status, node fee,`,
        'and the transaction, the error or the reason; --json has the last 50).',
      ],
      POLICY_NOTE,
      ['`node-daemon autopilot run` runs a pass now; `node-daemon autopilot resume` ends a halt.'],
    ],
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: [
      'node-daemon autopilot',
      'node-daemon autopilot --json',
      'node-daemon autopilot --json | jq \'.plan[] | select(.will == "act")\'',
    ],
    async run(ctx) {
      const reply = await read(ctx);
      await show(ctx, reply, statusText);
    },
  },
  {
    name: 'autopilot run',
    route: 'POST /autopilot/run',
    synopsis: '',
    summary: 'run one autopilot pass now and print what it did, or only planned',
    description: [
      [
        'Runs one autopilot pass now (POST /autopilot/run) instead of waiting for the next change. In',
        'mode on it submits what its plan says it will do, and prints the actions it took, then the plan;',
        'in dry-run and off (or halted) it only plans, records what it would do, and submits nothing.',
        `It waits up to ${RUN_TIMEOUT_MS / 1000} s (--timeout changes it): each action is a transaction.`,
      ],
    ],
    kind: 'control',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon autopilot run', "node-daemon autopilot run --json | jq '.actions'"],
    async run(ctx) {
      const reply = await plainWrite(ctx, undefined, { timeoutMs: RUN_TIMEOUT_MS });
      await show(ctx, reply, runText);
    },
  },
  {
    name: 'autopilot resume',
    route: 'POST /autopilot/resume',
    synopsis: '',
    summary: 'let a halted autopilot act again',
    description: [
      [
        'Ends a halt (POST /autopilot/resume): after repeated contract aborts the autopilot stops acting',
        'rather than spend gas; once the cause is fixed, this lets the next pass act (a restart does too).',
        'An autopilot that is not halted stays as it is. Prints the autopilot as `node-daemon autopilot`',
        'does.',
      ],
    ],
    kind: 'control',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon autopilot resume', "node-daemon autopilot resume --json | jq '.state'"],
    async run(ctx) {
      const reply = await plainWrite(ctx);
      await show(ctx, reply, (status: AutopilotStatus) => {
        const headline =
          status.state === 'halted'
            ? 'still halted'
            : status.mode === 'on'
              ? 'not halted: the next pass acts'
              : `not halted; in mode ${status.mode} it does not act`;
        return `${headline}\n\n${statusText(status)}`;
      });
    },
  },
];
