// @ts-check
import { admin } from '../api.js';
import { h, replace, table } from '../dom.js';
import { formatTime } from '../format.js';
import { errorNote, outcomeRegion, section } from './parts.js';

/**
 * The webhook endpoints (docs/WEBHOOKS.md): their state, one added (its secret shown once), a test sent,
 * a disabled one enabled, one removed, and an endpoint's deliveries with each attempt's answer. Every
 * /webhooks route needs the API token, reads too: the view asks for it like a write.
 * @param {import('./parts.js').Ctx} ctx
 */
export function webhooksView(ctx) {
  const outcome = outcomeRegion();
  const list = h('div');
  const deliveries = h('div');
  const urlInput = h('input', {
    id: 'hook-url',
    name: 'url',
    type: 'url',
    required: true,
    autocomplete: 'off',
    placeholder: 'https://ntfy.sh/my-node-alerts',
  });
  const typesInput = h('input', {
    id: 'hook-types',
    name: 'types',
    autocomplete: 'off',
    placeholder: 'all, or e.g. dispute_opened,signer_gas_low,autopilot_halted',
  });
  const descriptionInput = h('input', { id: 'hook-description', name: 'description', autocomplete: 'off' });
  const form = h(
    'form',
    { class: 'inline-form', 'aria-labelledby': 'hook-form-title' },
    h('h2', { id: 'hook-form-title' }, 'Add an endpoint'),
    h('label', { for: 'hook-url' }, 'URL (http or https)'),
    urlInput,
    h('label', { for: 'hook-types' }, 'Event types (commas; empty: all)'),
    typesInput,
    h('label', { for: 'hook-description' }, 'Description'),
    descriptionInput,
    h('button', { type: 'submit', class: 'primary', 'data-key': 'hook-add' }, 'Add'),
  );
  const element = section(
    'webhooks',
    'Webhooks',
    h(
      'p',
      { class: 'muted' },
      'The node’s events POSTed, signed (Standard Webhooks), to your endpoints: a phone, a chat, PagerDuty. Each is retried with back-off until the receiver answers 2xx.',
    ),
    outcome,
    list,
    form,
    deliveries,
  );
  /** @type {number | null} */
  let shown = null;

  const load = async () => {
    try {
      const r = await admin('GET', '/webhooks');
      replace(list, endpointsTable(r.endpoints));
      if (shown !== null) await showDeliveries(shown);
    } catch (error) {
      replace(list, errorNote(/** @type {any} */ (error)));
    }
  };

  /** @param {number} id */
  const showDeliveries = async (id) => {
    shown = id;
    try {
      const r = await admin('GET', `/webhooks/${id}/deliveries?limit=50`);
      replace(
        deliveries,
        h('h2', null, `Deliveries of endpoint ${id}, newest first`),
        table({
          headers: ['Delivery', 'Event', 'Type', 'State', 'Attempts', 'Last answer', 'Next attempt'],
          empty: 'None yet.',
          rows: r.deliveries.map((/** @type {any} */ d) => {
            const last = d.attempts.at(-1);
            return [
              String(d.id),
              d.event_id === null ? 'test' : String(d.event_id),
              d.type,
              h('span', { class: `state delivery-${d.state}` }, d.state),
              String(d.attempts.length),
              last
                ? `${last.status ?? last.error} (${last.duration_ms} ms, ${formatTime(last.at, true)})`
                : '—',
              d.next_attempt_at ? formatTime(d.next_attempt_at, true) : '—',
            ];
          }),
        }),
      );
    } catch (error) {
      replace(deliveries, errorNote(/** @type {any} */ (error)));
    }
  };

  /**
   * @param {string} label
   * @param {() => Promise<any>} run
   * @param {(r: any) => (Node | string)[]} describe
   */
  const act = (label, run, describe) => ctx.act(outcome, label, run, describe, []).finally(load);

  /** @param {any[]} endpoints */
  const endpointsTable = (endpoints) =>
    table({
      headers: ['ID', 'State', 'Types', 'URL', 'Description', ''],
      empty: 'No endpoint yet: add one below.',
      rows: endpoints.map((e) => [
        String(e.id),
        h(
          'span',
          { class: `state hook-${e.state}`, title: e.disabled_reason ?? e.failing_since ?? '' },
          e.state === 'disabled' ? `disabled: ${e.disabled_reason}` : e.state,
        ),
        e.types === null ? 'all' : e.types.join(', '),
        h('code', null, e.url),
        e.description,
        h(
          'span',
          { class: 'actions' },
          h(
            'button',
            {
              type: 'button',
              'data-key': `hook-test-${e.id}`,
              onclick: () =>
                act(
                  'Sending a test',
                  () => admin('POST', `/webhooks/${e.id}/test`),
                  (d) => [`Test sent to endpoint ${e.id} (${d.webhook_id}); its deliveries show the answer.`],
                ).then(() => showDeliveries(e.id)),
            },
            'Test',
          ),
          h(
            'button',
            { type: 'button', 'data-key': `hook-deliveries-${e.id}`, onclick: () => showDeliveries(e.id) },
            'Deliveries',
          ),
          e.state === 'disabled'
            ? h(
                'button',
                {
                  type: 'button',
                  'data-key': `hook-enable-${e.id}`,
                  onclick: () =>
                    act(
                      'Enabling',
                      () => admin('POST', `/webhooks/${e.id}/enable`),
                      () => [`Endpoint ${e.id} enabled: its pending deliveries go again.`],
                    ),
                },
                'Enable',
              )
            : null,
          h(
            'button',
            {
              type: 'button',
              'data-key': `hook-remove-${e.id}`,
              onclick: () => {
                if (!window.confirm(`Remove endpoint ${e.id} (${e.url}) and its deliveries?`)) return;
                if (shown === e.id) {
                  shown = null;
                  replace(deliveries);
                }
                void act(
                  'Removing',
                  () => admin('DELETE', `/webhooks/${e.id}`),
                  () => [`Endpoint ${e.id} removed.`],
                );
              },
            },
            'Remove',
          ),
        ),
      ]),
    });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const types = typesInput.value
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t !== '');
    /** @type {Record<string, unknown>} */
    const body = { url: urlInput.value.trim() };
    if (types.length > 0) body.types = types;
    if (descriptionInput.value.trim() !== '') body.description = descriptionInput.value.trim();
    void act(
      'Adding the endpoint',
      () => admin('POST', '/webhooks', body),
      (e) => {
        form.reset();
        return [
          `Endpoint ${e.id} added. Its signing secret, shown only now: `,
          h('code', { class: 'secret', 'data-key': 'hook-secret' }, e.secret),
          ' — give it to the receiver, which verifies each request’s webhook-signature with it.',
        ];
      },
    );
  });

  return {
    title: 'Webhooks',
    element,
    render() {
      void load();
    },
  };
}
