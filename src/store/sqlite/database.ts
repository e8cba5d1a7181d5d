import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { Listeners } from '../../internal/listeners.ts';
import type { U64 } from '../../internal/u64.ts';
import { fromSqliteError, StoreError } from '../errors.ts';
import { checkApplied, loadMigrations } from '../migrations.ts';
import { inScope, type NewNodeEvent, type NodeEventScope } from '../node-events.ts';
import { digitsOf } from '../stack-list/columns.ts';
import { StackLists } from '../stack-list/stack-lists.ts';
import { topics } from '../store.ts';
import { WAL_SIZE_LIMIT_BYTES, WalCheckpointer, WRITER_AUTOCHECKPOINT_PAGES } from './checkpointer.ts';
import { stackListSource } from './stack-source.ts';
import { type ReadStatements, readStatements, type WriteStatements, writeStatements } from './statements.ts';
import { params } from './u64.ts';
import { WalIndexWatch } from './wal-index.ts';

export const SQLITE_FILE = 'node-daemon.sqlite';
const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
/** SQLite's automatic checkpoint threshold, in WAL pages, where a commit checkpoints itself. */
const AUTOCHECKPOINT_PAGES = 10_000;
/** Node events inserted per statement (5 parameters each). */
const NODE_EVENT_CHUNK = 100;

export interface SqliteStoreOptions {
  /** Directory of the database file; created (mode 0700) when missing. */
  dataDir: string;
  /** The WAL size, in bytes, at which a worker thread checkpoints it (default ~40 MB; tests use less). */
  checkpointWalBytes?: number;
  /**
   * normal (default): a commit survives the process's crash, and a power cut or an OS crash may undo the
   * newest commits (never part of one). full: each commit is flushed to disk before it returns.
   */
  synchronous?: 'normal' | 'full';
}

/**
 * The SQLite database the store's roles share: one file in the data directory, WAL mode, two connections.
 * The writer runs one transaction at a time (`transaction`); reads go through the reader, so a read never
 * sees a half-applied transaction. A transaction names the topics of cached reads it changed (`touch`,
 * `stackChanged`), whose versions move as it commits, and the node events it recorded (`append`), whose
 * listeners hear of them once it has.
 */
export class SqliteDatabase {
  readonly location: string;
  readonly migrationsApplied: number;
  /** How the writer's commits reach the disk, as SQLite reports it back (SqliteStoreOptions.synchronous). */
  readonly synchronous: NonNullable<SqliteStoreOptions['synchronous']>;
  readonly writer: DatabaseSync;
  readonly reader: DatabaseSync;
  readonly w: WriteStatements;
  readonly r: ReadStatements;
  /** Each listed node's stack list, kept between reads (stack-list/). */
  readonly stackLists: StackLists<undefined>;
  readonly nodeEvents = new Listeners();
  /** Commits of any connection, seen in the WAL index without a read transaction (see dataVersion). */
  readonly #walIndex: WalIndexWatch | undefined;
  /** Checkpoints the WAL from a worker thread, so that no COMMIT waits for one (checkpointer.ts). */
  readonly #checkpointer: WalCheckpointer;
  readonly #nodeEventInserts = new Map<number, StatementSync>();
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;
  #version: string | undefined;
  /** Topics of the cached reads the open transaction changed: their versions move as it commits. */
  readonly #touched = new Set<string>();
  /** The stacks the open transaction added or changed, by their node's stacks topic (see stackChanged). */
  readonly #stacksChanged = new Map<string, string[]>();
  /** Node events were recorded in the open transaction: tell the listeners once it commits. */
  #appended = false;
  /** Whose node events are recorded (NodeEventStore.scopeNodeEvents). */
  scope: NodeEventScope = null;

