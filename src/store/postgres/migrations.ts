import { Client, type ClientBase } from 'pg';
import { connectError, statementError } from '../errors.ts';
import { type AppliedMigration, checkApplied, loadMigrations, type Migration } from '../migrations.ts';

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

/** The schema that holds the store when none is named (--database-schema). */
export const DEFAULT_SCHEMA = 'node_daemon';

/**
 * The statement that makes a schema the one a connection looks in: every statement of the store is
 * unqualified, so the schema decides where its tables are. Run on each connection as it opens, after
 * whatever the URL set (a URL's `options` would otherwise win over a connection parameter). The name was
 * checked (config.ts: lower case letters, digits, underscores), so it needs no quoting.
 */
export function searchPath(schema: string): string {
  return `SET search_path TO ${schema}`;
}

/** The tables, functions and domains a migration's SQL creates (the store's own objects). */
function createdObjects(sql: string): { tables: string[]; functions: string[]; domains: string[] } {
  const names = (pattern: RegExp) => [...sql.matchAll(pattern)].map((m) => m[1]!);
  return {
    tables: names(/CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)/gi),
    functions: names(/CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+([a-z_][a-z0-9_]*)/gi),
    domains: names(/CREATE\s+DOMAIN\s+([a-z_][a-z0-9_]*)/gi),
  };
}

/**
 * A store that an earlier version kept in the public schema, moved into `schema` (where this version
 * keeps it): every table, function and domain its applied migrations created, and schema_migrations, in
 * the migration's transaction, so its data stays whole. Only a store whose first migration is this one's
 * (by checksum) is moved: another program's tables in public are never touched. Returns the objects moved.
 */
async function moveFromPublic(
  client: ClientBase,
  schema: string,
  shipped: readonly Migration[],
): Promise<string[]> {
  if (schema === 'public') return [];
  const at = async (name: string) =>
    (await client.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [name])).rows[0]?.t ??
    null;
  if ((await at(`${schema}.schema_migrations`)) !== null || (await at('public.schema_migrations')) === null) {
    return [];
  }
  const applied = (
    await client.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM public.schema_migrations',
    )
  ).rows;
  const first = applied.find((r) => r.version === 1);
  if (first === undefined || first.checksum !== shipped[0]?.checksum) return [];
  const moved: string[] = [];
  const objects = applied
    .map((r) => shipped.find((m) => m.version === r.version))
    .filter((m): m is Migration => m !== undefined)
    .map((m) => createdObjects(m.sql));
  for (const table of [...objects.flatMap((o) => o.tables), 'schema_migrations']) {
    if ((await at(`public.${table}`)) === null) continue;
    await client.query(`ALTER TABLE public.${table} SET SCHEMA ${schema}`);
    moved.push(table);
  }
  for (const name of objects.flatMap((o) => o.functions)) {
    const found = await client.query<{ f: string }>(
      "SELECT oid::regprocedure::text AS f FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND proname = $1",
      [name],
    );
    for (const { f } of found.rows) {
      await client.query(`ALTER FUNCTION ${f} SET SCHEMA ${schema}`);
      moved.push(name);
    }
  }
  for (const name of objects.flatMap((o) => o.domains)) {
    const found = await client.query(
      "SELECT 1 FROM pg_type WHERE typnamespace = 'public'::regnamespace AND typname = $1 AND typtype = 'd'",
      [name],
    );
    if (found.rowCount === 0) continue;
    await client.query(`ALTER DOMAIN public.${name} SET SCHEMA ${schema}`);
    moved.push(name);
  }
  return moved;
}

/** What a run of the migrations did: the migrations applied, and the objects moved out of public. */
export interface MigrationRun {
  applied: string[];
  moved: string[];
}

/**
 * Applies the pending migrations in one transaction that holds a transaction-level advisory lock: a second
 * process starting at the same time waits for it, then finds nothing left to do. The store lives in
 * `schema`, created when missing (and moved there from public when an earlier version left it there), on
 * a connection whose search_path is that schema (schemaOptions).
 */
export async function runMigrations(client: ClientBase, schema: string): Promise<MigrationRun> {
  const migrations = loadMigrations(MIGRATIONS_DIR);
  await client.query('BEGIN');
  try {
    // Another process may be migrating for longer than the store's lock timeout: wait for it.
    await client.query('SET LOCAL lock_timeout = 0');
    await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`SET LOCAL search_path TO ${schema}`);
    const moved = await moveFromPublic(client, schema, migrations);
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
    return { applied: names, moved };
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

async function withAdminClient<T>(
  url: string,
  schema: string,
  fn: (client: Client) => Promise<T>,
): Promise<T> {
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
    await client.query(searchPath(schema));
    return await fn(client);
  } catch (error) {
    throw statementError(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The shipped and applied migrations of the store in `schema` at url, changing nothing (for `db status`). */
export async function migrationStatus(url: string, schema = DEFAULT_SCHEMA): Promise<MigrationState[]> {
  return withAdminClient(url, schema, async (client) => {
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

/** Applies the pending migrations of the store in `schema` at url (for `db migrate`). */
export async function migrate(url: string, schema = DEFAULT_SCHEMA): Promise<MigrationRun> {
  return withAdminClient(url, schema, (client) => runMigrations(client, schema));
}
