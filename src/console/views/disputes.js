// @ts-check
import { h, replace, table } from '../dom.js';
import { hex } from '../format.js';
import { errorNote, section } from './parts.js';

/**
 * Disputes against the node's settlements (an attester's commitment differed: the stack is locked for
 * good, the contract has no resolution) and those the node raised as an attester.
 * @param {import('./parts.js').Ctx} _ctx
 */
export function disputesView(_ctx) {
  const against = h('div');
  const own = h('div');
  const element = section(
    'disputes',
    'Disputes',
    h(
      'p',
      { class: 'muted' },
      'A dispute opens when an attester’s commitment differs from the settling node’s. The stack’s funds are then locked for good: the contract has no resolution, nobody can claim or refund it.',
    ),
    h('h2', { id: 'disputes-against' }, 'Against this node'),
    against,
    h('h2', { id: 'disputes-own' }, 'Raised by this node'),
    own,
  );
  /** @param {any} d */
  const commitment = (d, /** @type {string} */ field) => {
    const text = hex(d[field]);
    return h(
      'code',
      { class: 'hash', title: text },
      text.length > 20 ? `${text.slice(0, 12)}…${text.slice(-6)}` : text,
    );
  };
  return {
    title: 'Disputes',
    element,
    /** @param {import('./parts.js').State} state */
    render(state) {
      const rows = (/** @type {any[] | undefined} */ list) =>
        (list ?? []).map((d) => [
          String(d.stack_small_id),
          String(d.original_node_id),
          String(d.attestation_node_id),
          commitment(d, 'original_commitment'),
          commitment(d, 'attestation_commitment'),
        ]);
      const headers = [
        'Stack',
        'Settled by node',
        'Disputed by node',
        'Settler’s commitment',
        'Attester’s commitment',
      ];
      replace(
        against,
        errorNote(state.errors.against),
        table({
          headers,
          rows: rows(state.data.against),
          empty: 'No dispute against this node’s settlements.',
        }),
      );
      replace(
        own,
        errorNote(state.errors.own),
        table({ headers, rows: rows(state.data.own), empty: 'This node has raised no dispute.' }),
      );
    },
  };
}
