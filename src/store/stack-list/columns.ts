import { compareU64, normalizeU64, type U64 } from '../../internal/u64.ts';

/**
 * A node's stack list is built from rows read as arrays of values (no object per row). These are the
 * columns both engines select for it, and each one's position in such a row, by name.
 */

/** A stack's whole row, as both engines select it for the list: the API's fields, in the API's order. */
export const STACK_COLUMNS = `owner_address, stack_small_id, stack_id, task_small_id, selected_node_id, num_compute_units,
  price_per_one_million_compute_units, already_computed_units, in_settle_period, num_total_messages, is_claimed,
  is_locked_for_claim, is_confidential, user_refund_amount`;

/** Where each column is in a row of STACK_COLUMNS. */
export const ROW = {
  owner: 0,
  id: 1,
  stackId: 2,
  task: 3,
  node: 4,
  units: 5,
  price: 6,
  already: 7,
  settling: 8,
  messages: 9,
  claimed: 10,
  locked: 11,
  confidential: 12,
  refund: 13,
} as const;

/**
 * The columns of a stack that change after it is created (usage, settlement, claim), then num_compute_units:
 * it never changes, but a list filtered by fill is chosen from these rows alone (listSlice). The other
 * columns (owner, ids, task, node, price, confidential) are only ever shown: the kept JSON keeps them.
 */
export const STACK_STATE_COLUMNS = `stack_small_id, already_computed_units, in_settle_period, num_total_messages,
  is_claimed, is_locked_for_claim, user_refund_amount, num_compute_units`;

/** Where each column is in a row of STACK_STATE_COLUMNS (a "state row"). */
export const STATE = {
  id: 0,
  already: 1,
  settling: 2,
  messages: 3,
  claimed: 4,
  locked: 5,
  refund: 6,
  units: 7,
} as const;

/** A row of STACK_COLUMNS, as the driver gives it. */
export type StackRow = readonly unknown[];
/** A row of STACK_STATE_COLUMNS, as the driver gives it. */
export type StateRow = readonly unknown[];

/** A stack's state row from its whole row. */
export function stateOf(r: StackRow): unknown[] {
  return [
    r[ROW.id],
    r[ROW.already],
    r[ROW.settling],
    r[ROW.messages],
    r[ROW.claimed],
    r[ROW.locked],
    r[ROW.refund],
    r[ROW.units],
  ];
}

/**
 * Whether two state rows show the same values: the values as read compare exactly (the same driver gives
 * the same types). num_compute_units is left out: it never changes.
 */
export function sameState(a: StateRow, b: StateRow): boolean {
  return (
    a[STATE.already] === b[STATE.already] &&
    a[STATE.settling] === b[STATE.settling] &&
    a[STATE.messages] === b[STATE.messages] &&
    a[STATE.claimed] === b[STATE.claimed] &&
    a[STATE.locked] === b[STATE.locked] &&
    a[STATE.refund] === b[STATE.refund]
  );
}

/**
 * A u64 column as JSON digits: SQLite gives a number, or 20-digit TEXT above 2^53; PostgreSQL NUMERIC text
 * (a U64 value gives its digits too). Kept stacks are keyed by it.
 */
export function digitsOf(value: unknown): string {
  if (typeof value === 'string')
    return value.length > 1 && value[0] === '0' ? value.replace(/^0+(?=\d)/, '') : value;
  return String(value);
}

/** Orders small ids by their digits (digitsOf: no leading zeros), as numbers. */
export function compareDigits(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/** A state row's small id as a U64. */
export function idOf(r: StateRow): U64 {
  return normalizeU64(BigInt(r[STATE.id] as string | number | bigint));
}

/** The small id of the last of the first `count` state rows, or null. */
export function lastIdOf(state: readonly StateRow[], count: number): U64 | null {
  return count > 0 ? idOf(state[count - 1]!) : null;
}

/** The position of the first state row (in id order) whose small id is above `after`. */
export function firstAfter(state: readonly StateRow[], after: U64): number {
  let lo = 0;
  let hi = state.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareU64(idOf(state[mid]!), after) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Each stack's place in a list of state rows, by its small id's digits. */
export function listIndex(state: readonly StateRow[]): Map<string, number> {
  return new Map(state.map((r, i) => [digitsOf(r[STATE.id]), i]));
}
