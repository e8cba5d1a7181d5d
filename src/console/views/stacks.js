// @ts-check
import { h, replace } from '../dom.js';
import { fillRatio, formatCoin, formatFill, formatInt, formatUsdc, idList } from '../format.js';
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
 * claimed tickets, and for a settled stack the earnings' word (settling in its dispute period, or
 * claimable); "settled" only while the earnings are not read yet.
 * @param {Record<string, any>} stack
 * @param {Set<string>} disputed
 * @param {Map<string, any>} settled the earnings' settled_stacks by id
 * @returns {'open' | 'settling' | 'claimable' | 'settled' | 'disputed' | 'claimed' | 'locked'}
 */
export function stackState(stack, disputed, settled) {
  if (stack.is_claimed) return 'claimed';
  const id = String(stack.stack_small_id);
  if (disputed.has(id)) return 'disputed';
  if (stack.is_locked_for_claim) return 'locked';
  if (stack.in_settle_period) return settled.get(id)?.state ?? 'settled';
  return 'open';
}

const STATE_NOTES = {
  open: 'Not settled: the node serves it; settle it once it is used',
  settling: 'Settled, in its dispute period: it can be claimed from the epoch shown',
  claimable: 'Settled and past its dispute period: it can be claimed now',
  settled: 'Try-settled',
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
    ['all', 'open', 'settling', 'claimable', 'disputed', 'claimed'].map((s) =>
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
    // What it would claim, pay and cost, simulated by the daemon (it asks for the token first, as the
    // settlement itself will); without an estimate the dialog says why, and the operator may still go on.
    const body = { stack_small_ids: ids.map(Number), ...ctx.badge() };
    /** @type {any} */
    let estimate;
    /** @type {string} */
    let unknown = '';
    try {
      estimate = await ctx.write('POST', '/nodes/try-settle-stacks/estimate', body);
    } catch (error) {
      if (error instanceof Error && /** @type {any} */ (error).code === 'cancelled') {
        showProblem(error);
        return;
      }
      unknown = `The fee and the gas could not be estimated (${error instanceof Error ? error.message : String(error)}). `;
    }
    const used =
      stacks.length === 1
        ? `It claims the ${formatInt(stacks[0].already_computed_units)} units used of ${formatInt(stacks[0].num_compute_units)} (${formatFill(stacks[0].already_computed_units, stacks[0].num_compute_units)}). `
        : `Each claims the units used so far (stacks ${idList(ids)}). `;
    const text = `${used}${unknown || estimateText(estimate)}A stack settles once: the units not used go back to the buyer when it is claimed.`;
    const title = ids.length === 1 ? `Settle stack ${ids[0]}?` : `Settle ${ids.length} stacks?`;
    if (!(await ctx.confirm(title, text, ids.length === 1 ? 'Settle' : `Settle ${ids.length} stacks`)))
      return;
    const result = await ctx.act(
      outcome,
      `Settling ${ids.length === 1 ? `stack ${ids[0]}` : `${ids.length} stacks`}`,
      () => ctx.write('POST', '/nodes/try-settle-stacks', body),
      settled,
      ['stacks', 'earnings', 'autopilot', 'status'],
    );
    if (result) for (const id of ids) selected.delete(id);
  };
  /** @param {unknown} error */
  const showProblem = (error) =>
    ctx.act(
      outcome,
      'Settling',
      () => Promise.reject(error),
      () => [],
      [],
    );
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
    const settledInfo = new Map(
      (state.data.earnings?.settled_stacks ?? []).map((/** @type {any} */ t) => [
        String(t.stack_small_id),
        t,
      ]),
    );
    const stateOf = (/** @type {any} */ s) => stackState(s, disputed, settledInfo);
    const fees = new Map(
      (state.data.claimed ?? []).map((/** @type {any} */ t) => [String(t.stack_small_id), t]),
    );
    const tasks = new Map(
      (state.data.tasks ?? []).map((/** @type {any} */ t) => [String(t.task_small_id), t]),
    );
    const wanted = stateFilter.value;
    const minFill = Math.max(0, Math.min(100, Number(fillFilter.value) || 0)) / 100;
    const rows = stacks.filter((s) => {
      const st = stateOf(s);
      if (wanted !== 'all' && st !== wanted) return false;
      return minFill === 0 || fillRatio(s.already_computed_units, s.num_compute_units) >= minFill;
    });
    const own = ctx.ownsNode();
    const settleable = (/** @type {any} */ s) =>
      own && stateOf(s) === 'open' && BigInt(s.already_computed_units) > 0n;
    // Only a stack past its dispute period: claiming one still in it is refused (409).
    const claimable = (/** @type {any} */ s) => own && stateOf(s) === 'claimable';
    const byId = new Map(stacks.map((s) => [String(s.stack_small_id), s]));
    for (const id of [...selected]) {
      const s = byId.get(id);
      if (!s || !(settleable(s) || claimable(s))) selected.delete(id);
    }
    const chosen = [...selected];
    const toSettle = chosen.filter((id) => settleable(byId.get(id)));
    const toClaim = chosen.filter((id) => claimable(byId.get(id)));
    const allClaimable = stacks.filter(claimable).map((s) => String(s.stack_small_id));
    const settling = stacks.filter((s) => stateOf(s) === 'settling');
    const nearFull = stacks.filter(
      (s) => stateOf(s) === 'open' && fillRatio(s.already_computed_units, s.num_compute_units) >= NEAR_FULL,
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
          disabled: allClaimable.length === 0,
          onclick: () => claim(allClaimable),
          title: 'Claims every settled stack past its dispute period',
        },
        `Claim all claimable (${allClaimable.length})`,
      ),
    );
    summary.textContent =
      state.node === null
        ? 'No node to show.'
        : `${rows.length} of ${stacks.length} stacks of node ${state.node}${own ? '' : ' (not one of the signer’s nodes: nothing to settle or claim here)'}${nearFull.length > 0 ? `; ${nearFull.length} open ${nearFull.length === 1 ? 'stack is' : 'stacks are'} near full (≥ ${NEAR_FULL * 100} %)` : ''}${settling.length > 0 ? `; ${settling.length} settled ${settling.length === 1 ? 'stack is' : 'stacks are'} in the dispute period (claimable from epoch ${earliest(settling.map((t) => settledInfo.get(String(t.stack_small_id))?.claimable_from_epoch))})` : ''}.`;
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
                    state: stateOf(s),
                    settledInfo,
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
 * @param {{ state: ReturnType<typeof stackState>, settledInfo: Map<string, any>, fees: Map<string, any>, tasks: Map<string, any>, selected: Set<string>, settleable: (s: any) => boolean, claimable: (s: any) => boolean, settle: (ids: string[]) => void, claim: (ids: string[]) => void, redraw: () => void, headers: string[] }} o
 */
