import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { blake2b } from '@noble/hashes/blake2.js';
import { base58 } from '../../internal/base58.ts';
import { holdExclusively } from '../../internal/data-dir-lock.ts';
import { normalizeU64 } from '../../internal/u64.ts';
import { U64ArithmeticError } from '../../protocol/arithmetic.ts';
import { ChainUnavailableError, type GasUsed, type MoveAbort, type Submission } from '../chain.ts';
import { arithmeticAbort, MoveAbortError } from './aborts.ts';
import type { TxContext } from './rules.ts';
import { decodeState, encodeState, hex, key, type SystemObject } from './state.ts';

/**
 * The dev network's ledger: the state objects (in memory, and as JSON rows of `objects`), the transactions
 * and the events, in one SQLite file (WAL). A transaction executes against a copy-on-write overlay: an
 * abort anywhere discards the overlay, so nothing changes; a success writes the changed objects, the
 * transaction record and its events in one SQLite transaction, and only then updates memory.
 */

const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE objects (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE transactions (
  seq INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  sender TEXT NOT NULL,
  kind TEXT NOT NULL,
  input TEXT NOT NULL,
  status TEXT NOT NULL,
  abort TEXT,
  gas_used TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  timestamp_ms INTEGER NOT NULL
) STRICT;
CREATE TABLE events (seq INTEGER PRIMARY KEY, tx_seq INTEGER NOT NULL, json TEXT NOT NULL) STRICT;
CREATE INDEX events_by_tx ON events (tx_seq);
`;

/** A transaction as the ledger keeps it. */
export interface TransactionRecord {
  seq: number;
  digest: string;
  sender: string;
  kind: string;
  status: 'success' | 'failure';
  abort: MoveAbort | null;
  gas_used: GasUsed;
  epoch: number;
  timestamp_ms: number;
  events: unknown[];
}

export interface ExecuteRequest<T> {
  sender: string;
  kind: string;
  /** The call's arguments, recorded with the transaction and hashed into its digest. */
  input: unknown;
  seed: string;
  packageId: string;
  gas: GasUsed;
  random: (bound: number) => number;
  body: (tx: TxContext) => T;
  /**
   * The object that pays the gas (key, and its balance after paying), written with the transaction
   * whether it succeeds or aborts: a failed transaction costs its gas too.
   */
  gasPayment?: { key: string; balance: bigint };
}

/** The ledger file is locked by another connection: another daemon runs a dev network in the same data dir. */
export class LedgerBusyError extends Error {
  readonly file: string;
  constructor(file: string) {
    super(`${file} is in use by another dev network (another node-daemon process?)`);
    this.name = 'LedgerBusyError';
    this.file = file;
  }
}

export class Ledger {
  readonly #db: DatabaseSync;
  readonly #objects = new Map<string, string>();
  readonly #stmt: Record<
    'upsert' | 'remove' | 'insertTx' | 'insertEvent' | 'events' | 'txByDigest' | 'txBySender' | 'eventsOfTx',
    StatementSync
  >;
  #nextTxSeq: number;
  #lastEventSeq: number;
  #lastTimestamp = 0;

  private constructor(db: DatabaseSync) {
    this.#db = db;
    for (const row of db.prepare('SELECT key, value FROM objects').all()) {
      this.#objects.set(row.key as string, row.value as string);
    }
    this.#nextTxSeq = Number(db.prepare('SELECT coalesce(max(seq), 0) AS n FROM transactions').get()!.n) + 1;
    this.#lastEventSeq = Number(db.prepare('SELECT coalesce(max(seq), 0) AS n FROM events').get()!.n);
    this.#stmt = {
      upsert: db.prepare(
        'INSERT INTO objects (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      ),
      remove: db.prepare('DELETE FROM objects WHERE key = ?'),
      insertTx: db.prepare(`INSERT INTO transactions
        (seq, digest, sender, kind, input, status, abort, gas_used, epoch, timestamp_ms)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      insertEvent: db.prepare('INSERT INTO events (seq, tx_seq, json) VALUES (?, ?, ?)'),
      events: db.prepare(`SELECT e.seq, e.json, t.epoch FROM events e JOIN transactions t ON t.seq = e.tx_seq
        WHERE e.seq > ? ORDER BY e.seq LIMIT ?`),
      txByDigest: db.prepare('SELECT * FROM transactions WHERE digest = ?'),
      txBySender: db.prepare('SELECT digest FROM transactions WHERE sender = ? ORDER BY seq'),
      eventsOfTx: db.prepare('SELECT json FROM events WHERE tx_seq = ? ORDER BY seq'),
    };
  }

  /** Opens (creating when missing) the ledger file. */
  static open(file: string): Ledger {
    const db = new DatabaseSync(file, { timeout: 250 });
    try {
      // The state lives in memory between transactions, so a second writer would make the two diverge: the
      // connection takes the file's lock for its lifetime (exclusive locking, and WAL without shared memory).
      if (!holdExclusively(db)) throw new LedgerBusyError(file);
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = NORMAL');
      const version = Number(db.prepare('PRAGMA user_version').get()!.user_version);
      if (version === 0) {
        db.exec('BEGIN IMMEDIATE');
        db.exec(SCHEMA);
        db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
        db.exec('COMMIT');
      } else if (version !== SCHEMA_VERSION) {
        throw new Error(
          `${file} has dev network schema ${version}; this node-daemon knows ${SCHEMA_VERSION}`,
        );
      }
      return new Ledger(db);
    } catch (error) {
      if (db.isOpen) db.close();
      throw error;
    }
  }

  /** The committed value of a state object (a fresh copy). */
  read<T>(objectKey: string): T | undefined {
    const text = this.#objects.get(objectKey);
    return text === undefined ? undefined : decodeState<T>(text);
  }

  keys(prefix: string): string[] {
    return [...this.#objects.keys()].filter((k) => k.startsWith(prefix));
  }

  /** The cursor after the newest event: its sequence number. */
  get cursor(): string {
    return String(this.#lastEventSeq);
  }

  get lastEventSeq(): number {
    return this.#lastEventSeq;
  }

  /** Writes objects outside any transaction (the epoch clock, parameters): no record, no events. */
  writeObjects(values: [string, object][]): void {
    const changes = values.map(([k, v]): [string, string] => [k, encodeState(v)]);
    this.#write(() => {
      for (const [k, text] of changes) this.#stmt.upsert.run(k, text);
    });
    for (const [k, text] of changes) this.#objects.set(k, text);
  }

  /**
   * Executes one transaction. A MoveAbortError (or u64 arithmetic error) from the body makes it a failed
   * transaction (recorded, no effects, no events); any other error is a bug and propagates with nothing
   * recorded.
   */
  /**
   * Runs the body as a transaction would, on its own copies of the objects, and keeps nothing (no digest,
   * no record, no events): the abort it met, or null.
   */
  simulate(
    request: Pick<ExecuteRequest<unknown>, 'sender' | 'packageId' | 'random' | 'body'>,
  ): MoveAbort | null {
    const digestBytes = new Uint8Array(32);
    const overlay = new Overlay(this.#objects, {
      sender: request.sender,
      epoch: this.read<SystemObject>(key.system)?.epoch ?? 0n,
      digestBytes,
      digest: base58(digestBytes),
      packageId: request.packageId,
      timestampMs: Math.max(this.#lastTimestamp + 1, Date.now()),
      random: request.random,
    });
    return run(overlay, request.body).abort ?? null;
  }

  execute<T>(request: ExecuteRequest<T>): { submission: Submission; result: T | undefined } {
    const seq = this.#nextTxSeq;
    const digestBytes = blake2b(
      new TextEncoder().encode(
        ['atoma-dev-tx', request.seed, seq, request.sender, request.kind, encodeState(request.input)].join(
          '\n',
        ),
      ),
      { dkLen: 32 },
    );
    const digest = base58(digestBytes);
    this.#lastTimestamp = Math.max(this.#lastTimestamp + 1, Date.now());
    const epoch = this.read<SystemObject>(key.system)?.epoch ?? 0n;
    const overlay = new Overlay(this.#objects, {
      sender: request.sender,
      epoch,
      digestBytes,
      digest,
      packageId: request.packageId,
      timestampMs: this.#lastTimestamp,
      random: request.random,
    });
    const { result, abort } = run(overlay, request.body);
    const events = abort ? [] : overlay.events;
    const changes: [string, string | null][] = abort ? [] : overlay.changes();
    if (request.gasPayment) {
      changes.push([request.gasPayment.key, encodeState({ balance: request.gasPayment.balance })]);
    }
    const firstEventSeq = this.#lastEventSeq + 1;
    this.#write(() => {
      for (const [k, text] of changes) {
        if (text === null) this.#stmt.remove.run(k);
        else this.#stmt.upsert.run(k, text);
      }
      this.#stmt.insertTx.run(
        seq,
        digest,
        request.sender,
        request.kind,
        encodeState(request.input),
        abort ? 'failure' : 'success',
        abort ? JSON.stringify(abort) : null,
        encodeState(request.gas),
        epoch,
        this.#lastTimestamp,
      );
      events.forEach((event, i) => {
        this.#stmt.insertEvent.run(firstEventSeq + i, seq, JSON.stringify(event));
      });
    });
    for (const [k, text] of changes) {
      if (text === null) this.#objects.delete(k);
      else this.#objects.set(k, text);
    }
    this.#nextTxSeq += 1;
    this.#lastEventSeq += events.length;
    const submission: Submission = {
      digest,
      status: abort ? 'failure' : 'success',
      events,
      gas_used: {
        computation_cost: normalizeU64(BigInt(request.gas.computation_cost)),
        storage_cost: normalizeU64(BigInt(request.gas.storage_cost)),
        storage_rebate: normalizeU64(BigInt(request.gas.storage_rebate)),
      },
      cursor: this.cursor,
    };
    if (abort) submission.abort = abort;
    return { submission, result };
  }

  /** Events after sequence number `after`, ascending, at most `limit`, with their transaction's epoch. */
  readEvents(after: number, limit: number): { seq: number; raw: unknown; epoch: number }[] {
    return this.#stmt.events.all(after, limit).map((row) => ({
      seq: Number(row.seq),
      raw: JSON.parse(row.json as string) as unknown,
      epoch: Number(row.epoch),
    }));
  }

  transaction(digest: string): TransactionRecord | undefined {
    const row = this.#stmt.txByDigest.get(digest);
    if (!row) return undefined;
    const gas = decodeState<Record<keyof GasUsed, bigint>>(row.gas_used as string);
    return {
      seq: Number(row.seq),
      digest: row.digest as string,
      sender: row.sender as string,
      kind: row.kind as string,
      status: row.status as 'success' | 'failure',
      abort: row.abort === null ? null : (JSON.parse(row.abort as string) as MoveAbort),
      gas_used: {
        computation_cost: normalizeU64(gas.computation_cost),
        storage_cost: normalizeU64(gas.storage_cost),
        storage_rebate: normalizeU64(gas.storage_rebate),
      },
      epoch: Number(row.epoch),
      timestamp_ms: Number(row.timestamp_ms),
      events: this.#stmt.eventsOfTx
        .all(row.seq as number)
        .map((e) => JSON.parse(e.json as string) as unknown),
    };
  }

  transactionsOf(sender: string): TransactionRecord[] {
    return this.#stmt.txBySender.all(sender).map((row) => this.transaction(row.digest as string)!);
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  #write(fn: () => void): void {
    try {
      this.#db.exec('BEGIN IMMEDIATE');
      fn();
      this.#db.exec('COMMIT');
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      throw new ChainUnavailableError(
        `the dev network could not write its ledger: ${(error as Error).message}`,
        2,
        {
          cause: error,
        },
      );
    }
  }
}

