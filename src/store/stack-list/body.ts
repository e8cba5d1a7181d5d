import { Pieces } from '../../internal/pieces.ts';
import type { U64 } from '../../internal/u64.ts';
import type { JsonRows, Page } from '../store.ts';
import { firstAfter, idOf, lastIdOf, STATE, type StateRow } from './columns.ts';

/**
 * Objects per piece of a kept list's body (about 60 KB of stacks): a usage report copies the one piece that
 * holds its stack, not the whole body. A whole-body copy per report was 237 MB/s of new buffers at 500
 * reports a second, and a full collection every 150 ms (DECISIONS.md, "A node's kept stack list is in pieces,
 * sent past Fastify's send"). Pieces of this size cost a send no more than one buffer does; 32-stack pieces
 * cost 3 to 4 % more CPU per request.
 */
export const PIECE_OBJECTS = 128;

/**
 * A node's whole stack list as its encoded JSON array, in pieces of PIECE_OBJECTS objects, and where each
 * stack's object is in its piece. A body is never changed once made (a cache or a socket may hold it): a
 * change makes a new one that shares the pieces it did not touch. Piece 0 starts with `[`, every object but
 * the first follows a `,` in its own piece, and the last piece ends with `]`.
 */
export interface ListBody {
  body: Pieces;
  /** Where stack i's object starts in its piece (piece i / PIECE_OBJECTS). */
  starts: Int32Array;
  /** Where it ends (exclusive). */
  ends: Int32Array;
}

/**
 * The piece of objects [from, to) of a list of `count`, as new bytes, with where each object lands written
 * into starts and ends.
 */
function piece(
  object: (i: number) => Buffer,
  from: number,
  to: number,
  count: number,
  starts: Int32Array,
  ends: Int32Array,
): Buffer {
  const objects: Buffer[] = [];
  let length = (from === 0 ? 1 : 0) + (to === count ? 1 : 0);
  for (let i = from; i < to; i++) {
    const o = object(i);
    objects.push(o);
    length += o.length + (i > 0 ? 1 : 0);
  }
  // Memory of its own, not a slice of Node's shared pool: a kept piece lives long, and a piece under 4 KB
  // would keep the pool's 8 KB with it (and be counted so: Pieces.retained).
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  if (from === 0) out[at++] = 0x5b; // [
  for (let i = from; i < to; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    starts[i] = at;
    at += objects[i - from]!.copy(out, at);
    ends[i] = at;
  }
  if (to === count) out[at++] = 0x5d; // ]
  return out;
}

/** The JSON array of these objects, in pieces, and where each is. */
export function joinFragments(parts: readonly Buffer[]): ListBody {
  const count = parts.length;
  const starts = new Int32Array(count);
  const ends = new Int32Array(count);
  const buffers: Buffer[] = [];
  const object = (i: number) => parts[i]!;
  // An empty list is one piece, `[]`.
  for (let from = 0; from === 0 || from < count; from += PIECE_OBJECTS) {
    buffers.push(piece(object, from, Math.min(from + PIECE_OBJECTS, count), count, starts, ends));
  }
  return { body: new Pieces(buffers), starts, ends };
}

/**
 * The list with these objects after its last, as a new list: its last piece is made again, as it ends with
 * `]` and may have room; the pieces before it are shared.
 */
export function appendedBody(list: ListBody, parts: readonly Buffer[]): ListBody {
  const kept = list.starts.length;
  const count = kept + parts.length;
  const starts = new Int32Array(count);
  const ends = new Int32Array(count);
  starts.set(list.starts);
  ends.set(list.ends);
  const lastPiece = kept === 0 ? 0 : ((kept - 1) / PIECE_OBJECTS) | 0;
  const buffers = list.body.buffers.slice(0, lastPiece);
  const object = (i: number) => (i < kept ? fragmentAt(list, i) : parts[i - kept]!);
  for (let from = lastPiece * PIECE_OBJECTS; from < count; from += PIECE_OBJECTS) {
    buffers.push(piece(object, from, Math.min(from + PIECE_OBJECTS, count), count, starts, ends));
  }
  return { body: new Pieces(buffers), starts, ends };
}

