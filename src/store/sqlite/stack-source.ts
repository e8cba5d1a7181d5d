import type { U64 } from '../../internal/u64.ts';
import type { StackListSource } from '../stack-list/stack-lists.ts';
import type { ReadStatements } from './statements.ts';
import { enc, pageArgs } from './u64.ts';

/**
 * What the stack lists (stack-list/) ask SQLite: a node's whole list, and its every stack's state row when
 * another process wrote (this one's own changes are noted as they commit, and read by id: a local read).
 * Each reads the topic's version before the rows, so a list is never older than the version it is kept
 * with. SQLite keeps no mark: the version says it all.
 */
export function stackListSource(db: {
  r: ReadStatements;
  guard<T>(fn: () => T): T;
  stacksVersion(node: U64): number;
}): StackListSource<undefined> {
  const { r } = db;
  const all = (node: U64) => [enc(node), -1n, -1] as const;
  return {
    readList: async (node) =>
      db.guard(() => {
        const version = db.stacksVersion(node);
        return { version, mark: undefined, rows: r.stacksArrays.all(...all(node)) as unknown as unknown[][] };
      }),
    readChanges: async (node) =>
      db.guard(() => {
        const version = db.stacksVersion(node);
        const states = r.stacksState.all(...all(node)) as unknown as unknown[][];
        return { kind: 'states', version, mark: undefined, states };
      }),
    readPage: async (node, minFill, page, whole) =>
      db.guard(() => {
        const rows =
          minFill === undefined
            ? (whole ? r.stacksArrays : r.stacksState).all(enc(node), ...pageArgs(page))
            : (whole ? r.stacksFilledArrays : r.stacksFilledState).all(enc(node), minFill, ...pageArgs(page));
        return rows as unknown as unknown[][];
      }),
    local: {
      version: (node) => db.guard(() => db.stacksVersion(node)),
      stack: (id, whole) =>
        db.guard(
          () =>
            (whole ? r.stackArrays : r.stackState).get(enc(BigInt(id))) as unknown as unknown[] | undefined,
        ),
    },
  };
}
