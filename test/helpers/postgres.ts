import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { Client } from 'pg';
import { redactUrl } from '../../src/store/postgres/migrations.ts';

/** The server the PostgreSQL tests use: a superuser (or CREATEDB) connection to any database on it. */
export const TEST_PG_URL =
  process.env.NODE_DAEMON_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
/** CI sets it, so a PostgreSQL suite that cannot run fails instead of skipping. */
const REQUIRED = process.env.NODE_DAEMON_REQUIRE_POSTGRES === '1';

export interface TestDatabase {
  name: string;
  url: string;
  /** Ends its connections and drops it. */
  drop: () => Promise<void>;
}

async function adminClient(url = TEST_PG_URL): Promise<Client> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return client;
}

/** Runs fn on a fresh connection to url (the test server by default), then closes it. */
export async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await adminClient(url);
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Why the test server cannot be reached, or undefined when it can. */
export async function postgresUnreachable(): Promise<string | undefined> {
  try {
    await withClient(TEST_PG_URL, (client) => client.query('SELECT 1'));
    return undefined;
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    return message || code || String(error);
  }
}

/** The URL of another database on the same server. */
export function databaseUrl(name: string, base = TEST_PG_URL): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * The URL with the store's default schema (node_daemon) first in its search path, then public: a test's
 * own connections then read the store's tables unqualified, as the store's connections do (it sets its
 * search path on each connection itself, whatever the URL says).
 */
export function inStoreSchema(url: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', '-c search_path=node_daemon,public');
  return parsed.toString();
}

/** A throwaway database (node_daemon_test_<random>) on the test server; undefined when it is unreachable. */
export async function createTestDatabase(): Promise<TestDatabase | undefined> {
  let admin: Client;
  try {
    admin = await adminClient();
  } catch {
    return undefined;
  }
  const name = `node_daemon_test_${randomBytes(6).toString('hex')}`;
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: inStoreSchema(databaseUrl(name)),
    drop: () =>
      withClient(TEST_PG_URL, async (client) => {
        await client.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [name],
        );
        await client.query(`DROP DATABASE IF EXISTS ${name}`);
      }),
  };
}

/**
 * Whether the PostgreSQL suite can run. When the server is unreachable it says so plainly and registers a
 * skipped test, or, with NODE_DAEMON_REQUIRE_POSTGRES=1, a failing one; the caller then registers nothing.
 */
export async function postgresAvailable(suite = 'PostgreSQL suite'): Promise<boolean> {
  const reason = await postgresUnreachable();
  if (reason === undefined) return true;
  const message = `PostgreSQL not reachable at ${redactUrl(TEST_PG_URL)} (${reason}): skipping the PostgreSQL suite`;
  if (REQUIRED) {
    it(suite, () => {
      throw new Error(`${message} is not allowed: NODE_DAEMON_REQUIRE_POSTGRES=1`);
    });
  } else {
    console.log(message);
    it(suite, { skip: message }, () => undefined);
  }
  return false;
}
