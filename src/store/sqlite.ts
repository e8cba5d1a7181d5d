import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { GroupCommit } from '../internal/group-commit.ts';
import { Listeners } from '../internal/listeners.ts';
import { normalizeU64, type U64 } from '../internal/u64.ts';
import { claimableFromEpoch } from '../protocol/epochs.ts';
import { ticketLeaves } from '../protocol/proofs.ts';
import type {
  ClaimPath,
  NodeRecord,
  NodeSubscription,
  Stack,
  StackAttestationDispute,
  StackSettlementTicket,
  Task,
} from '../schemas/model.ts';
import { fromSqliteError, StoreError } from './errors.ts';
import { checkApplied, loadMigrations } from './migrations.ts';
import {
  autopilotEvent,
  eventData,
  type NewNodeEvent,
  type NodeEventQuery,
  type NodeEventRow,
} from './node-events.ts';
import {
  attestedRow,
  compareDigits,
  DISPUTE_COLUMNS,
  digitsOf,
  disputedAttestationRow,
  encodeParameters,
  fragmentAt,
  idList,
  joinFragments,
  KeptLists,
  KeptStacks,
  type ListBody,
  listIndex,
  listSlice,
  mergedList,
  parseIdList,
  patchBody,
  restated,
  rowMappers,
  STACK_COLUMNS,
  STACK_STATE_COLUMNS,
  sameState,
  stackFragment,
  stacksJson,
  stateOf,
  TERMS_COLUMNS,
  TICKET_COLUMNS,
  usageChange,
} from './rows.ts';
import { WAL_SIZE_LIMIT_BYTES, WalCheckpointer, WRITER_AUTOCHECKPOINT_PAGES } from './sqlite-checkpointer.ts';
import { WalIndexWatch } from './sqlite-wal-index.ts';
import type {
  Attestation,
  AttestationOutcome,
  AttestationRequest,
  AttesterReward,
  AutopilotAction,
  ChainState,
  ClaimableTicket,
  ClaimRecord,
  CursorState,
  Dispute,
  EventLookup,
  IndexerCounts,
  IndexerTx,
  JsonRows,
  Lease,
  LedgerRow,
  NewStack,
  NewTask,
  OpenStack,
  Page,
  StackClaimed,
  StackTerms,
  Store,
  TicketClaimed,
  TicketSettled,
  TrySettle,
  UsageOutcome,
  UsageReport,
} from './store.ts';
import { IDEMPOTENCY_TTL_MS, type IdempotencyRecord, topics } from './store.ts';

export const SQLITE_FILE = 'node-daemon.sqlite';
const MIGRATIONS_DIR = new URL('./migrations/sqlite/', import.meta.url);
/** Versions of a node's stacks topic whose usage-report changes are remembered (see #changeLog). */
const CHANGE_LOG_VERSIONS = 4096;
/** Stacks new to a kept list read one by one; more than this, the node's whole rows are read. */
const NEW_STACKS_BY_ID = 16;

/** A node's whole stack list as kept between reads (see #nodeList). */
interface NodeList {
  /** The version of the node's stacks topic the list shows (at least). */
  version: number;
  /** Each stack's changing columns (STACK_STATE_COLUMNS), in list order. */
  state: unknown[][];
  /** Each stack's place in the list, by its small id's digits. */
  index: Map<string, number>;
  list: ListBody;
}
/** SQLite's automatic checkpoint threshold, in WAL pages, where a commit checkpoints itself. */
const AUTOCHECKPOINT_PAGES = 10_000;
/** Node events inserted per statement (5 parameters each). */
const NODE_EVENT_CHUNK = 100;

// --- u64 encoding: the one place where SQLite's 64-bit signed integers meet the chain's u64 -------------

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A safe integer is bound as a bigint (so SQLite stores INTEGER); a larger value as 20-digit TEXT. */
function enc(value: U64): bigint | string {
  const big = BigInt(value);
  return big <= MAX_SAFE ? big : big.toString().padStart(20, '0');
}

function dec(value: unknown): U64 {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return normalizeU64(value);
  if (typeof value === 'string') return normalizeU64(BigInt(value));
  throw new StoreError('store_corrupt', `unexpected u64 column value ${String(value)}`, false);
}

const rows = rowMappers(dec);

/** A page's bind values: after an id (-1: from the first), at most `limit` rows (-1: all). */
function pageArgs(page: Page): [bigint | string, number] {
  return [page.after === undefined ? -1n : enc(page.after), page.limit ?? -1];
}

// --- migrations ------------------------------------------------------------------------------------------

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

// --- the driver ------------------------------------------------------------------------------------------

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
 * The embedded store: one file in the data directory, WAL mode. The indexer writes through one connection;
 * reads go through another, so a read never sees a half-applied page.
 */
export class SqliteStore implements Store {
  readonly engine = 'sqlite' as const;
  readonly location: string;
  readonly migrationsApplied: number;
  /** How the writer's commits reach the disk, as SQLite reports it back (SqliteStoreOptions.synchronous). */
  readonly synchronous: NonNullable<SqliteStoreOptions['synchronous']>;
  readonly #writer: DatabaseSync;
  readonly #reader: DatabaseSync;
  readonly #w: Record<string, StatementSync>;
  readonly #r: Record<string, StatementSync>;
  readonly #nodeEventInserts = new Map<number, StatementSync>();
  /** The JSON of the stacks already listed, encoded, with the values it shows (see KeptStacks). */
  readonly #keptStacks = new KeptStacks();
  #version: string | undefined;
  /** Commits of any connection, seen in the WAL index without a read transaction (see dataVersion). */
  readonly #walIndex: WalIndexWatch | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;
  #storeId: string | undefined;
  /** Topics of the cached reads the open transaction changed: their versions move as it commits. */
  readonly #touched = new Set<string>();
  /** The stacks the open transaction added or changed, by their node's stacks topic (see #stackChanged). */
  readonly #rowChange = new Map<string, string[]>();
  /**
   * For each kept node list's stacks topic, the stacks that each version added or changed, when this process
   * made that version (new stacks, usage reports, try-settles, claims). A version missing (another
   * process's commit) means: unknown, read it all.
   */
  readonly #changeLog = new Map<string, Map<number, string[]>>();
  /** Each listed node's whole stack list, encoded, with the topic version it shows (see #nodeList). */
  readonly #nodeLists = new KeptLists<NodeList>();
  /** Node events were recorded in the open transaction: tell the listeners once it commits. */
  #appended = false;
  readonly #nodeEvents = new Listeners();
  /** Checkpoints the WAL from a worker thread, so that no COMMIT waits for one (sqlite-checkpointer.ts). */
  readonly #checkpointer: WalCheckpointer;