/** Stack i's object in the list (a view: no copy). */
export function fragmentAt(list: ListBody, i: number): Buffer {
  return list.body.buffers[(i / PIECE_OBJECTS) | 0]!.subarray(list.starts[i]!, list.ends[i]!);
}

/**
 * The list with some stacks' objects replaced, by index, as a new list. Only the pieces that hold a changed
 * object are new; the others are shared.
 */
export function patchBody(list: ListBody, changes: ReadonlyMap<number, Buffer>): ListBody {
  const count = list.starts.length;
  const starts = list.starts.slice();
  const ends = list.ends.slice();
  const buffers = list.body.buffers.slice();
  // The changed stacks of each piece, in order.
  const byPiece = new Map<number, number[]>();
  for (const i of changes.keys()) {
    const p = (i / PIECE_OBJECTS) | 0;
    const changed = byPiece.get(p);
    if (changed === undefined) byPiece.set(p, [i]);
    else changed.push(i);
  }
  for (const [p, changed] of byPiece) {
    changed.sort((a, b) => a - b);
    buffers[p] = splice(
      buffers[p]!,
      changed,
      changes,
      Math.min((p + 1) * PIECE_OBJECTS, count),
      starts,
      ends,
    );
  }
  return { body: new Pieces(buffers), starts, ends };
}

/**
 * A piece with the objects `changed` (its stacks, in order) replaced: the bytes between them copied as runs,
 * not object by object, and the places of the piece's stacks from the first changed one to `to` moved by what
 * the new objects added. A usage report changes one object of 128; rebuilding the piece whole cost a view and
 * a copy per object (DECISIONS.md, "A node's kept stack list is in pieces, sent
 * past Fastify's send").
 */
function splice(
  old: Buffer,
  changed: readonly number[],
  changes: ReadonlyMap<number, Buffer>,
  to: number,
  starts: Int32Array,
  ends: Int32Array,
): Buffer {
  let length = old.length;
  for (const i of changed) length += changes.get(i)!.length - (ends[i]! - starts[i]!);
  // Memory of its own, as piece() explains.
  const out = Buffer.allocUnsafeSlow(length);
  let from = 0; // where the next run of unchanged bytes starts in `old`
  let at = 0; // where it goes in `out`
  for (let k = 0; k < changed.length; k++) {
    const i = changed[k]!;
    const o = changes.get(i)!;
    const start = starts[i]!;
    const end = ends[i]!;
    at += old.copy(out, at, from, start);
    const next = k + 1 < changed.length ? changed[k + 1]! : to;
    starts[i] = at;
    at += o.copy(out, at);
    ends[i] = at;
    from = end;
    // The unchanged stacks up to the next changed one move by what the changes so far added.
    const shift = at - end;
    for (let j = i + 1; j < next; j++) {
      starts[j]! += shift;
      ends[j]! += shift;
    }
  }
  old.copy(out, at, from);
  return out;
}

/**
 * Each stack's fill in a kept list, by the list's body: its used units over its units in double
 * arithmetic, a stack of no units counting as full (Infinity). The stores' filtered queries compare the
 * same way (SQLite's REAL, PostgreSQL's float8), so the stacks chosen by it are the ones they select.
 * Worked out once per body, not per request: PostgreSQL's values are text, and parsing a thousand of them
 * cost as much as the rest of a filtered read. A body is never changed (a change makes a new one), so a
 * body's fills never go stale.
 */
const fills = new WeakMap<ListBody, Float64Array>();

