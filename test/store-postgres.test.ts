import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { Client } from 'pg';
import type { EventPage } from '../src/chain/chain.ts';
import type { Config } from '../src/config.ts';
import { applyPage } from '../src/indexer/apply.ts';
import { CliError } from '../src/internal/exit-codes.ts';
import { stringifyJson } from '../src/internal/json.ts';
import { createLogger } from '../src/internal/logger.ts';
import { fromPostgresError, StoreError } from '../src/store/errors.ts';
import { openStore } from '../src/store/open.ts';
import { migrate, migrationStatus, redactUrl } from '../src/store/postgres/migrations.ts';
import {
  AUTOPILOT_QUERIES,
  LIST_QUERIES,
  NODE_LIST_QUERIES,
  PostgresStore,
} from '../src/store/postgres/postgres-store.ts';
import { SQLITE_FILE, SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { type Store, topics } from '../src/store/store.ts';
import {
  createTestDatabase,
  databaseUrl,
  postgresAvailable,
  type TestDatabase,
  withClient,
} from './helpers/postgres.ts';
import { bytes, event, inner, node, stack, subscribe, task, trySettle } from './helpers/sui-events.ts';
import { tempDir } from './helpers/tmp.ts';
import { claimWithAnOpenRequest, storeContract } from './store-contract.ts';

const U64_MAX = 18446744073709551615n;
const DATA_TABLES = [
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_attempts',
  'tasks',
  'nodes',
  'node_models',
  'node_subscriptions',
  'stacks',
  'stack_settlement_tickets',
  'stack_attestation_disputes',
  'indexer_cursors',
  'applied_events',
  'stack_hashes',
  'idempotency_keys',
  'attestation_requests',
  'attester_rewards',
  'chain_state',
  'autopilot_actions',
  'node_events',
  'topic_versions',
  'node_conditions',
  'api_tokens',
  'audit_log',
];

/** A throwaway database for one test; the helper has already checked that the server is reachable. */
async function freshDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  assert.ok(db, 'PostgreSQL went away during the run');
  return db;
}

/**
 * How many round trips the PostgreSQL clients make while fn runs: statements sent while no other was in
 * flight (pipelined statements ride along with the one before them). The LISTEN of the store's own
 * notification session is not counted: it is sent once, whenever that session connects, and a report
 * counted while it was in flight looked like one round trip.
 */
async function countRoundTrips(fn: () => Promise<unknown>): Promise<number> {
  return (await countTraffic(fn)).roundTrips;
}

/** The round trips of countRoundTrips, and the rows their answers held. */
async function countTraffic(fn: () => Promise<unknown>): Promise<{ roundTrips: number; rows: number }> {
  const query = Client.prototype.query as (...args: unknown[]) => unknown;
  let inFlight = 0;
  let roundTrips = 0;
  let rows = 0;
  const counted = function (this: Client, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: unknown } | undefined)?.text;
    if (typeof text === 'string' && text.startsWith('LISTEN ')) return query.apply(this, args);
    if (inFlight === 0) roundTrips += 1;
    inFlight += 1;
    const sent = query.apply(this, args);
    const done = () => {
      inFlight -= 1;
    };
    const answered = (result: unknown) => {
      for (const r of Array.isArray(result) ? result : [result])
        rows += (r as { rows?: unknown[] })?.rows?.length ?? 0;
      done();
    };
    if (sent instanceof Promise) sent.then(answered, done);
    else done();
    return sent;
  };
  Client.prototype.query = counted as unknown as typeof Client.prototype.query;
  try {
    await fn();
  } finally {
    Client.prototype.query = query as unknown as typeof Client.prototype.query;
  }
  return { roundTrips, rows };
}

