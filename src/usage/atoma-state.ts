import pg from 'pg';
import { normalizeU64, type U64, u64ToString } from '../internal/u64.ts';

/**
 * atoma-node's own database, atoma-state, read as the node's inference service leaves it: each stack's
 * usage (`stacks.already_computed_units`, `num_total_messages`), which the service reserves before a
 * request and corrects after it (upstream-daemon.md §2.1, §3.5). Read only: the connection opens every
 * transaction read-only (default_transaction_read_only), and this module sends nothing but one SELECT, so
 * no table, index, trigger or row of the node's database is ever written. atoma-state has no index on
 * `selected_node_id`, so the stacks are read by their primary key, the ids this daemon follows: an index
 * probe each, whatever the table's size (test/usage-source.test.ts pins the plan).
 */

/** A stack's row in atoma-state. */
export interface AtomaStack {
  stack_small_id: U64;
  selected_node_id: U64;
  already_computed_units: U64;
  num_total_messages: U64;
  /** atoma-node locked the stack to claim it itself (a confidential stack at 95 %: §3.5). */
  is_locked_for_claim: boolean;
}

/** Stacks read per statement: PostgreSQL takes the ids as one array parameter. */
const IDS_PER_READ = 10_000;
/** How long opening a connection or a read may take before the source counts as lost. */
const TIMEOUT_MS = 5000;

/** The statement the source runs, exported for the test that pins its plan to the primary key. */
export const READ_STACKS = `SELECT stack_small_id::text, selected_node_id::text, already_computed_units::text,
    num_total_messages::text, is_locked_for_claim
  FROM stacks WHERE stack_small_id = ANY($1::bigint[])`;

/** Why the source cannot be read, in one line that says what to check. */
export class AtomaStateError extends Error {
  override readonly name = 'AtomaStateError';
  /** A stable word for the kind of failure (metrics, /status). */
  readonly reason: 'unreachable' | 'authentication' | 'no_database' | 'no_table' | 'schema' | 'failed';

  constructor(reason: AtomaStateError['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** A driver error as an AtomaStateError, by SQLSTATE or socket code, never by message text. */
function described(error: unknown): AtomaStateError {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = String(message ?? error).replace(/\s*\n\s*/g, ' ');
  switch (code) {
    case '28P01':
    case '28000':
      return new AtomaStateError('authentication', `atoma-state refused the credentials: ${text}`);
    case '3D000':
      return new AtomaStateError('no_database', `atoma-state's database does not exist: ${text}`);
    case '42P01':
      return new AtomaStateError(
        'no_table',
        'atoma-state has no table stacks: is the URL the database atoma-node writes (its [atoma_state] database_url)?',
      );
    case '42703':
      return new AtomaStateError(
        'schema',
        `atoma-state's stacks table lacks a column this daemon reads (${text}); is atoma-node up to date?`,
      );
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ECONNRESET':
      return new AtomaStateError('unreachable', `atoma-state cannot be reached: ${text}`);
    default:
      // A failure with no SQLSTATE is the connection's (a timeout, a server that went away).
      if (code === undefined)
        return new AtomaStateError('unreachable', `atoma-state cannot be reached: ${text}`);
      return new AtomaStateError('failed', `reading atoma-state failed: ${text} (SQLSTATE ${String(code)})`);
  }
}

/** A BIGINT column as a u64 (atoma-state keeps signed values: one below zero counts as none). */
function u64(text: string): U64 {
  return text.startsWith('-') ? 0 : normalizeU64(BigInt(text));
}

export class AtomaState {
  readonly #pool: pg.Pool;

  constructor(url: string) {
    this.#pool = new pg.Pool({
      connectionString: url,
      max: 1,
      application_name: 'node-daemon usage source',
      connectionTimeoutMillis: TIMEOUT_MS,
      idleTimeoutMillis: 60_000,
      keepAlive: true,
      // Every transaction of this connection is read-only, whatever a statement says, and none runs long.
      options: `-c default_transaction_read_only=on -c statement_timeout=${TIMEOUT_MS}`,
    });
    // An idle connection that breaks emits 'error' on the pool; the next read connects afresh.
    this.#pool.on('error', () => undefined);
  }

  /** The atoma-state rows of these stacks (those it has), by small id as decimal text. */
  async read(ids: readonly U64[]): Promise<Map<string, AtomaStack>> {
    const found = new Map<string, AtomaStack>();
    for (let start = 0; start < ids.length; start += IDS_PER_READ) {
      const chunk = ids.slice(start, start + IDS_PER_READ).map(u64ToString);
      let rows: Record<string, unknown>[];
      try {
        ({ rows } = await this.#pool.query({ text: READ_STACKS, values: [chunk] }));
      } catch (error) {
        throw described(error);
      }
      for (const row of rows) {
        const id = u64(row.stack_small_id as string);
        found.set(u64ToString(id), {
          stack_small_id: id,
          selected_node_id: u64(row.selected_node_id as string),
          already_computed_units: u64(row.already_computed_units as string),
          num_total_messages: u64(row.num_total_messages as string),
          is_locked_for_claim: row.is_locked_for_claim === true,
        });
      }
    }
    return found;
  }

  async close(): Promise<void> {
    await this.#pool.end().catch(() => undefined);
  }
}
