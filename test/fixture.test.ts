import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.ts';
import { FileEventSource } from '../src/indexer/file-source.ts';
import { catchUp } from '../src/indexer/run.ts';
import { createLogger } from '../src/internal/logger.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { openSecurity, TEST_APP_CONFIG } from './helpers/app-options.ts';
import { tempDir } from './helpers/tmp.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/events.jsonl', import.meta.url));

describe('the shipped fixture', () => {
  it('replays cleanly and every read endpoint answers from it', async () => {
    const lines = readFileSync(FIXTURE, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const kinds = lines.map((e: { type: string }) => e.type.split('::').at(-1));
    const { dir, remove } = tempDir();
    const store = new SqliteStore({ dataDir: dir });
    const logger = createLogger('silent');
    const source = new FileEventSource(FIXTURE);
    const { totals } = await catchUp(store, source, logger);
    await source.close();
    const ignored = kinds.filter((k) => k === 'PublishedEvent' || k === 'NewKeyRotationEvent').length;
    assert.deepEqual(totals, {
      applied: lines.length - ignored,
      duplicate: 0,
      ignored,
      unknown: 0,
      malformed: 0,
      orphaned: 0,
    });

    const app = await buildApp({ config: TEST_APP_CONFIG, store, logger, security: openSecurity(dir) });
    const get = async (url: string) => {
      const res = await app.inject({ url });
      assert.equal(res.statusCode, 200, url);
      return res.json() as Record<string, unknown>[];
    };
    const count = (kind: string, where: (p: Record<string, unknown>) => boolean) =>
      lines.filter(
        (e: { type: string; parsedJson: Record<string, unknown> }) =>
          e.type.endsWith(`::${kind}`) && where(e.parsedJson),
      ).length;
    const isNode1 = (field: string) => (p: Record<string, unknown>) =>
      (p[field] as { inner: string }).inner === '1';

    const tasks = await get('/tasks');
    assert.equal(
      tasks.length,
      count('TaskRegisteredEvent', () => true),
    );
    assert.ok(tasks.some((t) => t.is_removed === true) && tasks.some((t) => t.is_deprecated === true));
    const stacks = await get('/stacks/nodes/1');
    assert.equal(stacks.length, count('StackCreatedEvent', isNode1('selected_node_id')));
    assert.deepEqual(
      stacks.map((s) => s.stack_small_id),
      [...stacks.map((s) => s.stack_small_id as number)].sort((a, b) => a - b),
    );
    const claimed = await get('/claimed-stacks/nodes/1');
    assert.equal(
      claimed.length,
      count('StackSettlementTicketClaimedEvent', isNode1('selected_node_id')) +
        count('ClaimedStackEvent', isNode1('selected_node_id')),
    );
    assert.ok(claimed.some((c) => c.claim_path === 'confidential_compute'));
    assert.equal(
      (await get('/attestation_disputes/against/nodes/1')).length,
      count('StackAttestationDisputeEvent', isNode1('original_node_id')),
    );
    assert.equal(
      (await get('/attestation_disputes/own/nodes/1')).length,
      count('StackAttestationDisputeEvent', isNode1('attestation_node_id')),
    );
    assert.ok((await get('/subscriptions/nodes/1')).length > 0);
    await app.close();
    await store.close();
    await remove();
  });

  it('gives each line the cursor past it: a read from it goes on with the next line', async () => {
    const source = new FileEventSource(FIXTURE, 10);
    try {
      const page = await source.readPage(null);
      assert.equal(page.events.length, 10);
      assert.equal(page.events.at(-1)!.cursor, page.nextCursor);
      for (const k of [0, 4, 8]) {
        const next = await source.readPage(page.events[k]!.cursor!);
        assert.deepEqual(next.events[0], page.events[k + 1]);
      }
    } finally {
      await source.close();
    }
  });
});
