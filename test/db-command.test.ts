import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTestDatabase, postgresAvailable } from './helpers/postgres.ts';
import { run } from './helpers/process.ts';

describe('node-daemon db', async () => {
  it('needs PostgreSQL and says so in one line', async () => {
    const result = await run(['db', 'status']);
    assert.equal(result.code, 2);
    assert.match(result.stderr.trim(), /^node-daemon: db migrate and db status work on PostgreSQL/);
  });

  if (!(await postgresAvailable('node-daemon db migrate|status'))) return;

  it('lists pending migrations, applies them once, then reports up to date', async () => {
    const db = await createTestDatabase();
    assert.ok(db);
    try {
      const env = { DATABASE_URL: db.url };
      const pending = await run(['db', 'status'], env);
      assert.equal(pending.code, 0, pending.stderr);
      assert.match(pending.stdout, /^0001 {2}pending {2}0001-initial\.sql$/m);
      assert.match(pending.stdout, /^0002 {2}pending {2}0002-usage-and-idempotency\.sql$/m);
      const migrated = await run(['db', 'migrate'], env);
      assert.equal(migrated.code, 0, migrated.stderr);
      assert.match(migrated.stdout, /applied 0001-initial\.sql, 0002-usage-and-idempotency\.sql/);
      const applied = await run(['db', 'status'], env);
      assert.match(applied.stdout, /^0001 {2}applied {2}0001-initial\.sql/m);
      const again = await run(['db', 'migrate'], env);
      assert.match(again.stdout, /up to date/);
    } finally {
      await db.drop();
    }
  });
});