if (await postgresAvailable('PostgreSQL store suite')) {
  // The contract suite shares one database and empties its tables before each test (much faster than a
  // database per test); the engine-specific tests below make their own.
  let shared: TestDatabase;
  before(async () => {
    shared = await freshDatabase();
  });
  after(async () => {
    await shared?.drop();
  });

  storeContract('postgres', async () => {
    const store = await PostgresStore.open({ url: shared.url, poolSize: 4 });
    // DELETE rather than TRUNCATE: on tables this small it is several times faster.
    await withClient(shared.url, (client) =>
      client.query(
        `${DATA_TABLES.map((t) => `DELETE FROM ${t};`).join('')} UPDATE node_event_counter SET last = 0;`,
      ),
    );
    return { store, cleanup: async () => undefined };
  });

  describe('postgres store', () => {
    it('migrates an empty database once and then finds nothing to do', async () => {
      const db = await freshDatabase();
      try {
        const shipped = (await migrationStatus(db.url)).map((m) => m.name);
        assert.deepEqual(shipped.slice(0, 3), [
          '0001-initial.sql',
          '0002-usage-and-idempotency.sql',
          '0003-earnings-and-autopilot.sql',
        ]);
        assert.deepEqual(
          (await migrationStatus(db.url)).map((m) => m.state),
          shipped.map(() => 'pending'),
        );
        const first = await PostgresStore.open({ url: db.url });
        assert.equal(first.migrationsApplied, shipped.length);
        await first.close();
        const second = await PostgresStore.open({ url: db.url });
        assert.equal(second.migrationsApplied, 0);
        await second.close();
        assert.deepEqual(await migrate(db.url), { applied: [], moved: [] });
        const status = await migrationStatus(db.url);
        assert.deepEqual(
          status.map((m) => m.state),
          shipped.map(() => 'applied'),
        );
        assert.match(status[0]?.appliedAt ?? '', /^\d{4}-\d\d-\d\dT/);
      } finally {
        await db.drop();
      }
    });

    it('has the tables, columns, keys and indexes of the SQLite schema', async () => {
      const db = await freshDatabase();
      const { dir, remove } = tempDir();
      const pgStore = await PostgresStore.open({ url: db.url });
      const sqliteStore = new SqliteStore({ dataDir: dir });
      try {
        const file = new DatabaseSync(join(dir, SQLITE_FILE), { readOnly: true });
        const sqliteTables = file
          // sqlite_sequence is SQLite's AUTOINCREMENT counter; PostgreSQL's node_event_counter plays its part.
          .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('schema_migrations', 'sqlite_sequence')",
          )
          .all()
          .map((r) => String(r.name));
        const sqlite = Object.fromEntries(
          sqliteTables.map((table) => {
            // table_xinfo: generated columns (stacks.json) included.
            const columns = file.prepare(`PRAGMA table_xinfo(${table})`).all();
            return [
              table,
              {
                columns: columns.map((c) => String(c.name)).sort(),
                key: columns
                  .filter((c) => Number(c.pk) > 0)
                  .sort((a, b) => Number(a.pk) - Number(b.pk))
                  .map((c) => String(c.name)),
              },
            ];
          }),
        );
        const sqliteIndexes = file
          .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
          .all()
          .map((r) => String(r.name));
        file.close();
        const { pg, pgIndexes } = await withClient(db.url, async (client) => {
          const columns = await client.query(`SELECT table_name, column_name FROM information_schema.columns
            WHERE table_schema = 'node_daemon'
              AND table_name NOT IN ('schema_migrations', 'store_version', 'node_event_counter')`);
          const keys = await client.query(`SELECT c.relname AS table_name, a.attname AS column_name
            FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'node_daemon'
            CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
            WHERE i.indisprimary ORDER BY c.relname, k.ord`);
          // The indexes of UNIQUE constraints (api_tokens' token_hash) are left out, as SQLite's automatic
          // ones are (their sql is NULL); the constraint itself is in the columns' migration on both.
          const indexes = await client.query(`SELECT indexname FROM pg_indexes
            WHERE schemaname = 'node_daemon' AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key'
            ORDER BY indexname`);
          const tables: Record<string, { columns: string[]; key: string[] }> = {};
          for (const r of columns.rows) {
            tables[r.table_name] ??= { columns: [], key: [] };
            tables[r.table_name]?.columns.push(r.column_name);
          }
          for (const r of keys.rows) tables[r.table_name]?.key.push(r.column_name);
          for (const t of Object.values(tables)) t.columns.sort();
          return { pg: tables, pgIndexes: indexes.rows.map((r) => r.indexname as string) };
        });
        // store_identity is not data (the contract suite keeps it between tests).
        assert.deepEqual(Object.keys(sqlite).sort(), [...DATA_TABLES, 'store_identity'].sort());
        // PostgreSQL only: each stack's last writer, for the lists kept across daemons (0007).
        assert.deepEqual(
          pg.stacks?.columns.filter((c) => c === 'written_xid'),
          ['written_xid'],
        );
        pg.stacks!.columns = pg.stacks!.columns.filter((c) => c !== 'written_xid');
        assert.deepEqual(pg, sqlite);
        assert.deepEqual(
          pgIndexes.filter((i) => i !== 'stacks_by_writer'),
          sqliteIndexes,
        );
        assert.ok(pgIndexes.includes('stacks_by_writer'));
      } finally {
        await Promise.all([pgStore.close(), sqliteStore.close()]);
        await remove();
        await db.drop();
      }
    });

    it('applies migrations once when two stores start at once on an empty database', async () => {
      const db = await freshDatabase();
      try {
        const shipped = (await migrationStatus(db.url)).length;
        const stores = await Promise.all([
          PostgresStore.open({ url: db.url }),
          PostgresStore.open({ url: db.url }),
          migrate(db.url),
        ]);
        const [a, b, c] = stores;
        assert.deepEqual([a.migrationsApplied, b.migrationsApplied, c.applied.length].sort(), [
          0,
          0,
          shipped,
        ]);
        const rows = await withClient(db.url, (client) =>
          client.query('SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version'),
        );
        assert.deepEqual(
          rows.rows.map((r) => r.n),
          Array.from({ length: shipped }, () => 1),
        );
        await Promise.all([a.close(), b.close()]);
      } finally {
        await db.drop();
      }
    });

    it('refuses a database whose applied migration differs from the shipped one, or is newer', async () => {
      const db = await freshDatabase();
      try {
        await (await PostgresStore.open({ url: db.url })).close();
        const sql = (text: string) => withClient(db.url, (client) => client.query(text));
        const original = (await sql('SELECT checksum FROM schema_migrations WHERE version = 1')).rows[0]
          ?.checksum;
        await sql("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1");
        await assert.rejects(PostgresStore.open({ url: db.url }), {
          name: 'StoreError',
          code: 'store_migration_changed',
          retryable: false,
        });
        assert.equal((await migrationStatus(db.url))[0]?.state, 'changed');
        await sql(`UPDATE schema_migrations SET checksum = '${original}' WHERE version = 1`);
        await sql("INSERT INTO schema_migrations VALUES (9999, '9999-future.sql', 'x', 'now')");
        await assert.rejects(migrate(db.url), { code: 'store_too_new', message: /newer node-daemon/ });
        const states = (await migrationStatus(db.url)).map((m) => m.state);
        assert.equal(states.at(-1), 'unknown');
        assert.ok(states.slice(0, -1).every((state) => state === 'applied'));
      } finally {
        await db.drop();
      }
    });

    it('keeps u64 extremes exact in the database itself and refuses values outside u64', async () => {
      const db = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url });
      try {
        await store.indexerTransaction(async (tx) => {
          await tx.putSubscription({
            node_small_id: 0,
            task_small_id: 9007199254740993n,
            price_per_one_million_compute_units: U64_MAX,
            max_num_compute_units: 9007199254740991,
          });
        });
        const row = await withClient(db.url, async (client) => {
          const result = await client.query(`SELECT node_small_id::text n, task_small_id::text t,
            price_per_one_million_compute_units::text p, max_num_compute_units::text m,
            pg_typeof(price_per_one_million_compute_units)::text ty FROM node_subscriptions`);
          return result.rows[0];
        });
        assert.deepEqual(row, {
          n: '0',
          t: '9007199254740993',
          p: '18446744073709551615',
          m: '9007199254740991',
          ty: 'u64',
        });
        const [sub] = await store.listSubscriptions(0);
        assert.equal(sub?.task_small_id, 9007199254740993n);
        assert.equal(sub?.price_per_one_million_compute_units, U64_MAX);
        assert.equal(sub?.max_num_compute_units, 9007199254740991);
        for (const outside of [U64_MAX + 1n, -1n]) {
          await assert.rejects(
            store.indexerTransaction((tx) => tx.putNode(outside, '0x1', '0x2')),
            { name: 'StoreError', code: 'store_constraint', retryable: false },
          );
        }
      } finally {
        await store.close();
        await db.drop();
      }
    });

    it('translates driver errors by SQLSTATE and socket code into retryable or fatal store errors', async () => {
      await assert.rejects(PostgresStore.open({ url: 'postgres://postgres:hunter2@127.0.0.1:1/x' }), {
        name: 'StoreError',
        code: 'store_unreachable',
        retryable: true,
      });
      await assert.rejects(PostgresStore.open({ url: databaseUrl('node_daemon_test_missing_database') }), {
        name: 'StoreError',
        code: 'store_no_database',
        retryable: false,
      });
      const expected: [string, string, boolean][] = [
        ['40001', 'store_serialization_failure', true],
        ['40P01', 'store_deadlock', true],
        ['55P03', 'store_lock_not_available', true],
        ['57P03', 'store_cannot_connect_now', true],
        ['53300', 'store_too_many_connections', true],
        ['08006', 'store_connection', true],
        ['08001', 'store_connection', true],
        ['ECONNREFUSED', 'store_unreachable', true],
        ['ECONNRESET', 'store_connection_reset', true],
        ['ETIMEDOUT', 'store_timeout', true],
        ['23505', 'store_constraint', false],
        ['23514', 'store_constraint', false],
        ['42601', 'store_query', false],
        ['42P01', 'store_query', false],
        ['53100', 'store_full', false],
        ['28P01', 'store_auth', false],
        ['3D000', 'store_no_database', false],
        ['XX000', 'store_error', false],
      ];
      for (const [code, storeCode, retryable] of expected) {
        const translated = fromPostgresError(Object.assign(new Error('driver text is never read'), { code }));
        assert.ok(translated instanceof StoreError, code);
        assert.deepEqual([translated.code, translated.retryable], [storeCode, retryable], code);
      }
      const plain = new Error('no code');
      assert.equal(fromPostgresError(plain), plain);
      assert.equal(
        fromPostgresError(Object.assign(new Error('x'), { code: 'EPERM' })) instanceof StoreError,
        false,
      );
    });

    it('fails with a retryable error when another process holds the row past the lock timeout', async () => {
      const db = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url, lockTimeoutMs: 200 });
      try {
        await store.indexerTransaction((tx) =>
          tx.putStack({
            stack_small_id: 1,
            stack_id: '0x1',
            owner_address: '0x2',
            task_small_id: 1,
            selected_node_id: 1,
            num_compute_units: 10,
            price_per_one_million_compute_units: 1,
          }),
        );
        await withClient(db.url, async (other) => {
          await other.query('BEGIN');
          await other.query('SELECT 1 FROM stacks WHERE stack_small_id = 1 FOR UPDATE');
          await assert.rejects(store.addStackUsage(1, 1, new Uint8Array(32), Date.now()), {
            name: 'StoreError',
            code: 'store_lock_not_available',
            retryable: true,
          });
          await other.query('ROLLBACK');
        });
        assert.equal((await store.addStackUsage(1, 1, new Uint8Array(32), Date.now())).status, 'recorded');
      } finally {
        await store.close();
        await db.drop();
      }
    });

    it('replaces connections the server ends, and fails a transaction that loses one as retryable', async () => {
      const db = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url, applicationName: 'node_daemon_terminated' });
      const terminate = () =>
        withClient(db.url, async (admin) => {
          const sql = "FROM pg_stat_activity WHERE application_name = 'node_daemon_terminated'";
          await admin.query(`SELECT pg_terminate_backend(pid) ${sql}`);
          while ((await admin.query(`SELECT 1 ${sql}`)).rowCount !== 0) {
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        });
      try {
        await store.listTasks();
        await terminate();
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.deepEqual(await store.listTasks(), [], 'an idle connection that was ended is replaced');
        await assert.rejects(
          store.indexerTransaction(async (tx) => {
            await tx.putNode(1, '0x1', '0x2');
            await terminate();
            await new Promise((resolve) => setTimeout(resolve, 50));
            await tx.deprecateTask(1, 1);
          }),
          { name: 'StoreError', retryable: true },
        );
        await store.indexerTransaction((tx) => tx.putNode(2, '0x1', '0x2'));
        const nodes = await withClient(db.url, (c) => c.query('SELECT node_small_id::int AS n FROM nodes'));
        assert.deepEqual(
          nodes.rows.map((r) => r.n),
          [2],
        );
      } finally {
        await store.close();
        await db.drop();
      }
    });

    it('changes dataVersion when another store on the same database commits', async () => {
      const db = await freshDatabase();
      const a = await PostgresStore.open({ url: db.url });
      const b = await PostgresStore.open({ url: db.url });
      try {
        const seen = new Set([await a.dataVersion()]);
        const changed = async (label: string) => {
          const version = await a.dataVersion();
          assert.ok(!seen.has(version), `${label} changes the version`);
          seen.add(version);
        };
        await b.indexerTransaction((tx) =>
          tx.putStack({
            stack_small_id: 1,
            stack_id: '0x1',
            owner_address: '0x2',
            task_small_id: 1,
            selected_node_id: 1,
            num_compute_units: 10,
            price_per_one_million_compute_units: 1,
          }),
        );
        await changed('an indexer transaction');
        await b.addStackUsage(1, 1, new Uint8Array(32), Date.now());
        await changed('recorded usage');
        await b.putStackHash(2, new Uint8Array(32), 1);
        await changed('an attester hash');
        assert.equal(await b.reserveIdempotencyKey('k', 'h', Date.now()), 'reserved');
        await changed('a reserved key');
        await b.completeIdempotencyKey('k', 200, '{}');
        await changed('a completed key');
        const unchanged = await a.dataVersion();
        await b.addStackUsage(1, 100, new Uint8Array(32), Date.now());
        await b.releaseIdempotencyKey('k');
        assert.notEqual(await b.reserveIdempotencyKey('k', 'h', Date.now()), 'reserved');
        assert.equal(await a.dataVersion(), unchanged, 'refused work changes nothing');
      } finally {
        await Promise.all([a.close(), b.close()]);
        await db.drop();
      }
    });

    it('reads the topics asked for in one loop turn in one statement, never one sent before a caller asked', async () => {
      const db = await freshDatabase();
      const a = await PostgresStore.open({ url: db.url });
      const b = await PostgresStore.open({ url: db.url });
      try {
        assert.equal(a.checkBy, 'topics');
        const stack = (id: number, node: number) => ({
          stack_small_id: id,
          stack_id: `0x${id}`,
          owner_address: '0x2',
          task_small_id: 1,
          selected_node_id: node,
          num_compute_units: 10,
          price_per_one_million_compute_units: 1,
        });
        await b.indexerTransaction(async (tx) => {
          await tx.putStack(stack(1, 1));
          await tx.putStack(stack(2, 2));
        });
        // Fifty readers in one turn, over three topics (one never written): one statement.
        const asked = [topics.stacks(1), topics.stacks(2), topics.tasks];
        let answers: number[][] = [];
        const traffic = await countTraffic(async () => {
          answers = await Promise.all(Array.from({ length: 50 }, (_, i) => a.topicVersions([asked[i % 3]!])));
        });
        assert.deepEqual(traffic, { roundTrips: 1, rows: 2 });
        const [one, two] = [answers[0]![0]!, answers[1]![0]!];
        assert.ok(one > 0 && two > 0);
        assert.deepEqual(answers[2], [0]);
        assert.deepEqual(await a.topicVersions([topics.tasks, topics.stacks(2), topics.stacks(1)]), [
          0,
          two,
          one,
        ]);
        // More topics than the statements by number of topics cover (one to eight): one statement still.
        const many = [...Array.from({ length: 10 }, (_, i) => topics.stacks(i + 1)), topics.tasks];
        const manyTraffic = await countTraffic(async () => {
          answers = await Promise.all(many.map((topic) => a.topicVersions([topic])));
        });
        assert.deepEqual(manyTraffic, { roundTrips: 1, rows: 2 });
        assert.deepEqual(answers.flat(), [one, two, ...Array.from({ length: 9 }, () => 0)]);

        // A caller that asks after a batch was sent is not answered by it: another daemon's commit between
        // the two is seen by the second, whatever the first saw.
        const early = a.topicVersions([topics.stacks(1)]);
        await new Promise((resolve) => setImmediate(resolve)); // the batch is closed and its statement sent
        await b.addStackUsage(1, 1, new Uint8Array(32), Date.now());
        const late = await a.topicVersions([topics.stacks(1)]);
        assert.ok((await early)[0]! >= one);
        assert.equal(late[0], one + 1);
      } finally {
        await Promise.all([a.close(), b.close()]);
        await db.drop();
      }
    });

    it('adds up usage reported to two stores at once (row locks), and reserves a key once', async () => {
      const db = await freshDatabase();
      const a = await PostgresStore.open({ url: db.url });
      const b = await PostgresStore.open({ url: db.url });
      try {
        await a.indexerTransaction((tx) =>
          tx.putStack({
            stack_small_id: 7,
            stack_id: '0x7',
            owner_address: '0x2',
            task_small_id: 1,
            selected_node_id: 1,
            num_compute_units: 1000,
            price_per_one_million_compute_units: 1,
          }),
        );
        const reports = Array.from({ length: 40 }, (_, i) =>
          (i % 2 ? a : b).addStackUsage(7, 10, new Uint8Array(32).fill(i), Date.now()),
        );
        assert.ok((await Promise.all(reports)).every((r) => r.status === 'recorded'));
        const stack = await b.getStack(7);
        assert.deepEqual([stack?.already_computed_units, stack?.num_total_messages], [400, 40]);
        assert.equal((await a.getStackHash(7))?.num_requests, 40);
        const now = Date.now();
        const outcomes = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).reserveIdempotencyKey('same', `h${i}`, now)),
        );
        assert.equal(outcomes.filter((o) => o === 'reserved').length, 1);
      } finally {
        await Promise.all([a.close(), b.close()]);
        await db.drop();
      }
    });

    it('announces a condition once when two stores see it start and end at once (its row lock)', async () => {
      const db = await freshDatabase();
      const a = await PostgresStore.open({ url: db.url });
      const b = await PostgresStore.open({ url: db.url });
      try {
        const event = (type: 'signer_gas_low' | 'signer_gas_restored') => ({
          type,
          node_small_id: null,
          data: {},
        });
        const at = (store: PostgresStore, holds: boolean, i: number) =>
          store.setCondition(
            'signer_gas_low:0x1',
            holds,
            event(holds ? 'signer_gas_low' : 'signer_gas_restored'),
            i,
          );
        const starts = await Promise.all(Array.from({ length: 10 }, (_, i) => at(i % 2 ? a : b, true, i)));
        assert.equal(starts.filter(Boolean).length, 1);
        const ends = await Promise.all(
          Array.from({ length: 10 }, (_, i) => at(i % 2 ? a : b, false, 20 + i)),
        );
        assert.equal(ends.filter(Boolean).length, 1);
        const events = await a.listNodeEvents({ after: 0, limit: 100, nodes: null, types: null });
        assert.deepEqual(
          events.map((e) => e.type),
          ['signer_gas_low', 'signer_gas_restored'],
        );
      } finally {
        await Promise.all([a.close(), b.close()]);
        await db.drop();
      }
    });

    it('fails a page that creates a stack another store created after its read-ahead, and finds it then', async () => {
      const db = await freshDatabase();
      const a = await PostgresStore.open({ url: db.url });
      const b = await PostgresStore.open({ url: db.url });
      const stack = {
        stack_small_id: 9,
        stack_id: '0x9',
        owner_address: '0x2',
        task_small_id: 1,
        selected_node_id: 1,
        num_compute_units: 1000,
        price_per_one_million_compute_units: 1,
      };
      try {
        await assert.rejects(
          a.indexerTransaction(async (tx) => {
            await tx.readAhead!([], [], [9]);
            // Another daemon, on another source, creates it and commits in between.
            assert.equal(await b.indexerTransaction((other) => other.createStack(stack)), true);
            assert.equal(await tx.createStack({ ...stack, selected_node_id: 2 }), true, 'read ahead: absent');
          }),
          /created by another writer meanwhile/,
        );
        // Applied again, the page finds it: its creation is a duplicate, and the row is the other's.
        assert.equal(
          await a.indexerTransaction((tx) => tx.createStack({ ...stack, selected_node_id: 2 })),
          false,
        );
        assert.deepEqual(
          (await a.listStacks(1)).map((s) => s.stack_small_id),
          [9],
        );
        assert.deepEqual(await a.listStacks(2), []);
        assert.equal(await a.hasEvents([{ key: 'x:0', createdStack: 9 }]), true);
      } finally {
        await Promise.all([a.close(), b.close()]);
        await db.drop();
      }
    });

    it('applies the same stacks from two sources on two stores at once: each stack once, each counted once', async () => {
      const db = await freshDatabase();
      const stores = [await PostgresStore.open({ url: db.url }), await PostgresStore.open({ url: db.url })];
      const log = createLogger('silent');
      // Two files of the same chain's events (one event, one key), read in pages of different sizes.
      const events = Array.from({ length: 3000 }, (_, i) => stack(i + 1, (i % 20) + 1));
      const replay = async (store: PostgresStore, source: string, size: number) => {
        let applied = 0;
        for (let at = 0; at < events.length; at += size) {
          const slice = events.slice(at, at + size);
          const page: EventPage = {
            events: slice.map((raw, i) => ({ position: `${source}:${at + i}`, raw })),
            nextCursor: String(at + slice.length),
            hasMore: at + size < events.length,
          };
          applied += (await applyPage(store, source, page, log)).applied;
        }
        return applied;
      };
      try {
        const applied = await Promise.all([
          replay(stores[0]!, 'file:a', 250),
          replay(stores[1]!, 'file:b', 400),
        ]);
        assert.equal(applied[0]! + applied[1]!, events.length, `${applied}`);
        await withClient(db.url, async (client) => {
          const { rows } = await client.query(
            "SELECT (SELECT count(*)::int FROM stacks) AS stacks, (SELECT count(*)::int FROM node_events WHERE type = 'stack_assigned') AS assigned",
          );
          assert.deepEqual(rows[0], { stacks: events.length, assigned: events.length });
        });
      } finally {
        await Promise.all(stores.map((s) => s.close()));
        await db.drop();
      }
    });

    it('answers the list queries from their indexes, never by a sequential scan', async () => {
      const db = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url });
      try {
        await withClient(db.url, async (client) => {
          await client.query(`INSERT INTO stacks (selected_node_id, stack_small_id, stack_id, owner_address,
            task_small_id, num_compute_units, price_per_one_million_compute_units, already_computed_units)
            SELECT i % 500, i, 'x', 'y', 1, 1000, 1, i % 1000 FROM generate_series(1, 50000) i`);
          await client.query(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
            num_claimed_compute_units, is_claimed) SELECT i, i % 500, 1, i % 3 = 0 FROM generate_series(1, 50000) i`);
          await client.query(`INSERT INTO stack_attestation_disputes SELECT i, i % 700, '\\x', i % 500, '\\x'
            FROM generate_series(1, 50000) i`);
          await client.query(`INSERT INTO node_subscriptions SELECT n, t, 1, 1
            FROM generate_series(1, 500) n, generate_series(1, 100) t`);
          await client.query('ANALYZE');
        });
        // A node's whole stack list is one range of either index that starts with the node (the planner
        // may take the smaller, stacks_by_writer, and sort its rows).
        const nodeStacks = ['stacks_pkey', 'stacks_by_writer'];
        const expected: Record<keyof typeof LIST_QUERIES, string[]> = {
          subscriptions: ['node_subscriptions_pkey'],
          stacks: nodeStacks,
          stacksFilled: nodeStacks,
          stacksState: nodeStacks,
          stacksFilledState: nodeStacks,
          claimed: ['stack_settlement_tickets_claimed_by_node'],
          disputesAgainst: ['stack_attestation_disputes_against'],
          disputesOwn: ['stack_attestation_disputes_own'],
        };
        interface PlanNode {
          'Node Type': string;
          'Relation Name'?: string;
          'Index Name'?: string;
          Plans?: PlanNode[];
        }
        const walk = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(walk)];
        await withClient(db.url, async (client) => {
          for (const mode of ['force_custom_plan', 'force_generic_plan']) {
            await client.query(`SET plan_cache_mode = ${mode}`);
            for (const [name, sql] of Object.entries(LIST_QUERIES)) {
              // A node, a fill fraction ($2 of the filled ones), then the page: after an id, a limit.
              const filled = sql.includes('$4');
              const types = filled ? '(numeric, float8, numeric, bigint)' : '(numeric, numeric, bigint)';
              await client.query(`PREPARE q_${name} ${types} AS ${sql}`);
              for (const page of ['-1, NULL', '100, 50']) {
                const args = filled ? `(7, 0.5, ${page})` : `(7, ${page})`;
                const result = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE q_${name} ${args}`);
                const nodes = walk(result.rows[0]['QUERY PLAN'][0].Plan);
                const kinds = nodes.map((n) => n['Node Type']);
                const label = `${name} ${args} (${mode}): ${kinds.join(' > ')}`;
                assert.ok(!kinds.includes('Seq Scan'), label);
                // A page past every row may start from another index: any index range will do there.
                if (page.startsWith('-1')) {
                  assert.ok(
                    nodes.some((n) =>
                      expected[name as keyof typeof LIST_QUERIES].includes(n['Index Name'] ?? ''),
                    ),
                    label,
                  );
                }
              }
              await client.query(`DEALLOCATE q_${name}`);
            }
          }
        });
        // The kept lists: a node's rows, then only those written since a snapshot (the one from just now
        // reads none, a node's range of stacks_by_writer).
        await withClient(db.url, async (client) => {
          const [{ snapshot }] = (await client.query('SELECT pg_current_snapshot()::text AS snapshot')).rows;
          for (const mode of ['force_custom_plan', 'force_generic_plan']) {
            await client.query(`SET plan_cache_mode = ${mode}`);
            for (const [name, sql] of Object.entries(NODE_LIST_QUERIES)) {
              const since = sql.includes('$3');
              await client.query(
                `PREPARE q_${name} ${since ? '(numeric, text, text)' : '(numeric, text)'} AS ${sql}`,
              );
              const args = since ? `(7, 'stacks:7', '${snapshot}')` : `(7, 'stacks:7')`;
              const result = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE q_${name} ${args}`);
              const nodes = walk(result.rows[0]['QUERY PLAN'][0].Plan);
              const label = `${name} (${mode}): ${nodes.map((n) => n['Node Type']).join(' > ')}`;
              // The one-row version tables are read whole; stacks never.
              assert.ok(
                !nodes.some((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'stacks'),
                label,
              );
              assert.ok(
                nodes.some((n) =>
                  (since ? ['stacks_by_writer'] : nodeStacks).includes(n['Index Name'] ?? ''),
                ),
                label,
              );
              const rows = (await client.query(`EXECUTE q_${name} ${args}`)).rows;
              assert.equal(rows.length, since ? 1 : 100, label);
              await client.query(`DEALLOCATE q_${name}`);
            }
          }
        });
        // The autopilot's questions: one index range each (with stacks and tickets in the thousands).
        const autopilot: Record<keyof typeof AUTOPILOT_QUERIES, string[]> = {
          settleCandidates: ['stacks_open_by_fill', 'stacks_open_by_last_usage'],
          oldestUsage: ['stacks_open_by_last_usage'],
          claimable: ['stack_settlement_tickets_claimable'],
          requests: ['attestation_requests_open'],
        };
        await withClient(db.url, async (client) => {
          await client.query(`UPDATE stacks SET fill_ppm = (i % 1000) * 1000, last_usage_at = i
            FROM generate_series(1, 50000) i WHERE stack_small_id = i`);
          await client.query(
            `UPDATE stack_settlement_tickets SET claimable_from_epoch = stack_small_id % 50`,
          );
          await client.query(`INSERT INTO attestation_requests SELECT i, 0, i % 500, i % 4 = 0
            FROM generate_series(1, 50000) i`);
          await client.query(
            `INSERT INTO stack_hashes SELECT i, '\\x00', 1 FROM generate_series(1, 50000, 2) i`,
          );
          await client.query('ANALYZE');
          for (const [name, sql] of Object.entries(AUTOPILOT_QUERIES)) {
            const params = sql.includes('$3') ? [7, 950000, 100] : sql.includes('$2') ? [7, 10] : [7];
            const result = await client.query(`EXPLAIN (FORMAT JSON) ${sql}`, params);
            const nodes = walk(result.rows[0]['QUERY PLAN'][0].Plan);
            const kinds = nodes.map((n) => n['Node Type']);
            const label = `${name}: ${kinds.join(' > ')}`;
            assert.ok(!kinds.includes('Seq Scan'), label);
            for (const index of autopilot[name as keyof typeof AUTOPILOT_QUERIES]) {
              assert.ok(
                nodes.some((n) => n['Index Name'] === index),
                `${label}: ${index}`,
              );
            }
          }
        });
        assert.equal((await store.listStacks(7)).length, 100);
        assert.equal((await store.listClaimedStacks(7)).length, 33);
      } finally {
        await store.close();
        await db.drop();
      }
    });

    it("answers the autopilot's questions from their indexes when one node holds most of the store", async () => {
      // 100,000 stacks, 70 % of them node 7's; tickets, most claimed (all but one in `live` stays open);
      // every live ticket asks two attesters, node 7 in one of ten of the other nodes' tickets; a hash per
      // stack with usage. The planner's estimates for node 7 are far off: before 0006 it chose a hash join
      // over all stacks for the claimable tickets, over all tickets for the requests, and (with node 7
      // asked nothing) a walk of all requests in key order (DECISIONS.md, "Each autopilot question is one
      // index range, whatever the statistics").
      const db = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url });
      const populate = (live: number) =>
        withClient(db.url, async (client) => {
          await client.query('TRUNCATE stacks, stack_settlement_tickets, attestation_requests, stack_hashes');
          await client.query(`INSERT INTO stacks (selected_node_id, stack_small_id, stack_id, owner_address,
              task_small_id, num_compute_units, price_per_one_million_compute_units, already_computed_units,
              in_settle_period, is_claimed, last_usage_at, fill_ppm)
            SELECT CASE WHEN i % 10 < 7 THEN 7 ELSE i % 10 END, i, 'x', 'y', 1, 100, 1, i % 90, i % 3 = 0,
              i % 3 = 0 AND i % ${live} > 0, CASE WHEN i % 3 = 1 THEN i END, (i % 90) * 10000
            FROM generate_series(1, 100000) i`);
          await client.query(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
              num_claimed_compute_units, is_claimed, claimable_from_epoch)
            SELECT stack_small_id, selected_node_id, 1, is_claimed, stack_small_id % 50 FROM stacks
            WHERE in_settle_period`);
          await client.query(`INSERT INTO attestation_requests
            SELECT t.stack_small_id, s.slot,
              CASE WHEN s.slot = 0 AND t.selected_node_id <> 7 AND t.stack_small_id % 10 = 9 THEN 7
                ELSE 1 + (t.stack_small_id + s.slot) % 6 END, s.slot = 1
            FROM stack_settlement_tickets t, generate_series(0, 1) s(slot) WHERE NOT t.is_claimed`);
          await client.query(`INSERT INTO stack_hashes SELECT stack_small_id, '\\x00', 1 FROM stacks
            WHERE last_usage_at IS NOT NULL`);
          await client.query('ANALYZE');
        });
      try {
        await populate(7);
        interface PlanNode {
          'Node Type': string;
          'Relation Name'?: string;
          'Index Name'?: string;
          Plans?: PlanNode[];
        }
        const walk = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(walk)];
        // Each entry: an index the plan must use (either of a pair: both hold only unclaimed tickets).
        const expected: Record<keyof typeof AUTOPILOT_QUERIES, string[][]> = {
          settleCandidates: [['stacks_open_by_fill'], ['stacks_open_by_last_usage']],
          oldestUsage: [['stacks_open_by_last_usage']],
          claimable: [
            ['stack_settlement_tickets_claimable', 'stack_settlement_tickets_by_claimable_epoch'],
            ['stacks_by_id'],
          ],
          requests: [['attestation_requests_open'], ['stack_settlement_tickets_pkey'], ['stack_hashes_pkey']],
        };
        const params: Record<keyof typeof AUTOPILOT_QUERIES, string> = {
          settleCandidates: '7, 950000, 100',
          oldestUsage: '7',
          claimable: '7, 10',
          requests: '7',
        };
        const checkPlans = (when: string) =>
          withClient(db.url, async (client) => {
            for (const mode of ['force_custom_plan', 'force_generic_plan']) {
              await client.query(`SET plan_cache_mode = ${mode}`);
              for (const [key, sql] of Object.entries(AUTOPILOT_QUERIES)) {
                const name = key as keyof typeof AUTOPILOT_QUERIES;
                await client.query(`PREPARE q_${name} AS ${sql}`);
                const result = await client.query(
                  `EXPLAIN (FORMAT JSON) EXECUTE q_${name} (${params[name]})`,
                );
                await client.query(`DEALLOCATE q_${name}`);
                const nodes = walk(result.rows[0]['QUERY PLAN'][0].Plan);
                const label = `${name} (${mode}, ${when}): ${nodes.map((n) => `${n['Node Type']} ${n['Index Name'] ?? n['Relation Name'] ?? ''}`).join(' > ')}`;
                assert.ok(!nodes.some((n) => n['Node Type'] === 'Seq Scan'), label);
                for (const indexes of expected[name]) {
                  assert.ok(
                    nodes.some((n) => indexes.includes(n['Index Name'] ?? '')),
                    `${label}: ${indexes.join(' or ')}`,
                  );
                }
              }
            }
          });
        await checkPlans('asked by other nodes');
        // The same answers as the plain joins.
        const [claimable, requests] = await withClient(db.url, async (client) =>
          Promise.all(
            [
              `SELECT count(*)::int AS n FROM stack_settlement_tickets WHERE selected_node_id = 7
                AND NOT is_claimed AND NOT is_in_dispute AND claimable_from_epoch <= 10`,
              `SELECT count(*)::int AS n FROM attestation_requests r JOIN stack_settlement_tickets t
                USING (stack_small_id) WHERE r.node_small_id = 7 AND NOT r.attested AND NOT t.is_claimed`,
            ].map(async (sql) => (await client.query(sql)).rows[0].n as number),
          ),
        );
        assert.ok(claimable! > 0 && requests! > 0);
        assert.equal((await store.listClaimable(7, 10)).length, claimable);
        assert.equal((await store.listAttestationRequests(7)).length, requests);
        // One live ticket in ten: they are all node 7's, so no other node's ticket asks it anything.
        await populate(10);
        assert.deepEqual(await store.listAttestationRequests(7), []);
        await checkPlans('asked nothing');
      } finally {
        await store.close();
        await db.drop();
      }
    });

    it('deletes the requests of a claimed ticket, and migration 0006 those that older claims left', async () => {
      const db = await freshDatabase();
      let store = await PostgresStore.open({ url: db.url });
      try {
        await claimWithAnOpenRequest(store);
        const requests = () =>
          withClient(db.url, async (client) =>
            (
              await client.query(`SELECT stack_small_id::int, slot, node_small_id::int, attested
                FROM attestation_requests ORDER BY 1, 2`)
            ).rows.map((r) => Object.values(r)),
          );
        // Claimed stack 1 asks nothing more (node 4 never attested; the ticket says 5 did); 2 still asks 4.
        const kept = [[2, 0, 4, false]];
        assert.deepEqual(await requests(), kept);
        await store.close();
        // A database from before 0006: the claim left stack 1's requests behind.
        await withClient(db.url, (client) =>
          client.query(`INSERT INTO attestation_requests VALUES (1, 0, 4, false), (1, 1, 5, true);
            DELETE FROM schema_migrations WHERE version = 6`),
        );
        store = await PostgresStore.open({ url: db.url });
        assert.equal(store.migrationsApplied, 1);
        assert.deepEqual(await requests(), kept);
      } finally {
        await store.close();
        await db.drop();
      }
    });

    it('applies a page that settles, attests and claims the stacks it creates as SQLite does, in a few round trips', async () => {
      const db = await freshDatabase();
      const postgres = await PostgresStore.open({ url: db.url });
      const tmp = tempDir();
      const sqlite = new SqliteStore({ dataDir: tmp.dir });
      const log = createLogger('silent');
      const attestation = (id: number, node: number) =>
        event('NewStackSettlementAttestationEvent', {
          stack_small_id: inner(id),
          attestation_node_id: inner(node),
          committed_stack_proof: bytes(32, 7),
          stack_merkle_leaf: bytes(32, node),
        });
      const claimed = (id: number, node: number, attesters: number[] = [], units = 500) =>
        event('StackSettlementTicketClaimedEvent', {
          stack_small_id: inner(id),
          selected_node_id: inner(node),
          attestation_nodes: attesters.map(inner),
          num_claimed_compute_units: String(units),
          user_refund_amount: String(id),
        });
      const claimedDirectly = (id: number, node: number) =>
        event('ClaimedStackEvent', {
          stack_small_id: inner(id),
          selected_node_id: inner(node),
          num_claimed_compute_units: '300',
          user_refund_amount: '7',
        });
      const earlier = [task(1, 2), task(2, 1), ...[1, 2, 3, 4, 5, 6].map((n) => node(n)), stack(1, 1)];
      const busy = [
        // A stack of an earlier page, settled, attested and claimed in this one.
        trySettle(1, 1, [4, 5]),
        attestation(1, 5),
        // Stacks created, settled, attested and claimed in this page.
        stack(10, 1),
        trySettle(10, 1, [4, 5]),
        attestation(10, 4),
        attestation(10, 5),
        claimed(10, 1, [4, 5]),
        stack(11, 2, 2),
        claimedDirectly(11, 2),
        // Claimed before it is created: unpriced.
        claimedDirectly(12, 3),
        stack(12, 3, 2),
        // Its task is of this page too, and its only attester's dispute counts as its attestation.
        task(3, 0),
        stack(13, 3, 3),
        trySettle(13, 3, [6]),
        event('StackAttestationDisputeEvent', {
          stack_small_id: inner(13),
          attestation_commitment: bytes(32, 7),
          attestation_node_id: inner(6),
          original_node_id: inner(3),
          original_commitment: bytes(32, 7),
        }),
        claimed(13, 3, [6]),
        claimed(1, 1, [4, 5]),
        claimed(404, 4),
        // The same rows written twice in a page, in an order that matters: a subscription and its update;
        // a stack claimed, then try-settled again asking one more attester (a request that stays open);
        // a claim repeated.
        subscribe(5, 1, 1_000_000),
        subscribe(5, 2),
        event('NodeSubscriptionUpdatedEvent', {
          task_small_id: inner(1),
          node_small_id: inner(5),
          price_per_one_million_compute_units: '3000000',
          max_num_compute_units: '5000',
        }),
        stack(20, 2),
        trySettle(20, 2, [4]),
        claimed(20, 2, [4]),
        trySettle(20, 2, [4, 6]),
        claimed(10, 1, [4, 5]),
      ];
      for (let s = 100; s < 140; s++) {
        const n = 1 + (s % 6);
        busy.push(stack(s, n, 1 + (s % 3)), trySettle(s, n, [], 400), claimed(s, n, [], 400));
      }
      const page = (events: unknown[], cursor: string): EventPage => ({
        events: events.map((raw, i) => ({ position: `test:${i + 1}`, raw, epoch: 5 })),
        nextCursor: cursor,
        hasMore: false,
        epoch: 5,
      });
      const view = async (store: Store) => {
        const nodes: unknown[] = [];
        for (const n of [1, 2, 3, 4, 5, 6]) {
          nodes.push(
            await store.listLedger(n),
            await store.listAttesterRewards(n),
            await store.listClaimedStacks(n),
            await store.listStacks(n),
          );
        }
        // Events with no time of their own are stamped when recorded.
        const events = await store.listNodeEvents({ after: 0, limit: 10_000, nodes: null, types: null });
        return { nodes, events: events.map(({ at: _, ...rest }) => rest) };
      };
      try {
        for (const store of [sqlite, postgres]) await applyPage(store, 'test', page(earlier, 'a'), log);
        await applyPage(sqlite, 'test', page(busy, 'b'), log);
        const roundTrips = await countRoundTrips(() => applyPage(postgres, 'test', page(busy, 'b'), log));
        // The chain state, BEGIN with the event keys and the read-ahead, one per attestation or dispute
        // (each locks its ticket), the last writes, COMMIT: not one per settlement or claim.
        assert.ok(roundTrips <= 9, `${roundTrips} round trips for a page of ${busy.length} events`);
        const expected = await view(sqlite);
        assert.deepEqual(await view(postgres), expected);
        const ticket = async (id: number) => (await postgres.getTicket(id))!;
        assert.equal((await ticket(10)).node_fee_amount, 1200, '500 units at 2 per unit, x1.2 sampled');
        assert.equal((await ticket(11)).node_fee_amount, 600);
        assert.equal((await ticket(12)).node_fee_amount, null);
        assert.equal((await ticket(13)).node_fee_amount, 1000);
        assert.deepEqual(
          (await postgres.listAttesterRewards(6)).map((r) => [r.stack_small_id, r.amount]),
          [[13, 1000]],
        );
        // The requests no list shows (those of claimed tickets): both slots of stack 20's second try-settle.
        const requestsSql =
          'SELECT stack_small_id, slot, node_small_id FROM attestation_requests ORDER BY 1, 2';
        const file = new DatabaseSync(join(tmp.dir, SQLITE_FILE), { readOnly: true });
        const inSqlite = file
          .prepare(requestsSql)
          .all()
          .map((r) => Object.values(r).map(Number));
        file.close();
        const inPostgres = await withClient(db.url, async (client) =>
          (await client.query(requestsSql)).rows.map((r) => Object.values(r).map(Number)),
        );
        assert.deepEqual(inPostgres, inSqlite);
        assert.deepEqual(
          inPostgres.filter(([id]) => id === 20),
          [
            [20, 0, 4],
            [20, 1, 6],
          ],
        );
        assert.deepEqual(
          (await postgres.listSubscriptions(5)).map((s) => s.price_per_one_million_compute_units),
          [3_000_000, 1_000_000],
        );
      } finally {
        await postgres.close();
        await db.drop();
        await sqlite.close();
        await tmp.remove();
      }
    });

    it('opens from DATABASE_URL, and says in one line why it cannot, without the password', async () => {
      const db = await freshDatabase();
      const config = (databaseUrl: string): Pick<Config, 'dataDir' | 'databaseUrl'> => ({
        dataDir: '/nonexistent',
        databaseUrl,
      });
      try {
        const store = await openStore(config(db.url));
        assert.equal(store.engine, 'postgres');
        // Where the data lives, with its schema (the default one here), never a password.
        assert.equal(store.location, `${db.url} (schema node_daemon)`);
        await store.close();
        const secret = 'postgres://postgres:hunter2@127.0.0.1:1/atoma';
        const error = await openStore(config(secret)).then(
          () => assert.fail('opened an unreachable store'),
          (e: unknown) => e,
        );
        assert.ok(error instanceof CliError);
        assert.equal(error.exitCode, 1);
        assert.match(error.message, /127\.0\.0\.1:1/);
        assert.match(error.message, /atoma/);
        assert.match(error.message, /ECONNREFUSED/);
        assert.doesNotMatch(error.message, /hunter2|\n/);
        assert.equal(redactUrl(secret), 'postgres://postgres:***@127.0.0.1:1/atoma');
        const missing = await openStore(config(databaseUrl('node_daemon_test_missing_database'))).then(
          () => assert.fail('opened a missing database'),
          (e: unknown) => e,
        );
        assert.match((missing as Error).message, /node_daemon_test_missing_database.*does not exist/);
      } finally {
        await db.drop();
      }
    });

    it('grants a lease to one store at a time, freed on release, close or a terminated session', async () => {
      const db = await freshDatabase();
      const [one, two] = [
        await PostgresStore.open({ url: db.url, poolSize: 2 }),
        await PostgresStore.open({ url: db.url, poolSize: 2 }),
      ];
      try {
        const held = await one.tryLease('indexer:x');
        assert.ok(held);
        assert.equal(await two.tryLease('indexer:x'), undefined);
        assert.ok(await two.tryLease('indexer:y'), 'another name is another lease');
        await held.release();
        const taken = await two.tryLease('indexer:x');
        assert.ok(taken);
        assert.equal(await one.tryLease('indexer:x'), undefined);
        // The server ends the holder's session (as when its process dies): the lease is lost and free.
        await withClient(db.url, (client) =>
          client.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND query LIKE '%pg_try_advisory_lock%' AND pid <> pg_backend_pid()",
            [db.name],
          ),
        );
        await taken.lost;
        const again = await one.tryLease('indexer:x');
        assert.ok(again);
        await one.close();
        assert.ok(await two.tryLease('indexer:x'), 'close() frees the leases of the store');
      } finally {
        await one.close();
        await two.close();
        await db.drop();
      }
    });

    it('runs one withLock section at a time across stores, and passes results and errors through', async () => {
      const db = await freshDatabase();
      const [one, two] = [
        await PostgresStore.open({ url: db.url, poolSize: 2 }),
        await PostgresStore.open({ url: db.url, poolSize: 2 }),
      ];
      try {
        const trace: string[] = [];
        const section = (store: PostgresStore, name: string) =>
          store.withLock('signer:0x1', async () => {
            trace.push(`${name} in`);
            await new Promise((resolve) => setTimeout(resolve, 100));
            trace.push(`${name} out`);
            return name;
          });
        assert.deepEqual(await Promise.all([section(one, 'a'), section(two, 'b')]), ['a', 'b']);
        assert.deepEqual(
          trace.map((t) => t.split(' ')[1]),
          ['in', 'out', 'in', 'out'],
        );
        const boom = new Error('boom');
        await assert.rejects(
          one.withLock('signer:0x1', async () => {
            throw boom;
          }),
          (error) => error === boom,
        );
        assert.equal(await two.withLock('signer:0x1', async () => 'free again'), 'free again');
      } finally {
        await one.close();
        await two.close();
        await db.drop();
      }
    });

    it("passes the caller's own errors through, lets started work finish on close, then refuses work", async () => {
      const db = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url });
      try {
        const slow = store.indexerTransaction(async (tx) => {
          await new Promise((resolve) => setTimeout(resolve, 50));
          await tx.putNode(1, '0x1', '0x2');
          return 'done';
        });
        const boom = new Error('boom');
        await assert.rejects(
          store.indexerTransaction(async (tx) => {
            await tx.putNode(9, '0x1', '0x2');
            throw boom;
          }),
          (error) => error === boom,
        );
        const closing = store.close();
        await assert.rejects(store.getTask(1), { code: 'store_closed' });
        assert.equal(await slow, 'done');
        await closing;
        await assert.rejects(
          store.indexerTransaction(async () => undefined),
          { code: 'store_closed' },
        );
        const kept = await withClient(db.url, (client) =>
          client.query('SELECT count(*)::int AS n FROM nodes'),
        );
        assert.equal(kept.rows[0]?.n, 1);
      } finally {
        await db.drop();
      }
    });
  });

  describe('kept stack lists and usage reports on PostgreSQL', () => {
    const REPORT = new Uint8Array(32).fill(3);
    const newStack = (id: number, node: number, units = 1000) => ({
      stack_small_id: id,
      stack_id: `0x${String(id).padStart(64, '0')}`,
      owner_address: `0x${'ab'.repeat(32)}`,
      task_small_id: 1,
      selected_node_id: node,
      num_compute_units: units,
      price_per_one_million_compute_units: 2_000_000,
    });
    const seed = (store: Store, ids: number[], node = 1) =>
      store.indexerTransaction(async (tx) => {
        await tx.putTask({
          task_small_id: 1,
          task_id: `0x${'1'.padStart(64, '0')}`,
          role: 0,
          model_name: 'llama',
          security_level: 0,
          minimum_reputation_score: null,
        });
        for (const id of ids) await tx.putStack(newStack(id, node));
      });
    /** What a commit of another process does to a node's stacks besides its rows: the topic and data versions. */
    const bump = (
      node: number,
    ) => `INSERT INTO topic_versions (topic, version) VALUES ('${topics.stacks(node)}', 1)
      ON CONFLICT (topic) DO UPDATE SET version = topic_versions.version + 1;
      UPDATE store_version SET version = version + 1`;
    const connect = async (url: string) => {
      const client = new Client({ connectionString: url });
      await client.connect();
      return client;
    };

    it('brings a kept list up to date with every commit of another daemon, early or late, reading only what changed', async () => {
      const db = await freshDatabase();
      // Two daemons on one database: `writer` commits, `reader` keeps node lists.
      const writer = await PostgresStore.open({ url: db.url, poolSize: 2 });
      const reader = await PostgresStore.open({ url: db.url, poolSize: 2 });
      const late = await connect(db.url);
      const early = await connect(db.url);
      try {
        await seed(writer, [2, 4, 6, 8]);
        await seed(writer, [50], 2);
        /** The reader's kept list against the rows as objects (a path that keeps nothing). */
        const same = async (step: string, node = 1) => {
          const { result, traffic } = await withTraffic(() => reader.listStacksJson(node));
          assert.equal(result.body.toString(), stringifyJson(await reader.listStacks(node)), step);
          return { body: result.body, traffic };
        };
        const withTraffic = async <T>(fn: () => Promise<T>) => {
          let result: T | undefined;
          const traffic = await countTraffic(async () => {
            result = await fn();
          });
          return { result: result as T, traffic };
        };
        const first = await same('first listing');
        assert.deepEqual(first.traffic, { roundTrips: 1, rows: 4 });
        const otherNode = await same('first listing of node 2', 2);

        // Nothing changed: one round trip, one row (the snapshot, no stack), the same body.
        const still = await same('nothing changed');
        assert.deepEqual(still.traffic, { roundTrips: 1, rows: 1 });
        assert.equal(still.body, first.body);

        // A usage report: only that stack is read again.
        assert.equal((await writer.addStackUsage(4, 300, REPORT, 1)).status, 'recorded');
        const reported = await same('after a report');
        assert.deepEqual(reported.traffic, { roundTrips: 1, rows: 1 });
        assert.match(reported.body.toString(), /"stack_small_id":4,.*"already_computed_units":300,/);

        // An indexer page: new stacks before, between and after the kept ones; a settle and a claim.
        await writer.indexerTransaction(async (tx) => {
          for (const id of [1, 5, 9]) await tx.putStack(newStack(id, 1));
          await tx.putTicket(
            {
              stack_small_id: 6,
              selected_node_id: 1,
              requested_attestation_nodes: [],
              committed_stack_proof: REPORT,
              stack_merkle_leaf: REPORT,
              num_claimed_compute_units: 0,
            },
            3,
          );
          await tx.claimStack(
            { stack_small_id: 8, selected_node_id: 1, num_claimed_compute_units: 0, user_refund_amount: 7 },
            { epoch: 4, node_fee_amount: 0 },
          );
        });
        const paged = await same('after an indexer page');
        assert.deepEqual(paged.traffic, { roundTrips: 1, rows: 5 });
        // The node nobody wrote to keeps its body.
        const untouched = await same('node 2, untouched', 2);
        assert.equal(untouched.body, otherNode.body);
        assert.deepEqual(untouched.traffic, { roundTrips: 1, rows: 1 });

        // A transaction that began writing first and commits last (its id is the older one), and one that
        // commits early: the reader sees the early one, then the late one.
        await late.query('BEGIN');
        await late.query('UPDATE stacks SET already_computed_units = 555 WHERE stack_small_id = 2');
        await early.query('BEGIN');
        await early.query('UPDATE stacks SET num_total_messages = 66 WHERE stack_small_id = 9');
        await early.query(`${bump(1)}; COMMIT`);
        const half = await same('the early commit');
        assert.match(half.body.toString(), /"num_total_messages":66,/);
        assert.doesNotMatch(half.body.toString(), /555/);
        await late.query(`${bump(1)}; COMMIT`);
        const whole = await same('the late commit');
        assert.match(whole.body.toString(), /"stack_small_id":2,.*"already_computed_units":555,/);
        assert.deepEqual(whole.traffic, { roundTrips: 1, rows: 1 });

        // A stack that leaves the list (nothing in node-daemon deletes one): the list is read whole.
        await early.query(`DELETE FROM stacks WHERE stack_small_id = 5; ${bump(1)}`);
        const removed = await same('after a removal');
        assert.doesNotMatch(removed.body.toString(), /"stack_small_id":5,/);

        // A caller that read the topic version the kept list shows is answered with no round trip.
        const [version] = await reader.topicVersions([topics.stacks(1)]);
        const hinted = await withTraffic(() => reader.listStacksJson(1, undefined, {}, version));
        assert.equal(hinted.result.body, removed.body);
        assert.equal(hinted.traffic.roundTrips, 0);
        assert.equal((await writer.addStackUsage(1, 5, REPORT, 2)).status, 'recorded');
        const [moved] = await reader.topicVersions([topics.stacks(1)]);
        const stale = await withTraffic(() => reader.listStacksJson(1, undefined, {}, moved));
        assert.equal(stale.traffic.roundTrips, 1);
        assert.equal(stale.result.body.toString(), stringifyJson(await reader.listStacks(1)));
      } finally {
        await Promise.all([late.end(), early.end(), writer.close(), reader.close()]);
        await db.drop();
      }
    });

    it("patches its kept list with its own usage reports, and reads it again when another daemon's commit came between", async () => {
      const db = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      const other = await connect(db.url);
      try {
        await seed(store, [2, 4, 6, 8]);
        const topic = topics.stacks(1);
        /** A read by a caller that saw the topic's version now (as the response cache does after a commit). */
        const hinted = async () => {
          const [version] = await store.topicVersions([topic]);
          let body = '';
          const traffic = await countTraffic(async () => {
            body = (await store.listStacksJson(1, undefined, {}, version)).body.toString();
          });
          assert.equal(body, stringifyJson(await store.listStacks(1)));
          return { body, traffic };
        };
        await store.listStacksJson(1);

        // Its own reports, one and then two at once: the list shows them with no round trip.
        assert.equal((await store.addStackUsage(4, 300, REPORT, 1)).status, 'recorded');
        const own = await hinted();
        assert.equal(own.traffic.roundTrips, 0);
        assert.match(
          own.body,
          /"stack_small_id":4,.*"already_computed_units":300,"in_settle_period":false,"num_total_messages":1,/,
        );
        const both = await Promise.all([
          store.addStackUsage(6, 10, REPORT, 2),
          store.addStackUsage(8, 20, REPORT, 3),
        ]);
        assert.deepEqual(
          both.map((o) => o.status),
          ['recorded', 'recorded'],
        );
        assert.equal((await hinted()).traffic.roundTrips, 0);
        // Groups with no read between them: the list takes them all when it is next read, one stack twice
        // and another between (each group adds to the rows the groups before it left pending).
        for (const [stack, units] of [
          [6, 5],
          [8, 4],
          [6, 7],
        ] as const) {
          assert.equal((await store.addStackUsage(stack, units, REPORT, 4)).status, 'recorded');
        }
        const batched = await hinted();
        assert.equal(batched.traffic.roundTrips, 0);
        assert.match(
          batched.body,
          /"stack_small_id":6,.*"already_computed_units":22,"in_settle_period":false,"num_total_messages":3,/,
        );
        assert.match(
          batched.body,
          /"stack_small_id":8,.*"already_computed_units":24,"in_settle_period":false,"num_total_messages":2,/,
        );

        // Another daemon changes a stack of the node, then this one reports: the topic moved by two, and
        // the list is read (only what changed), not patched over the other's change.
        await other.query(
          `UPDATE stacks SET already_computed_units = 555 WHERE stack_small_id = 2; ${bump(1)}`,
        );
        assert.equal((await store.addStackUsage(4, 1, REPORT, 4)).status, 'recorded');
        const after = await hinted();
        assert.equal(after.traffic.roundTrips, 1);
        assert.match(after.body, /"stack_small_id":2,.*"already_computed_units":555,/);
        assert.match(after.body, /"stack_small_id":4,.*"already_computed_units":301,/);

        // The patched list's old snapshot still reads the rows the reports wrote again: they compare equal.
        await other.query(`UPDATE stacks SET num_total_messages = 9 WHERE stack_small_id = 8; ${bump(1)}`);
        const later = await hinted();
        assert.equal(later.traffic.roundTrips, 1);
        assert.match(later.body, /"stack_small_id":8,.*"num_total_messages":9,/);
      } finally {
        await Promise.all([other.end(), store.close()]);
        await db.drop();
      }
    });

    it('upgrades a database from before 0007 with its stacks, and keeps their lists from then on', async () => {
      const db = await freshDatabase();
      let store = await PostgresStore.open({ url: db.url });
      let other: PostgresStore | undefined;
      try {
        await seed(store, [1, 2, 3]);
        assert.equal((await store.addStackUsage(2, 10, REPORT, 1)).status, 'recorded');
        await store.close();
        // The schema as 0006 left it, with these rows in it.
        await withClient(db.url, (client) =>
          client.query(`DROP TRIGGER stacks_stamp_writer ON stacks; DROP FUNCTION stacks_stamp_writer();
            DROP TRIGGER stacks_count_removal ON stacks; DROP FUNCTION stacks_count_removal();
            ALTER TABLE stacks DROP COLUMN written_xid; ALTER TABLE store_version DROP COLUMN stacks_removed;
            DELETE FROM schema_migrations WHERE version = 7`),
        );
        store = await PostgresStore.open({ url: db.url });
        assert.equal(store.migrationsApplied, 1);
        other = await PostgresStore.open({ url: db.url });
        const listed = await other.listStacksJson(1);
        assert.equal(listed.body.toString(), stringifyJson(await store.listStacks(1)));
        assert.match(listed.body.toString(), /"stack_small_id":2,.*"already_computed_units":10,/);
        assert.equal((await store.addStackUsage(3, 20, REPORT, 2)).status, 'recorded');
        await seed(store, [4]);
        const after = await other.listStacksJson(1);
        assert.equal(after.body.toString(), stringifyJson(await store.listStacks(1)));
        assert.equal(after.count, 4);
      } finally {
        await Promise.all([store.close(), other?.close()]);
        await db.drop();
      }
    });

    it('answers a usage report in two round trips, one on a stack it wrote last, and rolls it back whole when a write fails', async () => {
      const db = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url });
      try {
        await seed(store, [1]);
        let heard = 0;
        const off = store.onNodeEvents(() => {
          heard += 1;
        });
        // BEGIN with the locking reads, then the writes with COMMIT.
        const report = (units: number, fill: number) =>
          store.addStackUsage(1, units, new Uint8Array(32).fill(fill), 5);
        assert.equal(await countRoundTrips(() => report(500, 1)), 2);
        // Then the stack is as this process left it: locks, guard, writes and COMMIT in one round trip.
        assert.equal(await countRoundTrips(() => report(100, 2)), 1);
        assert.deepEqual(await store.getStack(1).then((stack) => stack?.already_computed_units), 600);
        assert.deepEqual(await report(1, 3), {
          status: 'recorded',
          already_computed_units: 601,
          num_compute_units: 1000,
          num_total_messages: 3,
        });
        // An unknown stack: the locking reads, then the end of the transaction; the counter sees the two as
        // one when the end is sent before the reads' answers are counted, so the bound is what is asserted.
        const unknown = await countRoundTrips(() => store.addStackUsage(9, 1, REPORT, 5));
        assert.ok(unknown >= 1 && unknown <= 2, `${unknown} round trips for a report on an unknown stack`);
        assert.equal((await store.addStackUsage(9, 1, REPORT, 5)).status, 'not_found');
        assert.equal((await report(1000, 4)).status, 'over_capacity');
        // 500 crossed the 50 % threshold: its node event was told at commit.
        assert.ok(heard >= 1);
        off();

        // A write that fails after the reads: nothing of the report stays, and the error says why.
        const before = {
          stack: await store.getStack(1),
          hash: await store.getStackHash(1),
          versions: await store.topicVersions([topics.stacks(1)]),
          data: await store.dataVersion(),
          events: await store.nodeEventBounds(),
        };
        await withClient(db.url, (client) =>
          client.query(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
              BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '23514'; END $$;
            CREATE TRIGGER refuse BEFORE UPDATE ON stack_hashes FOR EACH ROW EXECUTE FUNCTION refuse()`),
        );
        await assert.rejects(report(10, 5), (error: unknown) => error instanceof StoreError);
        assert.deepEqual(await store.getStack(1), before.stack);
        assert.deepEqual(await store.getStackHash(1), before.hash);
        assert.deepEqual(await store.topicVersions([topics.stacks(1)]), before.versions);
        assert.equal(await store.dataVersion(), before.data);
        assert.deepEqual(await store.nodeEventBounds(), before.events);
        // The connection went back to the pool usable.
        await withClient(db.url, (client) => client.query('DROP TRIGGER refuse ON stack_hashes'));
        assert.equal((await report(10, 6)).status, 'recorded');
      } finally {
        await store.close();
        await db.drop();
      }
    });

    it('reads a stack again when another daemon reported on it since, and ends where one writer would', async () => {
      const db = await freshDatabase();
      const reference = await freshDatabase();
      const a = await PostgresStore.open({ url: db.url });
      const b = await PostgresStore.open({ url: db.url });
      const alone = await PostgresStore.open({ url: reference.url });
      try {
        await seed(a, [1, 2]);
        await seed(alone, [1, 2]);
        // The same reports in the same order: through two daemons on one database, and through one.
        const sent: [Store, number, number, number][] = [
          [a, 1, 100, 1],
          [a, 1, 20, 2],
          [b, 1, 3, 3],
          [a, 1, 400, 4],
          [a, 2, 7, 5],
          [b, 2, 1, 6],
          [a, 2, 5, 7],
          [a, 1, 2, 8],
        ];
        const trips: number[] = [];
        const outcomes: unknown[] = [];
        for (const [store, stack, units, fill] of sent) {
          const request = new Uint8Array(32).fill(fill);
          trips.push(
            await countRoundTrips(async () =>
              outcomes.push(await store.addStackUsage(stack, units, request, 5)),
            ),
          );
          await alone.addStackUsage(stack, units, request, 5);
        }
        assert.deepEqual(outcomes.at(3), {
          status: 'recorded',
          already_computed_units: 523,
          num_compute_units: 1000,
          num_total_messages: 4,
        });
        for (const stack of [1, 2]) {
          assert.deepEqual(await a.getStack(stack), await alone.getStack(stack));
          assert.deepEqual(await a.getStackHash(stack), await alone.getStackHash(stack));
        }
        assert.deepEqual((await a.getStackHash(1))?.num_requests, 5);
        assert.deepEqual(await a.getStack(1).then((stack) => stack?.already_computed_units), 525);
        // a's first report on each stack reads it (2); its next one, with nothing in between, is one round
        // trip; after b's report its guard fails that round trip, and it reads the stack again (1 + 2, and
        // the ROLLBACK: a round trip of its own unless it went while the failed statements were answered).
        const guarded = [trips[3], trips[6]];
        assert.deepEqual([...trips.slice(0, 3), trips[4], trips[5], trips[7]], [2, 1, 2, 2, 2, 1]);
        assert.ok(
          guarded.every((n) => n === 3 || n === 4),
          `round trips after the other daemon: ${guarded}`,
        );
      } finally {
        await Promise.all([a.close(), b.close(), alone.close()]);
        await Promise.all([db.drop(), reference.drop()]);
      }
    });

    it('writes a group on stacks it wrote last in one round trip, a stack reported several times in it ending as one report after the other leaves it', async () => {
      const db = await freshDatabase();
      const reference = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url });
      const alone = await PostgresStore.open({ url: reference.url });
      try {
        await seed(store, [1, 2]);
        await seed(alone, [1, 2]);
        const report = (target: Store, stack: number, units: number, fill: number) =>
          target.addStackUsage(stack, units, new Uint8Array(32).fill(fill), 5);
        // The first report on each stack reads it; then this process keeps both.
        await report(store, 1, 100, 1);
        await report(store, 2, 10, 2);
        await report(alone, 1, 100, 1);
        await report(alone, 2, 10, 2);
        const versionBefore = await store.dataVersion();
        const topicBefore = await store.topicVersions([topics.stacks(1)]);
        // Reports at once: the first goes alone (nothing was running), the other four wait for it and go as
        // one group, stack 1 in it three times (each counting on the one before, whose hash it chains) and
        // stack 2 once. A round trip each.
        const group: [number, number, number][] = [
          [2, 5, 4],
          [1, 20, 3],
          [2, 1, 6],
          [1, 20, 3],
          [1, 7, 5],
        ];
        let outcomes: unknown[] = [];
        const trips = await countRoundTrips(async () => {
          outcomes = await Promise.all(
            group.map(([stack, units, fill]) => report(store, stack, units, fill)),
          );
        });
        assert.equal(trips, 2);
        const expected: unknown[] = [];
        for (const [stack, units, fill] of group) expected.push(await report(alone, stack, units, fill));
        assert.deepEqual(outcomes, expected);
        assert.deepEqual(
          outcomes.map((o) => (o as { already_computed_units?: unknown }).already_computed_units),
          [15, 120, 16, 140, 147],
        );
        for (const stack of [1, 2]) {
          assert.deepEqual(await store.getStack(stack), await alone.getStack(stack));
          assert.deepEqual(await store.getStackHash(stack), await alone.getStackHash(stack));
        }
        // Each group bumped the node's topic and the store's version.
        assert.deepEqual(await store.topicVersions([topics.stacks(1)]), [topicBefore[0]! + 2]);
        assert.notEqual(await store.dataVersion(), versionBefore);
      } finally {
        await Promise.all([store.close(), alone.close()]);
        await Promise.all([db.drop(), reference.drop()]);
      }
    });

    it('writes a usage group again when the server rolls it back to break a deadlock, on top of what the other transaction committed', async () => {
      const db = await freshDatabase();
      const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
      const other = await connect(db.url);
      try {
        await seed(store, [7]);
        // Another transaction holds node 1's stacks topic row. It waits 30 s before it looks for a
        // deadlock, the group's server process the default 1 s: the group is the one rolled back.
        await other.query('BEGIN');
        await other.query("SET LOCAL deadlock_timeout = '30s'");
        await other.query('SELECT version FROM topic_versions WHERE topic = $1 FOR UPDATE', [
          topics.stacks(1),
        ]);
        const report = store.addStackUsage(7, 300, REPORT, 1);
        // The group locked the stack's row and waits for the topic row ...
        const waiting =
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
        const deadline = Date.now() + 10_000;
        while ((await other.query(waiting)).rowCount === 0) {
          assert.ok(Date.now() < deadline, 'the usage group never waited for the topic row');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        // ... which the other transaction keeps while it asks for the stack's row: a cycle. It gets the
        // row only because the group was rolled back (the group cannot commit without the topic row), then
        // changes it and commits.
        await other.query('SELECT 1 FROM stacks WHERE stack_small_id = 7 FOR UPDATE');
        await other.query(
          `UPDATE stacks SET already_computed_units = 100 WHERE stack_small_id = 7; ${bump(1)}`,
        );
        await other.query('COMMIT');

        // The group was written again, after the other's commit: the report adds to its 100 units.
        assert.deepEqual(await report, {
          status: 'recorded',
          already_computed_units: 400,
          num_compute_units: 1000,
          num_total_messages: 1,
        });
        const stack = await store.getStack(7);
        assert.equal(stack?.already_computed_units, 400);
        assert.equal(stack?.num_total_messages, 1);
        assert.equal((await store.getStackHash(7))?.num_requests, 1);
        assert.match((await store.listStacksJson(1)).body.toString(), /"already_computed_units":400,/);
      } finally {
        await other.query('ROLLBACK').catch(() => {});
        await Promise.all([other.end(), store.close()]);
        await db.drop();
      }
    });
  });
}
