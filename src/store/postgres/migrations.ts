import { Client, type ClientBase } from 'pg';
import { connectError, statementError } from '../errors.ts';
import { type AppliedMigration, checkApplied, loadMigrations } from '../migrations.ts';

/**
 * PostgreSQL migrations, for the store at open and for `node-daemon db migrate|status`, which loads only
 * this module (not the store).
 */

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
/** How long opening a connection may take; pg would otherwise wait for the OS (minutes on a dead host). */
export const CONNECT_TIMEOUT_MS = 10_000;
/**
 * The pg_advisory_xact_lock key held while migrations run, so concurrent starts apply each migration once:
 * the first 8 bytes of sha256('node-daemon migrations') as a signed 64-bit integer.
 */
const MIGRATION_LOCK_KEY = '2334242934700213875';
const ignore = () => undefined;

// --- connection URL --------------------------------------------------------------------------------------

/** The URL with any password replaced by ***, safe to print. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '' && !parsed.searchParams.has('password')) return url;
    if (parsed.password !== '') parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString().replaceAll('%2A%2A%2A', '***');
  } catch {
    return 'postgres://(unparseable URL)';
  }
}

/** Host (with port) and database of a URL, as libpq would pick them, for one-line messages. */
export function describeUrl(url: string): { host: string; database: string } {
  try {
    const parsed = new URL(url);
    const host = parsed.searchParams.get('host') ?? (decodeURIComponent(parsed.hostname) || 'localhost');
    const port = parsed.searchParams.get('port') ?? (parsed.port || '5432');
    const user = decodeURIComponent(parsed.username);
    return {
      host: `${host}:${port}`,
      database: decodeURIComponent(parsed.pathname.slice(1)) || user || '(named after the user)',
    };
  } catch {
    return { host: '(unparseable URL)', database: '(unparseable URL)' };
  }
}

interface AppliedRow extends AppliedMigration {
  applied_at: string;
}

/**
 * Applies the pending migrations in one transaction that holds a transaction-level advisory lock: a second
 * process starting at the same time waits for it, then finds nothing left to do. Returns the names applied.
 */
export async function runMigrations(client: ClientBase): Promise<string[]> {
  const migrations = loadMigrations(MIGRATIONS_DIR);
  await client.query('BEGIN');
  try {
    // Another process may be migrating for longer than the store's lock timeout: wait for it.
    await client.query('SET LOCAL lock_timeout = 0');
    await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)`);
    const applied = (
      await client.query<AppliedRow>(
        'SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version',
      )
    ).rows;
    checkApplied(applied, migrations);
    const done = new Set(applied.map((r) => r.version));
    const names: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations VALUES ($1, $2, $3, $4)', [
        migration.version,
        migration.name,
        migration.checksum,
        new Date().toISOString(),
      ]);
      names.push(migration.name);
    }
    await client.query('COMMIT');
    return names;
  } catch (error) {
    await client.query('ROLLBACK').catch(ignore);
    throw statementError(error);
  }
}

/** One migration as `db status` shows it. */
export interface MigrationState {
  version: number;
  name: string;
  /** applied; pending; changed (applied, but the shipped file differs); unknown (applied by a newer version). */
  state: 'applied' | 'pending' | 'changed' | 'unknown';
  appliedAt: string | null;
}

async function withAdminClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({
    connectionString: url,
    application_name: 'node-daemon db',
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // A connection error after connect() arrives as an event; the pending query reports it.
  client.on('error', ignore);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw connectError(error);
  }
  try {
    return await fn(client);
  } catch (error) {
    throw statementError(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The shipped and applied migrations of the database at url, changing nothing (for `db status`). */
export async function migrationStatus(url: string): Promise<MigrationState[]> {
  return withAdminClient(url, async (client) => {
    const exists = await client.query<{ t: string | null }>(
      "SELECT to_regclass('schema_migrations')::text AS t",
    );
    const applied =
      exists.rows[0]?.t == null
        ? []
        : (
            await client.query<AppliedRow>(
              'SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version',
            )
          ).rows;
    const shipped = loadMigrations(MIGRATIONS_DIR);
    const byVersion = new Map(applied.map((r) => [r.version, r]));
    const states: MigrationState[] = shipped.map((m) => {
      const row = byVersion.get(m.version);
      if (!row) return { version: m.version, name: m.name, state: 'pending', appliedAt: null };
      return {
        version: m.version,
        name: m.name,
        state: row.checksum === m.checksum ? 'applied' : 'changed',
        appliedAt: row.applied_at,
      };
    });
    const known = new Set(shipped.map((m) => m.version));
    for (const row of applied) {
      if (!known.has(row.version)) {
        states.push({ version: row.version, name: row.name, state: 'unknown', appliedAt: row.applied_at });
      }
    }
    return states.sort((a, b) => a.version - b.version);
  });
}

/** Applies the pending migrations of the database at url (for `db migrate`); returns the names applied. */
export async function migrate(url: string): Promise<{ applied: string[] }> {
  return withAdminClient(url, async (client) => ({ applied: await runMigrations(client) }));
}
