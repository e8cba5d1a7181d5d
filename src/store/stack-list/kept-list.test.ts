import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mulberry32 } from '../../../test/helpers/random.ts';
import { PIECE_OBJECTS } from './body.ts';
import { digitsOf, listIndex, ROW, type StackRow, stateOf } from './columns.ts';
import { builtList, changedList, reread } from './kept-list.ts';

/** A stack's whole row as SQLite gives it (numbers, 1/0 flags), its changing columns drawn from `rand`. */
function stackRow(rand: () => number, id: number): unknown[] {
  const units = rand() < 0.05 ? 0 : 1000;
  return [
    `0x${'ab'.repeat(32)}`,
    id,
    `0x${String(id).padStart(64, '0')}`,
    1 + Math.floor(rand() * 3),
    7,
    units,
    2_000_000,
    Math.floor(rand() * (units + 1)),
    rand() < 0.2 ? 1 : 0,
    Math.floor(rand() * 50),
    rand() < 0.1 ? 1 : 0,
    0,
    rand() < 0.3 ? 1 : 0,
    rand() < 0.1 ? Math.floor(rand() * 1000) : null,
  ];
}

/** The same stack with new values in its changing columns (its fixed ones never change). */
function changedRow(rand: () => number, row: StackRow): unknown[] {
  const next = stackRow(rand, row[ROW.id] as number);
  for (const column of [ROW.owner, ROW.stackId, ROW.task, ROW.units, ROW.price, ROW.confidential]) {
    next[column] = row[column];
  }
  return next;
}

/** Random ids in order, gaps between them, so that new stacks can fall anywhere. */
function ids(rand: () => number, n: number): number[] {
  const out: number[] = [];
  let id = 0;
  for (let i = 0; i < n; i++) {
    id += 1 + Math.floor(rand() * 4);
    out.push(id);
  }
  return out;
}

describe('a kept stack list changed', () => {
  it('by changed and new stacks is the list a fresh read of the rows would build, byte for byte', () => {
    for (let seed = 1; seed <= 250; seed++) {
      const rand = mulberry32(seed);
      const n = Math.floor(rand() * 3 * PIECE_OBJECTS);
      const rows = ids(rand, n).map((id) => stackRow(rand, id));
      const kept = builtList(rows);
      const before = kept.list.body.joined();
      // Some stacks change (some to the values they had), some are new: after the last, or between.
      const now = rows.slice();
      const changed = new Map<number, unknown[]>();
      for (let k = Math.floor(rand() * 6); k > 0 && n > 0; k--) {
        const at = Math.floor(rand() * n);
        now[at] = rand() < 0.2 ? rows[at]!.slice() : changedRow(rand, rows[at]!);
        changed.set(at, stateOf(now[at]!));
      }
      const taken = new Set(rows.map((r) => r[ROW.id]));
      const last = (rows.at(-1)?.[ROW.id] as number | undefined) ?? 0;
      const added: unknown[][] = [];
      for (let k = Math.floor(rand() * 4); k > 0; k--) {
        const id = rand() < 0.6 ? last + added.length + 1 : 1 + Math.floor(rand() * (last + 1));
        if (taken.has(id)) continue;
        taken.add(id);
        added.push(stackRow(rand, id));
      }
      added.sort((a, b) => (a[ROW.id] as number) - (b[ROW.id] as number));
      const expected = builtList(
        [...now, ...added].sort((a, b) => (a[ROW.id] as number) - (b[ROW.id] as number)),
      );
      const what = `seed ${seed}: ${n} stacks, ${changed.size} changed, ${added.length} new`;
      const got = changedList(kept, changed, added);
      assert.deepEqual(got.list.body.joined(), expected.list.body.joined(), what);
      assert.deepEqual(got.state, expected.state, what);
      assert.deepEqual([...got.index], [...expected.index], what);
      assert.deepEqual(got.list.starts, expected.list.starts, what);
      // The kept list is never changed: its body may still be cached or being sent.
      assert.deepEqual(kept.list.body.joined(), before, `${what}: the kept body`);
      // Nothing that moved: the very same list.
      if (added.length === 0 && [...changed].every(([at]) => now[at]!.every((v, c) => v === rows[at]![c]))) {
        assert.equal(got, kept, what);
      }
    }
  });

  it('read again as every state row now is the fresh list, reading by id only the stacks it lacked', () => {
    for (let seed = 1; seed <= 150; seed++) {
      const rand = mulberry32(seed);
      const n = 1 + Math.floor(rand() * 2 * PIECE_OBJECTS);
      const rows = ids(rand, n).map((id) => stackRow(rand, id));
      const kept = builtList(rows);
      const now = rows.map((row) => (rand() < 0.1 ? changedRow(rand, row) : row));
      const fresh = Array.from({ length: Math.floor(rand() * 4) }, (_, i) =>
        stackRow(rand, (rows.at(-1)![ROW.id] as number) + 1 + i),
      );
      const all = [...now, ...fresh];
      const byId = new Map(all.map((row) => [digitsOf(row[ROW.id]), row]));
      const asked: string[] = [];
      const got = reread(kept, all.map(stateOf), 16, (id) => {
        asked.push(id);
        return byId.get(id);
      });
      const what = `seed ${seed}`;
      assert.ok(got !== undefined, what);
      assert.deepEqual(got.list.body.joined(), builtList(all).list.body.joined(), what);
      assert.deepEqual(
        asked,
        fresh.map((row) => digitsOf(row[ROW.id])),
        what,
      );
      assert.deepEqual([...got.index], [...listIndex(all.map(stateOf))], what);
    }
  });

  it('read again gives up (the list is then read whole) past its new stacks, or when one is gone', () => {
    const rand = mulberry32(7);
    const rows = ids(rand, 40).map((id) => stackRow(rand, id));
    const kept = builtList(rows.slice(0, 20));
    const states = rows.map(stateOf);
    assert.equal(
      reread(kept, states, 16, (id) => rows.find((r) => digitsOf(r[ROW.id]) === id)),
      undefined,
    );
    assert.ok(reread(kept, states, 20, (id) => rows.find((r) => digitsOf(r[ROW.id]) === id)) !== undefined);
    assert.equal(
      reread(kept, states, 20, () => undefined),
      undefined,
    );
  });
});
