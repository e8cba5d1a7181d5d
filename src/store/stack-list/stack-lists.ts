import type { U64 } from '../../internal/u64.ts';
import { type JsonRows, type Page, topics } from '../store.ts';
import { listSlice, rowsOf } from './body.ts';
import { compareDigits, digitsOf, ROW, STATE, type StackRow, type StateRow, stateOf } from './columns.ts';
import { builtList, changedList, type KeptList, reread } from './kept-list.ts';
import { KeptStacks } from './stack-json.ts';

/**
 * A node's stack list (GET /stacks/nodes/{id}), the one read the daemon answers at a busy node's pace: a
 * node's whole list is kept between reads, encoded (kept-list.ts), and brought up to date by one rule, the
 * same on every engine. The engines only answer what is there and what changed since a version (a
 * StackListSource); this module decides the rest:
 * 1. The changes this process committed are noted as they commit (their topic version, and the stacks they
 *    changed, with the values when the engine knows them), and written into the list by its next read, in
 *    version order, as far as they follow on from the list's version: values without a read, other stacks
 *    read by id where that costs no round trip (SQLite). A busy node whose list nobody reads is not
 *    restated for every change.
 * 2. A list at or past the version the caller saw (the response cache reads the topic's version just before
 *    it loads) is answered as it is. So is one at the version the engine says is current, where asking
 *    costs no round trip.
 * 3. Otherwise the engine says what changed since the list's mark: the rows written since (PostgreSQL, which
 *    cannot know another daemon's writes), or every stack's state row (SQLite, when another process wrote),
 *    or that the list must be read whole. Each stack's object is reused unless its values moved; new stacks
 *    are appended, or merged in id order.
 * A list is never changed once made (kept-list.ts): every change makes a new one. A filtered list or a page
 * is chosen from the kept list (listSlice); without one, a page is read on its own and its stacks' objects
 * kept (KeptStacks), so a first page does not read a big node's every stack.
 */

/** What an engine answers about a node's stacks since a kept list was made. */
export type Changes<Mark> =
  /** The whole rows of the node's stacks written since the list's mark, in id order. */
  | { kind: 'rows'; version: number; mark: Mark; rows: readonly StackRow[] }
  /** Every stack's state row now, in id order: the engine cannot tell which changed. */
  | { kind: 'states'; version: number; mark: Mark; states: readonly StateRow[] }
  /** Rows may have left the list: read it whole. */
  | { kind: 'reset' };

/** The engine's side of the stack lists: reads only. */
export interface StackListSource<Mark> {
  /** The node's whole list: its whole rows in id order, the topic version they show (at least), a mark. */
  readList(node: U64): Promise<{ version: number; mark: Mark; rows: readonly StackRow[] }>;
  /** What changed in the node's stacks since the kept list was read (its mark and version). */
  readChanges(node: U64, kept: KeptList<Mark>): Promise<Changes<Mark>>;
  /**
   * A list without a kept one (a page, in the order of small ids; filtered by fill when minFill is given):
   * its state rows, or its whole rows.
   */
  readPage(node: U64, minFill: number | undefined, page: Page, whole: boolean): Promise<unknown[][]>;
  /** An engine that reads in process (no round trip): the topic's version now, and one stack by id. */
  local?: {
    version(node: U64): number;
    /** The stack's whole row, or its state row; undefined when there is no such stack. */
    stack(id: string, whole: boolean): unknown[] | undefined;
  };
}

/** A stack's usage as this process's own commit left it, as the engine's driver reads the columns back. */
export interface UsageValues {
  already: unknown;
  messages: unknown;
}

/** One committed version of a node's stacks: each stack it changed, with its usage when known. */
type Note = ReadonlyMap<string, UsageValues | null>;

/** Versions of a node's stacks topic whose changes are remembered, per kept list. */
const NOTED_VERSIONS = 4096;
/** Stacks new to a kept list read one by one; more than this, the node's list is read whole. */
const NEW_STACKS_BY_ID = 16;
/** Stacks of the whole lists kept between reads, over all nodes: about 100 MB at most. */
const KEPT_STACKS = 200_000;

