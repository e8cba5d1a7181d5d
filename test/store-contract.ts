import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { stringifyJson } from '../src/internal/json.ts';
import type { U64 } from '../src/internal/u64.ts';
import { DEFAULT_PARAMETERS } from '../src/protocol/constants.ts';
import { EMPTY_HASH, extendHash, syntheticRequestHash } from '../src/protocol/proofs.ts';
import { PIECE_OBJECTS } from '../src/store/stack-list/body.ts';
import {
  type ClaimContext,
  IDEMPOTENCY_TTL_MS,
  type IndexerTx,
  type NewStack,
  type NewTask,
  type Page,
  type Store,
  type TicketClaimed,
  type TrySettle,
  topics,
} from '../src/store/store.ts';

const REQUEST = new Uint8Array(32).fill(3);

/**
 * Node 2's stack 1 asks nodes 4 and 5 to attest; 5 does, 4 never does, and the ticket is claimed. Its stack 2
 * asks node 4 and is not claimed. For the engine tests that check which request rows the store keeps.
 */
export async function claimWithAnOpenRequest(store: Store): Promise<void> {
  const hash = new Uint8Array(32).fill(7);
  await store.indexerTransaction(async (tx) => {
    for (const [id, requested] of [
      [1, [4, 5]],
      [2, [4]],
    ] as const) {
      await tx.putStack({
        stack_small_id: id,
        stack_id: `0x${String(id).padStart(64, '0')}`,
        owner_address: `0x${'ab'.repeat(32)}`,
        task_small_id: 1,
        selected_node_id: 2,
        num_compute_units: 1000,
        price_per_one_million_compute_units: 1_000_000,
      });
      await tx.putTicket(
        {
          stack_small_id: id,
          selected_node_id: 2,
          requested_attestation_nodes: [...requested],
          committed_stack_proof: hash,
          stack_merkle_leaf: hash,
          num_claimed_compute_units: 700,
        },
        7,
      );
    }
    await tx.recordAttestation({
      stack_small_id: 1,
      attestation_node_id: 5,
      committed_stack_proof: hash,
      stack_merkle_leaf: hash,
    });
    await tx.claimTicket(
      {
        stack_small_id: 1,
        selected_node_id: 2,
        attestation_nodes: [4, 5],
        num_claimed_compute_units: 700,
        user_refund_amount: 300,
      },
      { epoch: 9, node_fee_amount: 700 },
    );
  });
}

/**
 * The store contract: what every engine must do, run against each driver (SQLite here; PostgreSQL when
 * its driver lands). It goes through the public Store interface only.
 */
