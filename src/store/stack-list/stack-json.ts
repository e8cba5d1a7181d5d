import { digitsOf, ROW, STATE, type StackRow, type StateRow, sameState, stateOf } from './columns.ts';

/**
 * A stack's JSON object, written from its row as bytes (ASCII: hex ids, digits, booleans), in the order of
 * the API's Stack schema. Only its changing fields (STACK_STATE_COLUMNS) are ever written again: the fixed
 * ones (owner, ids, task, node, units, price, confidential) never change once StackCreatedEvent made it.
 */

const flagOf = (value: unknown) => (value === true || value === 1 || value === 1n ? 'true' : 'false');

/** Where the changing fields are in a row: a whole row (ROW) or a state row (STATE). */
type Changing = Pick<
  typeof ROW | typeof STATE,
  'already' | 'settling' | 'messages' | 'claimed' | 'locked' | 'refund'
>;

/** The JSON of a stack's changing fields, from a whole row or a state row, then `}`. */
function stateSuffix(r: readonly unknown[], at: Changing, confidential: string): string {
  const refund = r[at.refund];
  return (
    `"already_computed_units":${digitsOf(r[at.already])},"in_settle_period":${flagOf(r[at.settling])},` +
    `"num_total_messages":${digitsOf(r[at.messages])},"is_claimed":${flagOf(r[at.claimed])},` +
    `"is_locked_for_claim":${flagOf(r[at.locked])},"is_confidential":${confidential},` +
    `"user_refund_amount":${refund === null || refund === undefined ? 'null' : digitsOf(refund)}}`
  );
}

/** A stack's JSON from its whole row, with where its fixed fields end. */
function encode(r: StackRow): { fragment: Buffer; headLength: number; confidential: string } {
  const head =
    `{"owner_address":"${r[ROW.owner]}","stack_small_id":${digitsOf(r[ROW.id])},"stack_id":"${r[ROW.stackId]}",` +
    `"task_small_id":${digitsOf(r[ROW.task])},"selected_node_id":${digitsOf(r[ROW.node])},` +
    `"num_compute_units":${digitsOf(r[ROW.units])},"price_per_one_million_compute_units":${digitsOf(r[ROW.price])},`;
  const confidential = flagOf(r[ROW.confidential]);
  return {
    fragment: Buffer.from(head + stateSuffix(r, ROW, confidential), 'latin1'),
    headLength: head.length,
    confidential,
  };
}

/** A stack's JSON object from its whole row. */
export function stackFragment(r: StackRow): Buffer {
  return encode(r).fragment;
}

/**
 * A stack's JSON with its changing fields set from a state row: the first `headLength` bytes of `fragment`
 * (its fixed fields) and the changing ones written again.
 */
function withState(fragment: Buffer, headLength: number, confidential: string, r: StateRow): Buffer {
  const suffix = stateSuffix(r, STATE, confidential);
  const out = Buffer.allocUnsafe(headLength + suffix.length);
  fragment.copy(out, 0, 0, headLength);
  out.write(suffix, headLength, 'latin1');
  return out;
}

const STATE_START = Buffer.from('"already_computed_units":');
const CONFIDENTIAL = Buffer.from('"is_confidential":true');

/**
 * A stack's object with its changing fields set from a state row. The fixed fields are the object's own
 * bytes up to the first changing one (they are hex ids and digits: the name cannot occur in them), and
 * is_confidential, which never changes, is read from the object too.
 */
export function restated(fragment: Buffer, r: StateRow): Buffer {
  const head = fragment.indexOf(STATE_START);
  return withState(fragment, head, fragment.includes(CONFIDENTIAL, head) ? 'true' : 'false', r);
}

/** What KeptStacks keeps of one stack: its JSON, where its fixed fields end, and the state row it shows. */
interface KeptStack {
  fragment: Buffer;
  headLength: number;
  confidential: string;
  state: StateRow;
}

/**
 * Each listed stack's JSON, kept encoded, for the lists read without a kept list of their node (a page, a
 * filtered list): rebuilt, such a list reads only the columns that change (half the cost of whole rows),
 * writes again only the stacks whose values moved, and is one copy of bytes already encoded (turning a
 * 1,000-piece string into a Buffer costs more than building it). The changing fields are compared on every
 * build, so nothing can make what is kept wrong and nothing has to invalidate it. Bounded; starts over
 * when full.
 */
export class KeptStacks {
  readonly #max: number;
  readonly #entries = new Map<string, KeptStack>();

  constructor(max = 100_000) {
    this.#max = max;
  }

  /** Keeps whole rows. */
  keep(found: readonly StackRow[]): void {
    if (this.#entries.size + found.length > this.#max) this.#entries.clear();
    for (const r of found) this.#entries.set(digitsOf(r[ROW.id]), { ...encode(r), state: stateOf(r) });
  }

  /**
   * The objects of the first `count` of these state rows, in order, or undefined when a stack is not kept
   * (the caller then reads whole rows and keeps them).
   */
  fragments(state: readonly StateRow[], count: number): Buffer[] | undefined {
    const parts: Buffer[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const r = state[i]!;
      const kept = this.#entries.get(digitsOf(r[STATE.id]));
      if (kept === undefined) return undefined;
      // Any change of the values as read writes it again.
      if (!sameState(kept.state, r)) {
        kept.fragment = withState(kept.fragment, kept.headLength, kept.confidential, r);
        kept.state = r;
      }
      parts[i] = kept.fragment;
    }
    return parts;
  }
}
