import type { U64 } from '../../internal/u64.ts';
import { parseIdList } from '../rows.ts';
import type { ClaimContext, NewStack, NewTask, StackTerms } from '../store.ts';
import type { Row } from './database.ts';
import { dec, enc, rows } from './u64.ts';

/**
 * The claim contexts of a page's stacks, read ahead in one round trip (IndexerTx.readAhead) and then kept as
 * a read would find them after each of the transaction's writes. That takes little: a stack's terms and
 * node never change once it exists (the first insert wins, as a task's security level does), a new ticket
 * has no attesters, and only recordAttestation and putDispute change them, after reading the locked row.
 * The indexer of a source holds its lease, so no other process changes them meanwhile.
 */
export class ReadAhead {
  /** Each stack read ahead: its context's stack half; null while it does not exist; 'ask' when unknown. */
  readonly #stacks = new Map<string, { terms: StackTerms; node: U64 } | null | 'ask'>();
  /** The already_attested_nodes of each stack's ticket read ahead ([]: no ticket). */
  readonly #attested = new Map<string, U64[]>();
  /** The security level of each task read ahead (null: no such task). */
  readonly #levels = new Map<string, number | null>();
  /** How many writes it has followed: one made while a read-ahead's rows were on their way is not in them. */
  changes = 0;

  /** Adds what the read-ahead statements found for these stacks and tasks (ids already known stay). */
  add(stackIds: readonly string[], taskIds: readonly string[], stacks: Row[], tickets: Row[], tasks: Row[]) {
    const found = new Map(stacks.map((r) => [enc(dec(r.stack_small_id)), r]));
    const attested = new Map(tickets.map((r) => [enc(dec(r.stack_small_id)), r]));
    const levels = new Map(tasks.map((r) => [enc(dec(r.task_small_id)), Number(r.security_level)]));
    for (const id of stackIds) {
      if (this.#stacks.has(id)) continue;
      const row = found.get(id);
      this.#stacks.set(id, row ? { terms: rows.terms(row)!, node: dec(row.selected_node_id) } : null);
      const ticket = attested.get(id);
      this.#attested.set(id, ticket ? parseIdList(ticket.already_attested_nodes as string).map(dec) : []);
    }
    for (const id of taskIds) if (!this.#levels.has(id)) this.#levels.set(id, levels.get(id) ?? null);
  }

  /** The context, when the stack was read ahead and what a read would find is known. */
  context(id: U64): ClaimContext | undefined {
    const key = enc(id);
    const stack = this.#stacks.get(key);
    const attested = this.#attested.get(key);
    if (stack === undefined || stack === 'ask' || attested === undefined) return undefined;
    return {
      terms: stack === null ? undefined : { ...stack.terms },
      selected_node_id: stack === null ? null : stack.node,
      already_attested: [...attested],
    };
  }

  /** A task inserted (kept only if none was there: ON CONFLICT DO NOTHING). */
  putTask(task: NewTask): void {
    this.changes += 1;
    const key = enc(task.task_small_id);
    if (this.#levels.get(key) === null) this.#levels.set(key, task.security_level);
  }

  /** A stack inserted with its task's level (createStack stages only a stack it found absent). */
  putStack(s: NewStack): void {
    this.changes += 1;
    const key = enc(s.stack_small_id);
    if (this.#stacks.get(key) !== null) return;
    const level = this.#levels.get(enc(s.task_small_id));
    // The row as putStacks writes it: its task's level, or null when there is no such task.
    const row = {
      price_per_one_million_compute_units: enc(s.price_per_one_million_compute_units),
      num_compute_units: enc(s.num_compute_units),
      security_level: level ?? null,
    };
    this.#stacks.set(
      key,
      level === undefined ? 'ask' : { terms: rows.terms(row)!, node: dec(enc(s.selected_node_id)) },
    );
  }

  /** A ticket's attesters written by this transaction (idList text, as stored). */
  setAttested(id: U64, attested: string): void {
    this.changes += 1;
    const key = enc(id);
    if (this.#attested.has(key)) this.#attested.set(key, parseIdList(attested).map(dec));
  }
}
