// @ts-check
import { h } from '../dom.js';
import { formatTime } from '../format.js';

/**
 * What the views share: their frame, how a failed read is shown, the activity list, and what they are
 * given (declared here, where they use it, so that no view imports app.js, which imports every view).
 */

/** @typedef {'status' | 'ready' | 'tasks' | 'autopilot' | 'earnings' | 'stacks' | 'claimed' | 'against' | 'own' | 'subscriptions'} Resource */

/**
 * What each view renders from (app.js keeps it).
 * @typedef {object} State
 * @property {string | null} node the node shown
 * @property {Record<string, any>} data the last answer of each resource
 * @property {Record<string, import('../api.js').ApiProblem | undefined>} errors the last failure of each resource
 * @property {ReturnType<typeof import('../feed.js').describeEvent>[]} feed newest first
 * @property {{ state: string, detail: string }} stream
 * @property {{ name: string | null, scope: string } | null} access
 *   the console's token as GET /whoami names it (null while unknown: no token, or not asked yet)
 */

/**
 * What the views may ask of the console (app.js provides it).
 * @typedef {object} Ctx
 * @property {State} state
 * @property {(names: Resource[]) => void} refresh
 * @property {(region: HTMLElement, label: string, run: () => Promise<any>, describe: (result: any) => (Node | string)[], affects: Resource[]) => Promise<any>} act
 *   runs a write and shows its outcome in `region`: what it did, or the daemon's problem detail;
 *   `label` says what is being done, e.g. "Settling stack 10"
 * @property {(title: string, text: string, ok: string) => Promise<boolean>} confirm
 *   asks the operator to confirm an action that cannot be undone
 * @property {typeof import('../api.js').write} write
 * @property {() => { node_badge_id?: string }} badge
 *   the badge of the node shown, for a write about it; {} (the signer's first badge) when unknown
 * @property {() => boolean} ownsNode
 *   whether the node shown is one of the signer's (true while the badges are not known yet), and the
 *   console's token may write (false for a read or usage token)
 * @property {() => boolean} mayWrite
 *   whether the console's token may write: true for write and admin, and while its scope is unknown
 * @property {(node: string) => void} showNode shows another node
 */

/**
 * A view's frame: a section with its heading (focused when the operator switches to it) and content.
 * @param {string} name
 * @param {string} title
 * @param {...(Node | null)} content
 */
export function section(name, title, ...content) {
  return h(
    'section',
    { class: 'view', 'aria-labelledby': `h-${name}` },
    h('h1', { id: `h-${name}`, tabindex: '-1' }, title),
    ...content,
  );
}

/**
 * A read that failed: what the daemon said.
 * @param {import('../api.js').ApiProblem | undefined} problem
 */
export function errorNote(problem) {
  if (!problem) return null;
  return h('p', { class: 'outcome failure' }, h('strong', null, problem.title), ': ', problem.detail);
}

/**
 * The activity feed as a list, newest first.
 * @param {State['feed']} entries
 * @param {string} empty
 */
export function feedList(entries, empty) {
  if (entries.length === 0) return h('p', { class: 'empty' }, empty);
  return h(
    'ol',
    { class: 'feed' },
    entries.map((e) =>
      h(
        'li',
        { class: `tone-${e.tone}`, 'data-type': e.type },
        h('time', { datetime: e.at, title: formatTime(e.at, true) }, formatTime(e.at)),
        h('span', { class: 'kind' }, e.type.replaceAll('_', ' ')),
        h('span', { class: 'text' }, e.text),
      ),
    ),
  );
}

/**
 * A live region where a write's outcome appears.
 */
export function outcomeRegion() {
  return h('div', { class: 'outcome', role: 'status', 'aria-live': 'polite' });
}