  constructor(options: SqliteStoreOptions) {
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    this.location = join(options.dataDir, SQLITE_FILE);
    try {
      this.#writer = openConnection(this.location);
      // Only the writer commits; the reader and the checkpointer keep NORMAL (a checkpoint syncs either way).
      if (options.synchronous === 'full') this.#writer.exec('PRAGMA synchronous = FULL');
      this.synchronous =
        this.#writer.prepare('PRAGMA synchronous').get()?.synchronous === 2 ? 'full' : 'normal';
      this.migrationsApplied = migrate(this.#writer);
      this.#reader = openConnection(this.location);
      this.#writer.exec(`PRAGMA wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
    } catch (error) {
      throw fromSqliteError(error);
    }
    this.#checkpointer = new WalCheckpointer(
      this.location,
      () => {
        // The worker is gone: the writer checkpoints in its commits again, as SQLite does by default.
        if (!this.#closed) this.#writer.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      },
      options.checkpointWalBytes,
    );
    this.#walIndex = WalIndexWatch.open(this.location);
    this.#w = prepareWrites(this.#writer);
    this.#r = prepareReads(this.#reader);
    // The stack lists as rows of values (arrays), for the JSON built straight from them; and the same
    // with only the columns that change (KeptStacks keeps the rest).
    const arrays = (sql: string) => {
      const statement = this.#reader.prepare(sql);
      statement.setReturnArrays(true);
      return statement;
    };
    const state = (sql: string) => arrays(sql.replace(STACK_COLUMNS, STACK_STATE_COLUMNS));
    this.#r.stacksArrays = arrays(this.#r.stacks!.sourceSQL);
    this.#r.stacksFilledArrays = arrays(this.#r.stacksFilled!.sourceSQL);
    this.#r.stacksState = state(this.#r.stacks!.sourceSQL);
    this.#r.stackState = state(this.#r.getStack!.sourceSQL);
    this.#r.stackArrays = arrays(this.#r.getStack!.sourceSQL);
    this.#r.stacksFilledState = state(this.#r.stacksFilled!.sourceSQL);
  }

  /** Runs one driver call, translating its errors and refusing work after close. */
  #guard<T>(fn: () => T): T {
    if (this.#closed) throw new StoreError('store_closed', 'the store is closed', false);
    try {
      return fn();
    } catch (error) {
      throw fromSqliteError(error);
    }
  }

  /** INSERT of n node events, prepared once per size. */
  #nodeEventStatement(n: number): StatementSync {
    let statement = this.#nodeEventInserts.get(n);
    if (!statement) {
      const values = Array.from({ length: n }, () => '(?, ?, ?, ?, ?)').join(',');
      statement = this.#writer.prepare(
        `INSERT INTO node_events (at, type, node_small_id, other_node_small_id, data) VALUES ${values}`,
      );
      this.#nodeEventInserts.set(n, statement);
    }
    return statement;
  }