/** Runs a transaction's body: its result, or the Move abort it met (arithmetic errors become aborts). */
function run<T>(overlay: Overlay, body: (tx: TxContext) => T): { result?: T; abort?: MoveAbort } {
  try {
    return { result: body(overlay) };
  } catch (error) {
    const failure = error instanceof U64ArithmeticError ? arithmeticAbort(error.message) : (error as Error);
    if (!(failure instanceof MoveAbortError)) throw error;
    return { abort: failure.abort };
  }
}

interface OverlayContext {
  sender: string;
  epoch: bigint;
  digestBytes: Uint8Array;
  digest: string;
  packageId: string;
  timestampMs: number;
  random: (bound: number) => number;
}

/** One transaction's view of the state: copies of the objects it touched, and the events it emitted. */
class Overlay implements TxContext {
  readonly sender: string;
  readonly epoch: bigint;
  readonly events: unknown[] = [];
  readonly #committed: ReadonlyMap<string, string>;
  /** Working copies; null marks a deleted object. */
  readonly #working = new Map<string, object | null>();
  readonly #context: OverlayContext;
  #created = 0;

  constructor(committed: ReadonlyMap<string, string>, context: OverlayContext) {
    this.#committed = committed;
    this.#context = context;
    this.sender = context.sender;
    this.epoch = context.epoch;
  }

