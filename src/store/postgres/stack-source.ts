import type { U64 } from '../../internal/u64.ts';
import type { StackListSource } from '../stack-list/stack-lists.ts';
import { topics } from '../store.ts';
import { S, type Statement } from './statements.ts';
import { enc, pageArgs } from './u64.ts';

/**
 * What a kept list has seen of the database: the snapshot its rows were read under, and the count of
 * stacks ever removed then (store_version.stacks_removed: when it moves, rows may have left the list).
 */
export interface StackListMark {
  snapshot: string;
  removed: string;
}

/**
 * What the stack lists (stack-list/) ask PostgreSQL, each in one statement, so in one snapshot: a node's
 * whole list, or the rows whose last writer the kept list's snapshot did not see (another daemon may have
 * changed any row: every stacks row carries the id of the transaction that wrote it, migration 0007), with
 * the snapshot and the topic version they were read under.
 */
export function stackListSource(db: {
  arrays(statement: Statement, values: unknown[]): Promise<unknown[][]>;
}): StackListSource<StackListMark> {
  /** The head columns of a kept list query (its snapshot, version and removals) and its stacks' rows. */
  const read = async (statement: typeof S.nodeList, values: unknown[]) => {
    const found = await db.arrays(statement, values);
    const head = found[0]!;
    return {
      version: Number(head[1] ?? 0),
      mark: { snapshot: head[0] as string, removed: head[2] as string },
      // One row of nulls when the node has no stack (or none changed).
      rows: head[4] === null ? [] : found.map((r) => r.slice(3)),
    };
  };
  return {
    readList: (node: U64) => read(S.nodeList, [enc(node), topics.stacks(node)]),
    readChanges: async (node, kept) => {
      const { version, mark, rows } = await read(S.nodeListSince, [
        enc(node),
        topics.stacks(node),
        kept.mark.snapshot,
      ]);
      // Rows may have left the list, which no row read says.
      if (mark.removed !== kept.mark.removed) return { kind: 'reset' };
      return { kind: 'rows', version, mark, rows };
    },
    readPage: (node, minFill, page, whole) =>
      minFill === undefined
        ? db.arrays(whole ? S.stacks : S.stacksState, [enc(node), ...pageArgs(page)])
        : db.arrays(whole ? S.stacksFilled : S.stacksFilledState, [enc(node), minFill, ...pageArgs(page)]),
  };
}
