// @ts-check
import { h, replace, table } from '../dom.js';
import {
  formatInt,
  formatUnits,
  formatUsdc,
  parseUnits,
  roleName,
  securityName,
  toWire,
  U64_MAX,
} from '../format.js';
import { errorNote, outcomeRegion, section } from './parts.js';

/**
 * The node's task subscriptions: subscribe, change a price, unsubscribe; and the network's tasks. With
 * no node yet, register one.
 * @param {import('./parts.js').Ctx} ctx
 */
export function subscriptionsView(ctx) {
  const outcome = outcomeRegion();
  const register = h('div');
  const current = h('div');
  const tasksList = h('div');
  const taskSelect = h('select', { id: 'sub-task', name: 'task', required: true });
  const priceInput = h('input', {
    id: 'sub-price',
    name: 'price',
    inputmode: 'decimal',
    autocomplete: 'off',
    required: true,
    placeholder: '1.000000',
    'aria-describedby': 'sub-price-hint',
  });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Subscribe');
  const form = h(
    'form',
    { class: 'inline-form', 'aria-labelledby': 'sub-form-title' },
    h('h2', { id: 'sub-form-title' }, 'Subscribe, or change a price'),
    h('label', { for: 'sub-task' }, 'Task'),
    taskSelect,
    h('label', { for: 'sub-price' }, 'Price per million compute units (USDC)'),
    priceInput,
    submit,
    h(
      'p',
      { id: 'sub-price-hint', class: 'hint' },
      'Up to 6 decimals: 1 USDC is 1,000,000 in the API’s smallest unit.',
    ),
  );
  const element = section(
    'subscriptions',
    'Subscriptions',
    register,
    outcome,
    current,
    form,
    h('h2', null, 'Tasks of the network'),
    tasksList,
  );
  /** @type {import('./parts.js').State | undefined} */
  let last;

  const subscribed = (/** @type {string} */ task) =>
    (last?.data.subscriptions ?? []).some((/** @type {any} */ s) => String(s.task_small_id) === task);
  const updateLabel = () => {
    submit.textContent = subscribed(taskSelect.value) ? 'Change the price' : 'Subscribe';
  };
  taskSelect.addEventListener('change', updateLabel);

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const price = parseUnits(priceInput.value, 6);
    if (price === null || price <= 0n || price > U64_MAX) {
      outcome.className = 'outcome failure';
      replace(
        outcome,
        'The price must be a positive amount of USDC with at most 6 decimals, for example 1.5.',
      );
      priceInput.focus();
      return;
    }
    const task = taskSelect.value;
    const update = subscribed(task);
    void ctx.act(
      outcome,
      update ? `Changing the price for task ${task}` : `Subscribing to task ${task}`,
      () =>
        ctx.write('POST', update ? '/nodes/task-update-subscription' : '/nodes/task-subscribe', {
          task_small_id: Number(task),
          price_per_one_million_compute_units: toWire(price),
          ...ctx.badge(),
        }),
      (r) => [
        `${update ? 'Price changed' : 'Subscribed'}: task ${task} at ${formatUsdc(price)} per million units (tx ${r.tx_digest}).`,
      ],
      ['subscriptions', 'stacks'],
    );
  });

  /** @param {string} task */
  const unsubscribe = async (task) => {
    if (
      !(await ctx.confirm(
        `Unsubscribe from task ${task}?`,
        'The node stops receiving new stacks of this task. Its stacks already bought stay its own.',
        'Unsubscribe',
      ))
    )
      return;
    await ctx.act(
      outcome,
      `Unsubscribing from task ${task}`,
      () => ctx.write('DELETE', '/nodes/task-unsubscribe', { task_small_id: Number(task), ...ctx.badge() }),
      (r) => [`Unsubscribed from task ${task} (tx ${r.tx_digest}).`],
      ['subscriptions'],
    );
  };

  return {
    title: 'Subscriptions',
    element,
    /** @param {import('./parts.js').State} state */
    render(state) {
      last = state;
      const tasks = /** @type {any[]} */ (state.data.tasks ?? []);
      const byId = new Map(tasks.map((t) => [String(t.task_small_id), t]));
      const status = state.data.status;
      const noBadge = status && Array.isArray(status.badges) && status.badges.length === 0;
      replace(
        register,
        noBadge
          ? h(
              'div',
              { class: 'callout' },
              h('p', null, 'The signer owns no NodeBadge yet. Register a node to subscribe to tasks.'),
              h(
                'button',
                {
                  type: 'button',
                  class: 'primary',
                  'data-key': 'register',
                  onclick: () =>
                    ctx.act(
                      outcome,
                      'Registering a node',
                      () => ctx.write('POST', '/nodes/register', {}),
                      (r) => {
                        if (r.node_small_id !== null) ctx.showNode(String(r.node_small_id));
                        return [`Registered node ${r.node_small_id} (badge ${r.badge_id}).`];
                      },
                      ['status'],
                    ),
                },
                'Register a node',
              ),
            )
          : null,
      );
      const own = ctx.ownsNode();
      form.hidden = !own;
      const subs = /** @type {any[]} */ (state.data.subscriptions ?? []);
      replace(
        current,
        errorNote(state.errors.subscriptions),
        table({
          caption: state.node === null ? 'Subscriptions' : `Subscriptions of node ${state.node}`,
          headers: ['Task', 'Model', 'Price / 1M units', 'Most units', 'Valid', ''],
          empty: state.node === null ? 'No node to show.' : 'This node subscribes to no task yet.',
          ...(own
            ? {}
            : { caption: `Subscriptions of node ${state.node}, not one of the signer’s nodes (read only)` }),
          rows: subs.map((s) => {
            const id = String(s.task_small_id);
            const task = byId.get(id);
            return [
              id,
              task?.model_name ?? '—',
              h('span', { class: 'amount' }, formatUsdc(s.price_per_one_million_compute_units)),
              formatInt(s.max_num_compute_units),
              s.valid ? 'yes' : 'no (task removed)',
              own &&
                h(
                  'span',
                  { class: 'row-actions' },
                  h(
                    'button',
                    {
                      type: 'button',
                      'data-key': `price-${id}`,
                      onclick: () => {
                        taskSelect.value = id;
                        priceInput.value = formatUnits(s.price_per_one_million_compute_units, 6).replaceAll(
                          ',',
                          '',
                        );
                        updateLabel();
                        priceInput.focus();
                        priceInput.select();
                      },
                    },
                    'Change price',
                  ),
                  h(
                    'button',
                    { type: 'button', 'data-key': `unsub-${id}`, onclick: () => unsubscribe(id) },
                    'Unsubscribe',
                  ),
                ),
            ];
          }),
        }),
      );
      const chosen = taskSelect.value;
      const active = tasks.filter((t) => !t.is_deprecated && !t.is_removed);
      replace(
        taskSelect,
        active.map((t) =>
          h(
            'option',
            { value: String(t.task_small_id) },
            `${t.task_small_id}: ${t.model_name ?? roleName(t.role)}`,
          ),
        ),
      );
      if (active.some((t) => String(t.task_small_id) === chosen)) taskSelect.value = chosen;
      updateLabel();
      replace(
        tasksList,
        errorNote(state.errors.tasks),
        table({
          headers: ['Task', 'Model', 'Role', 'Security', 'Min. reputation', 'State'],
          empty: 'The network has no task yet.',
          rows: tasks.map((t) => [
            String(t.task_small_id),
            t.model_name ?? '—',
            roleName(t.role),
            securityName(t.security_level),
            t.minimum_reputation_score === null ? '—' : String(t.minimum_reputation_score),
            t.is_removed
              ? `removed (epoch ${t.removed_at_epoch})`
              : t.is_deprecated
                ? `deprecated (epoch ${t.deprecated_at_epoch})`
                : 'active',
          ]),
        }),
      );
    },
  };
}
