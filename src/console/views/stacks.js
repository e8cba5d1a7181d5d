// @ts-check
import { h, replace } from '../dom.js';
import { fillRatio, formatFill, formatInt, formatUsdc, idList } from '../format.js';
import { errorNote, outcomeRegion, section } from './parts.js';

/**
 * The node's stacks: fill bars, state, price and fee, filters, the near-full ones highlighted; settle
 * and claim one stack, the selected ones, or every settled one.
 */

/** An open stack used to at least this fraction is near full (the 0.9 of the stack_filled events). */
export const NEAR_FULL = 0.9;
/** The most rows drawn at once; the filters narrow the rest. */
const MAX_ROWS = 500;

/**
 * Where a stack stands, from what the API gives: GET /stacks flags, the disputes against the node, the
 * claimed tickets. "settled" covers both settling (in its dispute period) and claimable: the stack list
 * does not say which (the earnings figures count them).
 * @param {Record<string, any>} stack
 * @param {Set<string>} disputed
 * @returns {'open' | 'settled' | 'disputed' | 'claimed' | 'locked'}
 */
export function stackState(stack, disputed) {
  if (stack.is_claimed) return 'claimed';
  if (disputed.has(String(stack.stack_small_id))) return 'disputed';
  if (stack.is_locked_for_claim) return 'locked';
  if (stack.in_settle_period) return 'settled';
  return 'open';
}

const STATE_NOTES = {
  open: 'Not settled: the node serves it; settle it once it is used',
  settled: 'Try-settled: claimable from the epoch after its settlement, unless disputed',
  disputed: 'Disputed: locked for good, the contract has no resolution',
  claimed: 'Claimed: the node was paid and the buyer refunded',
  locked: 'Locked for claim',
};

