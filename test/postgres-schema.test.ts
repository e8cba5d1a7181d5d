import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PostgresStore } from '../src/store/postgres/postgres-store.ts';
import type { Store } from '../src/store/store.ts';
import { createAtomaState } from './helpers/atoma-state.ts';
import { createTestDatabase, postgresAvailable, withClient } from './helpers/postgres.ts';
import { run } from './helpers/process.ts';

/**
 * The PostgreSQL store keeps its tables in a schema of its own (--database-schema, node_daemon by default),
 * so it can live in any database, atoma-state's included, without touching a table it does not own.
 */

/** A task, a stack and a usage report: enough of a store to see it survive a move. */
async function fill(store: Store): Promise<void> {
  await store.indexerTransaction(async (tx) => {
    await tx.putTask({
      task_small_id: 1,
      task_id: `0x${'1'.padStart(64, '0')}`,
      role: 0,
      model_name: 'llama',
      security_level: 0,
      minimum_reputation_score: null,
    });
    await tx.putStack({
      stack_small_id: 7,
      stack_id: `0x${'7'.padStart(64, '0')}`,
      owner_address: `0x${'ab'.repeat(32)}`,
      task_small_id: 1,
      selected_node_id: 3,
      num_compute_units: 1000,
      price_per_one_million_compute_units: 2_000_000,
    });
  });
  assert.equal((await store.addStackUsage(7, 40, new Uint8Array(32), 1)).status, 'recorded');
}

const tablesIn = (url: string, schema: string) =>
  withClient(url, async (client) =>
    (
      await client.query<{ t: string }>(
        'SELECT tablename AS t FROM pg_tables WHERE schemaname = $1 ORDER BY tablename',
        [schema],
      )
    ).rows.map((r) => r.t),
  );

if (await postgresAvailable('the PostgreSQL store in a schema of its own')) {
  describe('the PostgreSQL store in a schema of its own', () => {
    it("lives in atoma-state's own database without touching a table of it", async () => {
      const atoma = (await createAtomaState())!;
      try {
        await atoma.addStack({ id: 7, node: 3, units: 1000 });
        const before = await atoma.snapshot();
        // Before, a store in public met atoma-state's tasks table and its migration failed.
        const store = await PostgresStore.open({ url: atoma.url });
        try {
          assert.equal(store.schema, 'node_daemon');
          await fill(store);
          assert.equal((await store.getStack(7))?.already_computed_units, 40);
          assert.ok((await tablesIn(atoma.url, 'node_daemon')).includes('stacks'));
        } finally {
          await store.close();
        }
        assert.equal(await atoma.snapshot(), before, "atoma-state's tables, rows and triggers as they were");
      } finally {
        await atoma.drop();
      }
    });

    it('moves a store an earlier version kept in public into its schema, its data whole', async () => {
      const db = (await createTestDatabase())!;
      try {
        // An earlier version's layout: the store in public.
        const old = await PostgresStore.open({ url: db.url, schema: 'public' });
        await fill(old);
        await old.close();
        await withClient(db.url, (client) => client.query('CREATE TABLE someone_elses (id int)'));
        const store = await PostgresStore.open({ url: db.url });
        try {
          assert.ok(store.movedFromPublic.includes('stacks'), String(store.movedFromPublic));
          assert.ok(store.movedFromPublic.includes('schema_migrations'));
          assert.ok(store.movedFromPublic.includes('node_daemon_usage_guard'));
          assert.ok(store.movedFromPublic.includes('u64'));
          assert.equal(store.migrationsApplied, 0, 'nothing applied again');
          assert.equal((await store.getStack(7))?.already_computed_units, 40);
          assert.equal((await store.getStackHash(7))?.num_requests, 1);
          // The store goes on working where it is now: a usage report through the moved guard function.
          assert.equal((await store.addStackUsage(7, 2, new Uint8Array(32), 2)).status, 'recorded');
          assert.equal((await store.addStackUsage(7, 3, new Uint8Array(32), 3)).status, 'recorded');
          assert.equal((await store.getStack(7))?.already_computed_units, 45);
        } finally {
          await store.close();
        }
        assert.deepEqual(await tablesIn(db.url, 'public'), ['someone_elses']);
        // Opened again: nothing left to move.
        const again = await PostgresStore.open({ url: db.url });
        assert.deepEqual(again.movedFromPublic, []);
        await again.close();
      } finally {
        await db.drop();
      }
    });

    it('keeps two stores in two schemas of one database apart, their leases too', async () => {
      const db = (await createTestDatabase())!;
      const a = await PostgresStore.open({ url: db.url, schema: 'daemon_a' });
      const b = await PostgresStore.open({ url: db.url, schema: 'daemon_b' });
      try {
        await fill(a);
        assert.equal((await a.getStack(7))?.already_computed_units, 40);
        assert.equal(await b.getStack(7), undefined);
        const leaseA = await a.tryLease('indexer:x');
        const leaseB = await b.tryLease('indexer:x');
        assert.ok(leaseA && leaseB, 'each schema has its own indexer lease');
        await Promise.all([leaseA.release(), leaseB.release()]);
      } finally {
        await Promise.all([a.close(), b.close()]);
        await db.drop();
      }
    });

    it('db status says where the store is, and db migrate creates its schema', async () => {
      const db = (await createTestDatabase())!;
      try {
        const env = { DATABASE_URL: db.url, NODE_DAEMON_DATABASE_SCHEMA: 'operator_daemon' };
        const migrated = await run(['db', 'migrate'], env);
        assert.equal(migrated.code, 0, migrated.stderr);
        assert.match(migrated.stdout, /schema operator_daemon: applied 0001-initial\.sql/);
        const status = await run(['db', 'status'], env);
        assert.match(status.stdout, /^the store: postgres:\/\/.*, schema operator_daemon$/m);
        assert.match(status.stdout, /^0001 {2}applied {2}0001-initial\.sql/m);
        assert.ok((await tablesIn(db.url, 'operator_daemon')).includes('stacks'));
        const bad = await run(['db', 'status'], { ...env, NODE_DAEMON_DATABASE_SCHEMA: 'Bad-Name' });
        assert.equal(bad.code, 2);
        assert.match(bad.stderr, /NODE_DAEMON_DATABASE_SCHEMA/);
      } finally {
        await db.drop();
      }
    });
  });
}
