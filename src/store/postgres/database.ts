import { Client, type ClientBase, Pool, type PoolClient, type QueryResult } from 'pg';
import { Listeners } from '../../internal/listeners.ts';
import { connectError, fromPostgresError, StoreError, statementError } from '../errors.ts';
import { inScope, type NewNodeEvent, type NodeEventScope } from '../node-events.ts';
import { columns } from '../params.ts';
import { StackLists } from '../stack-list/stack-lists.ts';
import { arrayLiteral } from './array-literal.ts';
import {
  CONNECT_TIMEOUT_MS,
  DEFAULT_SCHEMA,
  type MigrationRun,
  redactUrl,
  runMigrations,
  searchPath,
} from './migrations.ts';
import { type StackListMark, stackListSource } from './stack-source.ts';
import { BUMP_VERSION, S, type Statement } from './statements.ts';
import { params } from './u64.ts';

const DEFAULT_POOL_SIZE = 10;
const LOCK_TIMEOUT_MS = 10_000;
const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

export interface PostgresStoreOptions {
  /** postgres:// or postgresql:// URL (libpq form: host, port, database, user, password, sslmode...). */
  url: string;
  /** Connections in the pool; 10 unless set. */
  poolSize?: number;
  /** application_name of its connections, as pg_stat_activity shows them. */
  applicationName?: string;
  /** How long a statement waits for a row lock before failing with store_lock_not_available; 10 s. */
  lockTimeoutMs?: number;
  /** The schema that holds the store's tables (--database-schema); node_daemon unless set. */
  schema?: string;
}

export type Row = Record<string, unknown>;

export const ignore = () => undefined;

export function closedError(): StoreError {
  return new StoreError('store_closed', 'the store is closed', false);
}

/** The command tag of a query's last result (a simple query of several statements answers several). */
function lastCommand(results: unknown): string | undefined {
  return ((Array.isArray(results) ? results.at(-1) : results) as QueryResult | undefined)?.command;
}

/**
 * The PostgreSQL database the store's roles share: a pool of connections on which every statement is a
 * named one (statements.ts). Readers use any pooled connection; a write transaction holds one from BEGIN to
 * COMMIT, and read-modify-writes lock their rows (SELECT ... FOR UPDATE), so other processes' writers
 * wait rather than interleave. Every change also bumps the store's version row (store_version), so that
 * every process sharing the database sees it move.
 */
export class PostgresDatabase {
  readonly location: string;
  /** How many migrations this open applied (0 when the database was up to date). */
  readonly migrationsApplied: number;
  /** The objects this open moved into its schema from public, where an earlier version kept them. */
  readonly movedFromPublic: readonly string[];
  readonly options: PostgresStoreOptions;
  /** The schema that holds the store's tables. */
  readonly schema: string;
  /** Each listed node's stack list, kept between reads (stack-list/). */
  readonly stackLists: StackLists<StackListMark>;
  readonly nodeEvents = new Listeners();
  /** Whose node events are recorded (NodeEventStore.scopeNodeEvents). */
  scope: NodeEventScope = null;
  readonly #pool: Pool;
  /** One indexer transaction (or usage-free write) at a time in this process, as SQLite's single writer. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Set by close(): new work is refused, work already started finishes. */
  #closing: Promise<void> | undefined;
  #version: Promise<string> | undefined;
  #closed = false;
  #active = 0;
  #idle: (() => void) | undefined;
  readonly #listening = new WeakSet<PoolClient>();
  /** The connections of leases, locks and LISTEN, outside the pool; ended by close(). */
  readonly #sessions = new Set<Client>();

  private constructor(pool: Pool, options: PostgresStoreOptions, run: MigrationRun) {
    this.#pool = pool;
    this.options = options;
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    this.location = `${redactUrl(options.url)} (schema ${this.schema})`;
    this.migrationsApplied = run.applied.length;
    this.movedFromPublic = run.moved;
    this.stackLists = new StackLists(stackListSource(this));
  }

