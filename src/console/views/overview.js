// @ts-check
import { claimedChart } from '../chart.js';
import { facts, h, replace } from '../dom.js';
import { formatCoin, formatDuration, formatInt, formatTime, formatUsdc, shortId } from '../format.js';
import { errorNote, feedList, section } from './parts.js';

/**
 * The overview: the node and the signer, the network and its epoch, the indexer's lag and readiness, where
 * usage comes from, the balances, and the node's money (GET /earnings) with the chart of claimed fees by
 * epoch.
 * @param {import('./parts.js').Ctx} _ctx
 */
export function overviewView(_ctx) {
  const cards = h('div', { class: 'cards overview' });
  const element = section('overview', 'Overview', cards);
  return {
    title: 'Overview',
    element,
    /** @param {import('./parts.js').State} state */
    render(state) {
      replace(
        cards,
        earningsCard(state),
        chartCard(state),
        nodeCard(state),
        indexerCard(state),
        activityCard(state),
      );
    },
  };
}

/** @param {import('./parts.js').State} state */
function nodeCard(state) {
  const status = state.data.status;
  const badge = status?.badges?.find((/** @type {any} */ b) => String(b.node_small_id) === state.node);
  const balances = status?.balances ? Object.entries(status.balances) : [];
  return h(
    'article',
    { class: 'card span-4', 'aria-labelledby': 'card-node' },
    h('h2', { id: 'card-node' }, state.node === null ? 'Node' : `Node ${state.node}`),
    errorNote(state.errors.status),
    status
      ? facts([
          .../** @type {[string, any][]} */ (
            state.node === null
              ? [
                  [
                    'Node',
                    h(
                      'span',
                      { class: 'muted' },
                      status.badges?.length === 0
                        ? 'the signer has no node yet: register one under Subscriptions'
                        : 'none chosen',
                    ),
                  ],
                ]
              : []
          ),
          [
            'Badge',
            badge
              ? h('code', { title: badge.badge_id }, shortId(badge.badge_id))
              : state.node
                ? 'not the signer’s'
                : '—',
          ],
          [
            'Signer',
            status.signer_address
              ? h('code', { title: status.signer_address }, shortId(status.signer_address))
              : 'none (reads only)',
          ],
          ['Network', status.network],
          ['Epoch', status.epoch === null ? '—' : String(status.epoch)],
          [
            'Balances',
            balances.length === 0
              ? '—'
              : h(
                  'ul',
                  { class: 'plain' },
                  balances.map(([coin, amount]) => h('li', { class: 'amount' }, formatCoin(coin, amount))),
                ),
          ],
          [
            'Daemon',
            `${status.version}, up ${formatDuration(status.uptime_seconds)}, ${status.store.engine} store`,
          ],
        ])
      : h('p', { class: 'muted' }, 'Loading…'),
  );
}

/** @param {import('./parts.js').State} state */
function indexerCard(state) {
  const indexer = state.data.status?.indexer;
  const ready = state.data.ready;
  return h(
    'article',
    { class: 'card span-4', 'aria-labelledby': 'card-indexer' },
    h('h2', { id: 'card-indexer' }, 'Indexer'),
    errorNote(state.errors.ready),
    ready
      ? h(
          'p',
          { class: `readiness ${ready.ready ? 'ok' : 'bad'}`, 'data-testid': 'readiness' },
          ready.ready ? 'Ready' : 'Not ready',
          ': ',
          ready.detail,
        )
      : null,
    indexer
      ? facts([
          [
            'Lag',
            `${formatDuration(indexer.lag_seconds)}${indexer.lag_events ? `, ${formatInt(indexer.lag_events)}${indexer.lag_events_capped ? '+' : ''} events behind` : ''}`,
          ],
          ['Events applied', formatInt(indexer.events?.applied ?? null)],
          ['Source', `${indexer.source}${indexer.leader ? '' : ' (another daemon indexes)'}`],
          [
            'Last error',
            indexer.last_error
              ? `${formatTime(indexer.last_error.at, true)}: ${indexer.last_error.message}`
              : 'none',
          ],
        ])
      : state.data.status
        ? h('p', { class: 'muted' }, 'This daemon runs no indexer (network none).')
        : null,
    state.data.status ? usageSource(state.data.status.usage_source) : null,
  );
}

/**
 * Where stacks' usage comes from: atoma-node's atoma-state (its state, how far behind, what it follows),
 * or only the usage reports.
 * @param {any} source GET /status's usage_source
 */