function fillsOf(state: readonly StateRow[], list: ListBody): Float64Array {
  let out = fills.get(list);
  if (out === undefined) {
    out = new Float64Array(state.length);
    for (let i = 0; i < state.length; i++) {
      const units = Number(state[i]![STATE.units]);
      out[i] = units === 0 ? Number.POSITIVE_INFINITY : Number(state[i]![STATE.already]) / units;
    }
    fills.set(list, out);
  }
  return out;
}

/**
 * A node's kept list, whole, filtered or a page, from its state rows and its body: the stacks filled to
 * `minFill` (all of them when undefined) after `page.after`, at most `page.limit`, as views of the body's
 * pieces. What the stores' list queries would answer, without a query and without a copy: a filtered list
 * reads its node's whole range (no index narrows it), and copying what it showed was 400 MB/s of new
 * buffers under uncached reads (DECISIONS.md, "A filtered stack list is views of the kept list,
 * chosen in JavaScript").
 */
export function listSlice(
  state: readonly StateRow[],
  list: ListBody,
  minFill: number | undefined,
  page: Page,
): JsonRows {
  // The whole list: its kept body as it is.
  if (minFill === undefined && page.after === undefined && page.limit === undefined) {
    return { body: list.body, count: state.length, last: lastIdOf(state, state.length), more: false };
  }
  // The first row after page.after: the rows are in id order.
  const lo = page.after === undefined ? 0 : firstAfter(state, page.after);
  const limit = page.limit ?? Number.POSITIVE_INFINITY;
  const fill = minFill === undefined ? undefined : fillsOf(state, list);
  const chosen: number[] = [];
  let more = false;
  for (let i = lo; i < state.length; i++) {
    if (fill !== undefined && !(fill[i]! >= minFill!)) continue;
    if (chosen.length === limit) {
      more = true;
      break;
    }
    chosen.push(i);
  }
  const last = chosen.at(-1);
  return {
    body: viewsOf(list, chosen),
    count: chosen.length,
    last: last === undefined ? null : (idOf(state[last]!) as U64),
    more,
  };
}

// Each in memory of its own (Buffer.from would take a slice of a shared pool, which a body holding it keeps).
const OPEN = Buffer.alloc(1, '[');
const CLOSE = Buffer.alloc(1, ']');
const EMPTY = Buffer.alloc(2, '[]');

/**
 * The JSON array of some of a list's objects (indexes, ascending), as views of its pieces: no copy. Each
 * object is preceded in its piece by its separator (`[` before the list's first, `,` before the others), so
 * a run of consecutive objects in one piece is one view with the separator before it.
 */
function viewsOf(list: ListBody, chosen: readonly number[]): Pieces {
  if (chosen.length === 0) return new Pieces([EMPTY]);
  const count = list.starts.length;
  const out: Buffer[] = [];
  const flush = (from: number, to: number) => {
    let start = list.starts[from]! - 1;
    if (out.length === 0 && from > 0) {
      out.push(OPEN);
      start += 1;
    }
    const end = list.ends[to]! + (to === count - 1 ? 1 : 0);
    out.push(list.body.buffers[(from / PIECE_OBJECTS) | 0]!.subarray(start, end));
  };
  let from = chosen[0]!;
  let to = from;
  for (let k = 1; k < chosen.length; k++) {
    const i = chosen[k]!;
    if (i === to + 1 && i % PIECE_OBJECTS !== 0) to = i;
    else {
      flush(from, to);
      from = to = i;
    }
  }
  flush(from, to);
  if (to !== count - 1) out.push(CLOSE);
  return new Pieces(out);
}

/**
 * A list read without a kept one (a page, or a filtered list): the objects of its first `parts.length` rows,
 * and whether rows remain past them (its state rows are one past a page's limit, to tell).
 */
export function rowsOf(parts: readonly Buffer[], state: readonly StateRow[]): JsonRows {
  return {
    body: joinFragments(parts).body,
    count: parts.length,
    last: lastIdOf(state, parts.length),
    more: state.length > parts.length,
  };
}