  /** Connects, applies the pending migrations (under the migration lock) and returns the database. */
  static async open(options: PostgresStoreOptions): Promise<PostgresDatabase> {
    const schema = options.schema ?? DEFAULT_SCHEMA;
    const pool = new Pool({
      connectionString: options.url,
      max: options.poolSize ?? DEFAULT_POOL_SIZE,
      application_name: options.applicationName ?? 'node-daemon',
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      // A row lock held this long by another daemon fails the statement (55P03, retryable) instead of
      // stalling the indexer or a request; a transaction left idle this long is ended by the server, so a
      // hung daemon cannot hold the store_version row for everyone.
      lock_timeout: options.lockTimeoutMs ?? LOCK_TIMEOUT_MS,
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
      // Statements sent before the previous answer arrives (in order, each with its own Sync): see
      // indexer.ts. A connection is only ever used by one operation at a time.
      pipeline: true,
    });
    // An idle pooled connection that breaks (server restart, network) emits 'error' on the pool, which
    // would otherwise crash the process; the pool drops it and the next query connects afresh.
    pool.on('error', ignore);
    // Every statement is unqualified: the store's schema is the one each connection looks in. Queued on
    // the new connection ahead of anything else it is given.
    pool.on('connect', (client) => {
      client.query(searchPath(schema)).catch(ignore);
    });
    try {
      let client: PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw connectError(error);
      }
      client.on('error', ignore);
      try {
        return new PostgresDatabase(pool, options, await runMigrations(client, schema));
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
  }

  /**
   * The channel other processes' node events are notified on: one per schema, so that stores in other
   * schemas of the database are not woken for events they do not hold.
   */
  get eventsChannel(): string {
    return this.schema === DEFAULT_SCHEMA ? 'node_events' : `node_events_${this.schema}`;
  }

  /**
   * The advisory-lock name of a lease or lock: advisory locks are the database's, so a store in another
   * schema names its own (the default schema keeps the names of before, shared with earlier versions).
   */
  lockName(name: string): string {
    return this.schema === DEFAULT_SCHEMA ? name : `${this.schema}:${name}`;
  }

  /** Whether close() has begun: new work is refused. */
  get closing(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * Runs one public operation: refuses it once close() has begun, counts it so close() can wait for it,
   * and translates what escapes it.
   */
  async op<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#closing !== undefined) throw closedError();
    this.#active += 1;
    try {
      return await fn();
    } catch (error) {
      throw fromPostgresError(error);
    } finally {
      this.#active -= 1;
      if (this.#active === 0) this.#idle?.();
    }
  }

  /** Runs one statement: the single place where a query meets the driver. */
  async exec(
    client: ClientBase,
    statement: Statement,
    values: unknown[],
    rowMode?: 'array',
  ): Promise<QueryResult<Row>> {
    if (this.#closed) throw closedError();
    try {
      // Arrays go as literals written here, not by pg (array-literal.ts).
      const config = {
        name: statement.name,
        text: statement.text,
        values: values.map((v) => (Array.isArray(v) ? arrayLiteral(v) : v)),
      };
      // Rows as arrays of values (rowMode 'array') come typed apart in pg: one result type here.
      return await (rowMode === 'array'
        ? (client.query({ ...config, rowMode }) as unknown as Promise<QueryResult<Row>>)
        : client.query<Row>(config));
    } catch (error) {
      throw statementError(error);
    }
  }

  async #connect(): Promise<PoolClient> {
    if (this.#closed) throw closedError();
    let client: PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw connectError(error);
    }
    // pg emits 'error' on a checked-out client whose connection breaks between statements, and the pool
    // listens only while it is idle: without this, that would crash the process. The statement that
    // follows fails with store_connection_lost instead.
    if (!this.#listening.has(client)) {
      this.#listening.add(client);
      client.on('error', ignore);
    }
    return client;
  }

  /** One statement on any pooled connection. */
  async query(statement: Statement, values: unknown[], rowMode?: 'array'): Promise<QueryResult<Row>> {
    return this.op(async () => {
      const client = await this.#connect();
      try {
        return await this.exec(client, statement, values, rowMode);
      } finally {
        // pg-pool drops a connection that broke during the query instead of reusing it.
        client.release();
      }
    });
  }

  async rows(statement: Statement, values: unknown[]): Promise<Row[]> {
    return (await this.query(statement, values)).rows;
  }

  /** A read whose rows come as arrays of values. */
  async arrays(statement: Statement, values: unknown[]): Promise<unknown[][]> {
    return (await this.query(statement, values, 'array')).rows as unknown as unknown[][];
  }

  /**
   * BEGIN, work, COMMIT on one pooled connection; ROLLBACK when work throws. When changed(result) says
   * the work changed data, the version bump and COMMIT travel in one round trip, unless the work sent
   * the bump itself with its topics' (bumpTopicsAndVersion) and said so with `bumped`. Statements the
   * work sent and handed to `defer` instead of awaiting go in that round trip too, ahead of COMMIT: a
   * failure of any of them fails the transaction (the server then answers COMMIT with ROLLBACK).
   */
  async transaction<T>(
    work: (client: PoolClient, defer: (sent: Promise<unknown>) => void, bumped: () => void) => Promise<T>,
    changed: (result: T) => boolean,
  ): Promise<T> {
    const client = await this.#connect();
    let broken: Error | undefined;
    try {
      // Not awaited: the connection pipelines, so the work's first statements go with BEGIN; a BEGIN that
      // fails fails them too, and is awaited before COMMIT.
      const begun = client.query('BEGIN');
      begun.catch(() => undefined);
      const deferred: Promise<unknown>[] = [];
      let versionSent = false;
      const result = await work(
        client,
        (sent) => {
          sent.catch(() => undefined);
          deferred.push(sent);
        },
        () => {
          versionSent = true;
        },
      );
      const commit = client.query(changed(result) && !versionSent ? `${BUMP_VERSION}; COMMIT` : 'COMMIT');
      commit.catch(() => undefined);
      await begun;
      // The first deferred failure is the transaction's error; COMMIT then answered ROLLBACK or an error.
      await Promise.all(deferred);
      // PostgreSQL answers COMMIT of a failed transaction with ROLLBACK, not with an error.
      if (lastCommand(await commit) !== 'COMMIT') {
        throw new StoreError('store_rolled_back', 'the transaction was rolled back by the server', false);
      }
      this.#version = undefined;
      return result;
    } catch (error) {
      // A connection that cannot even roll back is dropped from the pool rather than reused.
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      // Statements' errors are translated already; the work's own errors reach the caller unchanged.
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** Runs fn after the transactions queued before it in this process (one indexer transaction at a time). */
  queued<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(fn, fn);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** This process's own commit: the data version read before it is stale. */
  forgetVersion(): void {
    this.#version = undefined;
  }

  /**
   * The store_version row, bumped in the same transaction as every change by any process sharing the
   * database (0001-initial.sql): one indexed single-row read. Requests within one event-loop turn share
   * one read (as on SQLite); this process's own commits forget it at once.
   */
  dataVersion(): Promise<string> {
    if (this.#version === undefined) {
      const read = this.rows(S.dataVersion, []).then(([row]) => String(row?.version));
      this.#version = read;
      const forget = () => {
        if (this.#version === read) this.#version = undefined;
      };
      read.then(() => setImmediate(forget), forget);
    }
    return this.#version;
  }

  /** The statements that record node events (with the next ids) and notify the listening processes. */
  nodeEventStatements(all: readonly NewNodeEvent[]): [Statement, unknown[]][] {
    const events = this.scope === null ? all : all.filter((event) => inScope(event, this.scope));
    const now = Date.now();
    return [
      [
        S.appendNodeEvents,
        columns(
          events.map((event) => params.nodeEvent(event, now)),
          5,
        ),
      ],
      [S.notifyNodeEvents, [this.eventsChannel]],
    ];
  }

  /** Runs the statements of nodeEventStatements on a transaction's connection; whether there were any. */
  async appendOn(client: ClientBase, events: readonly NewNodeEvent[]): Promise<boolean> {
    if (!events.some((event) => inScope(event, this.scope))) return false;
    for (const [statement, values] of this.nodeEventStatements(events))
      await this.exec(client, statement, values);
    return true;
  }

  /**
   * A connection of its own, outside the pool: a session-level advisory lock lives exactly as long as it,
   * so a process that dies frees its locks at once. It has no lock_timeout: waiting for a lock is its job.
   */
  async session(): Promise<Client> {
    if (this.#closing !== undefined) throw closedError();
    const client = new Client({
      connectionString: this.options.url,
      application_name: this.options.applicationName ?? 'node-daemon',
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
    });
    client.on('error', ignore);
    try {
      await client.connect();
      await client.query(searchPath(this.schema));
    } catch (error) {
      await client.end().catch(ignore);
      throw connectError(error);
    }
    this.#sessions.add(client);
    client.once('end', () => this.#sessions.delete(client));
    return client;
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  async #shutDown(): Promise<void> {
    await this.#queue;
    if (this.#active > 0) {
      await new Promise<void>((resolve) => {
        this.#idle = resolve;
      });
    }
    this.#closed = true;
    await Promise.all([...this.#sessions].map((client) => client.end().catch(ignore)));
    await this.#pool.end();
  }
}
