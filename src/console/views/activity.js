// @ts-check
import { h, replace } from '../dom.js';
import { feedList, section } from './parts.js';

/**
 * The activity feed: the node's recent events, then the live ones as they come (GET /events), newest
 * first, kept for this tab.
 * @param {import('./parts.js').Ctx} _ctx
 */
export function activityView(_ctx) {
  const list = h('div');
  const element = section(
    'activity',
    'Activity',
    h(
      'p',
      { class: 'muted' },
      'What happens to the node, as the daemon reports it: stacks bought, filled, settled and claimed, attestations, disputes, subscriptions, tasks, the autopilot, the indexer and the signer’s gas. It opens with the latest 50 events the daemon kept, then follows; it resumes where it was after a reload.',
    ),
    list,
  );
  return {
    title: 'Activity',
    element,
    /** @param {import('./parts.js').State} state */
    render(state) {
      replace(list, feedList(state.feed, 'Nothing yet: events appear here as they happen.'));
    },
  };
}
