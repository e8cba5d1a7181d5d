// @ts-check
import { ApiProblem, get } from '../api.js';
import { h, replace } from '../dom.js';
import { formatTime } from '../format.js';
import { errorNote, outcomeRegion, section } from './parts.js';

/**
 * The admin views: the named tokens (create, revoke) and the audit trail. Shown in the navigation only to
 * an admin token (GET /whoami); each loads its data when it is shown.
 */

const NOT_ADMIN =
  'This view needs an admin token (the file token api-token is one): GET /whoami says which token the console holds.';

/**
 * A view's render for an admin token only: its body and a load for an admin token, a note for any other.
 * @param {HTMLElement} note
 * @param {HTMLElement} body
 * @param {() => Promise<void>} load
 */
function adminOnly(note, body, load) {
  /** @param {import('./parts.js').State} state */
  return (state) => {
    const admin = state.access?.scope === 'admin';
    note.textContent = admin ? '' : NOT_ADMIN;
    body.hidden = !admin;
    if (admin) void load();
  };
}

/** @param {import('./parts.js').Ctx} ctx */
export function tokensView(ctx) {
  const outcome = outcomeRegion();
  const list = h('div');
  const name = h('input', {
    id: 'new-token-name',
    name: 'name',
    required: true,
    pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}',
    placeholder: 'grafana',
    autocomplete: 'off',
  });
  const scope = h(
    'select',
    { id: 'new-token-scope', name: 'scope' },
    ['read', 'usage', 'write', 'admin'].map((s) => h('option', { value: s }, s)),
  );
  const days = h('input', {
    id: 'new-token-days',
    name: 'days',
    inputmode: 'numeric',
    pattern: '[0-9]*',
    size: 4,
    placeholder: 'never',
  });
  const form = h(
    'form',
    { class: 'inline-form', 'data-key': 'token-create' },
    h('label', { for: 'new-token-name' }, 'Name '),
    name,
    h('label', { for: 'new-token-scope' }, ' Scope '),
    scope,
    h('label', { for: 'new-token-days' }, ' Expires in days '),
    days,
    ' ',
    h('button', { type: 'submit', class: 'primary' }, 'Create'),
  );
  const load = async () => {
    try {
      const body = await get('/tokens');
      replace(list, table(body.tokens));
    } catch (error) {
      replace(
        list,
        errorNote(error instanceof ApiProblem ? error : new ApiProblem(0, { detail: String(error) })),
      );
    }
  };
  /** @param {any[]} tokens */
  const table = (tokens) =>
    tokens.length === 0
      ? h('p', { class: 'muted' }, 'No named tokens yet; the file token api-token is admin.')
      : h(
          'table',
          { 'data-key': 'tokens' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              ['Name', 'Scope', 'State', 'Created', 'Expires', 'Last used', ''].map((t) => h('th', null, t)),
            ),
          ),
          h(
            'tbody',
            null,
            tokens.map((t) =>
              h(
                'tr',
                { 'data-token': t.name },
                h('td', null, t.name),
                h('td', null, t.scope),
                h('td', null, t.state),
                h('td', null, formatTime(t.created_at, true)),
                h('td', null, t.expires_at ? formatTime(t.expires_at, true) : 'never'),
                h('td', null, t.last_used_at ? formatTime(t.last_used_at, true) : 'never'),
                h(
                  'td',
                  null,
                  t.state === 'revoked'
                    ? ''
                    : h('button', { type: 'button', onclick: () => revoke(t.name) }, 'Revoke'),
                ),
              ),
            ),
          ),
        );
  /** @param {string} token */
  const revoke = async (token) => {
    if (
      !(await ctx.confirm(
        'Revoke the token',
        `Every daemon on this store refuses ${token} from its next request.`,
        'Revoke',
      ))
    )
      return;
    await ctx.act(
      outcome,
      `Revoking ${token}`,
      () => ctx.write('DELETE', `/tokens/${encodeURIComponent(token)}`, {}),
      () => [`Revoked ${token}.`],
      [],
    );
    await load();
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const n = Number(days.value.trim());
    const body = {
      name: name.value.trim(),
      scope: scope.value,
      ...(days.value.trim() && n > 0 ? { expires_in: n * 86_400 } : {}),
    };
    await ctx.act(
      outcome,
      `Creating ${body.name}`,
      () => ctx.write('POST', '/tokens', body),
      (t) => [
        `Created the ${t.scope} token ${t.name}; copy it now, it is shown this once: `,
        h('code', { 'data-key': 'new-token' }, t.token),
      ],
      [],
    );
    name.value = '';
    await load();
  });
  const note = h('p', { class: 'muted' });
  const body = h('div', null, form, list);
  const element = section(
    'tokens',
    'Tokens',
    h(
      'p',
      { class: 'muted' },
      'Named tokens with a scope: read for dashboards, usage for the inference server, write for scripts, admin for the operator. The daemon keeps only their hash.',
    ),
    note,
    outcome,
    body,
  );
  return {
    title: 'Tokens',
    element,
    render: adminOnly(note, body, load),
  };
}

/** @param {import('./parts.js').Ctx} _ctx */
export function auditView(_ctx) {
  const list = h('div');
  const outcome = h(
    'select',
    { id: 'audit-outcome', name: 'outcome' },
    [
      ['', 'all'],
      ['ok', 'ok'],
      ['denied', 'denied (401, 403)'],
      ['failed', 'failed'],
    ].map(([v, t]) => h('option', { value: v }, t)),
  );
  const load = async () => {
    try {
      const query = outcome.value ? `?outcome=${outcome.value}` : '';
      const page = await get(`/audit${query}`);
      replace(
        list,
        page.entries.length === 0
          ? h('p', { class: 'muted' }, 'No entries.')
          : h(
              'table',
              { 'data-key': 'audit' },
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['Time', 'Token', 'Request', 'Status', 'Code', 'Transaction'].map((t) => h('th', null, t)),
                ),
              ),
              h(
                'tbody',
                null,
                page.entries.map((/** @type {any} */ e) =>
                  h(
                    'tr',
                    null,
                    h('td', null, formatTime(e.at, true)),
                    h('td', null, e.token ?? '—'),
                    h('td', null, `${e.method} ${e.route}`),
                    h('td', null, String(e.status)),
                    h('td', null, e.problem_code ?? ''),
                    h('td', null, `${e.tx_digest ?? ''}${e.idempotent_replay ? ' (replayed)' : ''}`),
                  ),
                ),
              ),
            ),
      );
    } catch (error) {
      replace(
        list,
        errorNote(error instanceof ApiProblem ? error : new ApiProblem(0, { detail: String(error) })),
      );
    }
  };
  outcome.addEventListener('change', () => void load());
  const note = h('p', { class: 'muted' });
  const body = h('div', null, h('label', { for: 'audit-outcome' }, 'Outcome '), outcome, list);
  const element = section(
    'audit',
    'Audit',
    h(
      'p',
      { class: 'muted' },
      'Every write and admin request, refused ones too, newest first: which token (its name), what, the answer, the transaction.',
    ),
    note,
    body,
  );
  return {
    title: 'Audit',
    element,
    render: adminOnly(note, body, load),
  };
}
