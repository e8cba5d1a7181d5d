import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { EventPage, RawEvent } from '../src/chain/chain.ts';
import { applyPage } from '../src/indexer/apply.ts';
import { backoffDelay } from '../src/internal/backoff.ts';
import { decodeEvent, readEnvelope } from '../src/protocol/events.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { captureLogger } from './helpers/capture-log.ts';
import {
  bytes,
  event,
  hexId,
  inner,
  node,
  type SuiEventJson,
  stack,
  subscribe,
  task,
  trySettle,
} from './helpers/sui-events.ts';
import { tempDir } from './helpers/tmp.ts';

const page = (events: unknown[], nextCursor = 'c', hasMore = false): EventPage => ({
  events: events.map((raw, i): RawEvent => ({ position: `test:${i + 1}`, raw })),
  nextCursor,
  hasMore,
});

describe('indexer', () => {
  let store: SqliteStore;
  let remove: () => Promise<void>;
  let log: ReturnType<typeof captureLogger>;
  beforeEach(() => {
    const tmp = tempDir();
    remove = tmp.remove;
    store = new SqliteStore({ dataDir: tmp.dir });
    log = captureLogger();
  });
  afterEach(async () => {
    await store.close();
    await remove();
  });
  const apply = (events: unknown[], cursor = 'c') =>
    applyPage(store, 'test', page(events, cursor), log.logger);

  it('applies every kind of event to the read model', async () => {
    const operator = hexId('operator-1');
    const counts = await apply([
      event('PublishedEvent', { db: hexId('db'), manager_badge: hexId('mb') }),
      task(1, 2),
      task(2, 1),
      event('TaskDeprecationEvent', { task_id: hexId('t2'), task_small_id: inner(2), epoch: '7' }),
      node(1, operator),
      node(4),
      event('NodeSubscribedToModelEvent', {
        node_small_id: inner(1),
        model_name: 'llama',
        echelon_id: { id: '3' },
      }),
      subscribe(1, 1, 5_000_000),
      subscribe(4, 1),
      subscribe(1, 2),
      event('NodeSubscriptionUpdatedEvent', {
        node_small_id: inner(1),
        task_small_id: inner(1),
        price_per_one_million_compute_units: '6000000',
        max_num_compute_units: '1000000',
      }),
      event('NodeUnsubscribedFromTaskEvent', { task_small_id: inner(2), node_small_id: inner(1) }),
      stack(10, 1, 1, 1000),
      stack(11, 1, 2, 500),
      trySettle(10, 1, [4], 800),
      event('NewStackSettlementAttestationEvent', {
        stack_small_id: inner(10),
        attestation_node_id: inner(4),
        committed_stack_proof: bytes(32, 7),
        stack_merkle_leaf: bytes(32, 40),
      }),
      event('StackSettlementTicketEvent', {
        stack_small_id: inner(10),
        selected_node_id: inner(1),
        num_claimed_compute_units: '800',
        requested_attestation_nodes: [inner(4)],
        dispute_settled_at_epoch: '8',
        committed_stack_proof: bytes(32, 7),
      }),
      event('StackSettlementTicketClaimedEvent', {
        stack_small_id: inner(10),
        selected_node_id: inner(1),
        attestation_nodes: [inner(4)],
        num_claimed_compute_units: '800',
        user_refund_amount: '400',
      }),
      event('ClaimedStackEvent', {
        stack_small_id: inner(11),
        selected_node_id: inner(1),
        num_claimed_compute_units: '100',
        user_refund_amount: '18446744073709551615',
      }),
      event('StackAttestationDisputeEvent', {
        stack_small_id: inner(10),
        attestation_commitment: bytes(32, 1),
        attestation_node_id: inner(4),
        original_node_id: inner(1),
        original_commitment: bytes(32, 7),
      }),
      event('TaskRemovedEvent', { task_id: hexId('t2'), task_small_id: inner(2), removed_at_epoch: '9' }),
    ]);
    assert.deepEqual(counts, {
      applied: 20,
      duplicate: 0,
      ignored: 1,
      unknown: 0,
      malformed: 0,
      orphaned: 0,
    });

    const tasks = await store.listTasks();
    assert.deepEqual(
      tasks.map((t) => [
        t.task_small_id,
        t.security_level,
        t.is_deprecated,
        t.deprecated_at_epoch,
        t.is_removed,
      ]),
      [
        [1, 2, false, null, false],
        [2, 1, true, 7, true],
      ],
    );
    assert.equal(tasks[0]?.task_id, hexId('task-1'));
    assert.deepEqual(
      (await store.listSubscriptions(1)).map((s) => [s.task_small_id, s.price_per_one_million_compute_units]),
      [[1, 6_000_000]],
    );
    const stacks = await store.listStacks(1);
    assert.deepEqual(
      stacks.map((s) => [
        s.stack_small_id,
        s.in_settle_period,
        s.is_claimed,
        s.is_confidential,
        s.user_refund_amount,
      ]),
      [
        [10, true, true, false, 400],
        [11, false, true, true, 18446744073709551615n],
      ],
    );
    assert.equal(stacks[0]?.owner_address, hexId('user'));
    const claimed = await store.listClaimedStacks(1);
    assert.deepEqual(
      claimed.map((c) => [
        c.stack_small_id,
        c.claim_path,
        c.dispute_settled_at_epoch,
        c.already_attested_nodes,
      ]),
      [
        [10, 'settlement_ticket', 8, '[4]'],
        [11, 'confidential_compute', null, '[]'],
      ],
    );
    assert.deepEqual(claimed[0]?.stack_merkle_leaves, [...bytes(32, 9), ...bytes(32, 40)]);
    assert.equal(claimed[0]?.is_in_dispute, true);
    assert.deepEqual(
      (await store.listDisputesAgainst(1)).map((d) => d.attestation_node_id),
      [4],
    );
    assert.deepEqual(
      (await store.listDisputesOwn(4)).map((d) => d.original_node_id),
      [1],
    );
    assert.equal((await store.getCursor('test'))?.cursor, 'c');
  });

  it('applies an event once: a page replayed, or an event repeated within a page, is a duplicate', async () => {
    const events = [task(1), node(1), subscribe(1, 1), stack(1, 1)];
    assert.equal((await apply(events)).applied, 4);
    const version = await store.dataVersion();
    const again = await apply(events, 'c');
    assert.deepEqual(again, { applied: 0, duplicate: 4, ignored: 0, unknown: 0, malformed: 0, orphaned: 0 });
    const repeated = stack(2, 1);
    assert.deepEqual((await apply([repeated, repeated])).duplicate, 1);
    assert.deepEqual(
      (await store.listStacks(1)).map((s) => s.stack_small_id),
      [1, 2],
    );
    assert.notEqual(version, await store.dataVersion());
    const cursor = await store.getCursor('test');
    assert.deepEqual([cursor?.applied, cursor?.duplicate], [5, 5]);
  });

  it("records a stack's creation by its row, not its key, and counts a creation claimed by key before as a duplicate", async () => {
    const assigned = async () =>
      (await store.listNodeEvents({ after: 0, limit: 100, nodes: null, types: ['stack_assigned'] })).map(
        (e) => Number(JSON.parse(e.data).stack_small_id),
      );
    // A store from before migration 0008: the creation's key claimed beside the stack's insert.
    const before = stack(3, 1);
    const decoded = decodeEvent(before);
    if (decoded.kind !== 'event' || decoded.event.name !== 'StackCreatedEvent') throw new Error('a stack');
    const { owner, ...created } = decoded.event.payload;
    await store.indexerTransaction(async (tx) => {
      await tx.claimEvents([decoded.envelope.key]);
      await tx.putStack({ ...created, owner_address: owner });
    });
    const after = stack(4, 1);
    assert.deepEqual(await apply([before, after]), {
      applied: 1,
      duplicate: 1,
      ignored: 0,
      unknown: 0,
      malformed: 0,
      orphaned: 0,
    });
    assert.deepEqual(await assigned(), [4], 'no node event for the stack created before');
    // Stack 4's key was not claimed: its row records it, and the event given again is a duplicate.
    const key = readEnvelope(after).key;
    assert.equal(await store.hasEvents([{ key }]), false);
    assert.equal(await store.hasEvents([{ key, createdStack: 4 }]), true);
    assert.equal((await apply([after], 'd')).duplicate, 1);
    assert.deepEqual(await assigned(), [4]);
  });

  it("counts a dispute as the last attestation's failed check only inside the attestation window", async () => {
    const dispute = (stackId: number) =>
      event('StackAttestationDisputeEvent', {
        stack_small_id: inner(stackId),
        attestation_commitment: bytes(32, 7), // the settler's own proof, as the failed final check reports
        attestation_node_id: inner(4),
        original_node_id: inner(1),
        original_commitment: bytes(32, 7),
      });
    // Settled in epoch 7: attestations are accepted up to epoch 8 (contracts.md §2.7).
    const timed = (events: [unknown, number][]): EventPage => ({
      events: events.map(([raw, epoch], i) => ({ position: `test:${i + 1}`, raw, epoch })),
      nextCursor: 'c',
      hasMore: false,
    });
    await applyPage(
      store,
      'test',
      timed([
        [task(1, 2), 7],
        [node(1), 7],
        [stack(20, 1, 1, 1000), 7],
        [stack(21, 1, 1, 1000), 7],
        [trySettle(20, 1, [4]), 7],
        [trySettle(21, 1, [4]), 7],
        [dispute(20), 8],
        [dispute(21), 9],
      ]),
      log.logger,
    );
    const inWindow = await store.getTicket(20);
    assert.deepEqual([inWindow?.already_attested_nodes, inWindow?.is_in_dispute], ['[4]', true]);
    const late = await store.getTicket(21);
    assert.deepEqual([late?.already_attested_nodes, late?.is_in_dispute], ['[]', true]);
  });

  it('survives orders the chain allows when indexing starts mid-history', async () => {
    const counts = await apply([
      // A price update before its subscription and before the task.
      event('NodeSubscriptionUpdatedEvent', {
        node_small_id: inner(3),
        task_small_id: inner(8),
        price_per_one_million_compute_units: '9',
        max_num_compute_units: '1000000',
      }),
      // An attestation for a try-settle never seen: nothing to attach it to.
      event('NewStackSettlementAttestationEvent', {
        stack_small_id: inner(50),
        attestation_node_id: inner(3),
        committed_stack_proof: bytes(32),
        stack_merkle_leaf: bytes(32),
      }),
      // Claims of stacks never seen created are still listed as claimed.
      event('StackSettlementTicketClaimedEvent', {
        stack_small_id: inner(51),
        selected_node_id: inner(3),
        attestation_nodes: [],
        num_claimed_compute_units: '10',
        user_refund_amount: '0',
      }),
      trySettle(52, 3),
      event('TaskDeprecationEvent', { task_id: hexId('x'), task_small_id: inner(8), epoch: '1' }),
      event('NodeUnsubscribedFromTaskEvent', { task_small_id: inner(99), node_small_id: inner(3) }),
      task(8),
    ]);
    assert.deepEqual(counts, { applied: 4, duplicate: 0, ignored: 0, unknown: 0, malformed: 0, orphaned: 3 });
    assert.deepEqual(
      (await store.listSubscriptions(3)).map((s) => [s.task_small_id, s.price_per_one_million_compute_units]),
      [[8, 9]],
    );
    assert.deepEqual(
      (await store.listClaimedStacks(3)).map((c) => c.stack_small_id),
      [51],
    );
    assert.equal((await store.listTasks())[0]?.is_deprecated, false, 'the deprecation came before the task');
  });

  it('skips and logs malformed events with their position, applying the rest of the page', async () => {
    const good = task(1);
    const broken: unknown[] = [
      { ...stack(2, 1), parsedJson: { ...(stack(2, 1).parsedJson as object), num_compute_units: '-5' } },
      { ...stack(3, 1), parsedJson: { ...(stack(3, 1).parsedJson as object), num_compute_units: '1e3' } },
      {
        ...stack(4, 1),
        parsedJson: { ...(stack(4, 1).parsedJson as object), num_compute_units: '18446744073709551616' },
      },
      { ...stack(5, 1), parsedJson: { ...(stack(5, 1).parsedJson as object), selected_node_id: 5 } },
      {
        ...trySettle(6, 1),
        parsedJson: { ...(trySettle(6, 1).parsedJson as object), stack_merkle_leaf: [256] },
      },
      { ...task(7), id: { txDigest: 'not base58 0OIl', eventSeq: '0' } },
      { ...task(8), type: 'StackCreatedEvent' },
      { ...task(9), parsedJson: null },
      { ...node(10), sender: undefined },
      'a string',
      null,
      [],
    ];
    const items: RawEvent[] = [
      { position: 'file:1', raw: good },
      ...broken.map((raw, i) => ({ position: `file:${i + 2}`, raw })),
      { position: 'file:99', parseError: 'not JSON: Unexpected token' },
    ];
    const counts = await applyPage(
      store,
      'test',
      { events: items, nextCursor: '99', hasMore: false },
      log.logger,
    );
    assert.deepEqual(counts, {
      applied: 1,
      duplicate: 0,
      ignored: 0,
      unknown: 0,
      malformed: 13,
      orphaned: 0,
    });
    assert.equal((await store.listTasks()).length, 1);
    const warnings = log.lines().filter((l) => l.msg === 'malformed event skipped');
    assert.equal(warnings.length, 13);
    assert.deepEqual(
      warnings.map((w) => w.position),
      [...broken.map((_, i) => `file:${i + 2}`), 'file:99'],
    );
    assert.match(String(warnings[0]?.reason), /num_compute_units: expected a u64/);
    assert.match(String(warnings[3]?.reason), /selected_node_id: expected an object/);
    assert.match(String(warnings[4]?.reason), /stack_merkle_leaf\[0\]: expected a byte/);
  });

  it('counts unknown kinds and ignored db kinds without applying them', async () => {
    const counts = await apply([
      event('SomethingNewEvent', { a: 1 }),
      event('SomethingNewEvent', { a: 2 }),
      event('StackCreatedEvent', stack(1, 1).parsedJson, { module: 'gate' }),
      event('NewKeyRotationEvent', { key_rotation_counter: '1', epoch: '2', nonce: '3' }),
      task(1),
    ]);
    assert.deepEqual(counts, { applied: 1, duplicate: 0, ignored: 1, unknown: 3, malformed: 0, orphaned: 0 });
    assert.deepEqual(await store.listStacks(1), []);
    const warned = log.lines().filter((l) => l.msg?.toString().startsWith('unknown event kind'));
    assert.ok(warned.length <= 2, 'logged once per kind');
  });

  it('accepts the Option and newtype renderings Sui has used', async () => {
    const counts = await apply([
      task(1, 0, { model_name: { vec: ['m'] }, minimum_reputation_score: { vec: [] } }),
      task(2, 0, { model_name: null, minimum_reputation_score: 50, role: { inner: '3' } }),
    ]);
    assert.equal(counts.applied, 2);
    assert.deepEqual(
      (await store.listTasks()).map((t) => [t.model_name, t.minimum_reputation_score, t.role]),
      [
        ['m', null],
        [null, 50],
      ].map(([m, r], i) => [m, r, i === 0 ? 0 : 3]),
    );
  });

  it('is never stopped by what an event contains (random mutations of valid events)', async () => {
    const templates: SuiEventJson[] = [task(1), node(1), subscribe(1, 1), stack(1, 1), trySettle(1, 1, [2])];
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const junk = [null, -1, 1.5, '', 'x', [], {}, [300], { inner: '-1' }, '99999999999999999999999', true];
    const mutate = (value: unknown, depth: number): unknown => {
      if (depth > 3 || value === null || typeof value !== 'object') {
        return random() < 0.3 ? junk[Math.floor(random() * junk.length)] : value;
      }
      if (Array.isArray(value)) return value.map((v) => mutate(v, depth + 1));
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        if (random() < 0.05) continue;
        out[k] = mutate(v, depth + 1);
      }
      return out;
    };
    const events = Array.from({ length: 400 }, (_, i) => {
      const copy = structuredClone(templates[i % templates.length]!);
      copy.id.txDigest = `${copy.id.txDigest.slice(0, 40)}${'x'.repeat(4)}`;
      copy.id.eventSeq = String(i);
      return mutate(copy, 0);
    });
    const counts = await apply(events);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    assert.equal(total, 400);
    assert.ok(counts.malformed > 0);
  });

  it('backs off exponentially with jitter up to a cap', () => {
    const max = () => 0.999999;
    assert.ok(backoffDelay(1, 250, 30_000, max) < 501);
    assert.ok(backoffDelay(3, 250, 30_000, max) < 2001);
    assert.equal(backoffDelay(20, 250, 30_000, max), 29_999);
    assert.equal(
      backoffDelay(5, 250, 30_000, () => 0),
      125,
      'never zero: no hot loop',
    );
  });
});