/** @param {import('./parts.js').Ctx} ctx */
export function stacksView(ctx) {
  const outcome = outcomeRegion();
  const stateFilter = h(
    'select',
    { id: 'stack-state', name: 'state' },
    ['all', 'open', 'settled', 'disputed', 'claimed'].map((s) =>
      h('option', { value: s }, s === 'all' ? 'every state' : s),
    ),
  );
  const fillFilter = h('input', {
    id: 'stack-min-fill',
    name: 'min-fill',
    type: 'number',
    min: '0',
    max: '100',
    step: '1',
    value: '0',
    inputmode: 'numeric',
  });
  const summary = h('p', { class: 'muted', 'aria-live': 'polite' });
  const toolbar = h('div', { class: 'toolbar' });
  const list = h('div');
  /** @type {Set<string>} the stacks ticked for a batch action */
  const selected = new Set();
  const element = section(
    'stacks',
    'Stacks',
    h(
      'form',
      {
        class: 'filters',
        'aria-label': 'Filter the stacks',
        onsubmit: (/** @type {Event} */ e) => e.preventDefault(),
      },
      h('label', { for: 'stack-state' }, 'State'),
      stateFilter,
      h('label', { for: 'stack-min-fill' }, 'Used at least (%)'),
      fillFilter,
    ),
    toolbar,
    outcome,
    summary,
    list,
  );
  /** @type {import('./parts.js').State | undefined} */
  let last;
  const rerender = () => last && draw(last);
  stateFilter.addEventListener('change', rerender);
  fillFilter.addEventListener('input', rerender);

  /** @param {string[]} ids */
  const settle = async (ids) => {
    const stacks = /** @type {any[]} */ (last?.data.stacks ?? []).filter((s) =>
      ids.includes(String(s.stack_small_id)),
    );
    const text =
      stacks.length === 1
        ? `It claims the ${formatInt(stacks[0].already_computed_units)} units used of ${formatInt(stacks[0].num_compute_units)} (${formatFill(stacks[0].already_computed_units, stacks[0].num_compute_units)}). A stack settles once: the units not used go back to the buyer when it is claimed.`
        : `Each claims the units used so far (stacks ${idList(ids)}). A stack settles once: the units not used go back to the buyer when it is claimed.`;
    const title = ids.length === 1 ? `Settle stack ${ids[0]}?` : `Settle ${ids.length} stacks?`;
    if (!(await ctx.confirm(title, text, ids.length === 1 ? 'Settle' : `Settle ${ids.length} stacks`)))
      return;
    const result = await ctx.act(
      outcome,
      `Settling ${ids.length === 1 ? `stack ${ids[0]}` : `${ids.length} stacks`}`,
      () =>
        ctx.write('POST', '/nodes/try-settle-stacks', { stack_small_ids: ids.map(Number), ...ctx.badge() }),
      settled,
      ['stacks', 'earnings', 'autopilot', 'status'],
    );
    if (result) for (const id of ids) selected.delete(id);
  };
  /** @param {string[]} ids */
  const claim = async (ids) => {
    const result = await ctx.act(
      outcome,
      `Claiming ${ids.length === 1 ? `stack ${ids[0]}` : `${ids.length} stacks`}`,
      () => ctx.write('POST', '/nodes/claim-funds', { stack_small_ids: ids.map(Number), ...ctx.badge() }),
      claimed,
      ['stacks', 'earnings', 'claimed', 'autopilot', 'status'],
    );
    if (result) for (const id of ids) selected.delete(id);
  };

  /** @param {import('./parts.js').State} state */
  function draw(state) {
    last = state;
    const stacks = /** @type {any[]} */ (state.data.stacks ?? []);
    const disputed = new Set(
      (state.data.against ?? []).map((/** @type {any} */ d) => String(d.stack_small_id)),
    );
    const fees = new Map(
      (state.data.claimed ?? []).map((/** @type {any} */ t) => [String(t.stack_small_id), t]),
    );
    const tasks = new Map(
      (state.data.tasks ?? []).map((/** @type {any} */ t) => [String(t.task_small_id), t]),
    );
    const wanted = stateFilter.value;
    const minFill = Math.max(0, Math.min(100, Number(fillFilter.value) || 0)) / 100;
    const rows = stacks.filter((s) => {
      const st = stackState(s, disputed);
      if (wanted !== 'all' && st !== wanted) return false;
      return minFill === 0 || fillRatio(s.already_computed_units, s.num_compute_units) >= minFill;
    });
    const own = ctx.ownsNode();
    const settleable = (/** @type {any} */ s) =>
      own && stackState(s, disputed) === 'open' && BigInt(s.already_computed_units) > 0n;
    const claimable = (/** @type {any} */ s) => own && stackState(s, disputed) === 'settled';
    const byId = new Map(stacks.map((s) => [String(s.stack_small_id), s]));
    for (const id of [...selected]) {
      const s = byId.get(id);
      if (!s || !(settleable(s) || claimable(s))) selected.delete(id);
    }
    const chosen = [...selected];
    const toSettle = chosen.filter((id) => settleable(byId.get(id)));
    const toClaim = chosen.filter((id) => claimable(byId.get(id)));
    const allSettled = stacks.filter(claimable).map((s) => String(s.stack_small_id));
    const nearFull = stacks.filter(
      (s) =>
        stackState(s, disputed) === 'open' &&
        fillRatio(s.already_computed_units, s.num_compute_units) >= NEAR_FULL,
    );
    replace(
      toolbar,
      h(
        'button',
        {
          type: 'button',
          'data-key': 'settle-selected',
          disabled: toSettle.length === 0,
          onclick: () => settle(toSettle),
        },
        `Settle selected (${toSettle.length})`,
      ),
      h(
        'button',
        {
          type: 'button',
          'data-key': 'claim-selected',
          disabled: toClaim.length === 0,
          onclick: () => claim(toClaim),
        },
        `Claim selected (${toClaim.length})`,
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'primary',
          'data-key': 'claim-all',
          disabled: allSettled.length === 0,
          onclick: () => claim(allSettled),
          title:
            'Claims every settled stack past its dispute period; the others are listed with the epoch they can be claimed from',
        },
        `Claim all settled (${allSettled.length})`,
      ),
    );
    summary.textContent =
      state.node === null
        ? 'No node to show.'
        : `${rows.length} of ${stacks.length} stacks of node ${state.node}${own ? '' : ' (not one of the signer’s nodes: nothing to settle or claim here)'}${nearFull.length > 0 ? `; ${nearFull.length} open ${nearFull.length === 1 ? 'stack is' : 'stacks are'} near full (≥ ${NEAR_FULL * 100} %)` : ''}.`;
    const headers = ['', 'Stack', 'Task', 'Used', 'Price / 1M units', 'State', 'Node fee', ''];
    replace(
      list,
      errorNote(state.errors.stacks),
      rows.length === 0
        ? h(
            'p',
            { class: 'empty' },
            stacks.length === 0
              ? 'No stacks yet: users buy stacks from the tasks the node subscribes to.'
              : 'No stack matches the filters.',
          )
        : h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              { class: 'responsive stacks' },
              h('caption', { class: 'visually-hidden' }, `Stacks of node ${state.node}`),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  headers.map((text, i) =>
                    h(
                      'th',
                      { scope: 'col' },
                      i === 0
                        ? h('span', { class: 'visually-hidden' }, 'Select')
                        : i === 7
                          ? h('span', { class: 'visually-hidden' }, 'Actions')
                          : text,
                    ),
                  ),
                ),
              ),
              h(
                'tbody',
                null,
                rows.slice(0, MAX_ROWS).map((s) =>
                  stackRow(s, {
                    disputed,
                    fees,
                    tasks,
                    selected,
                    settleable,
                    claimable,
                    settle,
                    claim,
                    redraw: rerender,
                    headers,
                  }),
                ),
              ),
            ),
          ),
      rows.length > MAX_ROWS
        ? h('p', { class: 'muted' }, `Showing the first ${MAX_ROWS}; narrow the filters to see the others.`)
        : null,
    );
  }

  return { title: 'Stacks', element, render: draw };
}

/**
 * @param {any} s
 * @param {{ disputed: Set<string>, fees: Map<string, any>, tasks: Map<string, any>, selected: Set<string>, settleable: (s: any) => boolean, claimable: (s: any) => boolean, settle: (ids: string[]) => void, claim: (ids: string[]) => void, redraw: () => void, headers: string[] }} o
 */
