// @ts-check
import { ApiProblem, get, setTokenPrompt, token, write } from './api.js';
import { h, replace } from './dom.js';
import { EventFeed } from './events.js';
import { describeEvent } from './feed.js';
import { formatUsdc, shortId } from './format.js';
import { auditView, tokensView } from './views/access.js';
import { activityView } from './views/activity.js';
import { autopilotView } from './views/autopilot.js';
import { disputesView } from './views/disputes.js';
import { overviewView } from './views/overview.js';
import { stacksView } from './views/stacks.js';
import { subscriptionsView } from './views/subscriptions.js';
import { webhooksView } from './views/webhooks.js';

/**
 * The console: one page, six views, all from the daemon's public API. Each view renders from `state`;
 * a live event (GET /events) names the resources it changes, which are fetched again (debounced), so
 * the page shows exactly what the API says, without reloading.
 */

/** @typedef {import('./views/parts.js').Resource} Resource */

/** @type {Record<Resource, (node: string | null) => Promise<any> | null>} */
const LOADERS = {
  status: () => get('/status'),
  ready: () =>
    get('/ready').then(
      (ready) => ({
        ready: true,
        lag: ready.indexer_lag_seconds,
        detail: 'the indexer is at the chain head',
      }),
      (problem) => {
        if (problem instanceof ApiProblem && problem.status === 503)
          return { ready: false, lag: null, detail: problem.detail };
        throw problem;
      },
    ),
  tasks: () => get('/tasks'),
  autopilot: () =>
    get('/autopilot').catch((problem) => {
      // Network none has no autopilot: that is a state, not an error.
      if (problem instanceof ApiProblem && problem.status === 503) return null;
      throw problem;
    }),
  earnings: (node) => node && get(`/earnings/nodes/${node}`),
  stacks: (node) => node && get(`/stacks/nodes/${node}`),
  claimed: (node) => node && get(`/claimed-stacks/nodes/${node}`),
  against: (node) => node && get(`/attestation_disputes/against/nodes/${node}`),
  own: (node) => node && get(`/attestation_disputes/own/nodes/${node}`),
  subscriptions: (node) => node && get(`/subscriptions/nodes/${node}`),
};
const ALL = /** @type {Resource[]} */ (Object.keys(LOADERS));

/** What each node event changes. */
const AFFECTS = /** @type {Record<string, Resource[]>} */ ({
  stack_assigned: ['stacks', 'earnings'],
  stack_filled: ['stacks', 'earnings'],
  stack_settled: ['stacks', 'earnings', 'autopilot'],
  attestation_requested: ['stacks', 'autopilot'],
  attestation_submitted: ['stacks', 'earnings', 'autopilot'],
  dispute_opened: ['stacks', 'earnings', 'against', 'own'],
  // A stack becomes claimable when an epoch passes: the epoch on every view changed too.
  stack_claimable: ['stacks', 'earnings', 'status', 'autopilot'],
  funds_claimed: ['stacks', 'earnings', 'claimed', 'status', 'autopilot'],
  subscription_changed: ['subscriptions', 'stacks'],
  task_added: ['tasks', 'subscriptions'],
  task_deprecated: ['tasks', 'subscriptions'],
  task_removed: ['tasks', 'subscriptions'],
  autopilot_action: ['autopilot'],
  indexer_status: ['status', 'ready'],
  signer_gas_low: ['status'],
  signer_gas_restored: ['status'],
  autopilot_halted: ['autopilot'],
  autopilot_resumed: ['autopilot'],
  autopilot_gas_budget_spent: ['autopilot'],
  autopilot_gas_budget_restored: ['autopilot'],
  autopilot_failing: ['autopilot'],
  autopilot_recovered: ['autopilot'],
  subscribed_task_deprecated: ['tasks', 'subscriptions'],
  usage_source_lost: ['status'],
  usage_source_restored: ['status', 'stacks', 'earnings'],
});

/** Which views show which resources. */
const VIEWS_OF = /** @type {Record<Resource | 'feed', string[]>} */ ({
  status: ['overview', 'stacks', 'subscriptions'],
  ready: ['overview'],
  tasks: ['stacks', 'subscriptions'],
  autopilot: ['overview', 'autopilot', 'stacks'],
  earnings: ['overview', 'stacks'],
  stacks: ['stacks', 'overview'],
  claimed: ['stacks'],
  against: ['disputes', 'stacks'],
  own: ['disputes'],
  subscriptions: ['subscriptions'],
  feed: ['activity', 'overview'],
});