  random(bound: number): number {
    return this.#context.random(bound);
  }

  get<T extends object>(objectKey: string): T | undefined {
    if (this.#working.has(objectKey)) return (this.#working.get(objectKey) ?? undefined) as T | undefined;
    const text = this.#committed.get(objectKey);
    if (text === undefined) return undefined;
    const value = decodeState<T>(text);
    this.#working.set(objectKey, value);
    return value;
  }

  put(objectKey: string, value: object): void {
    this.#working.set(objectKey, value);
  }

  remove(objectKey: string): void {
    this.#working.set(objectKey, null);
  }

  /** Like Sui: blake2b-256(transaction digest || number of ids created so far, u64 little-endian). */
  newId(): string {
    const preimage = new Uint8Array(40);
    preimage.set(this.#context.digestBytes);
    new DataView(preimage.buffer).setBigUint64(32, BigInt(this.#created), true);
    this.#created += 1;
    return `0x${hex(blake2b(preimage, { dkLen: 32 }))}`;
  }

  emit(name: string, parsedJson: Record<string, unknown>): void {
    const { digest, packageId, sender, timestampMs } = this.#context;
    this.events.push({
      id: { txDigest: digest, eventSeq: String(this.events.length) },
      packageId,
      transactionModule: 'db',
      sender,
      type: `${packageId}::db::${name}`,
      parsedJson,
      timestampMs: String(timestampMs),
    });
  }

  /** The objects whose JSON differs from the committed one; null for a deletion. */
  changes(): [string, string | null][] {
    const out: [string, string | null][] = [];
    for (const [k, value] of this.#working) {
      const before = this.#committed.get(k);
      if (value === null) {
        if (before !== undefined) out.push([k, null]);
        continue;
      }
      const text = encodeState(value);
      if (text !== before) out.push([k, text]);
    }
    return out;
  }
}