export class StackLists<Mark> {
  readonly #source: StackListSource<Mark>;
  /** Each listed node's list, by its stacks topic, oldest kept first (see #keep). */
  readonly #lists = new Map<string, KeptList<Mark>>();
  #listed = 0;
  /** For each kept list's topic, the changes this process committed, by version (see note). */
  readonly #notes = new Map<string, Map<number, Note>>();
  /** The objects of stacks listed without a kept list. */
  readonly #stacks = new KeptStacks();

  constructor(source: StackListSource<Mark>) {
    this.#source = source;
  }

  /**
   * The node's stacks as the API's JSON: whole, filtered by fill, or a page. seen: the node's stacks topic
   * version the caller read just before (the list answered shows at least that version).
   */
  async list(node: U64, minFill: number | undefined, page: Page = {}, seen?: number): Promise<JsonRows> {
    const topic = topics.stacks(node);
    const paged = page.limit !== undefined || page.after !== undefined;
    if (paged && !this.#lists.has(topic)) return this.#page(node, minFill, page);
    const kept = await this.#current(node, topic, seen);
    return listSlice(kept.state, kept.list, minFill, page);
  }

  /**
   * This process committed `version` of a node's stacks topic, which changed these stacks (by their small
   * ids' digits); the values of each are read when the list is next read.
   */
  noteChanged(topic: string, version: number, stacks: Iterable<string>): void {
    this.#note(topic, version, () => new Map(Array.from(stacks, (id) => [id, null])));
  }

  /** This process committed `version` of a node's stacks topic, which set these stacks' usage. */
  noteUsage(topic: string, version: number, usage: ReadonlyMap<string, UsageValues>): void {
    this.#note(topic, version, () => usage);
  }

  #note(topic: string, version: number, note: () => Note): void {
    const kept = this.#lists.get(topic);
    // A list not kept is read whole when it is next listed: nothing noted before can be used either.
    if (kept === undefined) {
      this.#notes.delete(topic);
      return;
    }
    if (version <= kept.version) return;
    let notes = this.#notes.get(topic);
    if (notes === undefined) {
      notes = new Map();
      this.#notes.set(topic, notes);
    }
    notes.set(version, note());
    notes.delete(version - NOTED_VERSIONS);
  }

  /** The node's list brought up to at least `seen`, or to the current version when not given. */
  async #current(node: U64, topic: string, seen: number | undefined): Promise<KeptList<Mark>> {
    let kept = this.#lists.get(topic);
    if (kept !== undefined) {
      kept = this.#withNotes(node, topic, kept);
      if (seen !== undefined && kept.version >= seen) return kept;
      if (this.#source.local !== undefined && this.#source.local.version(node) <= kept.version) return kept;
    }
    const next = kept === undefined ? await this.#read(node) : await this.#changed(node, kept);
    this.#keep(topic, next);
    return next;
  }