function stackRow(s, o) {
  const id = String(s.stack_small_id);
  const st = stackState(s, o.disputed);
  const ratio = fillRatio(s.already_computed_units, s.num_compute_units);
  const near = st === 'open' && ratio >= NEAR_FULL;
  const task = o.tasks.get(String(s.task_small_id));
  const ticket = o.fees.get(id);
  const actionable = o.settleable(s) || o.claimable(s);
  const bar = h('span', { class: 'bar-fill' });
  bar.style.width = `${(ratio * 100).toFixed(1)}%`;
  const cells = [
    actionable
      ? h('input', {
          type: 'checkbox',
          'data-key': `select-${id}`,
          'aria-label': `Select stack ${id}`,
          checked: o.selected.has(id),
          onchange: (/** @type {Event} */ e) => {
            if (/** @type {HTMLInputElement} */ (e.target).checked) o.selected.add(id);
            else o.selected.delete(id);
            o.redraw();
          },
        })
      : '',
    h(
      'span',
      null,
      h('strong', null, id),
      s.is_confidential
        ? h(
            'span',
            { class: 'tag', title: 'Confidential compute: claimed directly, no settlement ticket' },
            'CC',
          )
        : null,
    ),
    h(
      'span',
      { title: task?.model_name ?? '' },
      String(s.task_small_id),
      task?.model_name ? h('span', { class: 'muted small' }, ` ${task.model_name.split('/').pop()}`) : null,
    ),
    h(
      'div',
      { class: 'fill' },
      h(
        'div',
        {
          class: `bar${near ? ' near' : ''}`,
          role: 'meter',
          'aria-label': `Stack ${id} used`,
          'aria-valuemin': '0',
          'aria-valuemax': '100',
          'aria-valuenow': (ratio * 100).toFixed(1),
          'data-testid': `fill-${id}`,
        },
        bar,
      ),
      h(
        'span',
        { class: 'fill-text' },
        `${formatInt(s.already_computed_units)} / ${formatInt(s.num_compute_units)} · ${formatFill(s.already_computed_units, s.num_compute_units)}`,
      ),
    ),
    h('span', { class: 'amount' }, formatUsdc(s.price_per_one_million_compute_units)),
    h(
      'span',
      null,
      h('span', { class: `state state-${st}`, title: STATE_NOTES[st] }, st),
      near ? h('span', { class: 'tag warn' }, 'near full') : null,
    ),
    ticket && ticket.node_fee_amount !== null
      ? h(
          'span',
          { class: 'amount', title: `refund to the buyer ${formatUsdc(ticket.user_refund_amount)}` },
          formatUsdc(ticket.node_fee_amount),
        )
      : h(
          'span',
          {
            class: 'muted',
            title:
              st === 'claimed'
                ? 'price never seen by the daemon'
                : 'known once claimed; the Overview totals what is settling and claimable',
          },
          '—',
        ),
    o.settleable(s)
      ? h('button', { type: 'button', 'data-key': `settle-${id}`, onclick: () => o.settle([id]) }, 'Settle')
      : o.claimable(s)
        ? h(
            'button',
            { type: 'button', class: 'primary', 'data-key': `claim-${id}`, onclick: () => o.claim([id]) },
            'Claim',
          )
        : '',
  ];
  return h(
    'tr',
    { class: near ? 'near-full' : st === 'disputed' ? 'disputed' : '', 'data-stack': id, 'data-state': st },
    cells.map((cell, i) => h('td', { 'data-label': o.headers[i] || (i === 7 ? '' : '') }, cell)),
  );
}

/** @param {any} result a MultiTxResult */
function settled(result) {
  const ok = result.results.filter((/** @type {any} */ r) => r.status === 'success');
  return [
    h(
      'strong',
      null,
      `Settled ${ok.length} of ${result.results.length} ${result.results.length === 1 ? 'stack' : 'stacks'}`,
    ),
    h('ul', null, result.results.map(outcomeLine)),
  ];
}

/** @param {any} result a ClaimResult */
function claimed(result) {
  return [
    h(
      'strong',
      null,
      `Claimed ${formatUsdc(result.total.node_fee_amount)} for ${result.claimed.length} ${result.claimed.length === 1 ? 'stack' : 'stacks'}`,
    ),
    ` (refunds to users ${formatUsdc(result.total.user_refund_amount)})`,
    h('ul', null, result.results.map(outcomeLine)),
  ];
}

/** @param {any} r a StackResult */
function outcomeLine(r) {
  if (r.status === 'success') {
    const fee =
      r.node_fee_amount !== undefined && r.node_fee_amount !== null
        ? `, node fee ${formatUsdc(r.node_fee_amount)}`
        : '';
    const units =
      r.num_claimed_compute_units !== undefined ? `, ${formatInt(r.num_claimed_compute_units)} units` : '';
    return h('li', null, `Stack ${r.stack_small_id}: done${units}${fee}`);
  }
  return h(
    'li',
    { class: 'problem' },
    `Stack ${r.stack_small_id}: ${r.status}: ${r.error?.detail ?? r.error?.code ?? ''}`,
  );
}