function usageSource(source) {
  if (!source) {
    return [
      h('h3', { id: 'usage-source' }, 'Usage'),
      h(
        'p',
        { class: 'muted' },
        'From usage reports (POST /stacks/{id}/usage); no usage source is configured.',
      ),
    ];
  }
  const lost = source.state === 'lost';
  return [
    h('h3', { id: 'usage-source' }, 'Usage source'),
    h(
      'p',
      {
        class: `readiness ${source.state === 'connected' ? 'ok' : lost ? 'bad' : ''}`,
        'data-testid': 'usage-source',
      },
      `${source.kind}: ${source.state}`,
      lost && source.error ? ` (${source.error}); the last usage stays` : '',
    ),
    facts([
      ['Database', h('code', {}, source.location)],
      [
        'Last poll',
        source.last_poll_at
          ? `${formatTime(source.last_poll_at, true)}, ${formatDuration(source.behind_seconds)} ago`
          : 'none yet',
      ],
      [
        'Stacks followed',
        `${formatInt(source.stacks_followed)}${source.stacks_locked_by_node ? `, ${formatInt(source.stacks_locked_by_node)} locked by atoma-node to claim itself` : ''}`,
      ],
    ]),
  ];
}

/** @param {import('./parts.js').State} state */
function earningsCard(state) {
  const e = state.data.earnings;
  const pilot = state.data.autopilot;
  const figure = (
    /** @type {string} */ label,
    /** @type {any} */ amount,
    /** @type {string} */ note,
    /** @type {string} */ key,
  ) =>
    h(
      'div',
      { class: `figure ${key}`, 'data-figure': key },
      h('span', { class: 'label' }, label),
      h('span', { class: 'amount' }, formatUsdc(amount)),
      h('span', { class: 'note' }, note),
    );
  const unpriced = e ? Object.values(e.unpriced).reduce((a, b) => a + Number(b), 0) : 0;
  return h(
    'article',
    { class: 'card span-12', 'aria-labelledby': 'card-earnings' },
    h('h2', { id: 'card-earnings' }, 'Earnings'),
    errorNote(state.errors.earnings),
    !e
      ? h('p', { class: 'muted' }, state.node === null ? 'No node to show.' : 'Loading…')
      : [
          h(
            'div',
            { class: 'figures' },
            figure('Claimable now', e.claimable, stacks(e.stacks.claimable), 'claimable'),
            figure(
              'Settling',
              e.settling,
              `${stacks(e.stacks.settling)} in their dispute period`,
              'settling',
            ),
            figure('Claimed', e.claimed, `${stacks(e.stacks.claimed)}, all time`, 'claimed'),
            figure('Unsettled', e.unsettled, unsettledNote(e), 'unsettled'),
            figure('Disputed', e.disputed, `${stacks(e.stacks.disputed)}, locked`, 'disputed'),
            figure('Attester rewards', e.attester_rewards, 'for attesting others', 'rewards'),
          ),
          h(
            'p',
            { class: 'muted' },
            `Refunded to users: ${formatUsdc(e.refunded_to_users)}. `,
            unpriced > 0 ? `${unpriced} stacks of unknown price are counted but not priced. ` : '',
            pilot
              ? `Autopilot: ${pilot.mode}${pilot.state === pilot.mode ? '' : ` (${pilot.state})`}${pilot.last_pass ? `, last pass ${formatTime(pilot.last_pass.at)}` : ''}. `
              : '',
            e.stacks.claimable > 0
              ? h('a', { href: '#stacks', 'data-key': 'to-stacks' }, 'Claim on the Stacks view')
              : null,
          ),
        ],
  );
}

/** @param {import('./parts.js').State} state */
function chartCard(state) {
  const e = state.data.earnings;
  return h(
    'article',
    { class: 'card span-8', 'aria-labelledby': 'card-chart' },
    h('h2', { id: 'card-chart' }, 'Claimed fees by epoch'),
    e ? claimedChart(e.by_epoch, e.epoch) : h('p', { class: 'muted' }, '—'),
  );
}

/** @param {import('./parts.js').State} state */
function activityCard(state) {
  return h(
    'article',
    { class: 'card span-8', 'aria-labelledby': 'card-activity' },
    h('h2', { id: 'card-activity' }, 'Latest activity'),
    feedList(
      state.feed.slice(0, 6),
      'Nothing has happened to the node yet; events appear here as they come.',
    ),
    h('p', null, h('a', { href: '#activity' }, 'All activity')),
  );
}

/**
 * What the unsettled fee is of: the open stacks with usage, not every open stack.
 * @param {any} e the earnings
 */
function unsettledNote(e) {
  const open = Number(e.stacks.open);
  const used = Number(e.unsettled_stacks);
  if (open === 0) return 'no open stack';
  if (used === 0) return `${stacks(open)} open, no usage yet`;
  return `usage on ${used} of ${open} open ${open === 1 ? 'stack' : 'stacks'}`;
}

/** @param {number} n */
function stacks(n) {
  return `${n} ${n === 1 ? 'stack' : 'stacks'}`;
}