function stackRow(s, o) {
  const id = String(s.stack_small_id);
  const st = o.state;
  const pending = o.settledInfo.get(id);
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
    feeCell(st, ticket, pending),
    o.settleable(s)
      ? h('button', { type: 'button', 'data-key': `settle-${id}`, onclick: () => o.settle([id]) }, 'Settle')
      : o.claimable(s)
        ? h(
            'button',
            { type: 'button', class: 'primary', 'data-key': `claim-${id}`, onclick: () => o.claim([id]) },
            'Claim',
          )
        : st === 'settling' && pending?.claimable_from_epoch != null
          ? h(
              'span',
              {
                class: 'muted small',
                'data-key': `claimable-from-${id}`,
                title: 'In its dispute period: claiming it now would be refused',
              },
              `claimable from epoch ${pending.claimable_from_epoch}`,
            )
          : '',
  ];
  return h(
    'tr',
    { class: near ? 'near-full' : st === 'disputed' ? 'disputed' : '', 'data-stack': id, 'data-state': st },
    cells.map((cell, i) => h('td', { 'data-label': o.headers[i] || (i === 7 ? '' : '') }, cell)),
  );
}

/**
 * The node fee of a stack: what its claim paid once claimed; for a settled stack, what claiming it will
 * pay (the earnings' figure, by the contract's formula); an open stack's is known once it is settled.
 * @param {ReturnType<typeof stackState>} st
 * @param {any} ticket its claimed ticket, if claimed
 * @param {any} pending its settled_stacks entry, if settled and not claimed
 */
function feeCell(st, ticket, pending) {
  if (ticket && ticket.node_fee_amount !== null) {
    return h(
      'span',
      { class: 'amount', title: `refund to the buyer ${formatUsdc(ticket.user_refund_amount)}` },
      formatUsdc(ticket.node_fee_amount),
    );
  }
  if (pending && pending.node_fee_amount !== null) {
    const title =
      st === 'disputed'
        ? 'locked by the dispute: the contract has no resolution'
        : `paid when claimed, for ${formatInt(pending.num_claimed_compute_units)} units`;
    return h(
      'span',
      { class: `amount${st === 'disputed' ? ' muted' : ''}`, title },
      formatUsdc(pending.node_fee_amount),
    );
  }
  const why =
    st === 'claimed' || pending
      ? 'price never seen by the daemon'
      : 'known once settled: the Overview totals the unsettled fees';
  return h('span', { class: 'muted', title: why }, '—');
}

/**
 * The estimate's figures in a sentence: the fee, the refund and the gas, or why the chain would refuse.
 * @param {any} estimate a SettleEstimate
 */
function estimateText(estimate) {
  const ready = estimate.results.filter((/** @type {any} */ r) => r.status === 'ready');
  const refused = estimate.results.filter((/** @type {any} */ r) => r.status !== 'ready');
  const refunds = ready.reduce(
    (/** @type {bigint} */ sum, /** @type {any} */ r) => sum + BigInt(r.user_refund_amount ?? 0),
    0n,
  );
  const gasKnown = ready.every((/** @type {any} */ r) => r.gas_estimate !== null);
  const parts = [];
  if (ready.length > 0) {
    parts.push(
      `The node is paid ${formatUsdc(estimate.total.node_fee_amount)} when ${ready.length === 1 ? 'it is' : 'they are'} claimed, and the buyer${ready.length === 1 ? ' gets' : 's get'} ${formatUsdc(refunds)} back. `,
      gasKnown
        ? `Gas: ${formatCoin('SUI', estimate.total.gas_estimate)} (simulated), paid by the signer. `
        : 'Gas: not known now (the chain could not simulate it). ',
    );
  }
  for (const r of refused) parts.push(`Stack ${r.stack_small_id}: ${r.error?.detail ?? r.status}. `);
  return parts.join('');
}

/**
 * The earliest of some epochs.
 * @param {unknown[]} epochs
 */
function earliest(epochs) {
  const known = epochs
    .filter((e) => e !== null && e !== undefined)
    .map((e) => BigInt(/** @type {any} */ (e)));
  return known.length === 0 ? '—' : String(known.reduce((a, b) => (a < b ? a : b)));
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
