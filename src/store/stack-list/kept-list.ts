import { appendedBody, fragmentAt, joinFragments, type ListBody, patchBody } from './body.ts';
import {
  compareDigits,
  digitsOf,
  listIndex,
  ROW,
  STATE,
  type StackRow,
  type StateRow,
  sameState,
  stateOf,
} from './columns.ts';
import { restated, stackFragment } from './stack-json.ts';

/**
 * A node's whole stack list as kept between reads. It is never changed once made: its body may be in a
 * response cache or still being sent, and its state rows shared with the list it was made from. A change
 * makes a new one, which shares the pieces of the body it did not touch.
 */
export interface KeptList<Mark> {
  /**
   * The version of the node's stacks topic the list shows. It shows at least that version (a row read after
   * the version may show a later one), never less.
   */
  readonly version: number;
  /** The engine's mark of what the list has seen, handed back when it asks what changed since. */
  readonly mark: Mark;
  /** Each stack's state row, in list (small id) order. */
  readonly state: readonly StateRow[];
  /** Each stack's place in the list, by its small id's digits. */
  readonly index: ReadonlyMap<string, number>;
  readonly list: ListBody;
}

/** The rows and body of a kept list, without its version and mark. */
type Rows = Pick<KeptList<unknown>, 'state' | 'index' | 'list'>;

/** A list from whole rows, in order. */
export function builtList(rows: readonly StackRow[]): Rows {
  const state = rows.map(stateOf);
  return { state, index: listIndex(state), list: joinFragments(rows.map(stackFragment)) };
}

/**
 * The list with some stacks' state rows written in (by index) and new stacks added (whole rows, in id
 * order), as new rows and a new body: the kept stacks' objects reused, and written again only where their
 * values moved. New stacks after the list's last, as the chain numbers them, are appended to the body
 * (appendedBody); others are merged in id order and the body joined again.
 */
export function changedList(
  kept: Rows,
  changed: ReadonlyMap<number, StateRow>,
  added: readonly StackRow[],
): Rows {
  const moved = new Map<number, Buffer>();
  for (const [at, r] of changed) {
    if (!sameState(r, kept.state[at]!)) moved.set(at, restated(fragmentAt(kept.list, at), r));
  }
  const last = kept.state.at(-1);
  if (
    added.length === 0 ||
    last === undefined ||
    compareDigits(digitsOf(added[0]![ROW.id]), digitsOf(last[STATE.id])) > 0
  ) {
    if (moved.size === 0 && added.length === 0) return kept;
    const state = kept.state.slice();
    for (const at of moved.keys()) state[at] = changed.get(at)!;
    let index = kept.index;
    if (added.length > 0) {
      const grown = new Map(kept.index);
      for (const row of added) {
        grown.set(digitsOf(row[ROW.id]), state.length);
        state.push(stateOf(row));
      }
      index = grown;
    }
    const patched = moved.size > 0 ? patchBody(kept.list, moved) : kept.list;
    return {
      state,
      index,
      list: added.length > 0 ? appendedBody(patched, added.map(stackFragment)) : patched,
    };
  }
  const state: StateRow[] = [];
  const parts: Buffer[] = [];
  let next = 0;
  for (let at = 0; at <= kept.state.length; at++) {
    const id = at < kept.state.length ? digitsOf(kept.state[at]![STATE.id]) : undefined;
    for (; next < added.length; next++) {
      const row = added[next]!;
      if (id !== undefined && compareDigits(digitsOf(row[ROW.id]), id) > 0) break;
      state.push(stateOf(row));
      parts.push(stackFragment(row));
    }
    if (id === undefined) break;
    const object = moved.get(at);
    state.push(object === undefined ? kept.state[at]! : changed.get(at)!);
    parts.push(object ?? fragmentAt(kept.list, at));
  }
  return { state, index: listIndex(state), list: joinFragments(parts) };
}

/**
 * The list read again as every stack's state row now (`states`, in id order): each stack's object reused
 * from the kept list (written again where its values moved), and the whole rows of the stacks the list did
 * not have read by id (`wholeRow`). undefined when more than `maxNew` are new, or one is gone since it was
 * listed: then the list is read whole, in one snapshot.
 */
export function reread(
  kept: Rows,
  states: readonly StateRow[],
  maxNew: number,
  wholeRow: (id: string) => StackRow | undefined,
): Rows | undefined {
  const state = states.slice();
  const parts: Buffer[] = new Array(states.length);
  const missing: number[] = [];
  for (let i = 0; i < states.length; i++) {
    const r = states[i]!;
    const at = kept.index.get(digitsOf(r[STATE.id]));
    if (at === undefined) {
      missing.push(i);
      continue;
    }
    const fragment = fragmentAt(kept.list, at);
    parts[i] = sameState(r, kept.state[at]!) ? fragment : restated(fragment, r);
  }
  if (missing.length > maxNew) return undefined;
  for (const i of missing) {
    const row = wholeRow(digitsOf(states[i]![STATE.id]));
    if (row === undefined) return undefined;
    state[i] = stateOf(row);
    parts[i] = stackFragment(row);
  }
  return { state, index: listIndex(state), list: joinFragments(parts) };
}
