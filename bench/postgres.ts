import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import type { FreshStore } from './ingest.ts';

/** The server the PostgreSQL run uses unless --database-url says otherwise (trust authentication). */
export const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** A client of the database at url for fn's while, ended after. */
export async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, application_name: 'node-daemon bench' });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Throwaway databases on one PostgreSQL server, all named bench_<run id>_<n>: created on demand, each dropped
 * when done, and dropAll() (called at the end of the run, also on failure or a signal) drops what is left.
 * serverUrl names a database that exists (postgres); the throwaway ones get the same host, port and user.
 */
export class ThrowawayDatabases {
  readonly runId = randomBytes(4).toString('hex');
  readonly #serverUrl: string;
  readonly #live = new Set<string>();
  #next = 0;

  constructor(serverUrl: string) {
    this.#serverUrl = serverUrl;
  }

  /** The URL of database name on the same server. */
  urlOf(name: string): string {
    const url = new URL(this.#serverUrl);
    url.pathname = `/${name}`;
    return url.toString();
  }

  /** Checks the server answers; returns its version line. */
  async version(): Promise<string> {
    return withClient(this.#serverUrl, async (c) => {
      const { rows } = await c.query<{ v: string }>('SELECT version() AS v');
      return rows[0]!.v.split(',')[0]!;
    });
  }

  async create(): Promise<{ name: string; url: string }> {
    this.#next += 1;
    const name = `bench_${this.runId}_${this.#next}`;
    await withClient(this.#serverUrl, (c) => c.query(`CREATE DATABASE ${name}`));
    this.#live.add(name);
    return { name, url: this.urlOf(name) };
  }

  async drop(name: string): Promise<void> {
    // WITH (FORCE) ends connections a crashed daemon may have left behind (PostgreSQL 13+).
    await withClient(this.#serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    this.#live.delete(name);
  }

  /** Drops every database this run created and has not dropped; returns the names it could not drop. */
  async dropAll(): Promise<string[]> {
    const left: string[] = [];
    for (const name of [...this.#live]) {
      try {
        await this.drop(name);
      } catch {
        left.push(name);
      }
    }
    return left;
  }

  /** A fresh PostgresStore in a new database (migrated by open); dispose closes it and drops the database. */
  async fresh(): Promise<FreshStore> {
    const { name, url } = await this.create();
    let store: PostgresStore;
    try {
      store = await PostgresStore.open({ url, applicationName: 'node-daemon bench' });
    } catch (error) {
      await this.drop(name).catch(() => undefined);
      throw error;
    }
    return {
      store,
      dispose: async () => {
        await store.close();
        await this.drop(name);
      },
    };
  }
}

/**
 * Pins every process of the local PostgreSQL server (the postmaster, so the backends it forks from now on,
 * and those running) to `cpu`, and returns what puts their affinity back as it was. For digging: it keeps
 * the server's work off the daemon's core (bench:mixed --pin-postgres), which tells how much of a tail is
 * the server's backends taking that core. Needs taskset and the right to change the server's processes.
 */
export function pinPostgres(cpu: string): () => void {
  const pids = () =>
    (spawnSync('pgrep', ['-x', 'postgres'], { encoding: 'utf8' }).stdout ?? '').split('\n').filter(Boolean);
  const found = pids();
  if (found.length === 0)
    throw new Error('--pin-postgres: no postgres process on this machine (pgrep -x postgres)');
  // The mask they had, as taskset prints it ("pid 12's current affinity mask: 3").
  const mask = /mask: (\w+)/.exec(spawnSync('taskset', ['-p', found[0]!], { encoding: 'utf8' }).stdout)?.[1];
  if (mask === undefined)
    throw new Error(`--pin-postgres: could not read the affinity of process ${found[0]}`);
  for (const pid of found) {
    const pinned = spawnSync('taskset', ['-p', '-c', cpu, pid], { encoding: 'utf8' });
    if (pinned.status !== 0) throw new Error(`--pin-postgres: ${pinned.stderr.trim()}`);
  }
  return () => {
    // Every process now, those forked while pinned too.
    for (const pid of pids()) spawnSync('taskset', ['-p', mask, pid]);
  };
}
