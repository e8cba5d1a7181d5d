// @ts-check
import { facts, h, replace, table } from '../dom.js';
import {
  formatDuration,
  formatInt,
  formatTime,
  formatUnits,
  formatUsdc,
  idList,
  shortId,
} from '../format.js';
import { errorNote, outcomeRegion, section } from './parts.js';

/**
 * The autopilot (GET /autopilot): its mode and state, its policy, what it would do now and why, what it
 * did; run one pass, or resume it after a halt.
 * @param {import('./parts.js').Ctx} ctx
 */
export function autopilotView(ctx) {
  const outcome = outcomeRegion();
  const body = h('div');
  const element = section('autopilot', 'Autopilot', outcome, body);
  const run = () =>
    ctx.act(
      outcome,
      'Running a pass',
      () => ctx.write('POST', '/autopilot/run', {}),
      (r) => [
        `Pass done (${r.mode}): ${r.acted ? `${r.actions.length} actions taken` : 'planned only'}; ${r.plan.length} items in the plan.`,
      ],
      ['autopilot', 'stacks', 'earnings'],
    );
  const resume = () =>
    ctx.act(
      outcome,
      'Resuming',
      () => ctx.write('POST', '/autopilot/resume', {}),
      (r) => [`Autopilot ${r.state}.`],
      ['autopilot'],
    );
  return {
    title: 'Autopilot',
    element,
    /** @param {import('./parts.js').State} state */
    render(state) {
      const a = state.data.autopilot;
      if (a === null) {
        replace(
          body,
          h('p', { class: 'muted' }, 'This daemon has no autopilot: it serves reads only (network none).'),
        );
        return;
      }
      if (!a) {
        replace(body, errorNote(state.errors.autopilot), h('p', { class: 'muted' }, 'Loading…'));
        return;
      }
      replace(
        body,
        errorNote(state.errors.autopilot),
        h(
          'div',
          { class: 'cards' },
          h(
            'article',
            { class: 'card' },
            h('h2', null, 'State'),
            facts([
              ['Mode', h('span', { class: `state pilot-${a.mode}` }, a.mode)],
              ['State', a.state],
              ['Epoch', a.epoch === null ? '—' : String(a.epoch)],
              [
                'Last pass',
                a.last_pass
                  ? `${formatTime(a.last_pass.at, true)} (${a.last_pass.trigger}, ${a.last_pass.actions} transactions, ${Math.round(a.last_pass.duration_ms)} ms)`
                  : 'none yet',
              ],
              [
                'Next pass',
                a.next_pass_at
                  ? formatTime(a.next_pass_at, true)
                  : 'when the chain or a usage report gives a reason',
              ],
            ]),
            a.halted_reason
              ? h('p', { class: 'outcome failure' }, h('strong', null, 'Halted'), ': ', a.halted_reason)
              : null,
            a.gas_budget?.paused
              ? h(
                  'p',
                  { class: 'outcome failure', 'data-key': 'pilot-gas-paused' },
                  h('strong', null, 'Paused'),
                  `: the next action (${formatUnits(a.gas_budget.needed, 9)} SUI of gas) would pass the daily gas budget; it frees up at ${formatTime(a.gas_budget.frees_at, true)}`,
                )
              : null,
            h(
              'div',
              { class: 'actions' },
              h(
                'button',
                { type: 'button', 'data-key': 'pilot-run', onclick: run, hidden: !ctx.mayWrite() },
                a.mode === 'on' ? 'Run a pass now' : 'Plan now',
              ),
              a.state === 'halted'
                ? h(
                    'button',
                    {
                      type: 'button',
                      class: 'primary',
                      'data-key': 'pilot-resume',
                      onclick: resume,
                      hidden: !ctx.mayWrite(),
                    },
                    'Resume',
                  )
                : null,
            ),
            a.mode === 'off'
              ? h(
                  'p',
                  { class: 'hint' },
                  'Off: it never spends gas by itself. Start the daemon with --autopilot dry-run to see its plan, or on to let it act.',
                )
              : null,
          ),
          h(
            'article',
            { class: 'card' },
            h('h2', null, 'Policy'),
            facts([
              ['Settle at', `${Math.round(a.policy.settle_fill * 1000) / 10} % used`],
              ['or idle for', formatDuration(a.policy.settle_idle_seconds)],
              ['Claim batches from', formatUsdc(a.policy.min_claim)],
              ['Gas at most', `${formatUnits(a.policy.max_gas, 9)} SUI`],
              ...gasBudgetFacts(a.gas_budget),
            ]),
          ),
        ),
        h('h2', null, 'Plan: what it would do now'),
        table({
          headers: ['Action', 'Node', 'Stacks', 'Will', 'Node fee', 'Gas (MIST)', 'Why'],
          empty: 'Nothing to do.',
          rows: a.plan.map((/** @type {any} */ p) => [
            p.action,
            String(p.node_small_id),
            idList(p.stack_small_ids),
            h('span', { class: `state will-${p.will}` }, p.will),
            formatUsdc(p.node_fee_amount),
            formatInt(p.gas_estimate),
            p.reason,
          ]),
        }),
        h('h2', null, 'Recent actions'),
        table({
          headers: ['When', 'Action', 'Stacks', 'Status', 'Node fee', 'Detail'],
          empty: 'No action yet.',
          rows: a.recent_actions.map((/** @type {any} */ r) => [
            h('time', { datetime: r.at }, formatTime(r.at, true)),
            r.action,
            idList(r.stack_small_ids),
            h('span', { class: `state status-${r.status}` }, r.status.replaceAll('_', ' ')),
            formatUsdc(r.node_fee_amount),
            r.error ?? (r.tx_digests.length > 0 ? r.tx_digests.map(shortId).join(', ') : r.reason),
          ]),
        }),
      );
    },
  };
}

/**
 * The daily gas cap's facts: what is left, and when it frees up (none from a daemon without it).
 * @param {any} budget
 * @returns {[string, string][]}
 */
function gasBudgetFacts(budget) {
  if (!budget) return [];
  return [
    ['Gas budget left', `${formatUnits(budget.remaining, 9)} of ${formatUnits(budget.per_day, 9)} SUI a day`],
    ['It frees up', budget.frees_at ? formatTime(budget.frees_at, true) : 'nothing spent in 24 hours'],
  ];
}
