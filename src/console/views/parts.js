// @ts-check
import { h } from '../dom.js';
import { formatTime } from '../format.js';

/**
 * What the views share: their frame, how a failed read is shown, the activity list.
 * @typedef {typeof import('../app.js').state} State
 * @typedef {typeof import('../app.js').ctx} Ctx
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
