import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GroupCommit } from '../src/internal/group-commit.ts';

describe('GroupCommit', () => {
  it('starts the first item alone and groups what arrives while it is written', async () => {
    const groups: number[][] = [];
    const commit = new GroupCommit<number, string>(async (items) => {
      groups.push(items);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return items.map((n) => `done ${n}`);
    });
    const first = commit.submit(1);
    const rest = [2, 3, 4].map((n) => commit.submit(n));
    assert.deepEqual(await Promise.all([first, ...rest]), ['done 1', 'done 2', 'done 3', 'done 4']);
    assert.deepEqual(groups, [[1], [2, 3, 4]]);
    // Idle again: the next item goes at once, alone.
    assert.equal(await commit.submit(5), 'done 5');
    assert.deepEqual(groups.at(-1), [5]);
  });

  it('fails every item of a group whose write fails, and writes the next group', async () => {
    const commit = new GroupCommit<number, number>(async (items) => {
      await new Promise((resolve) => setImmediate(resolve));
      if (items.includes(2)) throw new Error('rolled back');
      return items.map((n) => n * 10);
    });
    const first = commit.submit(1);
    const failed = [2, 3].map((n) => commit.submit(n));
    assert.equal(await first, 10);
    for (const outcome of await Promise.allSettled(failed)) {
      assert.equal(outcome.status, 'rejected');
      assert.equal((outcome as PromiseRejectedResult).reason.message, 'rolled back');
    }
    assert.equal(await commit.submit(4), 40);
  });

  it('writes at most maxGroup items in one group', async () => {
    const sizes: number[] = [];
    const commit = new GroupCommit<number, number>(async (items) => {
      sizes.push(items.length);
      await new Promise((resolve) => setImmediate(resolve));
      return items;
    }, 3);
    await Promise.all(Array.from({ length: 8 }, (_, i) => commit.submit(i)));
    assert.deepEqual(sizes, [1, 3, 3, 1]);
  });
});