const NODE_KEY = 'node-daemon:node';
const FEED_KEY = 'node-daemon:feed';
const FEED_SIZE = 200;
const DEBOUNCE_MS = 120;
/**
 * What changes without a node event is asked again this often: the indexer's lag, an epoch with nothing
 * claimable, and usage reports that cross no fill threshold (the earnings' unsettled figure, fill bars).
 */
const TICK_MS = 10_000;

/** @type {import('./views/parts.js').State} */
export const state = {
  node: null,
  data: {},
  errors: {},
  feed: loadFeed(),
  stream: { state: 'connecting', detail: '' },
  access: null,
};

function loadFeed() {
  try {
    return JSON.parse(sessionStorage.getItem(FEED_KEY) ?? '[]');
  } catch {
    return [];
  }
}

// ---- the views -----------------------------------------------------------------------------------------

/**
 * What the views may ask of the console (views/parts.js says what each member does).
 * @type {import('./views/parts.js').Ctx}
 */
export const ctx = {
  state,
  refresh: (names) => refresh(names),
  async act(region, label, run, describe, affects) {
    region.className = 'outcome pending';
    replace(region, `${label}…`);
    try {
      const result = await run();
      region.className = 'outcome success';
      replace(region, ...describe(result));
      refresh(affects);
      return result;
    } catch (error) {
      showProblem(region, error);
      refresh(affects);
      return undefined;
    }
  },
  confirm(title, text, ok) {
    byId('confirm-title').textContent = title;
    byId('confirm-text').textContent = text;
    byId('confirm-ok').textContent = ok;
    return modal('confirm', () => true, false);
  },
  write,
  badge() {
    const badge = state.data.status?.badges?.find(
      (/** @type {any} */ b) => String(b.node_small_id) === state.node,
    );
    return badge ? { node_badge_id: badge.badge_id } : {};
  },
  mayWrite() {
    return state.access === null || state.access.scope === 'write' || state.access.scope === 'admin';
  },
  // Writes act on the signer's badges only, so the views offer them only then (reads of any node are public),
  // and only to a token that may write.
  ownsNode() {
    if (!ctx.mayWrite()) return false;
    const badges = state.data.status?.badges;
    if (!Array.isArray(badges) || state.node === null) return true;
    return badges.some((/** @type {any} */ b) => String(b.node_small_id) === state.node);
  },
  showNode: (node) => showNode(node),
};

/**
 * The daemon's problem in an outcome region: its title, status and code, its detail, and for a request
 * about several stacks, what became of each.
 * @param {HTMLElement} region
 * @param {unknown} error
 */
export function showProblem(region, error) {
  region.className = 'outcome failure';
  if (!(error instanceof ApiProblem)) {
    replace(region, h('strong', null, 'Error'), ': ', error instanceof Error ? error.message : String(error));
    return;
  }
  const results = Array.isArray(error.body.results) ? error.body.results : [];
  replace(
    region,
    h('strong', null, error.title),
    error.status ? ` (${error.status} ${error.code})` : '',
    ': ',
    h('span', { class: 'detail' }, error.detail),
    results.length > 1 ? h('ul', null, results.map(stackOutcome)) : null,
  );
}

/**
 * One stack's line in a write's outcome.
 * @param {Record<string, any>} r
 */
export function stackOutcome(r) {
  if (r.status === 'success') {
    const fee = r.node_fee_amount !== undefined ? `, node fee ${formatUsdc(r.node_fee_amount)}` : '';
    return h(
      'li',
      null,
      `stack ${r.stack_small_id}: done${fee} (tx `,
      h('code', { title: r.tx_digest }, shortId(r.tx_digest)),
      ')',
    );
  }
  return h(
    'li',
    { class: 'problem' },
    `stack ${r.stack_small_id}: ${r.status}, ${r.error?.code}: ${r.error?.detail}`,
  );
}

const views = {
  overview: overviewView(ctx),
  stacks: stacksView(ctx),
  disputes: disputesView(ctx),
  subscriptions: subscriptionsView(ctx),
  autopilot: autopilotView(ctx),
  activity: activityView(ctx),
  webhooks: webhooksView(ctx),
  tokens: tokensView(ctx),
  audit: auditView(ctx),
};
/** @typedef {keyof typeof views} ViewName */
const NAMES = /** @type {ViewName[]} */ (Object.keys(views));
/** @type {ViewName} */
let current = 'overview';
/** Views whose data changed while they were hidden. */
const stale = new Set(NAMES);