export function storeContract(
  engine: string,
  open: () => Promise<{ store: Store; cleanup: () => Promise<void> }>,
) {
  describe(`store contract: ${engine}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeEach(async () => {
      ({ store, cleanup } = await open());
    });
    afterEach(async () => {
      await store.close();
      await cleanup();
    });

    const write = (fn: (tx: IndexerTx) => Promise<void>) => store.indexerTransaction(fn);
    const U64_MAX = 18446744073709551615n;
    const ABOVE_SAFE = 9007199254740993n;

    const newTask = (id: U64, level = 0): NewTask => ({
      task_small_id: id,
      task_id: `0x${'1'.padStart(64, '0')}`,
      role: 0,
      model_name: 'llama',
      security_level: level,
      minimum_reputation_score: null,
    });
    const newStack = (id: U64, node: U64, units: U64 = 1000, task: U64 = 1): NewStack => ({
      stack_small_id: id,
      stack_id: `0x${String(id).padStart(64, '0')}`,
      owner_address: `0x${'ab'.repeat(32)}`,
      task_small_id: task,
      selected_node_id: node,
      num_compute_units: units,
      price_per_one_million_compute_units: 2_000_000,
    });
    const proof = new Uint8Array(32).fill(7);
    const leaf = new Uint8Array(32).fill(9);
    /** A try-settle of the stack by its node, asking no attestation. */
    const settlement = (stack: U64, node: U64, claimed: U64): TrySettle => ({
      stack_small_id: stack,
      selected_node_id: node,
      requested_attestation_nodes: [],
      committed_stack_proof: proof,
      stack_merkle_leaf: leaf,
      num_claimed_compute_units: claimed,
    });
    /** A claim of the stack's settlement ticket by its node, with no attesters. */
    const ticketClaim = (stack: U64, node: U64, claimed: U64, refund: U64): TicketClaimed => ({
      stack_small_id: stack,
      selected_node_id: node,
      attestation_nodes: [],
      num_claimed_compute_units: claimed,
      user_refund_amount: refund,
    });
    /** Node 1's list is exactly its rows, written as JSON. */
    const listIsRows = async (step: string) =>
      assert.equal(
        (await store.listStacksJson(1)).body.toString(),
        stringifyJson(await store.listStacks(1)),
        step,
      );

    it('lists tasks in small-id order, u64 ids above 2^53 included and exact', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(U64_MAX));
        await tx.putTask(newTask(3));
        await tx.putTask(newTask(ABOVE_SAFE));
        await tx.putTask(newTask(1, 2));
      });
      const tasks = await store.listTasks();
      assert.deepEqual(
        tasks.map((t) => t.task_small_id),
        [1, 3, ABOVE_SAFE, U64_MAX],
      );
      assert.deepEqual(tasks[0], {
        task_small_id: 1,
        task_id: `0x${'1'.padStart(64, '0')}`,
        role: 0,
        model_name: 'llama',
        is_deprecated: false,
        valid_until_epoch: null,
        deprecated_at_epoch: null,
        security_level: 2,
        minimum_reputation_score: null,
        is_removed: false,
        removed_at_epoch: null,
      });
    });

    it('keeps the first registration of a task and deprecates and removes it', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(5));
        await tx.putTask({ ...newTask(5), model_name: 'other' });
        await tx.putSubscription({
          node_small_id: 1,
          task_small_id: 5,
          price_per_one_million_compute_units: 10,
          max_num_compute_units: 1_000_000,
        });
      });
      assert.equal((await store.listTasks())[0]?.model_name, 'llama');
      let found = false;
      let subscribers: U64[] = [];
      await write(async (tx) => {
        // A subscription of this same transaction counts (PostgreSQL sends its waiting writes first).
        await tx.putSubscription({
          node_small_id: ABOVE_SAFE,
          task_small_id: 5,
          price_per_one_million_compute_units: 10,
          max_num_compute_units: 1_000_000,
        });
        found = await tx.deprecateTask(5, U64_MAX);
        subscribers = await tx.taskSubscribers(5);
        assert.deepEqual(await tx.taskSubscribers(6), []);
      });
      assert.equal(found, true);
      assert.deepEqual(subscribers.map(String).sort(), ['1', String(ABOVE_SAFE)].sort());
      assert.deepEqual(
        (await store.listTasks()).map((t) => [t.is_deprecated, t.deprecated_at_epoch]),
        [[true, U64_MAX]],
      );
      await write(async (tx) => {
        found = await tx.removeTask(5, 12);
      });
      assert.equal(found, true);
      const [removed] = await store.listTasks();
      assert.equal(removed?.is_removed, true);
      assert.equal(removed?.removed_at_epoch, 12);
      assert.equal((await store.listSubscriptions(1))[0]?.valid, false);
      await write(async (tx) => {
        found = await tx.deprecateTask(99, 1);
      });
      assert.equal(found, false);
    });

    it('upserts, lists and deletes subscriptions per node in task order', async () => {
      await write(async (tx) => {
        for (const task of [7, 2, 4]) {
          await tx.putSubscription({
            node_small_id: 1,
            task_small_id: task,
            price_per_one_million_compute_units: U64_MAX,
            max_num_compute_units: 1_000_000,
          });
        }
        await tx.putSubscription({
          node_small_id: 2,
          task_small_id: 2,
          price_per_one_million_compute_units: 5,
          max_num_compute_units: 1_000_000,
        });
        await tx.putSubscription({
          node_small_id: 1,
          task_small_id: 4,
          price_per_one_million_compute_units: 42,
          max_num_compute_units: 1_000_000,
        });
      });
      const subs = await store.listSubscriptions(1);
      assert.deepEqual(
        subs.map((s) => [s.task_small_id, s.price_per_one_million_compute_units, s.valid]),
        [
          [2, U64_MAX, true],
          [4, 42, true],
          [7, U64_MAX, true],
        ],
      );
      let deleted = false;
      await write(async (tx) => {
        deleted = await tx.deleteSubscription(1, 4);
      });
      assert.equal(deleted, true);
      assert.deepEqual(
        (await store.listSubscriptions(1)).map((s) => s.task_small_id),
        [2, 7],
      );
      await write(async (tx) => {
        deleted = await tx.deleteSubscription(1, 4);
      });
      assert.equal(deleted, false);
      assert.deepEqual(await store.listSubscriptions(3), []);
    });

    it('lists stacks of one node in stack order, with confidentiality from the task', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1, 1));
        await tx.putStack(newStack(30, 1));
        await tx.putStack(newStack(10, 1));
        await tx.putStack(newStack(20, 2));
        await tx.putStack({ ...newStack(10, 1), num_compute_units: 5 });
        await tx.putStack(newStack(40, 1, 1000, 9));
      });
      const stacks = await store.listStacks(1);
      assert.deepEqual(
        stacks.map((s) => s.stack_small_id),
        [10, 30, 40],
      );
      assert.deepEqual(stacks[0], {
        owner_address: `0x${'ab'.repeat(32)}`,
        stack_small_id: 10,
        stack_id: `0x${'10'.padStart(64, '0')}`,
        task_small_id: 1,
        selected_node_id: 1,
        num_compute_units: 1000,
        price_per_one_million_compute_units: 2_000_000,
        already_computed_units: 0,
        in_settle_period: false,
        num_total_messages: 0,
        is_claimed: false,
        is_locked_for_claim: false,
        is_confidential: true,
        user_refund_amount: null,
      });
      assert.equal(stacks[2]?.is_confidential, false, 'unknown task: not confidential');
      assert.deepEqual(
        (await store.listStacks(2)).map((s) => s.stack_small_id),
        [20],
      );
    });

    it('filters by fill fraction inclusively, zero capacity counting as full', async () => {
      await write(async (tx) => {
        await tx.putStack(newStack(1, 1, 1000));
        await tx.putStack(newStack(2, 1, 1000));
        await tx.putStack(newStack(3, 1, 0));
        await tx.putStack(newStack(4, 1, 3));
        await tx.putStack(newStack(5, 1, U64_MAX));
      });
      assert.equal((await store.addStackUsage(1, 800, REQUEST, Date.now())).status, 'recorded');
      assert.equal((await store.addStackUsage(2, 799, REQUEST, Date.now())).status, 'recorded');
      assert.equal((await store.addStackUsage(4, 1, REQUEST, Date.now())).status, 'recorded');
      assert.equal((await store.addStackUsage(5, 2n ** 63n, REQUEST, Date.now())).status, 'recorded');
      const ids = async (f?: number) => (await store.listStacks(1, f)).map((s) => s.stack_small_id);
      assert.deepEqual(await ids(), [1, 2, 3, 4, 5]);
      assert.deepEqual(await ids(0), [1, 2, 3, 4, 5]);
      assert.deepEqual(await ids(0.8), [1, 3]);
      assert.deepEqual(await ids(1 / 3), [1, 2, 3, 4, 5]);
      assert.deepEqual(await ids(0.5), [1, 2, 3, 5]);
      assert.deepEqual(await ids(1), [3]);
      const [big] = (await store.listStacks(1)).filter((s) => s.stack_small_id === 5);
      assert.equal(big?.already_computed_units, 2n ** 63n);
      assert.equal(big?.num_compute_units, U64_MAX);
    });

    it('writes a stack list as JSON exactly as the rows say, and pages it', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1, 1));
        await tx.putStack(newStack(ABOVE_SAFE, 1, U64_MAX));
        await tx.putStack(newStack(2, 1, 0));
        await tx.putStack(newStack(7, 1, 1000));
        await tx.putStack(newStack(9, 2, 1000));
        await tx.putTicket(
          {
            stack_small_id: 7,
            selected_node_id: 1,
            requested_attestation_nodes: [],
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 600,
          },
          3,
        );
        await tx.claimTicket(
          {
            stack_small_id: 7,
            selected_node_id: 1,
            attestation_nodes: [],
            num_claimed_compute_units: 600,
            user_refund_amount: 800,
          },
          { epoch: 4, node_fee_amount: 1200 },
        );
      });
      assert.equal((await store.addStackUsage(ABOVE_SAFE, 2n ** 63n + 5n, REQUEST, 1)).status, 'recorded');
      const rows = await store.listStacks(1);
      const json = await store.listStacksJson(1);
      // The same bytes as the rows written as JSON (the serializer's field order), u64 digits exact.
      assert.equal(json.body.toString(), stringifyJson(rows));
      assert.match(json.body.toString(), /"already_computed_units":9223372036854775813,/);
      assert.match(
        json.body.toString(),
        /"is_claimed":true,"is_locked_for_claim":false,"is_confidential":true,"user_refund_amount":800\}/,
      );
      assert.deepEqual([json.count, json.last, json.more], [3, ABOVE_SAFE, false]);
      assert.equal(
        (await store.listStacksJson(1, 0.5)).body.toString(),
        stringifyJson(await store.listStacks(1, 0.5)),
      );
      // A page: after an id, at most n rows, and whether more remain.
      const page = await store.listStacksJson(1, undefined, { after: 2, limit: 1 });
      assert.deepEqual(
        [JSON.parse(page.body.toString())[0].stack_small_id, page.count, page.last, page.more],
        [7, 1, 7, true],
      );
      const end = await store.listStacksJson(1, undefined, { after: 7, limit: 1 });
      assert.deepEqual([end.count, end.last, end.more], [1, ABOVE_SAFE, false]);
      const none = await store.listStacksJson(3);
      assert.deepEqual([none.body.toString(), none.count, none.last, none.more], ['[]', 0, null, false]);
      assert.deepEqual(
        (await store.listStacks(1, undefined, { after: 2, limit: 5 })).map((s) => s.stack_small_id),
        [7, ABOVE_SAFE],
      );
    });

    it('chooses a filtered list or a page from a kept list exactly as its queries select them', async () => {
      // Fills on, just under and just over the fractions asked; a stack of no units counts as full.
      const shapes: [U64, U64, U64][] = [
        [1, 0, 0],
        [2, 10, 1],
        [3, 3, 1],
        [4, 1000, 900],
        [5, 1000, 899],
        [6, 7, 7],
        [8, 1000, 0],
        [ABOVE_SAFE, 2n ** 63n, 2n ** 62n + 1n],
      ];
      await write(async (tx) => {
        await tx.putTask(newTask(1, 1));
        for (const [id, units] of shapes) await tx.putStack(newStack(id, 1, units));
      });
      for (const [id, , used] of shapes) {
        if (BigInt(used) > 0n)
          assert.equal((await store.addStackUsage(id, used, REQUEST, 1)).status, 'recorded');
      }
      const fractions = [undefined, 0, 0.1, 1 / 3, 0.34, 0.5, 0.899, 0.9, 0.9000001, 1];
      const pages: Page[] = [
        {},
        { limit: 1 },
        { after: 1, limit: 2 },
        { after: 3 },
        { after: 7, limit: 100 },
      ];
      pages.push({ after: 8, limit: 1 }, { after: ABOVE_SAFE }, { limit: 3 });
      const check = async (step: string) => {
        await store.listStacksJson(1); // the node's whole list, kept
        for (const fraction of fractions) {
          for (const page of pages) {
            const what = `${step}: fill ${fraction}, page ${JSON.stringify(page, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`;
            const all = await store.listStacks(1, fraction, { after: page.after });
            const rows = page.limit === undefined ? all : all.slice(0, page.limit);
            const got = await store.listStacksJson(1, fraction, page);
            assert.equal(got.body.toString(), stringifyJson(rows), what);
            assert.deepEqual(
              [got.count, got.last, got.more],
              [rows.length, rows.at(-1)?.stack_small_id ?? null, rows.length < all.length],
              what,
            );
          }
        }
      };
      await check('as indexed');
      // Reports move fills across the fractions: 5 to 0.9, 8 from empty to 0.5.
      assert.equal((await store.addStackUsage(5, 1, new Uint8Array(32).fill(4), 2)).status, 'recorded');
      assert.equal((await store.addStackUsage(8, 500, new Uint8Array(32).fill(5), 2)).status, 'recorded');
      await check('after reports');
      assert.deepEqual(
        JSON.parse((await store.listStacksJson(1, 0.9)).body.toString()).map(
          (s: { stack_small_id: number }) => s.stack_small_id,
        ),
        [1, 4, 5, 6],
      );
    });

    it('writes a list it has written before exactly as the rows now say, whatever changed since', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1, 1));
        await tx.putStack(newStack(2, 1, 0));
        await tx.putStack(newStack(7, 1, 1000));
      });
      const first = await store.listStacksJson(1);
      assert.equal(first.body.toString(), stringifyJson(await store.listStacks(1)));
      // Everything that changes after creation changes: usage, settlement, claim; and a new stack arrives.
      assert.equal((await store.addStackUsage(7, 900, REQUEST, 1)).status, 'recorded');
      await write(async (tx) => {
        await tx.putStack(newStack(5, 1, 10));
        await tx.putTicket(settlement(2, 1, 0), 3);
        await tx.claimTicket(ticketClaim(2, 1, 0, 77), { epoch: 4, node_fee_amount: 0 });
      });
      for (let round = 0; round < 2; round++) {
        const again = await store.listStacksJson(1);
        assert.equal(again.body.toString(), stringifyJson(await store.listStacks(1)));
        assert.match(
          again.body.toString(),
          /"already_computed_units":900,"in_settle_period":false,"num_total_messages":1,/,
        );
        assert.match(
          again.body.toString(),
          /"is_claimed":true,"is_locked_for_claim":false,"is_confidential":true,"user_refund_amount":77\}/,
        );
        assert.deepEqual(
          JSON.parse(again.body.toString()).map((s: { stack_small_id: number }) => s.stack_small_id),
          [2, 5, 7],
        );
      }
      const filled = await store.listStacksJson(1, 0.5);
      assert.equal(filled.body.toString(), stringifyJson(await store.listStacks(1, 0.5)));

      // Usage reports one after another, read after each, after several, and after an indexer page in
      // between: the list is always the rows' (a store may read only the stacks its reports changed).
      for (let i = 0; i < 3; i++) {
        assert.equal((await store.addStackUsage(5, 1, new Uint8Array(32).fill(i + 1), 2)).status, 'recorded');
        await listIsRows(`after report ${i}`);
      }
      assert.equal((await store.addStackUsage(7, 10, new Uint8Array(32).fill(9), 3)).status, 'recorded');
      assert.equal((await store.addStackUsage(5, 2, new Uint8Array(32).fill(10), 3)).status, 'recorded');
      await listIsRows('after two reports on two stacks');
      await write(async (tx) => {
        await tx.putStack(newStack(6, 1, 50));
        await tx.putTicket(settlement(7, 1, 910), 5);
      });
      assert.equal((await store.addStackUsage(6, 5, new Uint8Array(32).fill(11), 4)).status, 'recorded');
      await listIsRows('after an indexer page and a report');
      assert.deepEqual(
        JSON.parse((await store.listStacksJson(1)).body.toString()).map(
          (s: { stack_small_id: number; already_computed_units: number }) => [
            s.stack_small_id,
            s.already_computed_units,
          ],
        ),
        [
          [2, 0],
          [5, 5],
          [6, 5],
          [7, 910],
        ],
      );
    });

    it('takes an epoch after fee parameters saved without one', async () => {
      const parameters = { ...DEFAULT_PARAMETERS, sampling_consensus_charge_permille: 3000n };
      await write((tx) => tx.saveChainState({ epoch: undefined, parameters }));
      assert.deepEqual(await store.getChainState(), { epoch: null, parameters });
      await write((tx) => tx.saveChainState({ epoch: 7, parameters: undefined }));
      assert.deepEqual(await store.getChainState(), { epoch: 7, parameters });
    });

    it('lists a kept list as the rows say after indexer pages that only settle or claim its stacks', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1, 1));
        for (let id = 1; id <= 4; id++) await tx.putStack(newStack(id, 1, 1000));
        await tx.putStack(newStack(9, 2, 1000));
      });
      await listIsRows('first listing');
      const trySettle = (stack: number, node: number, claimed: number) =>
        write((tx) => tx.putTicket(settlement(stack, node, claimed), 3));
      await trySettle(2, 1, 10);
      await listIsRows('after a try-settle');
      await write((tx) => tx.claimTicket(ticketClaim(2, 1, 10, 990), { epoch: 4, node_fee_amount: 0 }));
      await listIsRows('after a claim');
      // Several versions between two reads: a report, a try-settle, another node's, a report again.
      assert.equal((await store.addStackUsage(3, 7, new Uint8Array(32).fill(21), 5)).status, 'recorded');
      await trySettle(3, 1, 7);
      await trySettle(9, 2, 0);
      assert.equal((await store.addStackUsage(4, 8, new Uint8Array(32).fill(22), 6)).status, 'recorded');
      await listIsRows('after reports and try-settles between two reads');
      // A try-settle and a new stack in one page: the new stack is listed too.
      await write(async (tx) => {
        await tx.putTicket(settlement(4, 1, 8), 5);
        await tx.putStack(newStack(5, 1, 1000));
      });
      await listIsRows('after a try-settle and a new stack in one page');
      // The other order: a stack that changes after the new one in the same page does not hide it.
      await write(async (tx) => {
        await tx.putStack(newStack(6, 1, 1000));
        await tx.claimTicket(ticketClaim(4, 1, 8, 0), { epoch: 6, node_fee_amount: 0 });
      });
      await listIsRows('after a new stack and a claim in one page');
      assert.deepEqual(
        JSON.parse((await store.listStacksJson(1)).body.toString()).map(
          (s: { stack_small_id: number; in_settle_period: boolean; is_claimed: boolean }) => [
            s.stack_small_id,
            s.in_settle_period,
            s.is_claimed,
          ],
        ),
        [
          [1, false, false],
          [2, true, true],
          [3, true, false],
          [4, true, true],
          [5, false, false],
          [6, false, false],
        ],
      );
    });

    it('lists a kept list again after many stacks arrive at once, and after a stack changes size', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1, 1));
        for (let id = 1; id <= 3; id++) await tx.putStack(newStack(id, 1, 1000));
      });
      await listIsRows('first listing');
      // More new stacks than a store may read one by one, some before the kept ones, in one page.
      await write(async (tx) => {
        for (let id = 100; id < 140; id++) await tx.putStack(newStack(id, 1, 1000));
        await tx.putStack(newStack(0, 1, 5));
      });
      await listIsRows('after 41 new stacks');
      // A value that grows its stack's JSON by many digits, in the middle of the list.
      assert.equal((await store.addStackUsage(2, 999, REQUEST, 1)).status, 'recorded');
      await listIsRows('after a report that lengthens a stack');
      assert.equal((await store.addStackUsage(120, 1, REQUEST, 1)).status, 'recorded');
      assert.equal((await store.addStackUsage(0, 5, REQUEST, 1)).status, 'recorded');
      await listIsRows('after reports on the first stack and one in the middle');
      assert.equal((await store.listStacksJson(1)).count, 44);
    });

    it('answers a list read with the topic version the caller saw as no older than that version', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1, 1));
        for (const id of [1, 2, 3]) await tx.putStack(newStack(id, 1, 1000));
      });
      const seen = async () => (await store.topicVersions([topics.stacks(1)]))[0]!;
      const listedAt = async (version: number) =>
        (await store.listStacksJson(1, undefined, {}, version)).body.toString();
      const first = await seen();
      assert.equal(await listedAt(first), stringifyJson(await store.listStacks(1)));
      // After each kind of write, a caller that read the moved version gets a list that shows the write.
      const writes: [string, () => Promise<unknown>][] = [
        ['a usage report', () => store.addStackUsage(2, 400, REQUEST, 1)],
        ['a new stack', () => write((tx) => tx.putStack(newStack(4, 1)))],
        ['a try-settle', () => write((tx) => tx.putTicket(settlement(3, 1, 0), 3))],
      ];
      for (const [step, run] of writes) {
        const before = await seen();
        await run();
        const after = await seen();
        assert.ok(after > before, `${step}: the topic moved`);
        assert.equal(await listedAt(after), stringifyJson(await store.listStacks(1)), step);
      }
    });

    it('adds new stacks to a kept list as the rows say: after its last, before it, over pieces and versions', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1, 1));
        // Even ids, so that a new one can fall among them.
        for (let k = 0; k < PIECE_OBJECTS - 1; k++) await tx.putStack(newStack(10 + 2 * k, 1, 1000));
        await tx.putStack(newStack(5, 2, 1000));
      });
      await listIsRows('first listing');
      // A try-settle that names node 1 for node 2's stack: not a new stack of node 1's.
      await write((tx) => tx.putTicket(settlement(5, 1, 0), 3));
      await listIsRows("after a try-settle naming the node for another node's stack");
      let next = 10 + 2 * PIECE_OBJECTS;
      // One at a time and a few at once, after the list's last: across the first piece's end.
      for (const n of [1, 1, 3]) {
        await write(async (tx) => {
          for (let k = 0; k < n; k++) await tx.putStack(newStack(next++, 1, 1000));
        });
        await listIsRows(`after ${n} new stacks`);
        // The kept list knows where the new ones are: a report on one is patched in at its place.
        assert.equal((await store.addStackUsage(next - 1, n, REQUEST, 1)).status, 'recorded');
        await listIsRows(`after a report on the last of ${n} new stacks`);
      }
      // New stacks in several versions between two reads, one of them settled and reported in later ones,
      // with another node's stack and a report on a kept one between them.
      await write((tx) => tx.putStack(newStack(next++, 1, 1000)));
      const created = next - 1;
      await write(async (tx) => {
        await tx.putStack(newStack(next++, 1, 1000));
        await tx.putStack(newStack(next++, 2, 1000));
      });
      assert.equal((await store.addStackUsage(created, 40, REQUEST, 1)).status, 'recorded');
      await write((tx) => tx.putTicket(settlement(created, 1, 40), 3));
      assert.equal((await store.addStackUsage(12, 7, REQUEST, 1)).status, 'recorded');
      await listIsRows('after new stacks, reports and a try-settle between two reads');
      // Numbered before the list's last (and before its first), and after it, in one page.
      await write(async (tx) => {
        await tx.putStack(newStack(3, 1, 1000));
        await tx.putStack(newStack(51, 1, 1000));
        await tx.putStack(newStack(next++, 1, 1000));
      });
      await listIsRows('after new stacks before, among and after the kept ones');
      // As many new stacks as a store may read one by one, then one more than that, between two reads.
      for (const n of [16, 17]) {
        for (let k = 0; k < n; k++) await write((tx) => tx.putStack(newStack(next++, 1, 1000)));
        await listIsRows(`after ${n} new stacks in ${n} versions`);
      }
      const ids = JSON.parse((await store.listStacksJson(1)).body.toString()).map(
        (s: { stack_small_id: number }) => s.stack_small_id,
      );
      assert.equal(ids.length, PIECE_OBJECTS - 1 + 5 + 2 + 3 + 33);
      assert.deepEqual(
        ids,
        [...ids].sort((a: number, b: number) => a - b),
      );
    });

    it("answers a node's list as its rows are after every kind of write, and an untouched list as it was", async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1, 1));
        for (const id of [1, 2, 3]) await tx.putStack(newStack(id, 1));
        await tx.putStack(newStack(10, 2));
      });
      const same = async (step: string, node: U64 = 1) => {
        const listed = await store.listStacksJson(node);
        assert.equal(listed.body.toString(), stringifyJson(await store.listStacks(node)), step);
        return listed;
      };
      await same('first listing');
      const untouched = await same('first listing of node 2', 2);
      const ticket = (id: U64) => ({
        stack_small_id: id,
        selected_node_id: 1,
        requested_attestation_nodes: [],
        committed_stack_proof: proof,
        stack_merkle_leaf: leaf,
        num_claimed_compute_units: 400,
      });
      const writes: [string, () => Promise<unknown>][] = [
        ['a usage report', () => store.addStackUsage(2, 400, REQUEST, 1)],
        ['a new stack', () => write((tx) => tx.putStack(newStack(4, 1)))],
        ['a try-settle', () => write((tx) => tx.putTicket(ticket(2), 3))],
        [
          'a claim',
          () =>
            write((tx) =>
              tx.claimTicket(
                { ...ticket(2), attestation_nodes: [], user_refund_amount: 600 },
                { epoch: 4, node_fee_amount: 800 },
              ),
            ),
        ],
        [
          'a confidential claim',
          () =>
            write((tx) =>
              tx.claimStack(
                {
                  stack_small_id: 3,
                  selected_node_id: 1,
                  num_claimed_compute_units: 0,
                  user_refund_amount: 5,
                },
                { epoch: 4, node_fee_amount: 0 },
              ),
            ),
        ],
        [
          'a write to another topic',
          () =>
            write((tx) =>
              tx.putSubscription({
                node_small_id: 1,
                task_small_id: 1,
                price_per_one_million_compute_units: 1,
                max_num_compute_units: 1,
              }),
            ),
        ],
      ];
      for (const [step, run] of writes) {
        await run();
        await same(step);
        // Kept as it was: the same bytes, not even copied again.
        assert.equal((await store.listStacksJson(2)).body, untouched.body, `${step}: node 2's list`);
      }
      assert.match(
        (await store.listStacksJson(1)).body.toString(),
        /"stack_small_id":2,.*"already_computed_units":400,"in_settle_period":true,.*"is_claimed":true,.*"user_refund_amount":600\}/,
      );
    });

    it('records usage, refusing unknown stacks and going past capacity', async () => {
      await write(async (tx) => tx.putStack(newStack(1, 1, 100)));
      assert.deepEqual(await store.addStackUsage(1, 60, REQUEST, Date.now()), {
        status: 'recorded',
        already_computed_units: 60,
        num_compute_units: 100,
        num_total_messages: 1,
      });
      assert.deepEqual(await store.addStackUsage(1, 41, REQUEST, Date.now()), {
        status: 'over_capacity',
        already_computed_units: 60,
        num_compute_units: 100,
      });
      assert.deepEqual(await store.addStackUsage(2, 1, REQUEST, Date.now()), { status: 'not_found' });
      const [s] = await store.listStacks(1);
      assert.equal(s?.already_computed_units, 60);
      assert.equal(s?.num_total_messages, 1);
    });

    it('writes reports that arrive together in fewer transactions, each as if one after the other', async () => {
      await write(async (tx) => {
        for (const id of [1, 2, 4]) await tx.putStack(newStack(id, 1, 100));
        await tx.putStack(newStack(3, 2, 100));
      });
      const before = await store.listStacksJson(1); // kept: the group's changes are patched into it
      const [version] = await store.topicVersions(['stacks:1']);
      // Stack 1 gets them at once; stack 4, its twin, one at a time: both must end the same.
      const reports: [U64, U64][] = [
        [1, 60],
        [2, 5],
        [1, 30],
        [99, 1],
        [1, 20],
        [3, 7],
        [1, 10],
      ];
      const hash = (i: number) => new Uint8Array(32).fill(20 + i);
      const outcomes = await Promise.all(
        reports.map(([id, units], i) => store.addStackUsage(id, units, hash(i), 5)),
      );
      assert.deepEqual(
        outcomes.map((o) => (o.status === 'recorded' ? [o.status, o.already_computed_units] : [o.status])),
        [
          ['recorded', 60],
          ['recorded', 5],
          ['recorded', 90],
          ['not_found'],
          ['over_capacity'],
          ['recorded', 7],
          ['recorded', 100],
        ],
      );
      const [after] = await store.topicVersions(['stacks:1']);
      assert.ok(
        after! - version! >= 1 && after! - version! <= 2,
        `node 1's topic moved ${after! - version!} times`,
      );
      const patched = await store.listStacksJson(1);
      assert.notEqual(patched.body, before.body);
      assert.equal(patched.body.toString(), stringifyJson(await store.listStacks(1)));
      for (const [i, [id, units]] of reports.entries()) {
        if (id === 1) await store.addStackUsage(4, units, hash(i), 5);
      }
      const [one, four] = await Promise.all([store.getStackHash(1), store.getStackHash(4)]);
      assert.deepEqual(one, four);
      const stacks = await store.listStacks(1);
      const byId = (id: number) => stacks.find((s) => s.stack_small_id === id)!;
      assert.deepEqual(
        [byId(1).already_computed_units, byId(1).num_total_messages],
        [byId(4).already_computed_units, byId(4).num_total_messages],
      );
      assert.deepEqual([byId(1).num_total_messages, byId(2).already_computed_units], [3, 5]);
      assert.equal((await store.listStacksJson(1)).body.toString(), stringifyJson(stacks));
    });

    it("refuses a report on another node's stack, and hashes one without a request hash as its message", async () => {
      await write(async (tx) => {
        await tx.putStack(newStack(1, 1, 100));
        await tx.putStack(newStack(2, 2, 100));
      });
      assert.deepEqual(await store.addStackUsage(2, 5, REQUEST, 1, [1, ABOVE_SAFE]), {
        status: 'not_ours',
        selected_node_id: 2,
      });
      assert.equal((await store.listStacks(2))[0]?.already_computed_units, 0);
      assert.equal((await store.addStackUsage(1, 5, undefined, 1, [ABOVE_SAFE, 1])).status, 'recorded');
      assert.equal((await store.addStackUsage(1, 5, undefined, 1)).status, 'recorded');
      // The synthetic hash of each message: usage:<stack>:<units>:<messages before it>.
      const expected = [0, 1].reduce(
        (hash, message) => extendHash(hash, syntheticRequestHash('1', '5', String(message))),
        EMPTY_HASH,
      );
      assert.deepEqual(await store.getStackHash(1), { total_hash: expected, num_requests: 2 });
    });

    it('builds settlement tickets: try-settle, attestations by slot, settlement, claim', async () => {
      await write(async (tx) => {
        await tx.putStack(newStack(1, 1));
        await tx.putTicket(
          {
            stack_small_id: 1,
            selected_node_id: 1,
            requested_attestation_nodes: [4, 5],
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 700,
          },
          7,
        );
      });
      assert.equal((await store.listStacks(1))[0]?.in_settle_period, true);
      assert.deepEqual(await store.listClaimedStacks(1), [], 'not claimed yet');
      const outcomes: string[] = [];
      const leaf5 = new Uint8Array(32).fill(5);
      await write(async (tx) => {
        outcomes.push(
          await tx.recordAttestation({
            stack_small_id: 1,
            attestation_node_id: 5,
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf5,
          }),
          await tx.recordAttestation({
            stack_small_id: 1,
            attestation_node_id: 6,
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf5,
          }),
          await tx.recordAttestation({
            stack_small_id: 2,
            attestation_node_id: 5,
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf5,
          }),
        );
        await tx.settleTicket({
          stack_small_id: 1,
          selected_node_id: 1,
          num_claimed_compute_units: 700,
          requested_attestation_nodes: [4, 5],
          dispute_settled_at_epoch: 8,
          committed_stack_proof: proof,
        });
        await tx.claimTicket(
          {
            stack_small_id: 1,
            selected_node_id: 1,
            attestation_nodes: [4, 5],
            num_claimed_compute_units: 700,
            user_refund_amount: U64_MAX,
          },
          { epoch: 9, node_fee_amount: 1234 },
        );
      });
      assert.deepEqual(outcomes, ['applied', 'not_requested', 'no_ticket']);
      const [ticket] = await store.listClaimedStacks(1);
      assert.deepEqual(ticket, {
        stack_small_id: 1,
        selected_node_id: 1,
        num_claimed_compute_units: 700,
        requested_attestation_nodes: '[4,5]',
        committed_stack_proofs: [...proof],
        stack_merkle_leaves: [...leaf, ...new Uint8Array(32), ...leaf5],
        dispute_settled_at_epoch: 8,
        already_attested_nodes: '[5]',
        is_in_dispute: false,
        user_refund_amount: U64_MAX,
        is_claimed: true,
        claim_path: 'settlement_ticket',
        claimable_from_epoch: 8,
        node_fee_amount: 1234,
      });
      const [claimedStack] = await store.listStacks(1);
      assert.equal(claimedStack?.is_claimed, true);
      assert.equal(claimedStack?.user_refund_amount, U64_MAX);
      assert.deepEqual(await store.listClaimedStacks(4), [], 'attesters do not list it');
    });

    it("records the attester of a dispute that is the last attestation's failed check, not of others", async () => {
      // Each ticket asks nodes 4 and 5 (or as listed), settled in epoch 7: attestations until epoch 8.
      const settle = (tx: IndexerTx, id: U64, requested: U64[] = [4, 5]) =>
        tx.putTicket(
          {
            stack_small_id: id,
            selected_node_id: 1,
            requested_attestation_nodes: requested,
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 1,
          },
          7,
        );
      const attest = (tx: IndexerTx, id: U64, node: U64) =>
        tx.recordAttestation({
          stack_small_id: id,
          attestation_node_id: node,
          committed_stack_proof: proof,
          stack_merkle_leaf: new Uint8Array(32).fill(node === 5 ? 5 : 4),
        });
      const dispute = (id: U64, node: U64, commitment = proof) => ({
        stack_small_id: id,
        attestation_commitment: commitment,
        attestation_node_id: node,
        original_node_id: 1,
        original_commitment: proof,
      });
      await write(async (tx) => {
        for (const id of [1, 2, 3, 4, 5, 6]) await settle(tx, id);
        await settle(tx, 7, [4, 4]);
        for (const id of [1, 3, 4, 5, 6]) await attest(tx, id, 5);
        await attest(tx, 7, 4);
        // 1: the last attester, its proof the settler's, in the window: the failed final check.
        await tx.putDispute(dispute(1, 4), 8);
        // 2: not the last (nobody attested yet): a plain dispute.
        await tx.putDispute(dispute(2, 4), 7);
        // 3: another commitment than the settler's: a plain dispute (or a mismatching attestation).
        await tx.putDispute(dispute(3, 4, new Uint8Array(32).fill(3)), 7);
        // 4: a node that was not asked to attest.
        await tx.putDispute(dispute(4, 6), 7);
        // 5: after the attestation window.
        await tx.putDispute(dispute(5, 4), 9);
        // 6: the epoch unknown: the other conditions decide.
        await tx.putDispute(dispute(6, 4), undefined);
        // 7: node 4 listed twice, attesting a second time: the chain counts it twice.
        await tx.putDispute(dispute(7, 4), 7);
      });
      const attested = async (id: U64) => (await store.getTicket(id))?.already_attested_nodes;
      assert.equal(await attested(1), '[5,4]');
      assert.equal(await attested(2), '[]');
      assert.equal(await attested(3), '[5]');
      assert.equal(await attested(4), '[5]');
      assert.equal(await attested(5), '[5]');
      assert.equal(await attested(6), '[5,4]');
      assert.equal(await attested(7), '[4,4]');
      for (const id of [1, 2, 3, 4, 5, 6, 7]) assert.equal((await store.getTicket(id))?.is_in_dispute, true);
      // The leaf is not in the event: its slot keeps its zeros.
      assert.deepEqual((await store.getTicket(1))?.stack_merkle_leaves, [
        ...leaf,
        ...new Uint8Array(32),
        ...new Uint8Array(32).fill(5),
      ]);
      assert.deepEqual(
        (await store.listAttestationRequests(4)).map((r) => r.stack_small_id),
        [2, 3, 4, 5],
        'node 4 is no longer asked to attest the stacks it attested (1, 6, 7)',
      );
      assert.equal((await store.listDisputesOwn(4)).length, 6);
    });

    it('lists confidential-compute claims, also for stacks it never saw', async () => {
      await write(async (tx) => {
        await tx.putStack(newStack(2, 3));
        await tx.claimStack(
          {
            stack_small_id: 2,
            selected_node_id: 3,
            num_claimed_compute_units: 10,
            user_refund_amount: 5,
          },
          { epoch: undefined, node_fee_amount: null },
        );
        await tx.claimStack(
          {
            stack_small_id: 9,
            selected_node_id: 3,
            num_claimed_compute_units: 1,
            user_refund_amount: 0,
          },
          { epoch: undefined, node_fee_amount: null },
        );
      });
      const claimed = await store.listClaimedStacks(3);
      assert.deepEqual(
        claimed.map((c) => [c.stack_small_id, c.claim_path, c.is_claimed, c.requested_attestation_nodes]),
        [
          [2, 'confidential_compute', true, '[]'],
          [9, 'confidential_compute', true, '[]'],
        ],
      );
      assert.equal((await store.listStacks(3))[0]?.is_claimed, true);
    });

    it('stores disputes once, flags the ticket, and lists them against and own', async () => {
      const dispute = {
        stack_small_id: 1,
        attestation_commitment: new Uint8Array(32).fill(1),
        attestation_node_id: 4,
        original_node_id: 1,
        original_commitment: proof,
      };
      await write(async (tx) => {
        await tx.putTicket(
          {
            stack_small_id: 1,
            selected_node_id: 1,
            requested_attestation_nodes: [4],
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 1,
          },
          undefined,
        );
        await tx.putDispute(dispute, undefined);
        await tx.putDispute({ ...dispute, attestation_commitment: new Uint8Array(32).fill(2) }, undefined);
        await tx.putDispute(
          { ...dispute, stack_small_id: 0, original_node_id: 4, attestation_node_id: 1 },
          undefined,
        );
      });
      const against = await store.listDisputesAgainst(1);
      assert.deepEqual(against, [
        {
          stack_small_id: 1,
          attestation_commitment: Array(32).fill(1),
          attestation_node_id: 4,
          original_node_id: 1,
          original_commitment: [...proof],
        },
      ]);
      assert.deepEqual(
        (await store.listDisputesOwn(1)).map((d) => d.stack_small_id),
        [0],
      );
      assert.deepEqual(
        (await store.listDisputesOwn(4)).map((d) => d.stack_small_id),
        [1],
      );
      await write(async (tx) => {
        await tx.claimTicket(
          {
            stack_small_id: 1,
            selected_node_id: 1,
            attestation_nodes: [4],
            num_claimed_compute_units: 1,
            user_refund_amount: 0,
          },
          { epoch: undefined, node_fee_amount: null },
        );
      });
      assert.equal((await store.listClaimedStacks(1))[0]?.is_in_dispute, true);
    });

    it('claims each event key once, across transactions and within one', async () => {
      let first = new Set<string>();
      let second = new Set<string>();
      await write(async (tx) => {
        first = await tx.claimEvents(['a:0', 'b:0', 'a:0']);
      });
      await write(async (tx) => {
        second = await tx.claimEvents(['a:0', 'c:1']);
      });
      assert.deepEqual([...first].sort(), ['a:0', 'b:0']);
      assert.deepEqual([...second], ['c:1']);
    });

    it('rolls a failed transaction back whole: effects, event keys and cursor', async () => {
      await assert.rejects(
        write(async (tx) => {
          await tx.claimEvents(['x:0']);
          await tx.putTask(newTask(1));
          await tx.saveCursor('src', '10', {
            applied: 1,
            duplicate: 0,
            ignored: 0,
            unknown: 0,
            malformed: 0,
            orphaned: 0,
          });
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.deepEqual(await store.listTasks(), []);
      assert.equal(await store.getCursor('src'), undefined);
      let fresh = new Set<string>();
      await write(async (tx) => {
        fresh = await tx.claimEvents(['x:0']);
      });
      assert.deepEqual([...fresh], ['x:0']);
    });

    it('saves cursors and adds up their counters', async () => {
      const counts = { applied: 3, duplicate: 1, ignored: 2, unknown: 1, malformed: 1, orphaned: 0 };
      await write((tx) => tx.saveCursor('file:a', '100', counts));
      await write((tx) => tx.saveCursor('file:a', '250', { ...counts, orphaned: 4 }));
      const cursor = await store.getCursor('file:a');
      assert.equal(cursor?.cursor, '250');
      assert.deepEqual(
        [
          cursor?.applied,
          cursor?.duplicate,
          cursor?.ignored,
          cursor?.unknown,
          cursor?.malformed,
          cursor?.orphaned,
        ],
        [6, 2, 4, 2, 2, 4],
      );
      assert.equal(await store.getCursor('file:b'), undefined);
    });

    it('changes its data version on every commit', async () => {
      const before = await store.dataVersion();
      assert.equal(await store.dataVersion(), before);
      await write((tx) => tx.putTask(newTask(1)));
      const after = await store.dataVersion();
      assert.notEqual(after, before);
      await store.addStackUsage(1, 1, REQUEST, Date.now());
      assert.equal(await store.dataVersion(), after, 'a refused usage changes nothing');
    });

    it('extends the running hash of a stack with each request, and keeps attester records', async () => {
      await write(async (tx) => tx.putStack(newStack(1, 1, 100)));
      assert.equal(await store.getStackHash(1), undefined);
      const second = new Uint8Array(32).fill(4);
      await store.addStackUsage(1, 10, REQUEST, Date.now());
      await store.addStackUsage(1, 10, second, Date.now());
      await store.addStackUsage(1, 1000, second, Date.now());
      const record = await store.getStackHash(1);
      assert.equal(record?.num_requests, 2, 'the refused report did not count');
      assert.deepEqual(record?.total_hash, extendHash(extendHash(EMPTY_HASH, REQUEST), second));
      await store.putStackHash(77, second, U64_MAX);
      assert.deepEqual(await store.getStackHash(77), { total_hash: second, num_requests: U64_MAX });
    });

    it('looks up one task, stack, subscription and ticket', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(ABOVE_SAFE));
        await tx.putStack(newStack(5, 2));
        await tx.putSubscription({
          node_small_id: 2,
          task_small_id: 1,
          price_per_one_million_compute_units: 10,
          max_num_compute_units: 1_000_000,
        });
        await tx.putTicket(
          {
            stack_small_id: 5,
            selected_node_id: 2,
            requested_attestation_nodes: [],
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 3,
          },
          undefined,
        );
      });
      assert.equal((await store.getTask(ABOVE_SAFE))?.task_small_id, ABOVE_SAFE);
      assert.equal(await store.getTask(1), undefined);
      assert.equal((await store.getStack(5))?.selected_node_id, 2);
      assert.equal(await store.getStack(6), undefined);
      assert.equal((await store.getSubscription(2, 1))?.price_per_one_million_compute_units, 10);
      assert.equal(await store.getSubscription(1, 2), undefined);
      const ticket = await store.getTicket(5);
      assert.deepEqual([ticket?.num_claimed_compute_units, ticket?.is_claimed], [3, false]);
      assert.equal(await store.getTicket(6), undefined);
    });

    it('looks up a node: registered, or known only from its subscriptions or stacks', async () => {
      await write(async (tx) => {
        await tx.putNode(ABOVE_SAFE, '0xbadge', '0xowner');
        await tx.putStack(newStack(5, 2));
        await tx.putSubscription({
          node_small_id: 3,
          task_small_id: 1,
          price_per_one_million_compute_units: 10,
          max_num_compute_units: 1_000_000,
        });
      });
      assert.deepEqual(await store.getNode(ABOVE_SAFE), {
        node_small_id: ABOVE_SAFE,
        badge_id: '0xbadge',
        sui_address: '0xowner',
      });
      assert.deepEqual(await store.getNode(2), { node_small_id: 2, badge_id: null, sui_address: null });
      assert.deepEqual(await store.getNode(3), { node_small_id: 3, badge_id: null, sui_address: null });
      assert.equal(await store.getNode(4), undefined);
    });

    it('counts the subscribers sample_attestation_nodes may draw: valid, within price, with room', async () => {
      const sub = (node: U64, task: U64, price: U64, max: U64 = 1_000_000) => ({
        node_small_id: node,
        task_small_id: task,
        price_per_one_million_compute_units: price,
        max_num_compute_units: max,
      });
      await write(async (tx) => {
        await tx.putTask(newTask(1, 2));
        await tx.putTask(newTask(2, 2));
        await tx.putSubscription(sub(1, 1, 1_000_000));
        await tx.putSubscription(sub(2, 1, 2_000_000)); // the price cap itself is eligible
        await tx.putSubscription(sub(3, 1, 2_000_001));
        await tx.putSubscription(sub(4, 1, U64_MAX));
        await tx.putSubscription(sub(5, 1, 1, 999));
        await tx.putSubscription(sub(6, 1, 1));
        await tx.putSubscription(sub(7, 2, 1));
        await tx.deleteSubscription(6, 1);
        await tx.putSubscription(sub(8, 2, 1));
        await tx.removeTask(2, 3);
      });
      assert.equal(await store.countEligibleSubscribers(1, 2_000_000, 1000), 2);
      assert.equal(await store.countEligibleSubscribers(1, 2_000_000, 999), 3);
      assert.equal(await store.countEligibleSubscribers(1, ABOVE_SAFE, 1000), 3);
      assert.equal(await store.countEligibleSubscribers(1, U64_MAX, 1000), 4, 'u64 prices compare exactly');
      assert.equal(await store.countEligibleSubscribers(1, 999_999, 1000), 0);
      assert.equal(await store.countEligibleSubscribers(2, U64_MAX, 1), 0, "a removed task's are invalid");
      assert.equal(await store.countEligibleSubscribers(9, U64_MAX, 1), 0);
    });

    it('tells whether events were applied', async () => {
      await write(async (tx) => {
        await tx.claimEvents(['d1:0', 'd1:1']);
      });
      assert.equal(await store.hasEvents([{ key: 'd1:0' }, { key: 'd1:1' }]), true);
      assert.equal(await store.hasEvents([{ key: 'd1:0' }, { key: 'd2:0' }]), false);
      assert.equal(await store.hasEvents([]), true);
      // A stack's creation event: applied once its row exists (createStack), or its key was claimed (before
      // the migrations that record creations by their rows).
      const creation = { key: 'd3:0', createdStack: 30 };
      const claimed = { key: 'd4:0', createdStack: 32 };
      assert.equal(await store.hasEvents([creation]), false);
      await write(async (tx) => {
        await tx.createStack(newStack(30, 1));
        await tx.claimEvents([claimed.key]);
      });
      assert.equal(await store.hasEvents([{ key: 'd1:0' }, creation, claimed]), true);
      assert.equal(await store.hasEvents([{ key: 'd3:1', createdStack: 31 }]), false);
    });

    it('creates a stack once, and says so', async () => {
      let created: boolean[] = [];
      await write(async (tx) => {
        created = [
          await tx.createStack(newStack(30, 1)),
          // The same small id again, even for another node or with other terms: nothing changes.
          await tx.createStack({ ...newStack(30, 2), num_compute_units: 5 }),
          await tx.createStack(newStack(31, 1)),
        ];
      });
      assert.deepEqual(created, [true, false, true]);
      assert.deepEqual(
        (await store.listStacks(1)).map((s) => [s.stack_small_id, s.num_compute_units]),
        [
          [30, 1000],
          [31, 1000],
        ],
      );
      assert.deepEqual(await store.listStacks(2), []);
      // Nothing inserted moves no node's stacks: their cached lists stay.
      const before = await store.topicVersions([topics.stacks(1), topics.stacks(2)]);
      await write(async (tx) => {
        assert.equal(await tx.createStack(newStack(30, 2)), false);
        assert.equal(await tx.createStack(newStack(31, 1)), false);
      });
      assert.deepEqual(await store.topicVersions([topics.stacks(1), topics.stacks(2)]), before);
    });

    it('reserves, completes, releases and expires idempotency keys', async () => {
      const now = 1_800_000_000_000;
      assert.equal(await store.reserveIdempotencyKey('k1', 'h1', now), 'reserved');
      assert.deepEqual(await store.reserveIdempotencyKey('k1', 'h2', now + 1), {
        request_hash: 'h1',
        status: 0,
        response: null,
        created_at: now,
      });
      await store.completeIdempotencyKey('k1', 200, '{"tx_digest":"x"}');
      assert.deepEqual(await store.reserveIdempotencyKey('k1', 'h1', now + 2), {
        request_hash: 'h1',
        status: 200,
        response: '{"tx_digest":"x"}',
        created_at: now,
      });
      await store.releaseIdempotencyKey('k1');
      assert.notEqual(
        await store.reserveIdempotencyKey('k1', 'h1', now + 3),
        'reserved',
        'a completed key stays',
      );
      assert.equal(await store.reserveIdempotencyKey('k2', 'h', now), 'reserved');
      await store.releaseIdempotencyKey('k2');
      assert.equal(
        await store.reserveIdempotencyKey('k2', 'h', now),
        'reserved',
        'a released key is free again',
      );
      const dayLater = now + IDEMPOTENCY_TTL_MS + 1;
      assert.equal(
        await store.reserveIdempotencyKey('k1', 'h9', dayLater),
        'reserved',
        'forgotten after 24 hours',
      );
    });

    it('keeps what decides the fees: terms, claimable epochs, claim fees, attester rewards, the chain state', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1, 2));
        await tx.putStack(newStack(1, 1));
        await tx.putStack(newStack(2, 1, 500, 99)); // its task was never seen
        await tx.putStack(newStack(3, 1));
        await tx.putTicket(
          {
            stack_small_id: 1,
            selected_node_id: 1,
            requested_attestation_nodes: [4, 5, 4],
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 700,
          },
          ABOVE_SAFE,
        );
        await tx.saveChainState({ epoch: 12, parameters: undefined });
      });
      assert.deepEqual(await store.getStackTerms(1), {
        price_per_one_million_compute_units: 2_000_000,
        num_compute_units: 1000,
        security_level: 2,
      });
      assert.equal((await store.getStackTerms(2))?.security_level, null);
      assert.equal(await store.getStackTerms(404), undefined);
      assert.equal((await store.getTicket(1))?.claimable_from_epoch, ABOVE_SAFE + 1n);
      assert.deepEqual(await store.getChainState(), { epoch: 12, parameters: null });
      const parameters = {
        sampling_consensus_charge_permille: 1000n,
        cross_validation_extra_nodes_charge_permille: 12n,
        cross_validation_probability_permille: 10n,
        cross_validation_extra_nodes_count: 3n,
        permille_to_slash_node_on_timeout: 100n,
      };
      await write(async (tx) => {
        await tx.saveChainState({ epoch: undefined, parameters });
        const context = await tx.claimContext(1);
        assert.deepEqual(context.already_attested, [], 'inside the transaction, before any attestation');
        assert.equal(context.terms?.security_level, 2);
        assert.deepEqual(await tx.claimContext(404), {
          terms: undefined,
          selected_node_id: null,
          already_attested: [],
        });
        assert.equal((await tx.claimContext(1)).selected_node_id, 1);
      });
      assert.deepEqual(await store.getChainState(), { epoch: 12, parameters }, 'each field kept when absent');
      await write(async (tx) => {
        await tx.recordAttestation({
          stack_small_id: 1,
          attestation_node_id: 4,
          committed_stack_proof: proof,
          stack_merkle_leaf: leaf,
        });
        await tx.claimTicket(
          {
            stack_small_id: 1,
            selected_node_id: 1,
            attestation_nodes: [4, 5, 4],
            num_claimed_compute_units: 700,
            user_refund_amount: 360,
          },
          { epoch: 13, node_fee_amount: 1680 },
        );
        await tx.putAttesterRewards([
          { stack_small_id: 1, slot: 0, node_small_id: 4, amount: 560, epoch: 13 },
          { stack_small_id: 1, slot: 2, node_small_id: 4, amount: U64_MAX, epoch: null },
        ]);
        await tx.claimStack(
          { stack_small_id: 3, selected_node_id: 1, num_claimed_compute_units: 10, user_refund_amount: 5 },
          { epoch: 13, node_fee_amount: 20 },
        );
      });
      assert.deepEqual(await store.listAttesterRewards(4), [
        { stack_small_id: 1, slot: 0, node_small_id: 4, amount: 560, epoch: 13 },
        { stack_small_id: 1, slot: 2, node_small_id: 4, amount: U64_MAX, epoch: null },
      ]);
      assert.deepEqual(await store.listAttesterRewards(5), []);
      const ledger = await store.listLedger(1);
      assert.deepEqual(
        ledger
          .map((row) => [
            row.stack_small_id,
            row.stack_claimed,
            row.ticket?.node_fee_amount,
            row.ticket?.claimed_epoch,
          ])
          .sort((a, b) => Number(a[0]) - Number(b[0])),
        [
          [1, true, 1680, 13],
          [2, false, undefined, undefined],
          [3, true, 20, 13],
        ],
      );
    });

    it("answers the claim contexts it read ahead as a read would, after the transaction's own writes", async () => {
      const settle = (tx: IndexerTx, id: U64, node: U64, requested: U64[]) =>
        tx.putTicket(
          {
            stack_small_id: id,
            selected_node_id: node,
            requested_attestation_nodes: requested,
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 700,
          },
          7,
        );
      const attest = (tx: IndexerTx, id: U64, node: U64) =>
        tx.recordAttestation({
          stack_small_id: id,
          attestation_node_id: node,
          committed_stack_proof: proof,
          stack_merkle_leaf: leaf,
        });
      await write(async (tx) => {
        await tx.putTask(newTask(1, 2));
        await tx.putTask(newTask(9, 1));
        await tx.putStack(newStack(1, 1));
        await settle(tx, 1, 1, [4, 5]);
        await attest(tx, 1, 5);
      });
      const terms = (level: number | null) => ({
        price_per_one_million_compute_units: 2_000_000,
        num_compute_units: 1000,
        security_level: level,
      });
      const none = { terms: undefined, selected_node_id: null, already_attested: [] };
      const expected = new Map<U64, ClaimContext>([
        [1, { terms: terms(2), selected_node_id: 1, already_attested: [5, 4] }],
        [2, { terms: terms(1), selected_node_id: 2, already_attested: [6, 5] }],
        [3, { terms: terms(null), selected_node_id: 3, already_attested: [] }],
        [4, { terms: terms(1), selected_node_id: 4, already_attested: [] }],
        [5, { terms: terms(2), selected_node_id: 5, already_attested: [] }],
        [404, none],
      ]);
      await write(async (tx) => {
        // Stack 4's task (9) is not named: that stack is read when asked. Stack 1 exists already.
        await tx.readAhead?.([...expected.keys()], [1, 7, 8], [2, 3, 4, 1, 5]);
        await tx.putTask(newTask(7, 1));
        await tx.putTask(newTask(1, 0));
        await tx.putStack(newStack(2, 2, 1000, 7));
        await tx.putStack(newStack(3, 3, 1000, 8));
        await tx.putStack(newStack(4, 4, 1000, 9));
        await tx.putStack({ ...newStack(1, 6, 5), price_per_one_million_compute_units: 1 });
        assert.deepEqual(await tx.claimContext(5), none, 'not created yet');
        await tx.putStack(newStack(5, 5));
        await settle(tx, 2, 2, [5, 6]);
        assert.deepEqual((await tx.claimContext(2)).already_attested, [], 'a new ticket');
        await attest(tx, 2, 6);
        await attest(tx, 1, 4);
        // The last attester's failed final check: the chain counts it as attested.
        await tx.putDispute(
          {
            stack_small_id: 2,
            attestation_commitment: proof,
            attestation_node_id: 5,
            original_node_id: 2,
            original_commitment: proof,
          },
          7,
        );
        for (const [id, context] of expected)
          assert.deepEqual(await tx.claimContext(id), context, `stack ${id}`);
      });
      await write(async (tx) => {
        for (const [id, context] of expected)
          assert.deepEqual(await tx.claimContext(id), context, `stack ${id}`);
      });
    });

    it('finds what the autopilot may act on in one index range each', async () => {
      const now = 1_000_000;
      await write(async (tx) => {
        await tx.putTask(newTask(1, 0));
        for (let id = 1; id <= 6; id++) await tx.putStack(newStack(id, 1, 1000));
        await tx.putStack(newStack(7, 2, 1000));
        await tx.putTicket(
          {
            stack_small_id: 5,
            selected_node_id: 1,
            requested_attestation_nodes: [],
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 10,
          },
          4,
        );
        await tx.putTicket(
          {
            stack_small_id: 6,
            selected_node_id: 1,
            requested_attestation_nodes: [],
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 10,
          },
          7,
        );
        // Node 1 is asked to attest node 2's stack 7, twice (a node can be drawn twice).
        await tx.putTicket(
          {
            stack_small_id: 7,
            selected_node_id: 2,
            requested_attestation_nodes: [1, 3, 1],
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 10,
          },
          7,
        );
      });
      await store.addStackUsage(1, 960, REQUEST, now); // filled to 96%
      await store.addStackUsage(2, 100, REQUEST, now - 5_000); // idle for 5 s
      await store.addStackUsage(3, 100, REQUEST, now); // busy
      const ids = (rows: { stack_small_id: U64 }[]) => rows.map((r) => r.stack_small_id);
      assert.deepEqual(ids(await store.listSettleCandidates(1, 950_000, now - 1_000)), [1, 2]);
      assert.deepEqual(ids(await store.listSettleCandidates(1, 950_000, now - 10_000)), [1]);
      assert.deepEqual(ids(await store.listSettleCandidates(1, 1_000_000, now + 1)), [1, 2, 3]);
      // Stack 4 is open but has no usage: nothing to claim, so never a candidate, even at a fill of 0.
      assert.deepEqual(ids(await store.listSettleCandidates(1, 0, 0)), [1, 2, 3]);
      const [candidate] = await store.listSettleCandidates(1, 950_000, 0);
      assert.deepEqual(candidate, {
        stack_small_id: 1,
        terms: { price_per_one_million_compute_units: 2_000_000, num_compute_units: 1000, security_level: 0 },
        already_computed_units: 960,
        last_usage_at: now,
      });
      assert.equal(await store.oldestUsageAt(1), now - 5_000);
      assert.equal(await store.oldestUsageAt(2), null);
      assert.deepEqual(ids(await store.listClaimable(1, 4)), []);
      assert.deepEqual(ids(await store.listClaimable(1, 5)), [5]);
      assert.deepEqual(ids(await store.listClaimable(1, 100)), [5, 6]);
      assert.equal((await store.listClaimable(1, 5))[0]?.claimable_from_epoch, 5);
      await store.putStackHash(7, new Uint8Array(32).fill(1), 1);
      assert.deepEqual(await store.listAttestationRequests(1), [
        { stack_small_id: 7, slot: 0, until_epoch: 8, is_in_dispute: false, has_record: true },
        { stack_small_id: 7, slot: 2, until_epoch: 8, is_in_dispute: false, has_record: true },
      ]);
      await write(async (tx) => {
        await tx.recordAttestation({
          stack_small_id: 7,
          attestation_node_id: 1,
          committed_stack_proof: proof,
          stack_merkle_leaf: leaf,
        });
      });
      assert.deepEqual(await store.listAttestationRequests(1), [], 'one attestation answers both slots');
      assert.equal((await store.listAttestationRequests(3)).length, 1);
      // Retired (it can never be attested): node 3's request is gone, and only node 3's.
      await store.retireAttestationRequests(3, [7, 99]);
      assert.deepEqual(await store.listAttestationRequests(3), []);
    });

    it('owes no attestation for a ticket once it is claimed, attested or not', async () => {
      // Node 2's stack 1 asks nodes 4 (twice) and 5; only 5 attests, then node 2 claims it.
      await write(async (tx) => {
        await tx.putStack(newStack(1, 2));
        await tx.putTicket(
          {
            stack_small_id: 1,
            selected_node_id: 2,
            requested_attestation_nodes: [4, 5, 4],
            committed_stack_proof: proof,
            stack_merkle_leaf: leaf,
            num_claimed_compute_units: 700,
          },
          7,
        );
        await tx.recordAttestation({
          stack_small_id: 1,
          attestation_node_id: 5,
          committed_stack_proof: proof,
          stack_merkle_leaf: leaf,
        });
      });
      assert.deepEqual(
        (await store.listAttestationRequests(4)).map((r) => [r.stack_small_id, r.slot]),
        [
          [1, 0],
          [1, 2],
        ],
      );
      await write(async (tx) => {
        await tx.claimTicket(
          {
            stack_small_id: 1,
            selected_node_id: 2,
            attestation_nodes: [4, 5, 4],
            num_claimed_compute_units: 700,
            user_refund_amount: 300,
          },
          { epoch: 9, node_fee_amount: 1400 },
        );
      });
      assert.deepEqual(await store.listAttestationRequests(4), [], 'never attested: no longer owed');
      assert.deepEqual(await store.listAttestationRequests(5), []);
      assert.equal((await store.getTicket(1))?.already_attested_nodes, '[5]', 'who attested is kept');
    });

    it('records autopilot actions and finds the pending ones', async () => {
      const base = {
        at: 1,
        updated_at: 1,
        kind: 'settle' as const,
        node_small_id: 1,
        stack_small_ids: [1, ABOVE_SAFE],
        status: 'pending' as const,
        reason: 'filled to 96% (threshold 95%)',
        node_fee_amount: null,
        gas_estimate: 2_000_000,
        gas_used: null,
        tx_digests: [],
        error: null,
      };
      const first = await store.insertAutopilotAction(base);
      const second = await store.insertAutopilotAction({ ...base, kind: 'claim', node_fee_amount: U64_MAX });
      assert.ok(second > first);
      await store.updateAutopilotAction(first, {
        status: 'succeeded',
        tx_digests: ['digest-1'],
        error: null,
        updated_at: 2,
        node_fee_amount: 7,
      });
      const [latest, earlier] = await store.listAutopilotActions({ limit: 10 });
      assert.equal(latest?.id, second);
      assert.deepEqual(earlier, {
        ...base,
        id: first,
        status: 'succeeded',
        tx_digests: ['digest-1'],
        updated_at: 2,
        node_fee_amount: 7,
      });
      assert.equal(latest?.node_fee_amount, U64_MAX);
      assert.deepEqual(
        (await store.listAutopilotActions({ limit: 10, pending: true })).map((a) => a.id),
        [second],
      );
      assert.equal((await store.listAutopilotActions({ limit: 1 })).length, 1);
    });

    it("records the gas an autopilot action used, and lists the actions that spend gas since a time (the daily cap's question)", async () => {
      const base = {
        updated_at: 1,
        kind: 'settle' as const,
        node_small_id: 3,
        stack_small_ids: [9],
        status: 'pending' as const,
        reason: 'filled',
        node_fee_amount: null,
        gas_estimate: 3_976_000,
        gas_used: null,
        tx_digests: [],
        error: null,
      };
      const spent = await store.insertAutopilotAction({ ...base, at: 1000 });
      await store.insertAutopilotAction({ ...base, at: 2000, status: 'skipped' });
      const pending = await store.insertAutopilotAction({ ...base, at: 3000 });
      await store.insertAutopilotAction({ ...base, at: 500 });
      const change = { status: 'succeeded' as const, tx_digests: ['d'], error: null, updated_at: 4 };
      await store.updateAutopilotAction(spent, { ...change, gas_used: ABOVE_SAFE });
      // A later change without the figure keeps it.
      await store.updateAutopilotAction(spent, change);
      const rows = await store.listAutopilotSpending(1000);
      assert.deepEqual(rows, [
        { at: 1000, node_small_id: 3, status: 'succeeded', gas_estimate: 3_976_000, gas_used: ABOVE_SAFE },
        { at: 3000, node_small_id: 3, status: 'pending', gas_estimate: 3_976_000, gas_used: null },
      ]);
      const pendingIds = (await store.listAutopilotActions({ limit: 10, pending: true })).map((a) => a.id);
      assert.ok(pendingIds.includes(pending) && !pendingIds.includes(spent));
      await store.insertAutopilotAction({ ...base, at: 5000, status: 'failed', gas_used: 7 });
      assert.deepEqual(await store.listAutopilotSpending(3001), [
        { at: 5000, node_small_id: 3, status: 'failed', gas_estimate: 3_976_000, gas_used: 7 },
      ]);
    });

    it("records only the scoped nodes' events and everyone's once scoped, every node's again when not", async () => {
      const before = (await store.nodeEventBounds()).newest;
      await store.scopeNodeEvents([3, ABOVE_SAFE]);
      try {
        await store.appendNodeEvents([
          { type: 'stack_assigned', node_small_id: 3, data: { n: 1 } },
          { type: 'stack_assigned', node_small_id: 4, data: { n: 2 } },
          { type: 'task_added', node_small_id: null, data: { n: 3 } },
          { type: 'dispute_opened', node_small_id: 5, other_node_small_id: ABOVE_SAFE, data: { n: 4 } },
          { type: 'dispute_opened', node_small_id: 5, other_node_small_id: 6, data: { n: 5 } },
        ]);
      } finally {
        await store.scopeNodeEvents(null);
      }
      await store.appendNodeEvents([{ type: 'stack_assigned', node_small_id: 4, data: { n: 6 } }]);
      const kept = await store.listNodeEvents({ after: before, limit: 100, nodes: null, types: null });
      assert.deepEqual(
        kept.map((e) => (JSON.parse(e.data) as { n: number }).n),
        [1, 3, 4, 6],
      );
      assert.deepEqual(
        kept.map((e) => e.id),
        [before + 1, before + 2, before + 3, before + 4],
        'the ids stay gap-free',
      );
    });

    it('records node events with gap-free ids in commit order, and reads them filtered', async () => {
      assert.deepEqual(await store.nodeEventBounds(), { oldest: null, newest: 0 });
      let told = 0;
      const stop = store.onNodeEvents(() => {
        told += 1;
      });
      await store.appendNodeEvents([
        { type: 'task_added', node_small_id: null, at: 10, data: { task_small_id: 1 } },
        { type: 'stack_assigned', node_small_id: 1, at: 11, data: { stack_small_id: 5, big: U64_MAX } },
      ]);
      // A transaction that fails records nothing and uses no id.
      await assert.rejects(
        write(async (tx) => {
          await tx.appendNodeEvents([{ type: 'stack_assigned', node_small_id: 1, data: {} }]);
          throw new Error('boom');
        }),
        /boom/,
      );
      await write(async (tx) => {
        await tx.appendNodeEvents([
          {
            type: 'dispute_opened',
            node_small_id: 2,
            other_node_small_id: 1,
            at: 12,
            data: { stack_small_id: 6 },
          },
          { type: 'stack_settled', node_small_id: ABOVE_SAFE, at: 13, data: { stack_small_id: 7 } },
        ]);
      });
      assert.ok(told >= 2, 'listeners hear each commit that recorded events');
      stop();
      const all = await store.listNodeEvents({ after: 0, limit: 100, nodes: null, types: null });
      assert.deepEqual(
        all.map((e) => [e.id, e.type, e.node_small_id, e.other_node_small_id, e.at]),
        [
          [1, 'task_added', null, null, 10],
          [2, 'stack_assigned', 1, null, 11],
          [3, 'dispute_opened', 2, 1, 12],
          [4, 'stack_settled', ABOVE_SAFE, null, 13],
        ],
      );
      assert.equal(all[1]!.data, '{"stack_small_id":5,"big":18446744073709551615}', 'exact u64 in the data');
      assert.deepEqual(await store.nodeEventBounds(), { oldest: 1, newest: 4 });
      const ids = async (query: Partial<Parameters<Store['listNodeEvents']>[0]>) =>
        (await store.listNodeEvents({ after: 0, limit: 100, nodes: null, types: null, ...query })).map(
          (e) => e.id,
        );
      // Node 1's: its own, the dispute it is the other party of, and everyone's.
      assert.deepEqual(await ids({ nodes: [1] }), [1, 2, 3]);
      assert.deepEqual(await ids({ nodes: [ABOVE_SAFE] }), [1, 4]);
      assert.deepEqual(await ids({ nodes: [] }), [1]);
      assert.deepEqual(await ids({ types: ['stack_assigned', 'stack_settled'] }), [2, 4]);
      assert.deepEqual(await ids({ nodes: [1], types: ['dispute_opened'] }), [3]);
      assert.deepEqual(await ids({ after: 2, limit: 1 }), [3]);
      // Where the newest events of a filter begin (GET /events?last=N).
      const start = (count: number, query: Partial<Parameters<Store['listNodeEvents']>[0]> = {}) =>
        store.recentNodeEventsStart({ nodes: null, types: null, count, ...query });
      assert.equal(await start(2), 2);
      assert.equal(await start(100), 0);
      assert.equal(
        await start(1, { nodes: [1] }),
        2,
        "node 1's newest: the dispute it is the other party of",
      );
      assert.equal(await start(2, { nodes: [ABOVE_SAFE] }), 0);
      assert.equal(await start(1, { types: ['stack_assigned'] }), 1);
      assert.equal(await start(5, { types: ['funds_claimed'] }), null, 'none match');
    });

    it('records a condition once when it starts and once when it ends, each with its event', async () => {
      const event = (type: 'signer_gas_low' | 'signer_gas_restored') => ({
        type,
        node_small_id: null,
        data: { address: '0xab' },
      });
      // Never recorded: it does not hold, and ending it announces nothing.
      assert.equal(
        await store.setCondition('signer_gas_low:0xab', false, event('signer_gas_restored'), 1),
        false,
      );
      assert.deepEqual(await store.listConditions(), []);
      assert.equal(await store.setCondition('signer_gas_low:0xab', true, event('signer_gas_low'), 2), true);
      // Seen again (another check, another daemon, a restart): nothing more.
      assert.equal(await store.setCondition('signer_gas_low:0xab', true, event('signer_gas_low'), 3), false);
      assert.equal(await store.setCondition('indexer_behind', true, event('signer_gas_low'), 4), true);
      assert.equal(
        await store.setCondition('signer_gas_low:0xab', false, event('signer_gas_restored'), 5),
        true,
      );
      assert.equal(
        await store.setCondition('signer_gas_low:0xab', false, event('signer_gas_restored'), 6),
        false,
      );
      assert.deepEqual(await store.listConditions(), [
        { key: 'indexer_behind', holds: true, since: 4 },
        { key: 'signer_gas_low:0xab', holds: false, since: 5 },
      ]);
      assert.equal(await store.setCondition('signer_gas_low:0xab', true, event('signer_gas_low'), 7), true);
      const types = (await store.listNodeEvents({ after: 0, limit: 100, nodes: null, types: null })).map(
        (e) => e.type,
      );
      assert.deepEqual(types, ['signer_gas_low', 'signer_gas_low', 'signer_gas_restored', 'signer_gas_low']);
    });

    it('prunes node events by age and by count, and never reuses an id', async () => {
      await store.appendNodeEvents(
        [100, 200, 300, 400, 500].map((at) => ({ type: 'task_added', node_small_id: null, at, data: {} })),
      );
      assert.equal(await store.pruneNodeEvents(250, 1000), 2, 'older than 250');
      assert.deepEqual(await store.nodeEventBounds(), { oldest: 3, newest: 5 });
      assert.equal(await store.pruneNodeEvents(0, 1), 2, 'all but the newest');
      assert.deepEqual(await store.nodeEventBounds(), { oldest: 5, newest: 5 });
      assert.equal(await store.pruneNodeEvents(1000, 1000), 1);
      assert.deepEqual(await store.nodeEventBounds(), { oldest: null, newest: 5 });
      await store.appendNodeEvents([{ type: 'task_added', node_small_id: null, data: {} }]);
      assert.deepEqual(await store.nodeEventBounds(), { oldest: 6, newest: 6 });
    });

    it('records a stack_filled event for each threshold a usage report crosses', async () => {
      await write(async (tx) => {
        await tx.putStack(newStack(1, 3, 1000));
      });
      const types = async () =>
        (await store.listNodeEvents({ after: 0, limit: 100, nodes: null, types: null })).map((e) => [
          e.node_small_id,
          JSON.parse(e.data).threshold,
        ]);
      await store.addStackUsage(1, 400, REQUEST, 1);
      assert.deepEqual(await types(), []);
      await store.addStackUsage(1, 550, REQUEST, 2);
      assert.deepEqual(await types(), [
        [3, 0.5],
        [3, 0.9],
      ]);
      await store.addStackUsage(1, 50, REQUEST, 3);
      await store.addStackUsage(1, 0, REQUEST, 4);
      assert.deepEqual((await types()).at(-1), [3, 1]);
      assert.equal((await types()).length, 3, 'a threshold is crossed once');
      await store.addStackUsage(1, 1, REQUEST, 5);
      assert.equal((await types()).length, 3, 'over capacity records nothing');
    });

    it("mirrors a usage source's values exactly, down as well as up, and each threshold once", async () => {
      await write(async (tx) => {
        await tx.putStack(newStack(1, 3, 1000));
        await tx.putStack(newStack(2, 3, 1000));
        await tx.putStack(newStack(3, 4, 1000));
      });
      const mirrored = (stack: U64, node: U64, already: U64, messages: U64) => ({
        stack_small_id: stack,
        selected_node_id: node,
        already_computed_units: already,
        num_total_messages: messages,
      });
      const fills = async () =>
        (await store.listNodeEvents({ after: 0, limit: 100, nodes: null, types: ['stack_filled'] })).map(
          (e) => [JSON.parse(e.data).stack_small_id, JSON.parse(e.data).threshold],
        );
      const usage = async (id: U64) => {
        const stack = await store.getStack(id);
        return [stack?.already_computed_units, stack?.num_total_messages];
      };
      // A reservation (the estimate), then its correction (estimated minus actual): the value goes down.
      assert.deepEqual(await store.mirrorStackUsage([mirrored(1, 3, 920, 1)], 10), ['set']);
      assert.deepEqual(await usage(1), [920, 1]);
      assert.deepEqual(await fills(), [
        [1, 0.5],
        [1, 0.9],
      ]);
      assert.deepEqual(await store.mirrorStackUsage([mirrored(1, 3, 880, 1)], 11), ['set']);
      assert.deepEqual(await usage(1), [880, 1]);
      // Past 0.9 again: not reported twice. The same values again: nothing changes, nothing is counted twice.
      assert.deepEqual(await store.mirrorStackUsage([mirrored(1, 3, 950, 2)], 12), ['set']);
      assert.deepEqual(await store.mirrorStackUsage([mirrored(1, 3, 950, 2)], 13), ['unchanged']);
      assert.deepEqual(await fills(), [
        [1, 0.5],
        [1, 0.9],
      ]);
      assert.equal((await store.getStack(1))?.already_computed_units, 950);
      // Beyond the stack's units is its units; another node's stack, an unknown one: closed, untouched.
      assert.deepEqual(
        await store.mirrorStackUsage(
          [mirrored(2, 3, 5000, 9), mirrored(3, 3, 10, 1), mirrored(99, 3, 1, 1)],
          14,
        ),
        ['set', 'closed', 'closed'],
      );
      assert.deepEqual(await usage(2), [1000, 9]);
      assert.deepEqual(await usage(3), [0, 0]);
      assert.deepEqual((await fills()).slice(2), [
        [2, 0.5],
        [2, 0.9],
        [2, 1],
      ]);
      // The idle rule counts from the last change seen (stack 1's at 12: the same values at 13 are none),
      // and stack 2 is full.
      assert.deepEqual(
        (await store.listSettleCandidates(3, 1_000_000, 14)).map((s) => [s.stack_small_id, s.last_usage_at]),
        [
          [1, 12],
          [2, 14],
        ],
      );
      // A settled stack is no longer followed, and a mirror leaves it as the settlement found it.
      await write(async (tx) => {
        await tx.putTicket(settlement(1, 3, 950), 4);
      });
      assert.deepEqual(await store.mirrorStackUsage([mirrored(1, 3, 990, 3)], 15), ['closed']);
      assert.deepEqual(await usage(1), [950, 2]);
      // Unsettled earnings are the fee of the mirrored usage.
      const ledger = await store.listLedger(3);
      assert.deepEqual(
        ledger.map((r) => [r.stack_small_id, r.already_computed_units]),
        [
          [1, 950],
          [2, 1000],
        ],
      );
    });

    it('lists the open stacks a usage source follows: with usage, and without after an id', async () => {
      await write(async (tx) => {
        for (const id of [1, 2, 3, 4, 5]) await tx.putStack(newStack(id, 3, 1000));
        await tx.putStack(newStack(6, 4, 1000));
        await tx.putTicket(settlement(4, 3, 0), 4);
      });
      await store.addStackUsage(2, 10, REQUEST, 1);
      const ids = async (after: U64 | null) =>
        (await store.listFollowedStacks(3, after))
          .map((s) => s.stack_small_id)
          .sort((a, b) => Number(a) - Number(b));
      assert.deepEqual(await ids(null), [1, 2, 3, 5]);
      assert.deepEqual(await ids(3), [2, 5]);
      const [followed] = (await store.listFollowedStacks(3, 4)).filter((s) => s.stack_small_id === 2);
      assert.deepEqual(followed, {
        stack_small_id: 2,
        already_computed_units: 10,
        num_total_messages: 1,
        num_compute_units: 1000,
      });
    });

    it('records an autopilot_action event with each change of an action', async () => {
      const id = await store.insertAutopilotAction({
        at: 1,
        updated_at: 1,
        kind: 'claim',
        node_small_id: 4,
        stack_small_ids: [1, 2],
        status: 'pending',
        reason: 'worth it',
        node_fee_amount: U64_MAX,
        gas_estimate: null,
        gas_used: null,
        tx_digests: [],
        error: null,
      });
      await store.updateAutopilotAction(id, {
        status: 'succeeded',
        tx_digests: ['d'],
        error: null,
        updated_at: 2,
      });
      const events = await store.listNodeEvents({
        after: 0,
        limit: 10,
        nodes: [4],
        types: ['autopilot_action'],
      });
      assert.deepEqual(
        events
          .map((e) => JSON.parse(e.data) as Record<string, unknown>)
          .map((d) => [d.action_id, d.status, d.tx_digests]),
        [
          [id, 'pending', []],
          [id, 'succeeded', ['d']],
        ],
      );
      assert.match(events[1]!.data, /"node_fee_amount":18446744073709551615/);
    });

    it('finds the tickets that become claimable between two epochs, across nodes', async () => {
      await write(async (tx) => {
        await tx.putTask(newTask(1));
        for (const [id, node] of [
          [1, 1],
          [2, 2],
          [3, 1],
        ] as const) {
          await tx.putStack(newStack(id, node));
        }
        const settle = (id: number, node: number, epoch: number) =>
          tx.putTicket(
            {
              stack_small_id: id,
              selected_node_id: node,
              requested_attestation_nodes: [],
              committed_stack_proof: proof,
              stack_merkle_leaf: leaf,
              num_claimed_compute_units: 100,
            },
            epoch,
          );
        await settle(1, 1, 4);
        await settle(2, 2, 5);
        await settle(3, 1, 7);
        assert.deepEqual(
          (await tx.listBecomingClaimable(4, 6)).map((t) => [
            t.stack_small_id,
            t.selected_node_id,
            t.claimable_from_epoch,
          ]),
          [
            [1, 1, 5],
            [2, 2, 6],
          ],
        );
        assert.deepEqual(
          (await tx.listBecomingClaimable(null, 5)).map((t) => t.stack_small_id),
          [1],
        );
      });
    });

    it('keeps named tokens by hash: a live name is taken, a revoked one is given again, and the last use moves', async () => {
      const token = (name: string, hash: string, expiresAt: number | null = null) => ({
        name,
        scope: 'read',
        hash,
        createdAt: 1000,
        expiresAt,
      });
      assert.equal(await store.createToken(token('grafana', 'a'.repeat(64), 5000)), 'created');
      assert.equal(await store.createToken(token('grafana', 'b'.repeat(64))), 'exists');
      const found = await store.findToken('a'.repeat(64));
      assert.deepEqual(found, {
        name: 'grafana',
        scope: 'read',
        created_at: 1000,
        expires_at: 5000,
        last_used_at: null,
        revoked_at: null,
      });
      assert.equal(await store.findToken('b'.repeat(64)), undefined);
      await store.touchToken('grafana', 2000);
      assert.equal((await store.findToken('a'.repeat(64)))?.last_used_at, 2000);
      assert.equal(await store.revokeToken('grafana', 3000), true);
      assert.equal(await store.revokeToken('grafana', 3001), false, 'revoked once');
      assert.equal(await store.revokeToken('nobody', 3000), false);
      assert.equal((await store.findToken('a'.repeat(64)))?.revoked_at, 3000);
      assert.equal(
        await store.createToken(token('grafana', 'c'.repeat(64))),
        'created',
        'a revoked name is free',
      );
      assert.equal(await store.findToken('a'.repeat(64)), undefined, 'the old token is gone with it');
      assert.deepEqual(
        (await store.listTokens()).map((t) => [t.name, t.revoked_at, t.expires_at]),
        [['grafana', null, null]],
      );
    });

    it('keeps the audit trail: newest first, filtered, paged, pruned', async () => {
      const entry = (at: number, status: number, token: string | null, route = '/nodes/claim-funds') => ({
        at,
        token_name: token,
        method: 'POST',
        route,
        request_id: `r${at}`,
        status,
        problem_code: status >= 400 ? 'x' : null,
        tx_digest: status < 400 ? `d${at}` : null,
        gas_used: status < 400 ? '18446744073709551615' : null,
        idempotent_replay: at === 4,
      });
      await store.appendAudit([entry(1, 401, null), entry(2, 403, 'reader'), entry(3, 200, 'claims')]);
      await store.appendAudit([entry(4, 200, 'claims'), entry(5, 400, 'claims', '/nodes/register')]);
      const all = await store.listAudit({ limit: 10 });
      assert.deepEqual(
        all.map((e) => e.at),
        [5, 4, 3, 2, 1],
      );
      assert.equal(all[1]?.idempotent_replay, true);
      assert.equal(all[1]?.gas_used, '18446744073709551615');
      assert.equal(all[4]?.token_name, null);
      const at = async (query: Parameters<Store['listAudit']>[0]) =>
        (await store.listAudit(query)).map((e) => e.at);
      assert.deepEqual(await at({ limit: 10, token: 'claims' }), [5, 4, 3]);
      assert.deepEqual(await at({ limit: 10, outcome: 'denied' }), [2, 1]);
      assert.deepEqual(await at({ limit: 10, outcome: 'failed' }), [5]);
      assert.deepEqual(await at({ limit: 10, outcome: 'ok' }), [4, 3]);
      assert.deepEqual(await at({ limit: 10, route: '/nodes/register' }), [5]);
      assert.deepEqual(await at({ limit: 10, since: 2, until: 4 }), [3, 2]);
      assert.deepEqual(await at({ limit: 2, before: all[1]!.id }), [3, 2]);
      assert.equal(await store.pruneAudit(3), 2);
      assert.deepEqual(await at({ limit: 10 }), [5, 4, 3]);
    });

    describe('webhooks (WebhookStore)', () => {
      const endpoint = (url: string, types: string[] | null = null) =>
        store.createWebhookEndpoint({ url, types, description: 'd', secret: 'whsec_AAAA', created_at: 1000 });
      const event = (type: 'task_added' | 'dispute_opened', node: U64 | null = 3) => ({
        type,
        node_small_id: node,
        at: 5000,
        data: { big: ABOVE_SAFE },
      });

      it('keeps endpoints, and writes a delivery per event and matching enabled endpoint with the event', async () => {
        const all = await endpoint('http://127.0.0.1:1/all');
        const disputes = await endpoint('https://example.com/d', ['dispute_opened']);
        assert.deepEqual(disputes.types, ['dispute_opened']);
        assert.equal(all.types, null);
        assert.deepEqual(
          (await store.listWebhookEndpoints()).map((e) => e.id),
          [all.id, disputes.id],
        );
        assert.equal((await store.getWebhookEndpoint(disputes.id))?.url, 'https://example.com/d');
        await store.appendNodeEvents([event('task_added'), event('dispute_opened', ABOVE_SAFE)]);
        const toAll = await store.listWebhookDeliveries(all.id, { before: null, limit: 10 });
        const toDisputes = await store.listWebhookDeliveries(disputes.id, { before: null, limit: 10 });
        assert.deepEqual(
          toAll.map((d) => d.type),
          ['dispute_opened', 'task_added'],
        );
        assert.deepEqual(
          toDisputes.map((d) => [d.type, d.node_small_id, d.state, d.attempts]),
          [['dispute_opened', ABOVE_SAFE, 'pending', 0]],
        );
        const [events] = [await store.listNodeEvents({ after: 0, limit: 10, nodes: null, types: null })];
        assert.equal(toDisputes[0]!.event_id, events.find((e) => e.type === 'dispute_opened')!.id);
        assert.equal(toDisputes[0]!.data, stringifyJson({ big: ABOVE_SAFE }));
        assert.match(toDisputes[0]!.webhook_id, /^msg_[0-9a-f]{32}$/);
        assert.notEqual(toDisputes[0]!.webhook_id, toAll[0]!.webhook_id);
        // Paged newest first.
        const page = await store.listWebhookDeliveries(all.id, { before: toAll[0]!.id, limit: 10 });
        assert.deepEqual(
          page.map((d) => d.type),
          ['task_added'],
        );
        assert.equal(await store.deleteWebhookEndpoint(all.id), true);
        assert.equal(await store.deleteWebhookEndpoint(all.id), false);
        assert.equal(await store.getWebhookDelivery(toAll[0]!.id), undefined);
      });

      it('writes no delivery for an event whose transaction rolled back', async () => {
        const e = await endpoint('http://127.0.0.1:1/all');
        await assert.rejects(
          write(async (tx) => {
            await tx.appendNodeEvents([event('task_added')]);
            throw new Error('refused');
          }),
          /refused/,
        );
        assert.deepEqual(await store.listWebhookDeliveries(e.id, { before: null, limit: 10 }), []);
        assert.equal((await store.webhookStats()).pending, 0);
      });

      it('leases one delivery per endpoint, oldest first, and records attempts', async () => {
        const a = await endpoint('http://127.0.0.1:1/a');
        const b = await endpoint('http://127.0.0.1:1/b');
        await store.appendNodeEvents([event('task_added'), event('dispute_opened')]);
        assert.deepEqual(await store.webhookStats(), {
          pending: 4,
          oldest_pending_at: 5000,
          disabled_endpoints: 0,
        });
        assert.equal(await store.nextWebhookDue(), 0);
        const first = await store.claimWebhookDeliveries(10_000, 10, 70_000, 'one');
        assert.deepEqual(
          first.map((d) => [d.endpoint_id, d.type]),
          [
            [a.id, 'task_added'],
            [b.id, 'task_added'],
          ],
        );
        assert.equal(first[0]!.url, 'http://127.0.0.1:1/a');
        assert.equal(first[0]!.secret, 'whsec_AAAA');
        // Leased: another sender gets nothing until the lease ends.
        assert.deepEqual(await store.claimWebhookDeliveries(10_000, 10, 70_000, 'two'), []);
        await store.recordWebhookAttempt(
          first[0]!,
          {
            attempt: { at: 10_000, status: 500, error: null, duration_ms: 3 },
            state: 'pending',
            step: 1,
            next_attempt_at: 15_000,
            failing_since: 10_000,
          },
          'one',
        );
        // a's first delivery waits for 15 s: its second is due and goes (retries do not hold the others).
        const second = await store.claimWebhookDeliveries(11_000, 10, 71_000, 'two');
        assert.deepEqual(
          second.map((d) => [d.endpoint_id, d.type, d.failing_since]),
          [[a.id, 'dispute_opened', 10_000]],
        );
        await store.recordWebhookAttempt(
          second[0]!,
          {
            attempt: { at: 11_000, status: 200, error: null, duration_ms: 4 },
            state: 'delivered',
            step: 0,
            next_attempt_at: 0,
            failing_since: null,
          },
          'two',
        );
        // b's lease ran out, a's was freed and its retry is due: a sender takes both.
        const again = await store.claimWebhookDeliveries(80_000, 10, 140_000, 'two');
        assert.deepEqual(
          again.map((d) => d.id),
          [first[0]!.id, first[1]!.id],
        );
        const [newest, oldest] = await store.listWebhookDeliveries(a.id, { before: null, limit: 10 });
        assert.equal(newest!.state, 'delivered');
        assert.equal(newest!.finished_at, 11_000);
        assert.deepEqual(newest!.attempts_list, [
          { n: 1, at: 11_000, status: 200, error: null, duration_ms: 4 },
        ]);
        assert.equal(oldest!.state, 'pending');
        assert.equal(oldest!.next_attempt_at, 15_000);
        assert.equal((await store.getWebhookEndpoint(a.id))!.failing_since, null);
        // A delivered one is replayed from the start of its schedule; a pending one is not.
        assert.equal(await store.retryWebhookDelivery(oldest!.id), false);
        assert.equal(await store.retryWebhookDelivery(newest!.id), true);
        const replayed = await store.getWebhookDelivery(newest!.id);
        assert.deepEqual(
          [replayed!.state, replayed!.step, replayed!.next_attempt_at, replayed!.attempts],
          ['pending', 0, 0, 1],
        );
        await store.releaseWebhookLeases('two');
        assert.equal((await store.claimWebhookDeliveries(80_000, 10, 140_000, 'three')).length, 2);
        await store.releaseWebhookLeases(null);
        assert.equal((await store.claimWebhookDeliveries(80_000, 10, 140_000, 'four')).length, 2);
        // Finished deliveries older than the retention go with their attempts; pending ones stay.
        await store.recordWebhookAttempt(
          { ...oldest!, url: '', secret: '', failing_since: null },
          {
            attempt: { at: 90_000, status: 204, error: null, duration_ms: 1 },
            state: 'delivered',
            step: 0,
            next_attempt_at: 0,
            failing_since: null,
          },
          'four',
        );
        assert.equal(await store.pruneWebhookDeliveries(90_000), 0);
        assert.equal(await store.pruneWebhookDeliveries(90_001), 1);
        assert.equal(await store.getWebhookDelivery(oldest!.id), undefined);
        assert.equal((await store.getWebhookDelivery(newest!.id))?.state, 'pending');
      });

      it('disables an endpoint with its node event, which goes to the other endpoints', async () => {
        const gone = await endpoint('http://127.0.0.1:1/gone');
        const other = await endpoint('http://127.0.0.1:1/other', ['webhook_endpoint_disabled']);
        await store.appendNodeEvents([event('task_added')]);
        const [claimed] = await store.claimWebhookDeliveries(10_000, 10, 70_000, 'one');
        await store.recordWebhookAttempt(
          claimed!,
          {
            attempt: { at: 10_000, status: 410, error: null, duration_ms: 1 },
            state: 'failed',
            step: 0,
            next_attempt_at: 0,
            failing_since: 10_000,
            disable: {
              reason: 'the receiver answered 410 Gone',
              event: {
                type: 'webhook_endpoint_disabled',
                node_small_id: null,
                at: 10_000,
                data: { endpoint_id: gone.id },
              },
            },
          },
          'one',
        );
        const disabled = (await store.getWebhookEndpoint(gone.id))!;
        assert.equal(disabled.disabled_at, 10_000);
        assert.equal(disabled.disabled_reason, 'the receiver answered 410 Gone');
        assert.equal((await store.webhookStats()).disabled_endpoints, 1);
        const events = await store.listNodeEvents({
          after: 0,
          limit: 10,
          nodes: null,
          types: ['webhook_endpoint_disabled'],
        });
        assert.equal(events.length, 1);
        assert.deepEqual(
          (await store.listWebhookDeliveries(other.id, { before: null, limit: 10 })).map((d) => d.type),
          ['webhook_endpoint_disabled'],
        );
        // A disabled endpoint gets no new deliveries and is not claimed; enabled, it is again.
        await store.appendNodeEvents([event('task_added')]);
        assert.equal((await store.listWebhookDeliveries(gone.id, { before: null, limit: 10 })).length, 1);
        await store.addWebhookDelivery(gone.id, {
          webhook_id: 'msg_test1',
          type: 'webhook.test',
          at: 20_000,
          data: '{}',
        });
        assert.deepEqual(
          (await store.claimWebhookDeliveries(20_000, 10, 80_000, 'two')).map((d) => d.endpoint_id),
          [other.id],
        );
        assert.equal(await store.enableWebhookEndpoint(gone.id), true);
        const [test] = await store.claimWebhookDeliveries(20_000, 10, 80_000, 'two');
        assert.deepEqual([test!.webhook_id, test!.event_id, test!.type], ['msg_test1', null, 'webhook.test']);
      });
    });

    it('refuses work once closed', async () => {
      await store.close();
      await assert.rejects(store.listTasks(), { name: 'StoreError', code: 'store_closed' });
    });
  });
}
