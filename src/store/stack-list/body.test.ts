import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mulberry32 } from '../../../test/helpers/random.ts';
import { appendedBody, fragmentAt, joinFragments, listSlice, PIECE_OBJECTS, patchBody } from './body.ts';
import { sameState, stateOf } from './columns.ts';
import { restated, stackFragment } from './stack-json.ts';

const object = (rand: () => number, i: number) =>
  Buffer.from(JSON.stringify({ id: i, pad: 'x'.repeat(Math.floor(rand() * 40)) }));

describe('a kept stack list body', () => {
  it('joins objects into the JSON array, in pieces, and knows where each is', () => {
    for (const n of [
      0,
      1,
      2,
      7,
      PIECE_OBJECTS - 1,
      PIECE_OBJECTS,
      PIECE_OBJECTS + 1,
      3 * PIECE_OBJECTS + 5,
    ]) {
      const parts = Array.from({ length: n }, (_, i) => object(mulberry32(n), i));
      const list = joinFragments(parts);
      assert.equal(list.body.toString(), `[${parts.map(String).join(',')}]`, `${n} objects`);
      assert.equal(list.body.length, list.body.joined().length);
      // Its pieces are memory of their own, not slices of a shared pool that they would keep alive.
      assert.equal(list.body.retained, list.body.length, `${n} objects`);
      assert.equal(list.body.buffers.length, Math.max(1, Math.ceil(n / PIECE_OBJECTS)));
      assert.equal(list.starts.length, n);
      for (const [i, part] of parts.entries()) assert.deepEqual(fragmentAt(list, i), part);
    }
  });

  it('patches any set of objects, longer or shorter, as a rebuild would, and leaves the old body alone', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const rand = mulberry32(seed);
      const n = 1 + Math.floor(rand() * 4 * PIECE_OBJECTS);
      const parts = Array.from({ length: n }, (_, i) => object(rand, i));
      const list = joinFragments(parts);
      const before = list.body.joined();
      const changes = new Map<number, Buffer>();
      const k = Math.floor(rand() * Math.min(n, 5)) + 1;
      for (let c = 0; c < k; c++) {
        const i = Math.floor(rand() * n);
        changes.set(i, object(rand, 1000 + i));
      }
      const patched = patchBody(list, changes);
      const expected = joinFragments(parts.map((part, i) => changes.get(i) ?? part));
      assert.deepEqual(patched.body.joined(), expected.body.joined(), `seed ${seed}`);
      assert.deepEqual(patched.starts, expected.starts, `seed ${seed}`);
      assert.deepEqual(patched.ends, expected.ends, `seed ${seed}`);
      assert.deepEqual(list.body.joined(), before, `seed ${seed}: the old body is unchanged`);
      // Only the pieces holding a changed object are new bytes; the others are the old ones, shared.
      const touched = new Set([...changes.keys()].map((i) => Math.floor(i / PIECE_OBJECTS)));
      for (const [p, buffer] of patched.body.buffers.entries()) {
        assert.equal(buffer === list.body.buffers[p], !touched.has(p), `seed ${seed}: piece ${p}`);
      }
    }
  });

  it('appends objects as a rebuild would, shares the pieces before the last, and leaves the old body alone', () => {
    const sizes = [0, 1, PIECE_OBJECTS - 1, PIECE_OBJECTS, PIECE_OBJECTS + 1, 2 * PIECE_OBJECTS, 300];
    for (const n of sizes) {
      for (const k of [1, 2, PIECE_OBJECTS, PIECE_OBJECTS + 3]) {
        const rand = mulberry32(n * 1000 + k);
        const parts = Array.from({ length: n }, (_, i) => object(rand, i));
        const more = Array.from({ length: k }, (_, i) => object(rand, n + i));
        const list = joinFragments(parts);
        const before = list.body.joined();
        const appended = appendedBody(list, more);
        const expected = joinFragments([...parts, ...more]);
        const name = `${n} objects and ${k} more`;
        assert.deepEqual(appended.body.joined(), expected.body.joined(), name);
        assert.deepEqual(appended.starts, expected.starts, name);
        assert.deepEqual(appended.ends, expected.ends, name);
        assert.equal(appended.body.retained, appended.body.length, name);
        assert.deepEqual(list.body.joined(), before, `${name}: the old body is unchanged`);
        const last = Math.max(0, Math.ceil(n / PIECE_OBJECTS) - 1);
        for (const [p, buffer] of appended.body.buffers.entries()) {
          assert.equal(buffer === list.body.buffers[p], p < last, `${name}: piece ${p}`);
        }
      }
    }
  });

  it('answers any filtered list or page of a kept list as views of its pieces, byte for byte', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rand = mulberry32(seed);
      const n = Math.floor(rand() * 4 * PIECE_OBJECTS);
      const parts = Array.from({ length: n }, (_, i) => object(rand, i));
      const list = joinFragments(parts);
      // Rows of STACK_STATE_COLUMNS as far as a slice reads them: the id (2, 4, 6, ...), used units, units.
      const state = parts.map((_, i) => {
        const units = rand() < 0.05 ? 0 : 100;
        return [2 * (i + 1), Math.floor(rand() * (units + 1)), 0, 0, 0, 0, null, units];
      });
      // Often a fill that chooses long runs (0 or 1%), else any.
      const fill = rand() < 0.3 ? undefined : rand() < 0.3 ? Math.floor(rand() * 2) / 100 : rand();
      const after = rand() < 0.5 ? undefined : Math.floor(rand() * (2 * n + 3));
      const limit = rand() < 0.5 ? undefined : 1 + Math.floor(rand() * n);
      const what = `seed ${seed}: ${n} objects, fill ${fill}, after ${after}, limit ${limit}`;
      const wanted = state
        .map((r, i) => ({ r, i }))
        .filter(({ r }) => after === undefined || (r[0] as number) > after)
        .filter(({ r }) => fill === undefined || r[7] === 0 || (r[1] as number) / (r[7] as number) >= fill);
      const shown = limit === undefined ? wanted : wanted.slice(0, limit);
      const slice = listSlice(state, list, fill, { after, limit });
      assert.equal(slice.body.toString(), `[${shown.map(({ i }) => parts[i]).join(',')}]`, what);
      assert.equal(slice.body.length, slice.body.joined().length, what);
      assert.deepEqual(
        [slice.count, slice.last, slice.more],
        [shown.length, shown.at(-1)?.r[0] ?? null, shown.length < wanted.length],
        what,
      );
      // Views, not copies: each buffer but a bracket is the memory of one of the list's pieces, and it
      // keeps no more than they (and its brackets).
      for (const buffer of slice.body.buffers) {
        assert.ok(buffer.length <= 2 || list.body.buffers.some((p) => p.buffer === buffer.buffer), what);
      }
      assert.ok(slice.body.retained <= list.body.retained + 2, what);
    }
  });

  it("restates a stack's changing fields and keeps its fixed ones", () => {
    const row = (already: unknown, confidential: unknown, refund: unknown) => [
      `0x${'a'.repeat(64)}`,
      12,
      `0x${'b'.repeat(64)}`,
      3,
      4,
      1000,
      250,
      already,
      0,
      1,
      0,
      0,
      confidential,
      refund,
    ];
    for (const confidential of [0, 1]) {
      const before = row(10, confidential, null);
      const after = row('18446744073709551615', confidential, 77);
      const fragment = restated(stackFragment(before), stateOf(after));
      assert.deepEqual(fragment, stackFragment(after));
      assert.equal(JSON.parse(fragment.toString()).is_confidential, confidential === 1);
      assert.match(fragment.toString(), /"already_computed_units":18446744073709551615,/);
      assert.equal(sameState(stateOf(before), stateOf(before)), true);
      assert.equal(sameState(stateOf(before), stateOf(after)), false);
    }
  });
});