  constructor(options: SqliteStoreOptions) {
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    this.location = join(options.dataDir, SQLITE_FILE);
    try {
      this.writer = openConnection(this.location);
      // Only the writer commits; the reader and the checkpointer keep NORMAL (a checkpoint syncs either way).
      if (options.synchronous === 'full') this.writer.exec('PRAGMA synchronous = FULL');
      this.synchronous =
        this.writer.prepare('PRAGMA synchronous').get()?.synchronous === 2 ? 'full' : 'normal';
      this.migrationsApplied = migrate(this.writer);
      this.reader = openConnection(this.location);
      this.writer.exec(`PRAGMA wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
    } catch (error) {
      throw fromSqliteError(error);
    }
    this.#checkpointer = new WalCheckpointer(
      this.location,
      () => {
        // The worker is gone: the writer checkpoints in its commits again, as SQLite does by default.
        if (!this.#closed) this.writer.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      },
      options.checkpointWalBytes,
    );
    this.#walIndex = WalIndexWatch.open(this.location);
    this.w = writeStatements(this.writer);
    this.r = readStatements(this.reader);
    this.stackLists = new StackLists(stackListSource(this));
  }

  /** Runs one driver call, translating its errors and refusing work after close. */
  guard<T>(fn: () => T): T {
    if (this.#closed) throw new StoreError('store_closed', 'the store is closed', false);
    try {
      return fn();
    } catch (error) {
      throw fromSqliteError(error);
    }
  }

  /**
   * Runs fn in one write transaction (BEGIN IMMEDIATE ... COMMIT), one at a time on the writer: it commits
   * when fn resolves and rolls back when it throws. As it commits, the versions of the topics it touched
   * move, the stack lists hear which stacks it changed, and the node events' listeners are told.
   */
  transaction<T>(fn: () => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      // The last checkpoint of the WAL's cycle finishes first, so that this transaction starts it over.
      const held = this.#checkpointer.held;
      if (held !== undefined) await held;
      const seen = this.#walIndex?.version();
      this.guard(() => this.writer.exec('BEGIN IMMEDIATE'));
      this.#appended = false;
      this.#touched.clear();
      this.#stacksChanged.clear();
      try {
        const result = await fn();
        this.guard(() => {
          const versions: [string, number][] = [];
          for (const topic of this.#touched) {
            versions.push([topic, Number(this.w.bumpTopic.get(topic)!.version)]);
          }
          this.writer.exec('COMMIT');
          // A topic's bump is a row written, so the WAL index header must have moved. The commits that
          // bump none (a cursor, an idempotency key) move no cached response, and are not checked: a
          // transaction that changed no row writes no WAL frame and leaves the header as it was.
          if (versions.length > 0) this.#walIndex?.committed(seen);
          // Only once committed: a version of a transaction that rolled back is given again.
          for (const [topic, version] of versions) {
            const stacks = this.#stacksChanged.get(topic);
            if (stacks !== undefined) this.stackLists.noteChanged(topic, version, stacks);
          }
        });
        this.#version = undefined;
        this.#checkpointer.afterCommit();
        if (this.#appended) this.nodeEvents.emit();
        return result;
      } catch (error) {
        if (this.writer.isTransaction) this.writer.exec('ROLLBACK');
        throw fromSqliteError(error);
      } finally {
        this.#appended = false;
        this.#touched.clear();
        this.#stacksChanged.clear();
      }
    };
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** The open transaction changes what a topic's cached reads show. */
  touch(topic: string): void {
    this.#touched.add(topic);
  }

  /**
   * The open transaction adds the stack `stack` to node's stacks, or changes its changing columns. Every
   * write to a node's stacks goes through here.
   */
  stackChanged(node: U64, stack: U64): void {
    const topic = topics.stacks(node);
    this.#touched.add(topic);
    const changed = this.#stacksChanged.get(topic);
    if (changed === undefined) this.#stacksChanged.set(topic, [digitsOf(stack)]);
    else changed.push(digitsOf(stack));
  }

  /** Records node events in the open transaction. */
  append(all: readonly NewNodeEvent[]): void {
    const events = this.scope === null ? all : all.filter((event) => inScope(event, this.scope));
    if (events.length === 0) return;
    this.guard(() => {
      const now = Date.now();
      // Many rows per statement: one call into SQLite for up to NODE_EVENT_CHUNK events, in order.
      for (let start = 0; start < events.length; start += NODE_EVENT_CHUNK) {
        const chunk = events.slice(start, start + NODE_EVENT_CHUNK);
        this.#nodeEventStatement(chunk.length).run(...chunk.flatMap((event) => params.nodeEvent(event, now)));
      }
    });
    this.#appended = true;
  }

  /** INSERT of n node events, prepared once per size. */
  #nodeEventStatement(n: number): StatementSync {
    let statement = this.#nodeEventInserts.get(n);
    if (!statement) {
      const values = Array.from({ length: n }, () => '(?, ?, ?, ?, ?)').join(',');
      statement = this.writer.prepare(
        `INSERT INTO node_events (at, type, node_small_id, other_node_small_id, data) VALUES ${values}`,
      );
      this.#nodeEventInserts.set(n, statement);
    }
    return statement;
  }

  /** The version of a node's stacks topic now (0: never changed). */
  stacksVersion(node: U64): number {
    return Number(this.r.topicVersion.get(topics.stacks(node))?.version ?? 0);
  }

  /**
   * A token that moves when any connection, in this process or another, commits. It is read at most once
   * per event-loop turn (a burst of requests shares one read), and forgotten at once when this process
   * commits. From the WAL index's header when it can be (one pread: wal-index.ts), else PRAGMA data_version
   * (a read transaction); the prefixes keep the two apart should the watch turn off.
   */
  dataVersion(): string {
    if (this.#version === undefined) {
      const watched = this.#walIndex?.version();
      this.#version =
        watched !== undefined
          ? `w${watched}`
          : `p${this.guard(() => String(this.r.dataVersion.get()!.data_version))}`;
      setImmediate(() => {
        this.#version = undefined;
      });
    }
    return this.#version;
  }

  /** Refuses work once the store is closed. */
  usable(): void {
    if (this.#closed) throw new StoreError('store_closed', 'the store is closed', false);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#queue;
    this.#closed = true;
    await this.#checkpointer.close();
    this.#walIndex?.close();
    this.reader.close();
    this.writer.exec('PRAGMA optimize');
    this.writer.close();
  }
}

/**
 * Applies the pending migrations in one IMMEDIATE transaction, so two processes starting together cannot
 * both migrate. Refuses a store whose applied migrations differ from the shipped ones.
 */
function migrate(db: DatabaseSync): number {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`);
  const migrations = loadMigrations(MIGRATIONS_DIR);
  db.exec('BEGIN IMMEDIATE');
  try {
    const applied = db
      .prepare('SELECT version, name, checksum FROM schema_migrations ORDER BY version')
      .all();
    checkApplied(
      applied.map((r) => ({
        version: r.version as number,
        name: String(r.name),
        checksum: String(r.checksum),
      })),
      migrations,
    );
    const done = new Set(applied.map((r) => r.version as number));
    let count = 0;
    const record = db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?, ?)');
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, migration.checksum, new Date().toISOString());
      count += 1;
    }
    db.exec('COMMIT');
    return count;
  } catch (error) {
    db.exec('ROLLBACK');
    throw fromSqliteError(error);
  }
}

function openConnection(file: string): DatabaseSync {
  const db = new DatabaseSync(file, { timeout: 5000 });
  db.exec('PRAGMA journal_mode = WAL');
  // WAL with synchronous=NORMAL never corrupts and never splits a transaction; a power cut may lose only
  // the newest commits: the indexer then re-reads its pages from its (equally old) cursor, but usage
  // reports answered since the last sync are gone (--sqlite-synchronous full syncs every commit).
  db.exec('PRAGMA synchronous = NORMAL');
  // A 64 MB page cache, and checkpoints every ~40 MB of WAL rather than 4 MB: fewer re-reads and
  // fsyncs while the indexer catches up (the WAL still commits each transaction atomically). The writer
  // leaves them to a worker thread (WalCheckpointer) while it can.
  db.exec('PRAGMA cache_size = -65536');
  // The WAL file is reused when it starts over, not truncated (checkpointer.ts says why).
  db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  db.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  return db;
}