const main = byId('main');
for (const name of NAMES) {
  const view = views[name];
  view.element.id = `view-${name}`;
  view.element.hidden = true;
  main.append(view.element);
}

/** @param {string} name */
function isView(name) {
  return /** @type {string[]} */ (NAMES).includes(name);
}

/**
 * @param {ViewName} name
 * @param {boolean} focus move the focus to its heading (after the operator chose it)
 */
function show(name, focus) {
  current = name;
  for (const n of NAMES) views[n].element.hidden = n !== name;
  for (const link of document.querySelectorAll('nav.views a')) {
    if (link instanceof HTMLElement && link.dataset.view === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.title = `${views[name].title} · node-daemon`;
  if (stale.has(name)) render(name);
  if (focus) views[name].element.querySelector('h1')?.focus();
}

/** @param {ViewName} name */
function render(name) {
  stale.delete(name);
  views[name].render(state);
}

/** @param {(Resource | 'feed')[]} changed */
function rerender(changed) {
  const affected = new Set(changed.flatMap((r) => VIEWS_OF[r]));
  for (const name of affected) stale.add(/** @type {ViewName} */ (name));
  if (stale.has(current)) render(current);
  renderHeader();
}

// ---- loading -------------------------------------------------------------------------------------------

/** @type {Set<Resource>} */
const pending = new Set();
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
let loading = false;
/** Bumped whenever the node changes: answers about the previous node are dropped. */
let generation = 0;

/** @param {Resource[]} names */
function refresh(names) {
  for (const name of names) pending.add(name);
  if (timer === undefined && !loading) timer = setTimeout(flush, DEBOUNCE_MS);
}

async function flush() {
  timer = undefined;
  if (pending.size === 0) return;
  loading = true;
  const names = [...pending];
  pending.clear();
  const node = state.node;
  const at = generation;
  await Promise.all(
    names.map(async (name) => {
      try {
        const value = await LOADERS[name](node);
        if (at !== generation) return;
        state.data[name] = value;
        state.errors[name] = undefined;
      } catch (error) {
        if (at !== generation) return;
        state.errors[name] =
          error instanceof ApiProblem ? error : new ApiProblem(0, { detail: String(error) });
      }
    }),
  );
  loading = false;
  if (at === generation) {
    if (names.includes('status')) pickNode();
    rerender(names);
    checkAuth();
  }
  if (pending.size > 0) timer = setTimeout(flush, DEBOUNCE_MS);
}

/** With --auth all, reads answer 401 until the operator gives the token: say so once, with the way out. */
function checkAuth() {
  const refused = Object.values(state.errors).find((e) => e && (e.status === 401 || e.status === 403));
  const banner = byId('banner');
  if (!refused) {
    banner.hidden = true;
    return;
  }
  banner.hidden = false;
  replace(
    banner,
    h('strong', null, refused.title),
    ': ',
    refused.detail,
    ' ',
    h(
      'button',
      { type: 'button', class: 'primary', onclick: () => askToken(refused) },
      'Enter the API token',
    ),
  );
}

/**
 * Lists the operator's nodes in the header's switcher once the status is known (the node ids the daemon is
 * configured with, then the signer's badges; another node is shown by typing its id), and chooses the node
 * to show: the one asked for, else the first configured node, else the signer's first badge.
 */
function pickNode() {
  const badges = state.data.status?.badges ?? [];
  /** @type {string[]} */
  const configured = (state.data.status?.node_small_ids ?? []).map(String);
  const select = /** @type {HTMLSelectElement} */ (byId('node-select'));
  /** @type {Map<string, any>} */
  const badgeOf = new Map(badges.map((/** @type {any} */ b) => [String(b.node_small_id), b]));
  const own = [...new Set([...configured, ...badgeOf.keys()])];
  replace(
    select,
    own.map((id) =>
      h(
        'option',
        { value: id },
        badgeOf.has(id) ? `${id} (badge ${shortId(badgeOf.get(id).badge_id)})` : `${id} (configured)`,
      ),
    ),
    state.node !== null && !own.includes(state.node)
      ? h(
          'option',
          { value: state.node },
          state.data.status ? `${state.node} (not the signer's)` : state.node,
        )
      : null,
  );
  select.hidden = own.length === 0 && state.node === null;
  if (state.node !== null) select.value = state.node;
  if (state.node !== null) return;
  const wanted = new URLSearchParams(location.search).get('node') ?? sessionStorage.getItem(NODE_KEY);
  const chosen = wanted && /^\d+$/.test(wanted) ? wanted : (own[0] ?? null);
  if (chosen !== null) showNode(chosen);
}

/** @param {string} node */
function showNode(node) {
  if (!/^\d{1,16}$/.test(node)) return;
  generation += 1;
  state.node = node;
  sessionStorage.setItem(NODE_KEY, node);
  for (const name of ['earnings', 'stacks', 'claimed', 'against', 'own', 'subscriptions']) {
    delete state.data[name];
    delete state.errors[name];
  }
  /** @type {HTMLInputElement} */ (byId('node-input')).value = '';
  loading = false;
  clearTimeout(timer);
  timer = undefined;
  refresh(ALL);
  rerender(ALL);
  pickNode();
}

// ---- the header, the token and the live stream ---------------------------------------------------------

function renderHeader() {
  const status = state.data.status;
  byId('network').textContent = status ? `${status.network} network · epoch ${status.epoch ?? '—'}` : '…';
  const live = byId('live');
  const { state: s, detail } = state.stream;
  live.dataset.state = s;
  live.textContent =
    s === 'live'
      ? '● live'
      : s === 'needs-token'
        ? 'live updates need the token'
        : s === 'retrying'
          ? `○ ${detail}`
          : '○ connecting…';
  live.title = s === 'live' ? 'Following GET /events: the views update by themselves' : detail;
  const button = byId('token-button');
  button.textContent = token.get() ? 'Forget the token' : 'Enter the token';
}

/** @param {ApiProblem} [problem] */
function askToken(problem) {
  const input = /** @type {HTMLInputElement} */ (byId('token-input'));
  const problemLine = byId('token-problem');
  const file = problem?.detail.match(/the token in (\S+?)[)>,;]?(?:\s|$)/)?.[1];
  if (file) byId('token-file').textContent = file;
  problemLine.hidden = !problem;
  problemLine.textContent = problem ? `${problem.title}: ${problem.detail}` : '';
  input.value = '';
  const answer = modal('token', () => input.value.trim() || null, null);
  input.focus();
  return answer.then((value) => {
    if (value) token.set(value);
    return value;
  });
}

/**
 * Shows the modal dialog #<name>-dialog and answers once: `submitted()` when its form (#<name>-form) is
 * submitted, `cancelled` when the operator cancels (#<name>-cancel or Escape). Then it closes.
 * @template T
 * @param {string} name
 * @param {() => T} submitted
 * @param {T} cancelled
 * @returns {Promise<T>}
 */
function modal(name, submitted, cancelled) {
  const dialog = /** @type {HTMLDialogElement} */ (byId(`${name}-dialog`));
  const form = byId(`${name}-form`);
  const cancel = byId(`${name}-cancel`);
  dialog.showModal();
  return new Promise((resolve) => {
    const done = (/** @type {T} */ answer) => {
      form.removeEventListener('submit', onSubmit);
      cancel.removeEventListener('click', onCancel);
      dialog.removeEventListener('cancel', onCancel);
      dialog.close();
      resolve(answer);
    };
    const onSubmit = (/** @type {Event} */ event) => {
      event.preventDefault();
      done(submitted());
    };
    const onCancel = (/** @type {Event} */ event) => {
      event.preventDefault();
      done(cancelled);
    };
    form.addEventListener('submit', onSubmit);
    cancel.addEventListener('click', onCancel);
    dialog.addEventListener('cancel', onCancel);
  });
}
setTokenPrompt(askToken);

/**
 * Asks the daemon which token the console holds (GET /whoami), and shows what its scope allows: the admin
 * views (Tokens, Audit) to an admin token only (Webhooks also while the scope is unknown: it asks for the
 * token), the write buttons to a write or admin token only.
 */
async function loadAccess() {
  // Without a token there is nothing to ask (a 401 would be a failed load in the browser's console): the
  // scope is unknown, and a write asks for the token.
  if (!token.get()) state.access = null;
  else
    try {
      const who = await get('/whoami');
      state.access = { name: who.name, scope: who.scope };
    } catch {
      state.access = null;
    }
  document.body.dataset.scope = state.access?.scope ?? '';
  for (const link of document.querySelectorAll('nav.views [data-scope="admin"]')) {
    if (link instanceof HTMLElement) link.hidden = state.access?.scope !== 'admin';
  }
  // The Webhooks view asks for the token itself: offered while the scope is unknown, hidden from the others.
  for (const link of document.querySelectorAll('nav.views [data-scope="admin-asks"]')) {
    if (link instanceof HTMLElement) link.hidden = state.access !== null && state.access.scope !== 'admin';
  }
  const who = byId('whoami');
  who.textContent = state.access ? `${state.access.name ?? 'no token'} · ${state.access.scope}` : '';
  who.hidden = state.access === null;
  for (const name of NAMES) stale.add(name);
  render(current);
}

token.onChange(() => {
  renderHeader();
  void loadAccess();
  if (token.get()) {
    // Reads refused for want of the token can be asked again, and the stream can reconnect.
    if (Object.values(state.errors).some((e) => e && (e.status === 401 || e.status === 403))) refresh(ALL);
    if (state.stream.state === 'needs-token') feed.restart();
  }
});

byId('token-button').addEventListener('click', () => {
  if (token.get()) token.clear();
  else void askToken();
});

const feed = new EventFeed({
  onMessage(message) {
    if (message.event === 'events_lost') {
      // Past the retention: the views are read again from scratch, and the feed says so.
      addToFeed({
        id: null,
        at: new Date().toISOString(),
        type: 'events_lost',
        tone: 'warn',
        text: message.data.detail ?? 'some events were lost',
      });
      refresh(ALL);
      return;
    }
    if (message.event === 'overflow') return;
    const data = message.data;
    if (typeof data !== 'object' || data === null) return;
    const mine =
      state.node === null || data.node_small_id === null || String(data.node_small_id) === state.node;
    refresh(AFFECTS[message.event] ?? []);
    if (mine || message.event === 'dispute_opened' || message.event === 'attestation_requested')
      addToFeed(describeEvent(data));
  },
  onState(s, detail = '') {
    state.stream = { state: s, detail };
    renderHeader();
  },
  onConnected(resumed) {
    // Whatever happened while the stream was down is in the resumed events; what has no event (the
    // indexer's lag, the epoch) is read again.
    refresh(resumed ? ['status', 'ready'] : ALL);
  },
});

/** @param {ReturnType<typeof describeEvent>} entry */
function addToFeed(entry) {
  if (entry.id !== null && state.feed.some((e) => e.id === entry.id)) return;
  state.feed.unshift(entry);
  state.feed.length = Math.min(state.feed.length, FEED_SIZE);
  sessionStorage.setItem(FEED_KEY, JSON.stringify(state.feed));
  rerender(['feed']);
}

// ---- navigation and keys -------------------------------------------------------------------------------

window.addEventListener('hashchange', () => {
  const name = location.hash.slice(1);
  if (isView(name)) show(/** @type {ViewName} */ (name), true);
});

document.addEventListener('keydown', (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return;
  const target = event.target;
  if (
    target instanceof HTMLInputElement ||
    target instanceof HTMLSelectElement ||
    target instanceof HTMLTextAreaElement
  )
    return;
  if (document.querySelector('dialog[open]')) return;
  const index = Number(event.key) - 1;
  if (Number.isInteger(index) && index >= 0 && index < NAMES.length) {
    location.hash = NAMES[index];
    event.preventDefault();
  } else if (event.key === 'r') {
    refresh(ALL);
    event.preventDefault();
  }
});

byId('node-select').addEventListener('change', (event) => {
  const value = /** @type {HTMLSelectElement} */ (event.target).value;
  if (/^\d+$/.test(value) && value !== state.node) showNode(value);
});

byId('node-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const value = /** @type {HTMLInputElement} */ (byId('node-input')).value.trim();
  if (/^\d+$/.test(value)) showNode(value);
});

/** @param {string} id */
function byId(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
}

// ---- start ---------------------------------------------------------------------------------------------

const first = location.hash.slice(1);
show(isView(first) ? /** @type {ViewName} */ (first) : 'overview', false);
renderHeader();
refresh(ALL);
void loadAccess();
feed.start();
setInterval(() => {
  if (document.visibilityState !== 'visible') return;
  refresh(current === 'stacks' ? ['status', 'ready', 'earnings', 'stacks'] : ['status', 'ready', 'earnings']);
}, TICK_MS);