  indexerTransaction<T>(fn: (tx: IndexerTx) => Promise<T>): Promise<T> {
    // Transactions on the writer connection run one at a time.
    const run = async (): Promise<T> => {
      // The last checkpoint of the WAL's cycle finishes first, so that this transaction starts it over.
      const held = this.#checkpointer.held;
      if (held !== undefined) await held;
      const seen = this.#walIndex?.version();
      this.#guard(() => this.#writer.exec('BEGIN IMMEDIATE'));
      this.#appended = false;
      this.#touched.clear();
      this.#rowChange.clear();
      try {
        const result = await fn(this.#tx);
        this.#guard(() => {
          const versions: [string, number][] = [];
          for (const topic of this.#touched) {
            versions.push([topic, Number(this.#w.bumpTopic!.get(topic)!.version)]);
          }
          this.#writer.exec('COMMIT');
          // A topic's bump is a row written, so the WAL index header must have moved. The commits that
          // bump none (a cursor, an idempotency key) move no cached response, and are not checked: a
          // transaction that changed no row writes no WAL frame and leaves the header as it was.
          if (versions.length > 0) this.#walIndex?.committed(seen);
          // Only once committed: a version of a transaction that rolled back is given again.
          for (const [topic, version] of versions)
            this.#logChange(topic, version, this.#rowChange.get(topic));
        });
        this.#version = undefined;
        this.#checkpointer.afterCommit();
        if (this.#appended) this.#nodeEvents.emit();
        return result;
      } catch (error) {
        if (this.#writer.isTransaction) this.#writer.exec('ROLLBACK');
        throw fromSqliteError(error);
      } finally {
        this.#appended = false;
        this.#touched.clear();
        this.#rowChange.clear();
      }
    };
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  readonly #tx: IndexerTx = {
    claimEvents: async (keys) =>
      this.#guard(() => {
        // One single-row INSERT per key, its change count saying whether the key was new: about twice as
        // fast as multi-row INSERT ... RETURNING (measured: 1.5 against 3.1-3.8 us a key).
        const fresh = new Set<string>();
        const claim = this.#w.claimEvent!;
        for (const key of keys) if (claim.run(key).changes > 0) fresh.add(key);
        return fresh;
      }),
    putTask: async (t: NewTask) => {
      this.#touched.add(topics.tasks);
      this.#guard(() =>
        this.#w.putTask!.run(
          enc(t.task_small_id),
          t.task_id,
          t.role,
          t.model_name,
          t.security_level,
          t.minimum_reputation_score,
        ),
      );
    },
    deprecateTask: async (id, epoch) => {
      this.#touched.add(topics.tasks);
      return this.#guard(() => this.#w.deprecateTask!.run(enc(epoch), enc(id)).changes > 0);
    },
    removeTask: async (id, epoch) =>
      this.#guard(() => {
        this.#touched.add(topics.tasks);
        const found = this.#w.removeTask!.run(enc(epoch), enc(id)).changes > 0;
        // Its subscriptions turn invalid: each subscriber's list changes.
        for (const row of this.#w.subscribersOf!.all(enc(id))) {
          this.#touched.add(topics.subscriptions(dec(row.node_small_id)));
        }
        this.#w.invalidateSubscriptions!.run(enc(id));
        return found;
      }),
    putNode: async (id, badgeId, address) => {
      this.#guard(() => this.#w.putNode!.run(enc(id), badgeId, address));
    },
    putNodeModel: async (id, model, echelon) => {
      this.#guard(() => this.#w.putNodeModel!.run(enc(id), model, enc(echelon)));
    },
    putSubscription: async (s) => {
      this.#touched.add(topics.subscriptions(s.node_small_id));
      this.#guard(() =>
        this.#w.putSubscription!.run(
          enc(s.node_small_id),
          enc(s.task_small_id),
          enc(s.price_per_one_million_compute_units),
          enc(s.max_num_compute_units),
        ),
      );
    },
    deleteSubscription: async (node, task) => {
      this.#touched.add(topics.subscriptions(node));
      return this.#guard(() => this.#w.deleteSubscription!.run(enc(node), enc(task)).changes > 0);
    },
    putStack: async (s: NewStack) => {
      await this.#tx.createStack(s);
    },
    createStack: async (s: NewStack) =>
      this.#guard(() => {
        const inserted =
          this.#w.putStack!.run(
            enc(s.selected_node_id),
            enc(s.stack_small_id),
            s.stack_id,
            s.owner_address,
            enc(s.task_small_id),
            enc(s.num_compute_units),
            enc(s.price_per_one_million_compute_units),
          ).changes > 0;
        // A stack the node's kept list does not have: the next read adds it (#patchedList).
        if (inserted) this.#stackChanged(s.selected_node_id, s.stack_small_id);
        return inserted;
      }),
    putTicket: async (t: TrySettle, epoch: U64 | undefined) => {
      this.#touched.add(topics.tickets(t.selected_node_id));
      this.#stackChanged(t.selected_node_id, t.stack_small_id);
      const leaves = ticketLeaves(t.stack_merkle_leaf, t.requested_attestation_nodes.length);
      const claimable = epoch === undefined ? undefined : claimableFromEpoch(epoch);
      this.#guard(() => {
        this.#w.putTicket!.run(
          enc(t.stack_small_id),
          enc(t.selected_node_id),
          enc(t.num_claimed_compute_units),
          idList(t.requested_attestation_nodes),
          t.committed_stack_proof,
          leaves,
          epoch === undefined ? null : enc(epoch),
          claimable === undefined ? null : enc(claimable),
        );
        this.#w.markSettling!.run(enc(t.stack_small_id));
        t.requested_attestation_nodes.forEach((node, slot) => {
          this.#w.putRequest!.run(enc(t.stack_small_id), slot, enc(node));
        });
      });
    },
    recordAttestation: async (a: Attestation): Promise<AttestationOutcome> =>
      this.#guard(() => {
        const row = this.#w.getTicket!.get(enc(a.stack_small_id));
        if (!row) return 'no_ticket';
        const attested = attestedRow(row, a);
        if (attested === 'not_requested') return attested;
        this.#touched.add(topics.tickets(dec(row.selected_node_id)));
        this.#w.attest!.run(attested.leaves, attested.attested, enc(a.stack_small_id));
        this.#w.requestAttested!.run(enc(a.stack_small_id), enc(a.attestation_node_id));
        return 'applied';
      }),
    settleTicket: async (t: TicketSettled) => {
      this.#touched.add(topics.tickets(t.selected_node_id));
      this.#guard(() =>
        this.#w.settleTicket!.run(
          enc(t.stack_small_id),
          enc(t.selected_node_id),
          enc(t.num_claimed_compute_units),
          idList(t.requested_attestation_nodes),
          t.committed_stack_proof,
          enc(t.dispute_settled_at_epoch),
        ),
      );
    },
    claimContext: async (id) =>
      this.#guard(() => {
        const stack = this.#w.stackTerms!.get(enc(id));
        const ticket = this.#w.getTicket!.get(enc(id));
        return {
          terms: stack ? rows.terms(stack) : undefined,
          selected_node_id: stack ? dec(stack.selected_node_id) : null,
          already_attested: ticket ? parseIdList(ticket.already_attested_nodes as string).map(dec) : [],
        };
      }),
    claimTicket: async (c: TicketClaimed, record: ClaimRecord) => {
      this.#claim(c, idList(c.attestation_nodes), 'settlement_ticket', record);
      // A claimed ticket asks nothing more: its requests go, so the table holds only live tickets' and its
      // open-requests index only what may still be owed (0006-autopilot-at-scale.sql).
      this.#guard(() => this.#w.closeRequests!.run(enc(c.stack_small_id)));
    },
    putDispute: async (d: Dispute, epoch: U64 | undefined) => {
      this.#touched
        .add(topics.tickets(d.original_node_id))
        .add(topics.disputes(d.original_node_id))
        .add(topics.disputes(d.attestation_node_id));
      this.#guard(() => {
        const ticket = this.#w.disputedTicket!.get(enc(d.stack_small_id));
        const attesting = ticket && disputedAttestationRow(ticket, dec, d, epoch);
        if (attesting) {
          this.#w.disputeAttested!.run(attesting.attested, enc(d.stack_small_id));
          this.#w.requestAttested!.run(enc(d.stack_small_id), enc(d.attestation_node_id));
        }
        this.#w.putDispute!.run(
          enc(d.stack_small_id),
          enc(d.attestation_node_id),
          d.attestation_commitment,
          enc(d.original_node_id),
          d.original_commitment,
        );
        this.#w.markInDispute!.run(enc(d.stack_small_id));
      });
    },
    claimStack: async (c: StackClaimed, record: ClaimRecord) => {
      this.#claim(c, '[]', 'confidential_compute', record);
    },
    putAttesterRewards: async (rewards) => {
      this.#guard(() => {
        for (const r of rewards) {
          this.#touched.add(topics.rewards(r.node_small_id));
          const epoch = r.epoch === null ? null : enc(r.epoch);
          this.#w.putReward!.run(enc(r.stack_small_id), r.slot, enc(r.node_small_id), enc(r.amount), epoch);
        }
      });
    },
    saveChainState: async ({ epoch, parameters }) => {
      this.#guard(() => {
        const before = this.#w.chainStateW!.get();
        const encoded = parameters === undefined ? null : encodeParameters(parameters);
        // Pages repeat the epoch: only a new one changes what the earnings say.
        const epochChanged =
          epoch !== undefined &&
          (before?.epoch === undefined ||
            before.epoch === null ||
            dec(before.epoch) !== normalizeU64(BigInt(epoch)));
        if (epochChanged || (encoded !== null && encoded !== before?.parameters))
          this.#touched.add(topics.chain);
        this.#w.saveChainState!.run(
          epoch === undefined ? null : enc(epoch),
          encoded,
          new Date().toISOString(),
        );
      });
    },
    appendNodeEvents: async (events) => this.#append(events),
    listBecomingClaimable: async (after, upTo) =>
      this.#guard(() =>
        this.#w.becomingClaimable!.all(after === null ? -1 : enc(after), enc(upTo)).map(rows.claimableOf),
      ),
    saveCursor: async (source: string, cursor: string | null, n: IndexerCounts) => {
      this.#guard(() =>
        this.#w.saveCursor!.run(
          source,
          cursor,
          n.applied,
          n.duplicate,
          n.ignored,
          n.unknown,
          n.malformed,
          n.orphaned,
          new Date().toISOString(),
        ),
      );
    },
  };

  /** Records node events in the open write transaction. */
  #append(events: readonly NewNodeEvent[]): void {
    if (events.length === 0) return;
    this.#guard(() => {
      const now = Date.now();
      // Many rows per statement: one call into SQLite for up to NODE_EVENT_CHUNK events, in order.
      for (let start = 0; start < events.length; start += NODE_EVENT_CHUNK) {
        const chunk = events.slice(start, start + NODE_EVENT_CHUNK);
        const values: (number | bigint | string | null)[] = [];
        for (const event of chunk) {
          values.push(
            event.at ?? now,
            event.type,
            event.node_small_id === null ? null : enc(event.node_small_id),
            event.other_node_small_id === undefined || event.other_node_small_id === null
              ? null
              : enc(event.other_node_small_id),
            eventData(event),
          );
        }
        this.#nodeEventStatement(chunk.length).run(...values);
      }
    });
    this.#appended = true;
  }

  /** A claim through either path: the ticket row (created when never seen) and the stack, claimed. */
  #claim(c: StackClaimed, attesters: string, path: ClaimPath, record: ClaimRecord): void {
    this.#touched.add(topics.tickets(c.selected_node_id));
    this.#stackChanged(c.selected_node_id, c.stack_small_id);
    this.#guard(() => {
      this.#w.claimTicket!.run(
        enc(c.stack_small_id),
        enc(c.selected_node_id),
        enc(c.num_claimed_compute_units),
        attesters,
        enc(c.user_refund_amount),
        path,
        record.epoch === undefined ? null : enc(record.epoch),
        record.node_fee_amount === null ? null : enc(record.node_fee_amount),
      );
      this.#w.markStackClaimed!.run(enc(c.user_refund_amount), enc(c.stack_small_id));
    });
  }

  async getCursor(source: string): Promise<CursorState | undefined> {
    const row = this.#guard(() => this.#r.getCursor!.get(source));
    return row ? rows.cursor(row) : undefined;
  }

  async listTasks(page: Page = {}): Promise<Task[]> {
    return this.#guard(() => this.#r.tasks!.all(...pageArgs(page)).map(rows.task));
  }

  async listSubscriptions(node: U64, page: Page = {}): Promise<NodeSubscription[]> {
    return this.#guard(() => this.#r.subscriptions!.all(enc(node), ...pageArgs(page)).map(rows.subscription));
  }

  async listStacks(node: U64, minFillFraction?: number, page: Page = {}): Promise<Stack[]> {
    return this.#guard(() =>
      minFillFraction === undefined
        ? this.#r.stacks!.all(enc(node), ...pageArgs(page)).map(rows.stack)
        : this.#r.stacksFilled!.all(enc(node), minFillFraction, ...pageArgs(page)).map(rows.stack),
    );
  }

  /**
   * The open transaction adds the stack `stack` to node's stacks, or changes its changing columns. Every
   * write to a node's stacks goes through here.
   */
  #stackChanged(node: U64, stack: U64): void {
    const topic = topics.stacks(node);
    this.#touched.add(topic);
    const changed = this.#rowChange.get(topic);
    if (changed === undefined) this.#rowChange.set(topic, [digitsOf(stack)]);
    else changed.push(digitsOf(stack));
  }

  /** Records what a committed transaction changed in a node's stacks topic (see #changeLog). */
  #logChange(topic: string, version: number, stacks: string[] | undefined): void {
    if (!topic.startsWith('stacks:')) return;
    let log = this.#changeLog.get(topic);
    // Unknown changes, or a topic whose list is not kept (it is read whole when it is next listed): what
    // was logged before can no longer be used either. Only the kept lists' topics are logged, so the log
    // stays as small as they are, whichever nodes' stacks the chain settles and claims.
    if (stacks === undefined || this.#nodeLists.get(topic) === undefined) {
      this.#changeLog.delete(topic);
      return;
    }
    if (!log) {
      log = new Map();
      this.#changeLog.set(topic, log);
    }
    log.set(version, stacks);
    log.delete(version - CHANGE_LOG_VERSIONS);
  }

  /**
   * A node's whole stack list, encoded, kept with the topic version it shows (#nodeLists): answered as it
   * is while the topic has not moved; patched when only this process's writes moved it (the stacks they
   * added or changed read by id); else its changing columns read again, each stack's object reused from the
   * kept list when its values are the same. The version is read before the rows, so the list is never
   * older than the version it is kept with (it can be newer: the next read looks again). Without `read`,
   * undefined rather than the node's whole list read again. A list kept at `seen` (the version the caller
   * read just before) or later is answered without reading the version again.
   */
  #nodeList(node: U64, read: boolean, seen?: number): NodeList | undefined {
    const topic = topics.stacks(node);
    const kept = this.#nodeLists.get(topic);
    if (kept !== undefined && seen !== undefined && kept.version >= seen) return kept;
    const version = Number(this.#r.topicVersion!.get(topic)?.version ?? 0);
    if (kept !== undefined && kept.version === version) return kept;
    const patched =
      kept !== undefined && kept.version < version && this.#patchedList(node, topic, kept, version);
    if (patched) return patched;
    return read ? this.#readList(node, topic, version, kept) : undefined;
  }

  /**
   * The kept list brought to `version` by this process's changes (#changeLog), or undefined when they are
   * not known: its changed stacks' columns read again and restated in place, and the stacks it did not have
   * read whole and merged in, in id order (a new list then).
   */
  #patchedList(node: U64, topic: string, kept: NodeList, version: number): NodeList | undefined {
    const log = this.#changeLog.get(topic);
    if (log === undefined) return undefined;
    const rows = new Map<number, unknown[]>();
    const added = new Map<string, unknown[]>();
    for (let v = kept.version + 1; v <= version; v++) {
      const stacks = log.get(v);
      if (stacks === undefined) return undefined;
      for (const stack of stacks) {
        const at = kept.index.get(stack);
        if (at === undefined) {
          // New to the list: read whole, as it is now (a later version may have changed it too). Many
          // new ones, or one that is not the node's (an event that named another node for its stack):
          // the list is read again (#readList), in one snapshot.
          if (added.has(stack)) continue;
          if (added.size === NEW_STACKS_BY_ID) return undefined;
          const row = this.#r.stackArrays!.get(enc(BigInt(stack))) as unknown as unknown[] | undefined;
          if (row === undefined || digitsOf(row[4]) !== digitsOf(enc(node))) return undefined;
          added.set(stack, row);
          continue;
        }
        if (rows.has(at)) continue;
        const row = this.#r.stackState!.get(enc(BigInt(kept.state[at]![0] as string | number)));
        if (row === undefined) return undefined;
        rows.set(at, row as unknown as unknown[]);
      }
    }
    if (added.size > 0) {
      const changed = new Map<number, unknown[]>();
      for (const [at, row] of rows) if (!sameState(row, kept.state[at]!)) changed.set(at, row);
      const inOrder = [...added].sort(([a], [b]) => compareDigits(a, b)).map(([, row]) => row);
      const list: NodeList = { version, ...mergedList(kept, changed, inOrder) };
      this.#nodeLists.keep(topic, list);
      return list;
    }
    const changes = new Map<number, Buffer>();
    for (const [at, row] of rows) {
      if (!sameState(row, kept.state[at]!)) changes.set(at, restated(fragmentAt(kept.list, at), row));
      kept.state[at] = row;
    }
    if (changes.size > 0) kept.list = patchBody(kept.list, changes);
    kept.version = version;
    return kept;
  }

  /**
   * The node's list read again: its changing columns, each stack's object taken from the old list (as it is,
   * or restated when its values moved); whole rows only for stacks it did not have, all of them at once
   * (one snapshot) when there are many. Without an old list, whole rows at once (not its changing columns
   * first, which would all be missing).
   */
  #readList(
    node: U64,
    topic: string,
    version: number,
    old: NodeList | undefined,
    whole = old === undefined,
  ): NodeList {
    let state = whole ? [] : (this.#r.stacksState!.all(enc(node), -1n, -1) as unknown as unknown[][]);
    let parts: Buffer[] = new Array(state.length);
    const missing: number[] = [];
    for (let i = 0; i < state.length; i++) {
      const r = state[i]!;
      const at = old?.index.get(digitsOf(r[0]));
      if (at === undefined) missing.push(i);
      else {
        const fragment = fragmentAt(old!.list, at);
        parts[i] = sameState(r, old!.state[at]!) ? fragment : restated(fragment, r);
      }
    }
    if (whole || missing.length > NEW_STACKS_BY_ID) {
      const rows = this.#r.stacksArrays!.all(enc(node), -1n, -1) as unknown as unknown[][];
      state = rows.map(stateOf);
      parts = rows.map(stackFragment);
    } else {
      for (const i of missing) {
        const row = this.#r.stackArrays!.get(enc(BigInt(state[i]![0] as string | number)));
        if (row === undefined) {
          // Gone since the list was read (a store rewound by replay): read it all again, one snapshot.
          return this.#readList(node, topic, version, old, true);
        }
        state[i] = stateOf(row as unknown as unknown[]);
        parts[i] = stackFragment(row as unknown as unknown[]);
      }
    }
    const list: NodeList = {
      version,
      state,
      index: listIndex(state),
      list: joinFragments(parts),
    };
    this.#nodeLists.keep(topic, list);
    return list;
  }

  async listStacksJson(
    node: U64,
    minFillFraction?: number,
    page: Page = {},
    seenVersion?: number,
  ): Promise<JsonRows> {
    // One row past the limit tells whether more remain.
    const probe = page.limit === undefined ? page : { ...page, limit: page.limit + 1 };
    return this.#guard(() => {
      const filled = minFillFraction !== undefined;
      // A node's whole list is kept between reads (#nodeList), and a filtered list is chosen from it. So is
      // a page while the list is kept up to date; else the page is read, not the node's every stack.
      const paged = page.limit !== undefined || page.after !== undefined;
      const kept = this.#nodeList(node, !paged, seenVersion);
      if (kept !== undefined) return listSlice(kept.state, kept.list, minFillFraction, page);
      const args = filled ? [enc(node), minFillFraction] : [enc(node)];
      const state = (filled ? this.#r.stacksFilledState! : this.#r.stacksState!).all(
        ...args,
        ...pageArgs(probe),
      ) as unknown as unknown[][];
      const ready = this.#keptStacks.json(state, page.limit);
      if (ready) return ready;
      // A stack seen for the first time: whole rows, whose fixed fields are kept for the next time.
      const found = (filled ? this.#r.stacksFilledArrays! : this.#r.stacksArrays!).all(
        ...args,
        ...pageArgs(probe),
      ) as unknown as unknown[][];
      return stacksJson(found, page.limit, this.#keptStacks);
    });
  }

  async listClaimedStacks(node: U64, page: Page = {}): Promise<StackSettlementTicket[]> {
    return this.#guard(() => this.#r.claimed!.all(enc(node), ...pageArgs(page)).map(rows.ticket));
  }

  async listDisputesAgainst(node: U64, page: Page = {}): Promise<StackAttestationDispute[]> {
    return this.#guard(() => this.#r.disputesAgainst!.all(enc(node), ...pageArgs(page)).map(rows.dispute));
  }

  async listDisputesOwn(node: U64, page: Page = {}): Promise<StackAttestationDispute[]> {
    return this.#guard(() => this.#r.disputesOwn!.all(enc(node), ...pageArgs(page)).map(rows.dispute));
  }

  readonly checkBy = 'data version';

  async topicVersions(topics: readonly string[]): Promise<number[]> {
    return this.#guard(() => topics.map((topic) => Number(this.#r.topicVersion!.get(topic)?.version ?? 0)));
  }

  async storeId(): Promise<string> {
    this.#storeId ??= this.#guard(() => String(this.#r.storeId!.get()?.store_id));
    return this.#storeId;
  }

  addStackUsage(
    stackSmallId: U64,
    computeUnits: U64,
    requestHash: Uint8Array | undefined,
    nowMs: number,
    ownNodes?: readonly U64[],
  ): Promise<UsageOutcome> {
    return this.#usage.submit({ stackSmallId, computeUnits, requestHash, nowMs, ownNodes });
  }

  /**
   * Usage reports that wait for the writer (behind an indexer transaction, or the reports before them)
   * are written together, in one transaction (group-commit.ts): each a read-modify-write of its stack in
   * turn, so two on one stack add up as they would one after the other.
   */
  readonly #usage = new GroupCommit<UsageReport, UsageOutcome>((reports) =>
    this.indexerTransaction(async () =>
      this.#guard(() => reports.map((report) => this.#recordUsage(report))),
    ),
  );

  #recordUsage(report: UsageReport): UsageOutcome {
    const { stackSmallId, nowMs } = report;
    const row = this.#w.getUsage!.get(enc(stackSmallId));
    if (!row) return { status: 'not_found' };
    const previous = this.#w.getStackHash!.get(enc(stackSmallId));
    const { outcome, write } = usageChange(dec, row, previous, report);
    if (write) {
      this.#stackChanged(dec(row.selected_node_id), stackSmallId);
      this.#append(write.events);
      this.#w.setUsage!.run(enc(write.already), enc(write.messages), write.fillPpm, nowMs, enc(stackSmallId));
      this.#w.putStackHash!.run(enc(stackSmallId), write.record.total_hash, enc(write.record.num_requests));
    }
    return outcome;
  }

  putStackHash(stackSmallId: U64, totalHash: Uint8Array, numRequests: U64): Promise<void> {
    return this.indexerTransaction(async () => {
      this.#guard(() => this.#w.putStackHash!.run(enc(stackSmallId), totalHash, enc(numRequests)));
    });
  }

  async getStackHash(stackSmallId: U64): Promise<{ total_hash: Uint8Array; num_requests: U64 } | undefined> {
    const row = this.#guard(() => this.#r.getStackHash!.get(enc(stackSmallId)));
    return row
      ? { total_hash: row.total_hash as Uint8Array, num_requests: dec(row.num_requests) }
      : undefined;
  }

  async getTask(taskSmallId: U64): Promise<Task | undefined> {
    const row = this.#guard(() => this.#r.getTask!.get(enc(taskSmallId)));
    return row ? rows.task(row) : undefined;
  }

  async getNode(nodeSmallId: U64): Promise<NodeRecord | undefined> {
    const id = enc(nodeSmallId);
    const row = this.#guard(() => this.#r.getNode!.get(id));
    if (row)
      return {
        node_small_id: dec(row.node_small_id),
        badge_id: row.badge_id as string,
        sui_address: row.sui_address as string,
      };
    const named = this.#guard(() => this.#r.nodeNamed!.get(id, id));
    return named ? { node_small_id: nodeSmallId, badge_id: null, sui_address: null } : undefined;
  }

  async getStack(stackSmallId: U64): Promise<Stack | undefined> {
    const row = this.#guard(() => this.#r.getStack!.get(enc(stackSmallId)));
    return row ? rows.stack(row) : undefined;
  }

  async getStackTerms(stackSmallId: U64): Promise<StackTerms | undefined> {
    const row = this.#guard(() => this.#r.stackTerms!.get(enc(stackSmallId)));
    return row ? rows.terms(row) : undefined;
  }

  async getSubscription(nodeSmallId: U64, taskSmallId: U64): Promise<NodeSubscription | undefined> {
    const row = this.#guard(() => this.#r.getSubscription!.get(enc(nodeSmallId), enc(taskSmallId)));
    return row ? rows.subscription(row) : undefined;
  }

  async countEligibleSubscribers(taskSmallId: U64, price: U64, units: U64): Promise<number> {
    const row = this.#guard(() => this.#r.eligibleSubscribers!.get(enc(taskSmallId), enc(price), enc(units)));
    return Number(row?.n ?? 0);
  }

  async getTicket(stackSmallId: U64): Promise<StackSettlementTicket | undefined> {
    const row = this.#guard(() => this.#r.getTicket!.get(enc(stackSmallId)));
    return row ? rows.ticket(row) : undefined;
  }

  async getChainState(): Promise<ChainState> {
    return rows.chainState(this.#guard(() => this.#r.chainState!.get()));
  }

  async listLedger(node: U64): Promise<LedgerRow[]> {
    return this.#guard(() => this.#r.ledger!.all(enc(node)).map(rows.ledger));
  }

  async listAttesterRewards(node: U64): Promise<AttesterReward[]> {
    return this.#guard(() => this.#r.rewards!.all(enc(node)).map(rows.attesterReward));
  }

  async listSettleCandidates(node: U64, minFillPpm: number, idleBefore: number): Promise<OpenStack[]> {
    return this.#guard(() =>
      this.#r.settleCandidates!.all(enc(node), minFillPpm, idleBefore).map(rows.openStack),
    );
  }

  async oldestUsageAt(node: U64): Promise<number | null> {
    const at = this.#guard(() => this.#r.oldestUsage!.get(enc(node)))?.at;
    return at === null || at === undefined ? null : Number(at);
  }

  async listClaimable(node: U64, epoch: U64): Promise<ClaimableTicket[]> {
    return this.#guard(() => this.#r.claimable!.all(enc(node), enc(epoch)).map(rows.claimable));
  }

  async listAttestationRequests(node: U64): Promise<AttestationRequest[]> {
    return this.#guard(() => this.#r.requests!.all(enc(node)).map(rows.attestationRequest));
  }

  insertAutopilotAction(action: Omit<AutopilotAction, 'id'>): Promise<number> {
    return this.indexerTransaction(async () =>
      this.#guard(() => {
        const row = this.#w.insertAction!.get(
          action.at,
          action.updated_at,
          action.kind,
          enc(action.node_small_id),
          idList(action.stack_small_ids),
          action.status,
          action.reason,
          action.node_fee_amount === null ? null : enc(action.node_fee_amount),
          action.gas_estimate === null ? null : enc(action.gas_estimate),
          JSON.stringify(action.tx_digests),
          action.error,
        );
        this.#append([autopilotEvent(rows.autopilotAction(row!))]);
        return Number(row!.id);
      }),
    );
  }

  updateAutopilotAction(
    id: number,
    change: Pick<AutopilotAction, 'status' | 'tx_digests' | 'error' | 'updated_at'> &
      Partial<Pick<AutopilotAction, 'node_fee_amount'>>,
  ): Promise<void> {
    return this.indexerTransaction(async () => {
      const row = this.#guard(() =>
        this.#w.updateAction!.get(
          change.status,
          JSON.stringify(change.tx_digests),
          change.error,
          change.updated_at,
          change.node_fee_amount === undefined || change.node_fee_amount === null
            ? null
            : enc(change.node_fee_amount),
          id,
        ),
      );
      if (row) this.#append([autopilotEvent(rows.autopilotAction(row))]);
    });
  }

  appendNodeEvents(events: readonly NewNodeEvent[]): Promise<void> {
    return this.indexerTransaction(async () => this.#append(events));
  }

  async listNodeEvents(query: NodeEventQuery): Promise<NodeEventRow[]> {
    const nodes =
      query.nodes === null
        ? null
        : `[${query.nodes.map((n) => JSON.stringify(enc(n).toString())).join(',')}]`;
    const types = query.types === null ? null : JSON.stringify(query.types);
    return this.#guard(() =>
      this.#r
        .nodeEvents!.all(query.after, nodes, nodes, nodes, types, types, query.limit)
        .map(rows.nodeEvent),
    );
  }

  async nodeEventBounds(): Promise<{ oldest: number | null; newest: number }> {
    const row = this.#guard(() => this.#r.nodeEventBounds!.get());
    return {
      oldest: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
      newest: Number(row?.newest ?? 0),
    };
  }

  pruneNodeEvents(before: number, keep: number): Promise<number> {
    return this.indexerTransaction(async () =>
      this.#guard(() => {
        // The first event to keep by age: a scan from the oldest that stops there (ids follow time).
        const young = this.#w.firstEventSince!.get(before)?.id;
        const newest = Number(this.#w.newestEventId!.get()?.id ?? 0);
        const cutoff = Math.max(young === undefined ? newest + 1 : Number(young), newest - keep + 1);
        return Number(this.#w.pruneEvents!.run(cutoff).changes);
      }),
    );
  }

  onNodeEvents(listener: () => void): () => void {
    return this.#nodeEvents.on(listener);
  }

  async listAutopilotActions(options: { limit: number; pending?: boolean }): Promise<AutopilotAction[]> {
    const statement = options.pending ? this.#r.pendingActions! : this.#r.actions!;
    return this.#guard(() => statement.all(options.limit).map(rows.autopilotAction));
  }

  async hasEvents(events: readonly EventLookup[]): Promise<boolean> {
    // A stack's creation is recorded by its row (IndexerTx.createStack); before that row, by its key.
    return this.#guard(() =>
      events.every(
        ({ key, createdStack }) =>
          (createdStack !== undefined && this.#r.hasStack!.get(enc(createdStack)) !== undefined) ||
          this.#r.hasEvent!.get(key) !== undefined,
      ),
    );
  }

  reserveIdempotencyKey(
    key: string,
    requestHash: string,
    nowMs: number,
  ): Promise<'reserved' | IdempotencyRecord> {
    return this.indexerTransaction(async () =>
      this.#guard(() => {
        this.#w.expireIdempotency!.run(nowMs - IDEMPOTENCY_TTL_MS);
        const row = this.#w.getIdempotency!.get(key);
        if (row) {
          return {
            request_hash: row.request_hash as string,
            status: row.status as number,
            response: (row.response as string | null) ?? null,
            created_at: row.created_at as number,
          };
        }
        this.#w.reserveIdempotency!.run(key, requestHash, nowMs);
        return 'reserved' as const;
      }),
    );
  }

  completeIdempotencyKey(key: string, status: number, response: string): Promise<void> {
    return this.indexerTransaction(async () => {
      this.#guard(() => this.#w.completeIdempotency!.run(status, response, key));
    });
  }

  releaseIdempotencyKey(key: string): Promise<void> {
    return this.indexerTransaction(async () => {
      this.#guard(() => this.#w.releaseIdempotency!.run(key));
    });
  }

  async dataVersion(): Promise<string> {
    // Moves when any connection, in this process or another, commits. It is read at most once per
    // event-loop turn (a burst of requests shares one read), and forgotten at once when this process
    // commits. From the WAL index's header when it can be (one pread: sqlite-wal-index.ts), else PRAGMA
    // data_version (a read transaction); the prefixes keep the two apart should the watch turn off.
    if (this.#version === undefined) {
      const watched = this.#walIndex?.version();
      this.#version =
        watched !== undefined
          ? `w${watched}`
          : `p${this.#guard(() => String(this.#r.dataVersion!.get()!.data_version))}`;
      setImmediate(() => {
        this.#version = undefined;
      });
    }
    return this.#version;
  }

  async tryLease(_name: string): Promise<Lease | undefined> {
    // One daemon per SQLite file is the supported setup; a second one would still be correct (pages are
    // transactions and events are de-duplicated), only wasteful.
    if (this.#closed) throw new StoreError('store_closed', 'the store is closed', false);
    return { lost: new Promise<void>(() => undefined), release: async () => undefined };
  }

  withLock<T>(_name: string, fn: () => Promise<T>): Promise<T> {
    return fn();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#queue;
    this.#closed = true;
    await this.#checkpointer.close();
    this.#walIndex?.close();
    this.#reader.close();
    this.#writer.exec('PRAGMA optimize');
    this.#writer.close();
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
  // The WAL file is reused when it starts over, not truncated (sqlite-checkpointer.ts says why).
  db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  db.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  return db;
}

/**
 * What the autopilot asks, exported for the test that checks each is one index range. Each names its index
 * (INDEXED BY): with the statistics PRAGMA optimize leaves, the planner would read a node's whole primary-key
 * range instead, a cost that grows with the store (docs/PERFORMANCE.md, "Autopilot pass").
 */
export const AUTOPILOT_QUERIES = {
  settleCandidates: `SELECT stack_small_id, ${TERMS_COLUMNS} FROM stacks INDEXED BY stacks_open_by_fill
      WHERE selected_node_id = ?1 AND in_settle_period = 0 AND is_claimed = 0 AND already_computed_units <> 0
        AND fill_ppm >= ?2
      UNION SELECT stack_small_id, ${TERMS_COLUMNS} FROM stacks INDEXED BY stacks_open_by_last_usage
      WHERE selected_node_id = ?1 AND in_settle_period = 0 AND is_claimed = 0
        AND last_usage_at IS NOT NULL AND last_usage_at < ?3
      ORDER BY stack_small_id`,
  oldestUsage: `SELECT min(last_usage_at) AS at FROM stacks INDEXED BY stacks_open_by_last_usage
      WHERE selected_node_id = ? AND in_settle_period = 0 AND is_claimed = 0 AND last_usage_at IS NOT NULL`,
  claimable: `SELECT t.stack_small_id, t.num_claimed_compute_units, t.claimable_from_epoch,
        s.price_per_one_million_compute_units, s.num_compute_units, s.security_level
      FROM stack_settlement_tickets t INDEXED BY stack_settlement_tickets_claimable
      LEFT JOIN stacks s ON s.stack_small_id = t.stack_small_id
      WHERE t.selected_node_id = ? AND t.is_claimed = 0 AND t.is_in_dispute = 0 AND t.claimable_from_epoch <= ?
      ORDER BY t.stack_small_id`,
  // CROSS JOIN keeps the requests the outer loop: each ticket is then one primary-key lookup.
  requests: `SELECT r.stack_small_id, r.slot, t.claimable_from_epoch AS until_epoch,
        t.is_in_dispute, h.stack_small_id IS NOT NULL AS has_record
      FROM attestation_requests r INDEXED BY attestation_requests_open
      CROSS JOIN stack_settlement_tickets t ON t.stack_small_id = r.stack_small_id
      LEFT JOIN stack_hashes h ON h.stack_small_id = r.stack_small_id
      WHERE r.node_small_id = ? AND r.attested = 0 AND t.is_claimed = 0
      ORDER BY r.stack_small_id, r.slot`,
} as const;

/** Every stack of a node with its ticket, then the node's tickets of stacks never seen. */
const LEDGER_QUERY = `SELECT s.stack_small_id, s.price_per_one_million_compute_units, s.num_compute_units,
    s.security_level, s.already_computed_units, s.is_claimed AS stack_claimed, t.stack_small_id AS t_stack_small_id,
    t.num_claimed_compute_units, t.is_in_dispute, t.is_claimed AS t_claimed, t.claimable_from_epoch,
    t.claimed_epoch, t.node_fee_amount, t.user_refund_amount
  FROM stacks s LEFT JOIN stack_settlement_tickets t ON t.stack_small_id = s.stack_small_id
  WHERE s.selected_node_id = ?1
  UNION ALL
  SELECT t.stack_small_id, NULL, NULL, NULL, NULL, t.is_claimed, t.stack_small_id,
    t.num_claimed_compute_units, t.is_in_dispute, t.is_claimed, t.claimable_from_epoch,
    t.claimed_epoch, t.node_fee_amount, t.user_refund_amount
  FROM stack_settlement_tickets t
  WHERE t.selected_node_id = ?1 AND NOT EXISTS (SELECT 1 FROM stacks s WHERE s.stack_small_id = t.stack_small_id)`;

function prepareReads(db: DatabaseSync): Record<string, StatementSync> {
  return {
    // The lists take a page: rows after an id (-1: from the first, as INTEGER -1 sorts before every id)
    // and at most a number of them (-1: all).
    tasks: db.prepare('SELECT * FROM tasks WHERE task_small_id > ? ORDER BY task_small_id LIMIT ?'),
    subscriptions: db.prepare(
      'SELECT * FROM node_subscriptions WHERE node_small_id = ? AND task_small_id > ? ORDER BY task_small_id LIMIT ?',
    ),
    stacks: db.prepare(
      `SELECT ${STACK_COLUMNS} FROM stacks WHERE selected_node_id = ? AND stack_small_id > ? ORDER BY stack_small_id LIMIT ?`,
    ),
    stacksFilled: db.prepare(`SELECT ${STACK_COLUMNS} FROM stacks WHERE selected_node_id = ?1
      AND (CAST(num_compute_units AS REAL) = 0
           OR CAST(already_computed_units AS REAL) / CAST(num_compute_units AS REAL) >= ?2)
      AND stack_small_id > ?3 ORDER BY stack_small_id LIMIT ?4`),
    claimed: db.prepare(`SELECT ${TICKET_COLUMNS} FROM stack_settlement_tickets
      WHERE selected_node_id = ? AND is_claimed = 1 AND stack_small_id > ? ORDER BY stack_small_id LIMIT ?`),
    disputesAgainst: db.prepare(`SELECT ${DISPUTE_COLUMNS} FROM stack_attestation_disputes
      WHERE original_node_id = ? AND stack_small_id > ? ORDER BY stack_small_id, attestation_node_id LIMIT ?`),
    disputesOwn: db.prepare(`SELECT ${DISPUTE_COLUMNS} FROM stack_attestation_disputes
      WHERE attestation_node_id = ? AND stack_small_id > ? ORDER BY stack_small_id LIMIT ?`),
    topicVersion: db.prepare('SELECT version FROM topic_versions WHERE topic = ?'),
    storeId: db.prepare('SELECT store_id FROM store_identity WHERE id = 1'),
    getCursor: db.prepare('SELECT * FROM indexer_cursors WHERE source = ?'),
    getStackHash: db.prepare('SELECT total_hash, num_requests FROM stack_hashes WHERE stack_small_id = ?'),
    getTask: db.prepare('SELECT * FROM tasks WHERE task_small_id = ?'),
    getNode: db.prepare('SELECT node_small_id, badge_id, sui_address FROM nodes WHERE node_small_id = ?'),
    nodeNamed: db.prepare(`SELECT 1 AS named FROM node_subscriptions WHERE node_small_id = ?
      UNION ALL SELECT 1 FROM stacks WHERE selected_node_id = ? LIMIT 1`),
    getStack: db.prepare(`SELECT ${STACK_COLUMNS} FROM stacks WHERE stack_small_id = ?`),
    getSubscription: db.prepare(
      'SELECT * FROM node_subscriptions WHERE node_small_id = ? AND task_small_id = ?',
    ),
    eligibleSubscribers: db.prepare(`SELECT count(*) AS n FROM node_subscriptions WHERE task_small_id = ?
      AND valid = 1 AND price_per_one_million_compute_units <= ? AND max_num_compute_units >= ?`),
    getTicket: db.prepare(`SELECT ${TICKET_COLUMNS} FROM stack_settlement_tickets WHERE stack_small_id = ?`),
    hasEvent: db.prepare('SELECT 1 FROM applied_events WHERE event_key = ?'),
    hasStack: db.prepare('SELECT 1 FROM stacks WHERE stack_small_id = ?'),
    chainState: db.prepare('SELECT epoch, parameters FROM chain_state WHERE id = 1'),
    stackTerms: db.prepare(`SELECT selected_node_id, ${TERMS_COLUMNS} FROM stacks WHERE stack_small_id = ?`),
    ledger: db.prepare(LEDGER_QUERY),
    rewards: db.prepare(
      'SELECT * FROM attester_rewards WHERE node_small_id = ? ORDER BY stack_small_id, slot',
    ),
    settleCandidates: db.prepare(AUTOPILOT_QUERIES.settleCandidates),
    oldestUsage: db.prepare(AUTOPILOT_QUERIES.oldestUsage),
    claimable: db.prepare(AUTOPILOT_QUERIES.claimable),
    requests: db.prepare(AUTOPILOT_QUERIES.requests),
    actions: db.prepare('SELECT * FROM autopilot_actions ORDER BY id DESC LIMIT ?'),
    pendingActions: db.prepare(
      "SELECT * FROM autopilot_actions WHERE status = 'pending' ORDER BY id DESC LIMIT ?",
    ),
    dataVersion: db.prepare('PRAGMA data_version'),
    // Node ids come as a JSON array of decimal strings, matched as the column stores them (INTEGER up to
    // 2^53 - 1, 20-digit TEXT above).
    nodeEvents: db.prepare(`SELECT * FROM node_events WHERE id > ?
        AND (? IS NULL OR node_small_id IS NULL
          OR node_small_id IN (SELECT CASE WHEN length(value) < 20 THEN CAST(value AS INTEGER) ELSE value END FROM json_each(?))
          OR other_node_small_id IN (SELECT CASE WHEN length(value) < 20 THEN CAST(value AS INTEGER) ELSE value END FROM json_each(?)))
        AND (? IS NULL OR type IN (SELECT value FROM json_each(?)))
      ORDER BY id LIMIT ?`),
    nodeEventBounds: db.prepare(`SELECT (SELECT min(id) FROM node_events) AS oldest,
      coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'node_events'), 0) AS newest`),
  };
}

function prepareWrites(db: DatabaseSync): Record<string, StatementSync> {
  return {
    getUsage:
      db.prepare(`SELECT stack_small_id, selected_node_id, num_compute_units, already_computed_units, num_total_messages FROM stacks
      WHERE stack_small_id = ?`),
    setUsage: db.prepare(`UPDATE stacks SET already_computed_units = ?, num_total_messages = ?, fill_ppm = ?,
      last_usage_at = ? WHERE stack_small_id = ?`),
    getStackHash: db.prepare('SELECT total_hash, num_requests FROM stack_hashes WHERE stack_small_id = ?'),
    putStackHash:
      db.prepare(`INSERT INTO stack_hashes VALUES (?, ?, ?) ON CONFLICT (stack_small_id) DO UPDATE SET
      total_hash = excluded.total_hash, num_requests = excluded.num_requests`),
    expireIdempotency: db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?'),
    getIdempotency: db.prepare('SELECT * FROM idempotency_keys WHERE key = ?'),
    reserveIdempotency: db.prepare(
      'INSERT INTO idempotency_keys (key, request_hash, status, created_at) VALUES (?, ?, 0, ?)',
    ),
    completeIdempotency: db.prepare('UPDATE idempotency_keys SET status = ?, response = ? WHERE key = ?'),
    releaseIdempotency: db.prepare('DELETE FROM idempotency_keys WHERE key = ? AND status = 0'),
    claimEvent: db.prepare('INSERT OR IGNORE INTO applied_events (event_key) VALUES (?)'),
    putTask: db.prepare(`INSERT INTO tasks (task_small_id, task_id, role, model_name, security_level,
      minimum_reputation_score) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
    deprecateTask: db.prepare(
      'UPDATE tasks SET is_deprecated = 1, deprecated_at_epoch = ? WHERE task_small_id = ?',
    ),
    removeTask: db.prepare(
      'UPDATE tasks SET is_deprecated = 1, is_removed = 1, removed_at_epoch = ? WHERE task_small_id = ?',
    ),
    invalidateSubscriptions: db.prepare('UPDATE node_subscriptions SET valid = 0 WHERE task_small_id = ?'),
    subscribersOf: db.prepare('SELECT node_small_id FROM node_subscriptions WHERE task_small_id = ?'),
    bumpTopic: db.prepare(`INSERT INTO topic_versions (topic, version) VALUES (?, 1)
      ON CONFLICT (topic) DO UPDATE SET version = version + 1 RETURNING version`),
    chainStateW: db.prepare('SELECT epoch, parameters FROM chain_state WHERE id = 1'),
    putNode: db.prepare('INSERT INTO nodes VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
    putNodeModel: db.prepare(`INSERT INTO node_models VALUES (?, ?, ?)
      ON CONFLICT (node_small_id, model_name) DO UPDATE SET echelon_id = excluded.echelon_id`),
    putSubscription: db.prepare(`INSERT INTO node_subscriptions (node_small_id, task_small_id,
      price_per_one_million_compute_units, max_num_compute_units, valid) VALUES (?, ?, ?, ?, 1)
      ON CONFLICT (node_small_id, task_small_id) DO UPDATE SET
        price_per_one_million_compute_units = excluded.price_per_one_million_compute_units,
        max_num_compute_units = excluded.max_num_compute_units, valid = 1`),
    deleteSubscription: db.prepare(
      'DELETE FROM node_subscriptions WHERE node_small_id = ? AND task_small_id = ?',
    ),
    putStack:
      db.prepare(`INSERT INTO stacks (selected_node_id, stack_small_id, stack_id, owner_address, task_small_id,
      num_compute_units, price_per_one_million_compute_units, is_confidential, security_level)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, coalesce((SELECT security_level = 1 FROM tasks WHERE task_small_id = ?5), 0),
        (SELECT security_level FROM tasks WHERE task_small_id = ?5))
      ON CONFLICT DO NOTHING`),
    putTicket: db.prepare(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
      num_claimed_compute_units, requested_attestation_nodes, committed_stack_proofs, stack_merkle_leaves,
      settled_epoch, claimable_from_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
    putRequest: db.prepare(`INSERT INTO attestation_requests (stack_small_id, slot, node_small_id)
      VALUES (?, ?, ?) ON CONFLICT DO NOTHING`),
    requestAttested: db.prepare(
      'UPDATE attestation_requests SET attested = 1 WHERE stack_small_id = ? AND node_small_id = ?',
    ),
    closeRequests: db.prepare('DELETE FROM attestation_requests WHERE stack_small_id = ?'),
    stackTerms: db.prepare(`SELECT selected_node_id, ${TERMS_COLUMNS} FROM stacks WHERE stack_small_id = ?`),
    putReward: db.prepare(`INSERT INTO attester_rewards (stack_small_id, slot, node_small_id, amount, epoch)
      VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
    saveChainState:
      db.prepare(`INSERT INTO chain_state (id, epoch, parameters, updated_at) VALUES (1, ?, ?, ?)
      ON CONFLICT (id) DO UPDATE SET epoch = coalesce(excluded.epoch, epoch),
        parameters = coalesce(excluded.parameters, parameters), updated_at = excluded.updated_at`),
    insertAction:
      db.prepare(`INSERT INTO autopilot_actions (at, updated_at, kind, node_small_id, stack_small_ids,
      status, reason, node_fee_amount, gas_estimate, tx_digests, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      RETURNING *`),
    updateAction:
      db.prepare(`UPDATE autopilot_actions SET status = ?, tx_digests = ?, error = ?, updated_at = ?,
      node_fee_amount = coalesce(?, node_fee_amount) WHERE id = ? RETURNING *`),
    firstEventSince: db.prepare('SELECT id FROM node_events WHERE at >= ? ORDER BY id LIMIT 1'),
    newestEventId: db.prepare('SELECT max(id) AS id FROM node_events'),
    pruneEvents: db.prepare('DELETE FROM node_events WHERE id < ?'),
    becomingClaimable: db.prepare(`SELECT t.stack_small_id, t.selected_node_id, t.num_claimed_compute_units,
        t.claimable_from_epoch, s.price_per_one_million_compute_units, s.num_compute_units, s.security_level
      FROM stack_settlement_tickets t LEFT JOIN stacks s ON s.stack_small_id = t.stack_small_id
      WHERE t.is_claimed = 0 AND t.is_in_dispute = 0 AND t.claimable_from_epoch > ? AND t.claimable_from_epoch <= ?
      ORDER BY t.stack_small_id`),
    markSettling: db.prepare('UPDATE stacks SET in_settle_period = 1 WHERE stack_small_id = ?'),
    getTicket:
      db.prepare(`SELECT selected_node_id, requested_attestation_nodes, stack_merkle_leaves, already_attested_nodes
      FROM stack_settlement_tickets WHERE stack_small_id = ?`),
    attest:
      db.prepare(`UPDATE stack_settlement_tickets SET stack_merkle_leaves = ?, already_attested_nodes = ?
      WHERE stack_small_id = ?`),
    settleTicket: db.prepare(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
      num_claimed_compute_units, requested_attestation_nodes, committed_stack_proofs, dispute_settled_at_epoch)
      VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (stack_small_id) DO UPDATE SET dispute_settled_at_epoch = excluded.dispute_settled_at_epoch`),
    claimTicket: db.prepare(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
      num_claimed_compute_units, requested_attestation_nodes, user_refund_amount, claim_path, claimed_epoch,
      node_fee_amount, is_claimed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)
      ON CONFLICT (stack_small_id) DO UPDATE SET is_claimed = 1, user_refund_amount = excluded.user_refund_amount,
        num_claimed_compute_units = excluded.num_claimed_compute_units, claim_path = excluded.claim_path,
        claimed_epoch = excluded.claimed_epoch, node_fee_amount = excluded.node_fee_amount`),
    markStackClaimed: db.prepare(
      'UPDATE stacks SET is_claimed = 1, user_refund_amount = ? WHERE stack_small_id = ?',
    ),
    putDispute: db.prepare(
      'INSERT INTO stack_attestation_disputes VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
    ),
    disputedTicket: db.prepare(`SELECT requested_attestation_nodes, already_attested_nodes, is_in_dispute,
      claimable_from_epoch FROM stack_settlement_tickets WHERE stack_small_id = ?`),
    disputeAttested: db.prepare(
      'UPDATE stack_settlement_tickets SET already_attested_nodes = ? WHERE stack_small_id = ?',
    ),
    markInDispute: db.prepare(
      'UPDATE stack_settlement_tickets SET is_in_dispute = 1 WHERE stack_small_id = ?',
    ),
    saveCursor: db.prepare(`INSERT INTO indexer_cursors (source, cursor, applied, duplicate, ignored, unknown,
      malformed, orphaned, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (source) DO UPDATE SET cursor = excluded.cursor, applied = applied + excluded.applied,
        duplicate = duplicate + excluded.duplicate, ignored = ignored + excluded.ignored,
        unknown = unknown + excluded.unknown, malformed = malformed + excluded.malformed,
        orphaned = orphaned + excluded.orphaned, updated_at = excluded.updated_at`),
  };
}
