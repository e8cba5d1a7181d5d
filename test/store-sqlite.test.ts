import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../src/store/open.ts';
import { WalCheckpointer, WalFill } from '../src/store/sqlite/checkpointer.ts';
import { AUTOPILOT_QUERIES, SQLITE_FILE, SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { WalIndexWatch } from '../src/store/sqlite/wal-index.ts';
import { tempDir } from './helpers/tmp.ts';
import { claimWithAnOpenRequest, storeContract } from './store-contract.ts';

storeContract('sqlite', async () => {
  const { dir, remove } = tempDir();
  return { store: new SqliteStore({ dataDir: dir }), cleanup: remove };
});

describe('sqlite store', () => {
  it('migrates an empty directory once and then finds nothing to do', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const first = new SqliteStore({ dataDir: `${dir}/nested/data` });
    assert.ok(first.migrationsApplied >= 1);
    await first.close();
    const second = new SqliteStore({ dataDir: `${dir}/nested/data` });
    assert.equal(second.migrationsApplied, 0);
    await second.close();
  });

  it('refuses a store whose applied migration differs from the shipped one', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    await new SqliteStore({ dataDir: dir }).close();
    const db = new DatabaseSync(`${dir}/${SQLITE_FILE}`);
    db.exec("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1");
    db.close();
    assert.throws(() => new SqliteStore({ dataDir: dir }), { code: 'store_migration_changed' });
  });

  it('refuses a store migrated by a newer version', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    await new SqliteStore({ dataDir: dir }).close();
    const db = new DatabaseSync(`${dir}/${SQLITE_FILE}`);
    db.exec("INSERT INTO schema_migrations VALUES (9999, '9999-future.sql', 'x', 'now')");
    db.close();
    assert.throws(() => new SqliteStore({ dataDir: dir }), {
      code: 'store_too_new',
      message: /newer node-daemon/,
    });
  });

  it('flushes every commit only when asked: --sqlite-synchronous full, through openStore', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const normal = await openStore({ dataDir: dir, databaseUrl: undefined });
    assert.equal((normal as SqliteStore).synchronous, 'normal');
    await normal.close();
    const full = await openStore({ dataDir: dir, databaseUrl: undefined, sqliteSynchronous: 'full' });
    assert.equal((full as SqliteStore).synchronous, 'full');
    // The setting is the connection's, not the file's: a store opened again without it is back to normal.
    await full.close();
    const again = new SqliteStore({ dataDir: dir });
    assert.equal(again.synchronous, 'normal');
    await again.close();
  });

  it('uses WAL and has the indexes the read queries need (upstream B18)', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const store = new SqliteStore({ dataDir: dir });
    const db = new DatabaseSync(`${dir}/${SQLITE_FILE}`);
    assert.equal(db.prepare('PRAGMA journal_mode').get()?.journal_mode, 'wal');
    const plan = (sql: string) =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all()
        .map((r) => String(r.detail))
        .join(' | ');
    assert.match(
      plan('SELECT * FROM stacks WHERE selected_node_id = 1 ORDER BY stack_small_id'),
      /SEARCH stacks USING PRIMARY KEY/,
    );
    assert.doesNotMatch(
      plan('SELECT * FROM stacks WHERE selected_node_id = 1 ORDER BY stack_small_id'),
      /TEMP B-TREE/,
    );
    assert.match(
      plan(
        'SELECT * FROM stack_settlement_tickets WHERE selected_node_id = 1 AND is_claimed = 1 ORDER BY stack_small_id',
      ),
      /USING INDEX stack_settlement_tickets_claimed_by_node/,
    );
    assert.match(
      plan('SELECT * FROM stack_attestation_disputes WHERE original_node_id = 1 ORDER BY stack_small_id'),
      /USING INDEX stack_attestation_disputes_against/,
    );
    assert.match(
      plan('SELECT * FROM stack_attestation_disputes WHERE attestation_node_id = 1 ORDER BY stack_small_id'),
      /USING INDEX stack_attestation_disputes_own/,
    );
    assert.match(
      plan('SELECT * FROM node_subscriptions WHERE node_small_id = 1'),
      /SEARCH node_subscriptions USING PRIMARY KEY/,
    );
    // The autopilot's questions are one index range each, whatever the number of stacks: on an empty
    // store, and with the statistics PRAGMA optimize leaves on a store where one node holds most stacks
    // (with them, the planner preferred the node's whole primary-key range: DECISIONS.md, "Each autopilot
    // question is one index range, whatever the statistics").
    const expected: Record<keyof typeof AUTOPILOT_QUERIES, RegExp[]> = {
      settleCandidates: [/USING INDEX stacks_open_by_fill/, /USING INDEX stacks_open_by_last_usage/],
      oldestUsage: [/USING (COVERING )?INDEX stacks_open_by_last_usage/],
      claimable: [/USING INDEX stack_settlement_tickets_claimable/],
      requests: [/USING (COVERING )?INDEX attestation_requests_open/],
    };
    const checkAutopilot = (when: string) => {
      for (const [name, sql] of Object.entries(AUTOPILOT_QUERIES)) {
        const text = plan(sql.replaceAll(/\?\d/g, '1'));
        for (const pattern of expected[name as keyof typeof AUTOPILOT_QUERIES]) {
          assert.match(text, pattern, `${name}, ${when}: ${text}`);
        }
        assert.doesNotMatch(
          text,
          /SCAN (stacks|stack_settlement_tickets|attestation_requests|stack_hashes)\b|USING PRIMARY KEY \(selected_node_id=\?\)/,
          `${name}, ${when}`,
        );
      }
    };
    checkAutopilot('empty');
    db.exec(`WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 20000)
      INSERT INTO stacks (selected_node_id, stack_small_id, stack_id, owner_address, task_small_id,
        num_compute_units, price_per_one_million_compute_units, already_computed_units, in_settle_period,
        is_claimed, last_usage_at, fill_ppm)
      SELECT CASE WHEN n % 10 < 7 THEN 1 ELSE n % 10 END, n, 'x', 'y', 1, 100, 1, n % 90, n % 3 = 0, n % 3 = 0,
        CASE WHEN n % 3 = 1 THEN n END, (n % 90) * 10000 FROM i`);
    db.exec(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id, num_claimed_compute_units,
        is_claimed, claimable_from_epoch) SELECT stack_small_id, selected_node_id, 1, stack_small_id % 100 > 0, 5
      FROM stacks WHERE in_settle_period = 1`);
    db.exec(`INSERT INTO attestation_requests SELECT stack_small_id, 0, 1, 0 FROM stack_settlement_tickets
      WHERE is_claimed = 0 AND selected_node_id > 1`);
    db.exec(
      `INSERT INTO stack_hashes SELECT stack_small_id, x'00', 1 FROM stacks WHERE last_usage_at IS NOT NULL`,
    );
    db.exec('PRAGMA optimize');
    assert.ok(Number(db.prepare('SELECT count(*) AS n FROM sqlite_stat1').get()?.n) > 0, 'statistics');
    checkAutopilot('with statistics');
    db.close();
    await store.close();
  });

  it('deletes the requests of a claimed ticket, and migration 0006 those that older claims left', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    let store = new SqliteStore({ dataDir: dir });
    await claimWithAnOpenRequest(store);
    const db = new DatabaseSync(`${dir}/${SQLITE_FILE}`);
    const requests = () =>
      db
        .prepare(
          'SELECT stack_small_id, slot, node_small_id, attested FROM attestation_requests ORDER BY 1, 2',
        )
        .all()
        .map((r) => Object.values(r));
    // Claimed stack 1 asks nothing more (node 4 never attested; the ticket says that 5 did); 2 still asks 4.
    const kept = [[2, 0, 4, 0]];
    assert.deepEqual(requests(), kept);
    await store.close();
    // A store from before 0006: the claim left stack 1's requests behind.
    db.exec('INSERT INTO attestation_requests VALUES (1, 0, 4, 0), (1, 1, 5, 1)');
    db.exec('DELETE FROM schema_migrations WHERE version = 6');
    store = new SqliteStore({ dataDir: dir });
    assert.equal(store.migrationsApplied, 1);
    assert.deepEqual(requests(), kept);
    db.close();
    await store.close();
  });

  it('keeps u64 values above 2^53 exact in the file itself', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const store = new SqliteStore({ dataDir: dir });
    await store.indexerTransaction(async (tx) => {
      await tx.putSubscription({
        node_small_id: 1,
        task_small_id: 2,
        price_per_one_million_compute_units: 18446744073709551615n,
        max_num_compute_units: 9007199254740991,
      });
    });
    const db = new DatabaseSync(`${dir}/${SQLITE_FILE}`);
    const row = db
      .prepare(
        'SELECT price_per_one_million_compute_units p, typeof(price_per_one_million_compute_units) tp, typeof(max_num_compute_units) tm FROM node_subscriptions',
      )
      .get();
    assert.deepEqual({ ...row }, { p: '18446744073709551615', tp: 'text', tm: 'integer' });
    db.close();
    await store.close();
  });

  it('checkpoints the WAL from a worker thread once it passes the threshold, not in a commit', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const store = new SqliteStore({ dataDir: dir, checkpointWalBytes: 64 * 1024 });
    const file = `${dir}/${SQLITE_FILE}`;
    const before = statSync(file).size;
    // About 1 MB of node events over ten transactions: the WAL passes 64 KB many times over, never the
    // writer's own threshold (its automatic checkpoint would put the pages in the file too).
    for (let i = 0; i < 10; i++) {
      await store.appendNodeEvents(
        Array.from({ length: 25 }, (_, j) => ({
          type: 'task_added' as const,
          node_small_id: null,
          data: { note: `${i}:${j}:${'x'.repeat(4000)}` },
        })),
      );
      // A pause as between a busy node's commits: the worker starts, and later commits land while its
      // checkpoints run.
      await sleep(2);
    }
    // Only a checkpoint writes pages into the database file itself; the worker's runs beside the writer.
    // With no commit after the burst, the checkpoints go on until they have copied every frame: a commit
    // that came while one ran (a slow fsync) is looked at again once it is done, not left for the next.
    const fill = new WalFill(file);
    const copiedAll = () => {
      const wal = fill.read();
      return wal !== undefined && wal.frames > 0 && wal.copied === wal.frames;
    };
    for (let waited = 0; !copiedAll() && waited < 10_000; waited += 20) await sleep(20);
    assert.ok(copiedAll(), `WAL ${JSON.stringify(fill.read())}, database file ${statSync(file).size} bytes`);
    assert.ok(statSync(file).size >= before + 900 * 1024, `database file ${statSync(file).size} bytes`);
    const all = { after: 0, limit: 1000, nodes: null, types: null };
    assert.equal((await store.listNodeEvents(all)).length, 250);
    // Once a checkpoint has taken every frame, the next commit starts the WAL over from its beginning. The
    // file is reused, not truncated (truncating it cost the writer's COMMIT 10 to 18 ms in the kernel), so
    // its size stays at its high-water mark while the WAL-index says how little it holds now.
    for (let waited = 0; (fill.bytes() ?? Infinity) >= 16 * 1024 && waited < 10_000; waited += 20) {
      await store.appendNodeEvents([{ type: 'task_added', node_small_id: null, data: { note: 'small' } }]);
      await sleep(20);
    }
    assert.ok((fill.bytes() ?? Infinity) < 16 * 1024, `WAL holds ${fill.bytes()} bytes`);
    assert.ok(statSync(`${file}-wal`).size >= 100 * 1024, `WAL file ${statSync(`${file}-wal`).size} bytes`);
    fill.close();
    const written = (await store.listNodeEvents(all)).length;
    await store.close();
    // Everything survives a reopen, and the worker ended with the store.
    const again = new SqliteStore({ dataDir: dir });
    assert.equal((await again.listNodeEvents(all)).length, written);
    await again.close();
  });

  it('starts the WAL over in every cycle under a steady run of small commits', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const threshold = 256 * 1024;
    const store = new SqliteStore({ dataDir: dir, checkpointWalBytes: threshold });
    const fill = new WalFill(`${dir}/${SQLITE_FILE}`);
    // Usage reports as a busy node sends them: one small transaction after another, the event loop free
    // between them, a checkpoint running beside the writer. The WAL must start over each time a checkpoint
    // has caught up, not grow while every commit asks for one more checkpoint.
    let most = 0;
    let restarts = 0;
    let last = 0;
    for (let i = 0; i < 4000; i++) {
      await store.appendNodeEvents([{ type: 'task_added', node_small_id: null, data: { note: `${i}` } }]);
      const bytes = fill.bytes() ?? 0;
      if (bytes < last) restarts++;
      last = bytes;
      most = Math.max(most, bytes);
      await new Promise((resolve) => setImmediate(resolve));
    }
    fill.close();
    const all = { after: 0, limit: 5000, nodes: null, types: null };
    assert.equal((await store.listNodeEvents(all)).length, 4000);
    await store.close();
    // 268 KB measured, also with three busy loops on two cores. 17 to 33 MB when the writer never waited;
    // 1.4 to 8 MB on a loaded machine when waits were cut at 50 ms and the worker started with its first
    // checkpoint (its start alone took 55 to 127 ms).
    assert.ok(most < 4 * threshold, `the WAL reached ${most} bytes against a threshold of ${threshold}`);
    assert.ok(restarts >= 3, `the WAL started over ${restarts} times`);
  });

  it('gives checkpoints back to the writer when the worker cannot open the database', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    // A directory where the database file should be: the worker's connection fails to open.
    const file = `${dir}/not-a-database`;
    mkdirSync(file);
    // A WAL-index header (two equal copies) saying the WAL holds one 4,096-byte page: over the threshold.
    const header = Buffer.alloc(48);
    header.writeUInt16LE(4096, 14);
    header.writeUInt32LE(1, 16);
    writeFileSync(`${file}-shm`, Buffer.concat([header, header]));
    let failed = 0;
    const checkpointer = new WalCheckpointer(file, () => failed++, 1024);
    checkpointer.afterCommit();
    for (let waited = 0; failed === 0 && waited < 10_000; waited += 20) {
      await sleep(20);
      checkpointer.afterCommit();
    }
    assert.equal(failed, 1);
    checkpointer.afterCommit();
    assert.equal(failed, 1);
    await checkpointer.close();
  });

  it('lets a process exit with its checkpoint worker started and the store left open', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    // A script that writes past the threshold (the worker starts and checkpoints) and then simply ends.
    const script = `
      import { SqliteStore } from ${JSON.stringify(new URL('../src/store/sqlite/sqlite-store.ts', import.meta.url).href)};
      const store = new SqliteStore({ dataDir: ${JSON.stringify(`${dir}/data`)}, checkpointWalBytes: 64 * 1024 });
      for (let i = 0; i < 5; i++) {
        await store.appendNodeEvents(Array.from({ length: 25 }, () => (
          { type: 'task_added', node_small_id: null, data: { note: 'x'.repeat(4000) } })));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      process.stdout.write('written');
    `;
    // From a file: a script given with -e exits at its end even with a handle open.
    writeFileSync(`${dir}/script.mjs`, script);
    const child = spawn(process.execPath, [`${dir}/script.mjs`], { stdio: 'pipe' });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk));
    const exit = await Promise.race([
      once(child, 'exit').then(([code]) => code as number | null),
      sleep(15_000).then(() => 'still running'),
    ]);
    child.kill();
    assert.equal(out, 'written');
    assert.equal(exit, 0);
  });

  it("moves its data version on another process's commit, seen in the WAL index without a read transaction", async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const store = new SqliteStore({ dataDir: dir });
    t.after(() => store.close());
    const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    const before = await store.dataVersion();
    assert.match(before, /^w/, 'read from the WAL index, not with PRAGMA data_version');
    await nextTurn();
    assert.equal(await store.dataVersion(), before, 'nothing committed: the same version');
    assert.deepEqual(await store.listTasks(), []);
    // `node-daemon replay` into the data dir of a store that stays open, as OPERATIONS.md allows.
    const child = spawn(
      process.execPath,
      [
        new URL('../src/main.ts', import.meta.url).pathname,
        'replay',
        new URL('fixtures/events.jsonl', import.meta.url).pathname,
        '--data-dir',
        dir,
      ],
      { stdio: 'pipe' },
    );
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    await nextTurn();
    const after = await store.dataVersion();
    assert.notEqual(after, before, "the other process's commits moved it");
    assert.match(after, /^w/);
    assert.equal((await store.listTasks()).length, 6, 'and its rows are there to read');
    // This process's own commit moves it too, and the watch, checking that it did, stays on.
    const open = (await store.listStacks(1)).find((s) => !s.in_settle_period && !s.is_claimed);
    assert.ok(open, 'the fixture leaves node 1 an open stack');
    assert.equal((await store.addStackUsage(open.stack_small_id, 1, undefined, 1)).status, 'recorded');
    const own = await store.dataVersion();
    assert.notEqual(own, after);
    assert.match(own, /^w/);
  });

  it('watches the WAL index only while commits move it, and not at all without one', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const file = `${dir}/watched.sqlite`;
    assert.equal(WalIndexWatch.open(file), undefined, 'no database, no WAL index');
    const db = new DatabaseSync(file);
    t.after(() => db.close());
    db.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x)');
    const watch = WalIndexWatch.open(file)!;
    t.after(() => watch.close());
    const first = watch.version();
    assert.equal(watch.version(), first);
    db.exec('INSERT INTO t VALUES (1)');
    const second = watch.version();
    assert.notEqual(second, first, 'a commit moves the header');
    watch.committed(first);
    assert.equal(watch.active, true, 'a commit since `first` was seen');
    // A commit that left the header as it was: the watch cannot be trusted, and turns off for good.
    watch.committed(watch.version());
    assert.equal(watch.active, false);
    assert.equal(watch.version(), undefined);
  });

  it('ships migrations that are plain SQL files, numbered from 0001', () => {
    const sql = readFileSync(
      new URL('../src/store/sqlite/migrations/0001-initial.sql', import.meta.url),
      'utf8',
    );
    assert.match(sql, /CREATE TABLE stacks/);
  });
});