  /** The list read whole. */
  async #read(node: U64): Promise<KeptList<Mark>> {
    const { version, mark, rows } = await this.#source.readList(node);
    return { version, mark, ...builtList(rows) };
  }

  /** The kept list brought up to what the engine says changed since it. */
  async #changed(node: U64, kept: KeptList<Mark>): Promise<KeptList<Mark>> {
    const changes = await this.#source.readChanges(node, kept);
    if (changes.kind === 'reset') return this.#read(node);
    const { version, mark } = changes;
    if (changes.kind === 'states') {
      const local = this.#source.local;
      const rows =
        local === undefined
          ? undefined
          : reread(kept, changes.states, NEW_STACKS_BY_ID, (id) => local.stack(id, true));
      return rows === undefined ? this.#read(node) : { version, mark, ...rows };
    }
    const changed = new Map<number, StateRow>();
    const added: StackRow[] = [];
    for (const row of changes.rows) {
      const at = kept.index.get(digitsOf(row[ROW.id]));
      if (at === undefined) added.push(row);
      else changed.set(at, stateOf(row));
    }
    return { version, mark, ...changedList(kept, changed, added) };
  }

  /**
   * The kept list with the changes noted since it (this process's commits) written in, version after version
   * while they follow on from its version, and kept: the next read starts from there.
   */
  #withNotes(node: U64, topic: string, kept: KeptList<Mark>): KeptList<Mark> {
    const notes = this.#notes.get(topic);
    if (notes === undefined) return kept;
    const changed = new Map<number, unknown[]>();
    const added = new Map<string, StackRow>();
    /** The stacks read by id in this call: read again, they would say the same. */
    const read = new Set<number>();
    let version = kept.version;
    for (let note = notes.get(version + 1); note !== undefined; note = notes.get(version + 1)) {
      if (!this.#apply(node, kept, note, changed, added, read)) break;
      notes.delete(version + 1);
      version += 1;
    }
    if (version === kept.version) return kept;
    const ids = [...added.keys()].sort(compareDigits);
    const next = {
      version,
      mark: kept.mark,
      ...changedList(
        kept,
        changed,
        ids.map((id) => added.get(id)!),
      ),
    };
    this.#keep(topic, next);
    return next;
  }

  /**
   * Writes one note's changes into `changed` (state rows by index) and `added` (whole rows of stacks new to
   * the list); false when it cannot be written without asking the engine what changed.
   */
  #apply(
    node: U64,
    kept: KeptList<Mark>,
    note: Note,
    changed: Map<number, unknown[]>,
    added: Map<string, StackRow>,
    read: Set<number>,
  ): boolean {
    const local = this.#source.local;
    for (const [id, usage] of note) {
      const at = kept.index.get(id);
      if (at === undefined) {
        // New to the list: its whole row, as it is now (a later version may have changed it too). More than
        // a few, or one that is not the node's (an event that named another node for its stack): the
        // engine says what changed, in one snapshot.
        if (added.has(id)) continue;
        if (local === undefined || added.size === NEW_STACKS_BY_ID) return false;
        const row = local.stack(id, true);
        if (row === undefined || digitsOf(row[ROW.node]) !== digitsOf(node)) return false;
        added.set(id, row);
      } else if (usage === null) {
        if (read.has(at)) continue;
        if (local === undefined) return false;
        const row = local.stack(id, false);
        if (row === undefined) return false;
        changed.set(at, row);
        read.add(at);
      } else {
        // The values as a read gives them, so that a later read that finds the same compares equal.
        const row = changed.get(at) ?? kept.state[at]!.slice();
        row[STATE.already] = usage.already;
        row[STATE.messages] = usage.messages;
        changed.set(at, row);
      }
    }
    return true;
  }

  /**
   * Keeps a node's list (as the newest: reads may finish out of order), and drops the notes it covers. Past
   * KEPT_STACKS stacks over all nodes, the lists kept longest ago go first, with their notes.
   */
  #keep(topic: string, list: KeptList<Mark>): void {
    const old = this.#lists.get(topic);
    if (old !== undefined) {
      if (old.version > list.version) return;
      this.#lists.delete(topic);
      this.#listed -= old.state.length;
    }
    this.#lists.set(topic, list);
    this.#listed += list.state.length;
    const notes = this.#notes.get(topic);
    if (notes !== undefined)
      for (const version of notes.keys()) if (version <= list.version) notes.delete(version);
    for (const [oldest, dropped] of this.#lists) {
      if (this.#listed <= KEPT_STACKS || oldest === topic) break;
      this.#lists.delete(oldest);
      this.#notes.delete(oldest);
      this.#listed -= dropped.state.length;
    }
  }

  /** A page (or a filtered page) of a node whose list is not kept: read on its own, one row past its limit. */
  async #page(node: U64, minFill: number | undefined, page: Page): Promise<JsonRows> {
    const probe = page.limit === undefined ? page : { ...page, limit: page.limit + 1 };
    const count = (state: readonly StateRow[]) =>
      page.limit === undefined ? state.length : Math.min(page.limit, state.length);
    const state = await this.#source.readPage(node, minFill, probe, false);
    const parts = this.#stacks.fragments(state, count(state));
    if (parts !== undefined) return rowsOf(parts, state);
    // A stack seen for the first time: whole rows, whose fixed fields are kept for the next time.
    const rows = await this.#source.readPage(node, minFill, probe, true);
    this.#stacks.keep(rows);
    const states = rows.map(stateOf);
    return rowsOf(this.#stacks.fragments(states, count(states))!, states);
  }
}
