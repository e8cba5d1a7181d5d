import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { blake2b } from '@noble/hashes/blake2.js';
import {
  type Badge,
  ChainRejectedError,
  ChainUnavailableError,
  type Operation,
  type Submission,
} from '../src/chain/chain.ts';
import { DevActorError, DevNetwork, type DevNetworkOptions } from '../src/chain/dev/dev-network.ts';
import { GENESIS_USER_USDC } from '../src/chain/dev/genesis.ts';
import { decodeState, encodeState } from '../src/chain/dev/state.ts';
import { addCounts, applyPage, emptyCounts } from '../src/indexer/apply.ts';
import { type U64, U64_MAX } from '../src/internal/u64.ts';
import {
  type DecodedEvent,
  decodePayload,
  type EventName,
  isEventName,
  type Payload,
  readEnvelope,
} from '../src/protocol/events.ts';
import { commitmentFor, leafFor } from '../src/protocol/proofs.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { captureLogger } from './helpers/capture-log.ts';
import { tempDir } from './helpers/tmp.ts';

const SIGNER = `0x${'5e'.repeat(32)}`;
const LLAMA = 'meta-llama/Llama-3.3-70B-Instruct';
const QWEN = 'Qwen/QwQ-32B';
const NO_SECURITY = 0;
const CONFIDENTIAL = 1;
const SAMPLING = 2;

// --- harness -----------------------------------------------------------------------------------------------

interface Harness {
  dev: DevNetwork;
  /** Scripted sui::random draws, consumed in order; 0 once empty. */
  draws: number[];
  /** Opens the same data directory again (after closing `dev`, for restarts). */
  open(options?: Partial<DevNetworkOptions>): DevNetwork;
}

async function harness(t: TestContext, options: Partial<DevNetworkOptions> = {}): Promise<Harness> {
  const tmp = tempDir('dev-network-test-');
  const draws: number[] = [];
  const opened: DevNetwork[] = [];
  const open = (more: Partial<DevNetworkOptions> = {}) => {
    const dev = DevNetwork.open({
      dataDir: tmp.dir,
      signerAddress: SIGNER,
      samplingProbability: 0,
      attestationNodes: 1,
      random: (bound) => {
        const draw = draws.shift() ?? 0;
        assert.ok(draw < bound, `scripted draw ${draw} is not below ${bound}`);
        return draw;
      },
      ...options,
      ...more,
    });
    opened.push(dev);
    return dev;
  };
  t.after(async () => {
    for (const dev of opened) await dev.close();
    await tmp.remove();
  });
  return { dev: open(), draws, open };
}

/** Decodes every event exactly as the indexer does, and checks the field order against the indexer's. */
function decodeEvents(submission: Submission): DecodedEvent[] {
  return submission.events.map((raw) => {
    const envelope = readEnvelope(raw);
    assert.equal(envelope.module, 'db');
    if (!isEventName(envelope.name)) assert.fail(`${envelope.name} is not an event the indexer knows`);
    const json = (raw as { parsedJson: Record<string, unknown> }).parsedJson;
    const decoded = decodePayload(envelope.name, json);
    assert.deepEqual(Object.keys(json), Object.keys(decoded.payload), `${envelope.name}: field order`);
    return decoded;
  });
}

function ok(submission: Submission): DecodedEvent[] {
  assert.equal(submission.status, 'success', `expected success, got ${JSON.stringify(submission.abort)}`);
  assert.equal(submission.abort, undefined);
  return decodeEvents(submission);
}

function only<N extends EventName>(events: DecodedEvent[], name: N): Payload<N> {
  assert.deepEqual(
    events.map((e) => e.name),
    [name],
  );
  return events[0]!.payload as Payload<N>;
}

function aborted(submission: Submission, name: string, code: number, module = 'db'): void {
  assert.equal(submission.status, 'failure', `expected ${name}, got success`);
  assert.deepEqual(submission.abort, { name, code, module });
  assert.deepEqual(submission.events, []);
}

const framework = (submission: Submission) => aborted(submission, 'EFieldDoesNotExist', 1, 'dynamic_field');

function rejectedWith(code: string) {
  return (error: unknown) => {
    assert.ok(error instanceof ChainRejectedError, String(error));
    assert.equal(error.code, code);
    return true;
  };
}

const hashOf = (seed: string) => blake2b(new TextEncoder().encode(seed), { dkLen: 32 });
const zeros = (n: number) => new Uint8Array(n);
const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

async function register(dev: DevNetwork): Promise<Badge> {
  const p = only(ok(await dev.submit({ kind: 'register_node' })), 'NodeRegisteredEvent');
  return { badge_id: p.badge_id, node_small_id: p.node_small_id };
}

const subscribe = (dev: DevNetwork, badge: Badge, task: U64, price: U64 = 1_000_000) =>
  dev.submit({
    kind: 'subscribe_node_to_task',
    badge,
    task_small_id: task,
    price_per_one_million_compute_units: price,
  });

async function createTask(
  dev: DevNetwork,
  level: number,
  extra: { minimum_reputation_score?: number; is_public?: boolean } = {},
): Promise<U64> {
  const created = await dev.createTask({ role: 0, model_name: LLAMA, security_level: level, ...extra });
  ok(created.submission);
  return created.task_small_id!;
}

async function peer(dev: DevNetwork, tasks: U64[], price: U64 = 1_000_000): Promise<U64> {
  const created = await dev.createPeerNode({
    subscriptions: tasks.map((task_small_id) => ({
      task_small_id,
      price_per_one_million_compute_units: price,
    })),
  });
  for (const s of created.submissions) ok(s);
  return created.node_small_id!;
}

async function buy(dev: DevNetwork, task: U64, node: U64, units: U64 = 1000, price: U64 = 2_000_000) {
  const bought = await dev.buyStack({
    task_small_id: task,
    num_compute_units: units,
    price_per_one_million_compute_units: price,
    selected_node_id: node,
  });
  ok(bought.submission);
  return bought.stack_small_id!;
}

const settle = (
  dev: DevNetwork,
  badge: Badge,
  stack: U64,
  claimed: U64,
  total: Uint8Array,
  k = 1,
  proof = commitmentFor(total, k),
  leaf = leafFor(total, 0),
) =>
  dev.submit({
    kind: 'try_settle_stack',
    badge,
    stack_small_id: stack,
    num_claimed_compute_units: claimed,
    committed_stack_proof: proof,
    stack_merkle_leaf: leaf,
  });

const attest = (dev: DevNetwork, badge: Badge, stack: U64, proof: Uint8Array, leaf: Uint8Array) =>
  dev.submit({
    kind: 'submit_stack_settlement_attestation',
    badge,
    stack_small_id: stack,
    committed_stack_proof: proof,
    stack_merkle_leaf: leaf,
  });

const claim = (dev: DevNetwork, badge: Badge, stacks: U64[]) =>
  dev.submit({ kind: 'claim_funds', badge, settled_ticket_ids: stacks });

const claimForStacks = (dev: DevNetwork, badge: Badge, stacks: U64[], units: U64[]) =>
  dev.submit({
    kind: 'claim_funds_for_stacks',
    badge,
    stack_small_ids: stacks,
    num_compute_units_per_stack_to_claim: units,
  });

const dispute = (dev: DevNetwork, badge: Badge, stack: U64, commitment: Uint8Array) =>
  dev.submit({
    kind: 'start_attestation_dispute',
    badge,
    stack_small_id: stack,
    attestation_commitment: commitment,
  });

// --- tests -------------------------------------------------------------------------------------------------

describe('dev network: its state as stored', () => {
  it('reads back each bigint exactly, at any depth, and takes no other object for one', () => {
    const state = {
      id: 5n,
      max: U64_MAX,
      small: 7,
      name: 'node',
      none: null,
      flags: [true, false],
      subscriptions: [
        { task: 1n, price: 2n ** 60n, ids: [3n, 4n] },
        { task: 2n, price: 0n, ids: [] },
      ],
      matrix: [[1n, 2n], [], [[0n]]],
      // Bytes stay tagged (unhex reads them); objects that only look like a tag are not one.
      proof: new Uint8Array([0, 255]),
      notATag: { $u64: '5', other: 1 },
      notAString: { $u64: 5 },
      nested: { $u64: { $u64: '6' } },
    };
    const back = decodeState<Record<string, unknown>>(encodeState(state));
    assert.deepEqual(back, {
      ...state,
      proof: { $bytes: '00ff' },
      notATag: { $u64: '5', other: 1 },
      notAString: { $u64: 5 },
      // Its inner tag is a bigint, so the outer object no longer holds a string $u64.
      nested: { $u64: 6n },
    });
    assert.equal(typeof (back.max as bigint), 'bigint');
    assert.equal(encodeState(back), encodeState({ ...state, proof: { $bytes: '00ff' } }));
  });
});

describe('dev network: genesis and nodes', () => {
  it('publishes the package once, with a funded user and the configured parameters', async (t) => {
    const { dev } = await harness(t, { attestationNodes: 3 });
    assert.equal(dev.network, 'dev');
    assert.equal(await dev.currentEpoch(), 0);
    assert.equal((await dev.parameters()).cross_validation_extra_nodes_count, 3n);
    assert.deepEqual(await dev.listBadges(), []);
    assert.equal(dev.balanceOf(dev.userAddress), GENESIS_USER_USDC);
    assert.equal(dev.feeTreasury(), 0n);
    assert.match(dev.gasCoinId, /^0x[0-9a-f]{64}$/);
    const page = await dev.events.readPage(null);
    assert.equal(page.events.length, 1);
    assert.equal(page.nextCursor, '1');
    assert.equal(page.events[0]!.cursor, '1', 'each event carries the cursor past it');
    assert.equal(page.hasMore, false);
    const envelope = readEnvelope(page.events[0]!.raw);
    assert.equal(envelope.name, 'PublishedEvent');
    assert.equal(envelope.sender, dev.adminAddress);
  });

  it('register_node: sequential small ids, the badge to the sender, reputation 50', async (t) => {
    const { dev } = await harness(t);
    const submission = await dev.submit({ kind: 'register_node' });
    const first = only(ok(submission), 'NodeRegisteredEvent');
    assert.equal(first.node_small_id, 1);
    assert.match(first.badge_id, /^0x[0-9a-f]{64}$/);
    assert.equal(readEnvelope(submission.events[0]).sender, SIGNER);
    assert.equal(submission.cursor, '2');
    const second = await register(dev);
    assert.equal(second.node_small_id, 2);
    assert.deepEqual(await dev.listBadges(), [{ badge_id: first.badge_id, node_small_id: 1 }, second]);
    const account = dev.nodeAccount(1)!;
    assert.equal(account.owner, SIGNER);
    assert.equal(account.reputation_score, 50);
    assert.equal(account.last_fee_epoch, 0);
    assert.equal(account.available_fee_amount, 0);
  });

  it('add_node_to_model: every abort in order, then one echelon per model', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const call = (model_name: string, echelon_id: U64) =>
      dev.submit({ kind: 'add_node_to_model', badge: a, model_name, echelon_id });
    framework(await call('no/such-model', 1));
    ok((await dev.disableModel(QWEN)).submission);
    aborted(await call(QWEN, 7), 'EModelDisabled', 312012001);
    aborted(await call(LLAMA, 3), 'EEchelonNotFound', 312012005);
    const p = only(ok(await call(LLAMA, 2)), 'NodeSubscribedToModelEvent');
    assert.deepEqual(p, { node_small_id: 1, model_name: LLAMA, echelon_id: 2 });
    // The model check (3) comes before the echelon check (4): any echelon of the same model is refused.
    aborted(await call(LLAMA, 3), 'ENodeAlreadySubscribedToModel', 312012009);
    aborted(await call(LLAMA, 1), 'ENodeAlreadySubscribedToModel', 312012009);
    assert.deepEqual(dev.nodeAccount(1)!.model_subscriptions, [{ model_name: LLAMA, echelon_id: 2 }]);
  });

  it('permanently_disable_node and destroy_disabled_node: checks in order, never sampled, gone after 4 epochs', async (t) => {
    const { dev } = await harness(t, { samplingProbability: 1, attestationNodes: 1 });
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    const p = await peer(dev, [task]);
    // §2.17: the entry is removed before the disabled epoch is extracted, so a live node aborts in std::option.
    aborted((await dev.peerDestroyNode(p)).submission, 'EOPTION_NOT_SET', 262145, 'option');
    assert.deepEqual(ok((await dev.peerDisableNode(p)).submission), [], 'no event');
    aborted((await dev.peerDisableNode(p)).submission, 'ENodeAlreadyDisabled', 312012012);
    const refused = await dev.buyStack({
      task_small_id: task,
      num_compute_units: 1000,
      price_per_one_million_compute_units: 2_000_000,
      selected_node_id: p,
    });
    aborted(refused.submission, 'ENoNodesEligibleForTask', 312012022);
    const stack = await buy(dev, task, 1);
    const settled = only(ok(await settle(dev, a, stack, 10, hashOf('x'))), 'StackTrySettleEvent');
    assert.deepEqual(settled.requested_attestation_nodes, [1], 'the disabled peer is not sampled');
    for (let i = 0; i < 3; i++) await dev.advanceEpoch();
    aborted((await dev.peerDestroyNode(p)).submission, 'ENodeMustWaitBeforeDestroy', 312012013);
    await dev.advanceEpoch();
    assert.deepEqual(ok((await dev.peerDestroyNode(p)).submission), []);
    assert.equal(dev.nodeAccount(p), undefined);
    assert.deepEqual(dev.taskSubscriberList(task), [1, p], 'the subscriber list keeps the id');
    await assert.rejects(dev.peerDisableNode(p), (error: unknown) => error instanceof DevActorError);
  });
});

describe('dev network: task subscriptions', () => {
  it('subscribe_node_to_task: every abort in contract order, then the effects', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const open = await createTask(dev, NO_SECURITY);
    const picky = await createTask(dev, NO_SECURITY, { minimum_reputation_score: 51 });
    const fifty = await createTask(dev, NO_SECURITY, { minimum_reputation_score: 50 });
    const closed = await createTask(dev, NO_SECURITY, { is_public: false });
    const old = await createTask(dev, NO_SECURITY);
    ok((await dev.deprecateTask(old)).submission);
    // Each call below also fails a later check (price 0), proving the order.
    aborted(await subscribe(dev, a, 99, 0), 'ETaskNotFound', 312012017);
    aborted(await subscribe(dev, a, picky, 0), 'ENodeDoesNotMeetTaskRequirements', 312012038);
    aborted(await subscribe(dev, a, closed, 0), 'ENodeNotWhitelistedForTask', 312012045);
    aborted(await subscribe(dev, a, old, 0), 'ETaskDeprecated', 312012015);
    aborted(await subscribe(dev, a, open, 0), 'EInvalidPricePerComputeUnit', 312012037);
    const p = only(ok(await subscribe(dev, a, open, 1_000_000)), 'NodeSubscribedToTaskEvent');
    assert.deepEqual(p, {
      task_small_id: open,
      node_small_id: 1,
      price_per_one_million_compute_units: 1_000_000,
      max_num_compute_units: 1_000_000,
    });
    aborted(await subscribe(dev, a, open, 0), 'ENodeAlreadySubscribedToTask', 312012016);
    // Every node has reputation 50, so a minimum of 50 is met.
    ok(await subscribe(dev, a, fifty, 5));
    // Whitelisting works only on non-public tasks.
    aborted((await dev.whitelistNodes(open, [1])).submission, 'ETaskIsPublic', 312012044);
    ok((await dev.whitelistNodes(closed, [1])).submission);
    ok(await subscribe(dev, a, closed, 7));
    assert.deepEqual(dev.nodeAccount(1)!.task_subscriptions, [open, fifty, closed]);
    assert.deepEqual(dev.taskSubscriberList(open), [1]);
  });

  it('update_node_subscription: the price is checked before the task', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const t1 = await createTask(dev, NO_SECURITY);
    const t2 = await createTask(dev, NO_SECURITY);
    const update = (task: U64, price: U64) =>
      dev.submit({
        kind: 'update_node_subscription',
        badge: a,
        task_small_id: task,
        price_per_one_million_compute_units: price,
      });
    aborted(await update(99, 0), 'EInvalidPricePerComputeUnit', 312012037);
    aborted(await update(99, 5), 'ETaskNotFound', 312012017);
    aborted(await update(t1, 5), 'ENodeNotSubscribedToTask', 312012018);
    ok(await subscribe(dev, a, t1, 10));
    ok(await subscribe(dev, a, t2, 10));
    ok((await dev.deprecateTask(t2)).submission);
    aborted(await update(t2, 20), 'ETaskDeprecated', 312012015);
    const p = only(ok(await update(t1, 20)), 'NodeSubscriptionUpdatedEvent');
    assert.deepEqual(p, {
      node_small_id: 1,
      task_small_id: t1,
      price_per_one_million_compute_units: 20,
      max_num_compute_units: 1_000_000,
    });
    // The new price is what sampling sees: a buyer capped at 15 finds no eligible node.
    const bought = await dev.buyStack({
      task_small_id: t1,
      num_compute_units: 10,
      price_per_one_million_compute_units: 15,
    });
    aborted(bought.submission, 'ENoNodesEligibleForTask', 312012022);
  });

  it('unsubscribe_node_from_task: aborts in order; the stale id stays listed; re-subscribing lists it twice', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const t1 = await createTask(dev, NO_SECURITY);
    const t2 = await createTask(dev, NO_SECURITY);
    const unsubscribe = (task: U64) =>
      dev.submit({ kind: 'unsubscribe_node_from_task', badge: a, task_small_id: task });
    aborted(await unsubscribe(99), 'ETaskNotFound', 312012017);
    aborted(await unsubscribe(t1), 'ENodeNotSubscribedToTask', 312012018);
    ok(await subscribe(dev, a, t1));
    ok(await subscribe(dev, a, t2));
    ok((await dev.deprecateTask(t2)).submission);
    aborted(await unsubscribe(t2), 'ETaskDeprecated', 312012015);
    // The abort reverted the badge field's removal.
    assert.deepEqual(dev.nodeAccount(1)!.task_subscriptions, [t1, t2]);
    const p = only(ok(await unsubscribe(t1)), 'NodeUnsubscribedFromTaskEvent');
    assert.deepEqual(p, { task_small_id: t1, node_small_id: 1 });
    assert.deepEqual(dev.nodeAccount(1)!.task_subscriptions, [t2]);
    assert.deepEqual(dev.taskSubscriberList(t1), [1]);
    ok(await subscribe(dev, a, t1));
    assert.deepEqual(dev.taskSubscriberList(t1), [1, 1]);
  });
});

describe('dev network: tasks (admin)', () => {
  it('create_task_entry: role, then security level, then minimum reputation', async (t) => {
    const { dev } = await harness(t);
    const failed = await dev.createTask({
      role: 8,
      model_name: null,
      security_level: 3,
      minimum_reputation_score: 101,
    });
    aborted(failed.submission, 'EInvalidTaskRole', 312012035);
    assert.equal(failed.task_small_id, undefined);
    const level = await dev.createTask({
      role: 7,
      model_name: null,
      security_level: 3,
      minimum_reputation_score: 101,
    });
    aborted(level.submission, 'EInvalidSecurityLevel', 312012036);
    const minimum = await dev.createTask({
      role: 7,
      model_name: null,
      security_level: 2,
      minimum_reputation_score: 101,
    });
    aborted(minimum.submission, 'EInvalidMinimumReputationScore', 312012043);
    const created = await dev.createTask({
      role: 7,
      model_name: null,
      security_level: 2,
      minimum_reputation_score: 100,
      is_public: false,
    });
    assert.equal(created.task_small_id, 1, 'failed creations take no id');
    const p = only(ok(created.submission), 'TaskRegisteredEvent');
    assert.deepEqual(
      { ...p, task_id: '' },
      {
        task_id: '',
        task_small_id: 1,
        role: 7,
        model_name: null,
        security_level: 2,
        minimum_reputation_score: 100,
      },
    );
    assert.equal(readEnvelope(created.submission.events[0]).sender, dev.adminAddress);
    const second = await dev.createTask({ role: 0, model_name: LLAMA, security_level: 0 });
    const q = only(ok(second.submission), 'TaskRegisteredEvent');
    assert.equal(q.model_name, LLAMA);
    assert.equal(q.minimum_reputation_score, null);
    // task_id is the TaskBadge's id; the deprecation event carries the Task object's (contracts.md §2.12).
    const deprecated = only(ok((await dev.deprecateTask(1)).submission), 'TaskDeprecationEvent');
    assert.notEqual(deprecated.task_id, p.task_id);
    assert.deepEqual({ ...deprecated, task_id: '' }, { task_id: '', task_small_id: 1, epoch: 0 });
    await assert.rejects(
      dev.createTask({ role: -1, model_name: null, security_level: 0 }),
      rejectedWith('invalid_argument'),
    );
  });

  it('deprecate_task and remove_deprecated_task: checks in order, one epoch after deprecation', async (t) => {
    const { dev } = await harness(t);
    const task = await createTask(dev, NO_SECURITY);
    aborted((await dev.deprecateTask(99)).submission, 'ETaskNotFound', 312012017);
    aborted((await dev.removeTask(99)).submission, 'ETaskNotFound', 312012017);
    aborted((await dev.removeTask(task)).submission, 'ETaskNotDeprecated', 312012020);
    assert.equal(await dev.advanceEpoch(), 1);
    const deprecated = only(ok((await dev.deprecateTask(task)).submission), 'TaskDeprecationEvent');
    assert.equal(deprecated.epoch, 1);
    aborted((await dev.deprecateTask(task)).submission, 'ETaskAlreadyDeprecated', 312012034);
    aborted((await dev.removeTask(task)).submission, 'ENotEnoughEpochsPassed', 312012019);
    assert.equal(await dev.advanceEpoch(), 2);
    const removed = only(ok((await dev.removeTask(task)).submission), 'TaskRemovedEvent');
    assert.deepEqual(removed, { task_id: deprecated.task_id, task_small_id: task, removed_at_epoch: 2 });
    aborted((await dev.removeTask(task)).submission, 'ETaskNotFound', 312012017);
    aborted((await dev.deprecateTask(task)).submission, 'ETaskNotFound', 312012017);
    aborted(await subscribe(dev, await register(dev), task), 'ETaskNotFound', 312012017);
  });
});

describe('dev network: acquire_new_stack (the user side)', () => {
  it('checks in contract order, charges the fee of §4.1, and sells on deprecated tasks', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const task = await createTask(dev, NO_SECURITY);
    const empty = await createTask(dev, NO_SECURITY);
    ok(await subscribe(dev, a, task, 1_000_000));
    const buyWith = async (args: { task?: U64; units?: U64; price?: U64; node?: U64 }) =>
      (
        await dev.buyStack({
          task_small_id: args.task ?? task,
          num_compute_units: args.units ?? 1000,
          price_per_one_million_compute_units: args.price ?? 1_500_000,
          ...(args.node === undefined ? {} : { selected_node_id: args.node }),
        })
      ).submission;
    aborted(await buyWith({ units: 0, price: 0, task: 99 }), 'EInvalidComputeUnits', 312012039);
    aborted(await buyWith({ price: 0, task: 99 }), 'EInvalidPricePerComputeUnit', 312012037);
    aborted(await buyWith({ task: 99 }), 'ETaskNotFound', 312012017);
    // price × units overflows u64 before the balance is looked at.
    aborted(await buyWith({ units: 1_000_000, price: U64_MAX }), 'ArithmeticError', 0);
    // The fee, 1.5e13, is above the user's 1e13.
    aborted(
      await buyWith({ units: 1_000_000, price: 15_000_000_000_000 }),
      'EInsufficientBalance',
      312012040,
    );
    aborted(await buyWith({ task: empty }), 'ENoNodesSubscribedToTask', 312012021);
    aborted(await buyWith({ price: 999_999 }), 'ENoNodesEligibleForTask', 312012022);
    // No stack can exceed 1e6 units: every subscription's max.
    aborted(await buyWith({ units: 1_000_001 }), 'ENoNodesEligibleForTask', 312012022);
    aborted(await buyWith({ node: 7 }), 'ENoNodesEligibleForTask', 312012022);
    assert.equal(dev.balanceOf(dev.userAddress), GENESIS_USER_USDC);
    assert.equal(dev.feeTreasury(), 0n);

    const bought = await dev.buyStack({
      task_small_id: task,
      num_compute_units: 333,
      price_per_one_million_compute_units: 1_500_000,
    });
    const p = only(ok(bought.submission), 'StackCreatedEvent');
    assert.deepEqual(
      { ...p, stack_id: '' },
      {
        stack_id: '',
        stack_small_id: 1,
        owner: dev.userAddress,
        task_small_id: task,
        selected_node_id: 1,
        num_compute_units: 333,
        price_per_one_million_compute_units: 1_500_000,
      },
    );
    assert.equal(readEnvelope(bought.submission.events[0]).sender, dev.userAddress);
    // floor(1_500_000 × 333 / 1_000_000) = 499.
    assert.equal(dev.balanceOf(dev.userAddress), GENESIS_USER_USDC - 499n);
    assert.equal(dev.feeTreasury(), 499n);
    assert.deepEqual(dev.stack(1), {
      stack_small_id: 1,
      owner: dev.userAddress,
      task_small_id: task,
      selected_node_id: 1,
      num_compute_units: 333,
      price_per_one_million_compute_units: 1_500_000,
      is_claimed: false,
    });
    ok((await dev.deprecateTask(task)).submission);
    ok(await buyWith({}));
  });

  it('samples among eligible subscribers and drops stale ids lazily (only when the purchase succeeds)', async (t) => {
    const h = await harness(t);
    const { dev } = h;
    const a = await register(dev);
    const b = await register(dev);
    const task = await createTask(dev, NO_SECURITY);
    ok(await subscribe(dev, a, task, 100));
    ok(await subscribe(dev, b, task, 200));
    const c = await peer(dev, [task], 300);
    ok(await dev.submit({ kind: 'unsubscribe_node_from_task', badge: a, task_small_id: task }));
    assert.deepEqual(dev.taskSubscriberList(task), [1, 2, 3]);
    const forced = await dev.buyStack({
      task_small_id: task,
      num_compute_units: 10,
      price_per_one_million_compute_units: 1000,
      selected_node_id: a.node_small_id,
    });
    aborted(forced.submission, 'ENoNodesEligibleForTask', 312012022);
    assert.deepEqual(dev.taskSubscriberList(task), [1, 2, 3], 'the abort reverted the cleanup');
    // Only b (200) fits under 250: whatever the draw, b is picked.
    const cheap = await dev.buyStack({
      task_small_id: task,
      num_compute_units: 10,
      price_per_one_million_compute_units: 250,
    });
    ok(cheap.submission);
    assert.equal(cheap.selected_node_id, 2);
    assert.deepEqual([...dev.taskSubscriberList(task)!].sort(), [2, 3]);
    // Both fit: the draw picks one of the eligible nodes.
    const picked = new Set<U64 | undefined>();
    for (const draw of [0, 1]) {
      h.draws.push(draw);
      const bought = await dev.buyStack({
        task_small_id: task,
        num_compute_units: 10,
        price_per_one_million_compute_units: 400,
      });
      ok(bought.submission);
      picked.add(bought.selected_node_id);
    }
    assert.deepEqual([...picked].sort(), [2, c]);
  });

  it('checks the raw subscriber list before cleanup: stale ids alone give ENoNodesEligibleForTask', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const task = await createTask(dev, NO_SECURITY);
    ok(await subscribe(dev, a, task));
    ok(await dev.submit({ kind: 'unsubscribe_node_from_task', badge: a, task_small_id: task }));
    const bought = await dev.buyStack({
      task_small_id: task,
      num_compute_units: 1,
      price_per_one_million_compute_units: 5e6,
    });
    aborted(bought.submission, 'ENoNodesEligibleForTask', 312012022);
  });
});

describe('dev network: try_settle_stack', () => {
  it('checks in contract order and creates the ticket (NoSecurity: no attesters)', async (t) => {
    const { dev } = await harness(t, { attestationNodes: 2, samplingProbability: 1 });
    const a = await register(dev);
    const task = await createTask(dev, NO_SECURITY);
    ok(await subscribe(dev, a, task));
    const other = await peer(dev, [task]);
    const mine = await buy(dev, task, 1);
    const theirs = await buy(dev, task, other);
    const total = hashOf('stack 1');
    const short = zeros(31);
    framework(await settle(dev, a, 99, 0, total));
    aborted(await settle(dev, a, theirs, 0, total), 'ENodeNotSelectedForStack', 312012023);
    aborted(await settle(dev, a, mine, 1001, total, 2, short), 'ETooManyComputedUnits', 312012025);
    aborted(await settle(dev, a, mine, 1000, total, 2, short), 'EInvalidCommittedStackProof', 312012041);
    aborted(
      await settle(dev, a, mine, 1000, total, 2, undefined, zeros(33)),
      'EInvalidStackMerkleLeaf',
      312012042,
    );
    assert.equal(dev.ticket(mine), undefined);
    const p = only(ok(await settle(dev, a, mine, 600, total, 2)), 'StackTrySettleEvent');
    assert.deepEqual(p, {
      stack_small_id: mine,
      selected_node_id: 1,
      requested_attestation_nodes: [],
      committed_stack_proof: commitmentFor(total, 2),
      stack_merkle_leaf: leafFor(total, 0),
      num_claimed_compute_units: 600,
    });
    assert.deepEqual(dev.ticket(mine), {
      stack_small_id: mine,
      selected_node_id: 1,
      num_claimed_compute_units: 600,
      requested_attestation_nodes: [],
      already_attested_nodes: [],
      dispute_settled_at_epoch: 1,
      committed_stack_proof: commitmentFor(total, 2),
      stack_merkle_leaves_vector: concat(leafFor(total, 0), zeros(64)),
      is_in_dispute: false,
    });
    assert.ok(dev.stack(mine), 'the stack itself is unchanged');
    // One-shot: the existing ticket is refused before the (bad) proof is looked at.
    aborted(await settle(dev, a, mine, 600, total, 2, short), 'EStackInSettlementDispute', 312012024);
  });

  it('SamplingConsensus with probability 0 samples nobody', async (t) => {
    const { dev } = await harness(t, { samplingProbability: 0 });
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    const stack = await buy(dev, task, 1);
    const p = only(ok(await settle(dev, a, stack, 10, hashOf('x'))), 'StackTrySettleEvent');
    assert.deepEqual(p.requested_attestation_nodes, []);
  });

  it('probability 1, k = 1: the settler itself can be its attester', async (t) => {
    const { dev } = await harness(t, { samplingProbability: 1, attestationNodes: 1 });
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    const stack = await buy(dev, task, 1);
    const p = only(ok(await settle(dev, a, stack, 10, hashOf('x'))), 'StackTrySettleEvent');
    assert.deepEqual(p.requested_attestation_nodes, [1]);
    assert.equal(dev.ticket(stack)!.stack_merkle_leaves_vector.length, 64);
  });

  it('probability 1, k = 2: all eligible when fewer than k, else k draws with replacement', async (t) => {
    const h = await harness(t, { samplingProbability: 1, attestationNodes: 2 });
    const { dev } = h;
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    const alone = await buy(dev, task, 1);
    const first = only(ok(await settle(dev, a, alone, 10, hashOf('x'), 2)), 'StackTrySettleEvent');
    assert.deepEqual(first.requested_attestation_nodes, [1]);
    assert.equal(dev.ticket(alone)!.stack_merkle_leaves_vector.length, 96, 'k slots whatever was sampled');
    const p1 = await peer(dev, [task], 1_000_000);
    await peer(dev, [task], 9_000_000); // priced above the stack: never eligible
    const stack = await buy(dev, task, 1, 1000, 2_000_000);
    h.draws.push(999, 1, 1); // r = 1000 <= 1000, then eligible [1, p1] at index 1 twice
    const second = only(ok(await settle(dev, a, stack, 10, hashOf('y'), 2)), 'StackTrySettleEvent');
    assert.deepEqual(second.requested_attestation_nodes, [p1, p1]);
  });

  it('a stale subscriber id aborts the attester sampling until a purchase cleans the list (§2.6)', async (t) => {
    const { dev } = await harness(t, { samplingProbability: 1, attestationNodes: 1 });
    const a = await register(dev);
    const b = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    ok(await subscribe(dev, b, task));
    const stack = await buy(dev, task, 1);
    ok(await dev.submit({ kind: 'unsubscribe_node_from_task', badge: b, task_small_id: task }));
    framework(await settle(dev, a, stack, 10, hashOf('x')));
    assert.equal(dev.ticket(stack), undefined);
    await buy(dev, task, 1); // the purchase drops node 2 from the list
    assert.deepEqual(dev.taskSubscriberList(task), [1]);
    const p = only(ok(await settle(dev, a, stack, 10, hashOf('x'))), 'StackTrySettleEvent');
    assert.deepEqual(p.requested_attestation_nodes, [1]);
  });
});

describe('dev network: attestations and disputes', () => {
  /** A SamplingConsensus task; the signer's node 1 and a peer (node 2) subscribed; the peer's stack settled with node 1 as attester. */
  async function peerSettledWithMeAsAttester(h: Harness, k = 1) {
    const { dev } = h;
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    const p = await peer(dev, [task]);
    const stack = await buy(dev, task, p);
    const total = hashOf(`stack ${stack}`);
    h.draws.push(0, ...Array.from({ length: k }, () => 0)); // r = 1, then node 1 (eligible [1, 2]) k times
    const settled = await dev.peerTrySettle(stack, { num_claimed_compute_units: 700, total_hash: total });
    ok(settled.submission);
    assert.deepEqual(
      settled.requested_attestation_nodes,
      Array.from({ length: k }, () => 1),
    );
    return { a, task, p, stack, total };
  }

  it('submit_stack_settlement_attestation: every abort in contract order', async (t) => {
    const h = await harness(t, { samplingProbability: 1 });
    const { dev } = h;
    const { a, task, p, stack, total } = await peerSettledWithMeAsAttester(h);
    const proof = commitmentFor(total, 1);
    const leaf = leafFor(total, 1);
    const plain = await createTask(dev, NO_SECURITY);
    ok(await subscribe(dev, a, plain));
    const plainStack = await buy(dev, plain, 1);
    ok(await settle(dev, a, plainStack, 1, total));
    const unsettled = await buy(dev, task, p);
    h.draws.push(0, 1); // node 2 only
    const notMine = await buy(dev, task, p);
    ok((await dev.peerTrySettle(notMine, { num_claimed_compute_units: 1, total_hash: total })).submission);
    aborted(await attest(dev, a, 99, proof, leaf), 'EStackNotFound', 312012027);
    aborted(await attest(dev, a, unsettled, zeros(1), leaf), 'EStackNotInSettlementDispute', 312012028);
    aborted(await attest(dev, a, stack, zeros(31), zeros(1)), 'EInvalidCommittedStackProof', 312012041);
    aborted(await attest(dev, a, stack, proof, zeros(33)), 'EInvalidStackMerkleLeaf', 312012042);
    aborted(
      await attest(dev, a, plainStack, proof, leaf),
      'EStackDoesNotRequireSamplingConsensus',
      312012026,
    );
    aborted(await attest(dev, a, notMine, proof, leaf), 'ENodeNotSelectedForAttestation', 312012030);
    await dev.advanceEpoch();
    await dev.advanceEpoch();
    // Epoch 2 > dispute_settled_at_epoch 1: checked before the caller is looked up.
    aborted(await attest(dev, a, notMine, proof, leaf), 'EStackDisputePeriodOver', 312012029);
  });

  it('k = 1, matching proofs: the attestation and the ticket event, reporting the current epoch', async (t) => {
    const h = await harness(t, { samplingProbability: 1 });
    const { dev } = h;
    const { a, p, stack, total } = await peerSettledWithMeAsAttester(h);
    const events = ok(await attest(dev, a, stack, commitmentFor(total, 1), leafFor(total, 1)));
    assert.deepEqual(
      events.map((e) => e.name),
      ['NewStackSettlementAttestationEvent', 'StackSettlementTicketEvent'],
    );
    assert.deepEqual(events[0]!.payload, {
      stack_small_id: stack,
      attestation_node_id: 1,
      committed_stack_proof: commitmentFor(total, 1),
      stack_merkle_leaf: leafFor(total, 1),
    });
    assert.deepEqual(events[1]!.payload, {
      stack_small_id: stack,
      selected_node_id: p,
      num_claimed_compute_units: 700,
      requested_attestation_nodes: [1],
      dispute_settled_at_epoch: 0,
      committed_stack_proof: commitmentFor(total, 1),
    });
    const ticket = dev.ticket(stack)!;
    assert.equal(ticket.dispute_settled_at_epoch, 1, "the ticket's own field is unchanged");
    assert.deepEqual(ticket.already_attested_nodes, [1]);
    assert.deepEqual(ticket.stack_merkle_leaves_vector, concat(leafFor(total, 0), leafFor(total, 1)));
    assert.equal(ticket.is_in_dispute, false);
  });

  it('the attestation window is the try-settle epoch and the next', async (t) => {
    const h = await harness(t, { samplingProbability: 1 });
    const { dev } = h;
    const { a, stack, total } = await peerSettledWithMeAsAttester(h);
    assert.equal(await dev.advanceEpoch(), 1);
    ok(await attest(dev, a, stack, commitmentFor(total, 1), leafFor(total, 1)));
  });

  it('k = 2 with two peer attesters: the last one completes the ticket; claim pays each fee / k', async (t) => {
    const h = await harness(t, { samplingProbability: 1, attestationNodes: 2 });
    const { dev } = h;
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    const p1 = await peer(dev, [task]);
    const p2 = await peer(dev, [task]);
    const stack = await buy(dev, task, 1, 10_000, 2_500_000);
    // §4.1: base = 2_500_000 × 10_000 / 1e6 = 25_000; paid = floor(25_000 × 1212 / 1000) = 30_300.
    assert.equal(dev.balanceOf(dev.userAddress), GENESIS_USER_USDC - 30_300n);
    assert.equal(dev.feeTreasury(), 30_300n);
    const total = hashOf('k2');
    h.draws.push(0, 1, 2); // eligible [1, p1, p2]: p1 then p2
    const settled = only(ok(await settle(dev, a, stack, 3333, total, 2)), 'StackTrySettleEvent');
    assert.deepEqual(settled.requested_attestation_nodes, [p1, p2]);
    const first = ok((await dev.peerAttest(stack, p1, total)).submission);
    assert.deepEqual(
      first.map((e) => e.name),
      ['NewStackSettlementAttestationEvent'],
    );
    const last = ok((await dev.peerAttest(stack, p2, total)).submission);
    assert.deepEqual(
      last.map((e) => e.name),
      ['NewStackSettlementAttestationEvent', 'StackSettlementTicketEvent'],
    );
    assert.deepEqual(
      (last[0]!.payload as Payload<'NewStackSettlementAttestationEvent'>).stack_merkle_leaf,
      leafFor(total, 2),
    );
    assert.equal(await dev.advanceEpoch(), 1);
    const signerBefore = dev.balanceOf(SIGNER);
    const claimed = only(ok(await claim(dev, a, [stack])), 'StackSettlementTicketClaimedEvent');
    // §4.2: fee(3333) = floor(3333 × 2_500_000 × 1200 / 1e9) = 9999; refund fee(6667) = 20_001.
    assert.deepEqual(claimed, {
      stack_small_id: stack,
      selected_node_id: 1,
      attestation_nodes: [p1, p2],
      num_claimed_compute_units: 3333,
      user_refund_amount: 20_001,
    });
    assert.equal(dev.balanceOf(SIGNER) - signerBefore, 9999n);
    assert.equal(dev.balanceOf(dev.userAddress), GENESIS_USER_USDC - 30_300n + 20_001n);
    assert.equal(dev.feeTreasury(), 300n);
    // Each attester: floor(9999 / 2) = 4999, straight into its available fees.
    assert.equal(dev.nodeAccount(p1)!.available_fee_amount, 4999);
    assert.equal(dev.nodeAccount(p2)!.available_fee_amount, 4999);
    assert.equal(dev.ticket(stack), undefined);
    assert.equal(dev.stack(stack), undefined);
  });

  it('a proof unlike the settler opens a dispute; a second mismatch aborts; the leaf is not stored', async (t) => {
    const h = await harness(t, { samplingProbability: 1 });
    const { dev } = h;
    const { a, p, stack, total } = await peerSettledWithMeAsAttester(h);
    const wrong = commitmentFor(hashOf('something else'), 1);
    const p0 = only(
      ok(await attest(dev, a, stack, wrong, leafFor(total, 1))),
      'StackAttestationDisputeEvent',
    );
    assert.deepEqual(p0, {
      stack_small_id: stack,
      attestation_commitment: wrong,
      attestation_node_id: 1,
      original_node_id: p,
      original_commitment: commitmentFor(total, 1),
    });
    const ticket = dev.ticket(stack)!;
    assert.equal(ticket.is_in_dispute, true);
    assert.deepEqual(ticket.already_attested_nodes, []);
    assert.deepEqual(ticket.stack_merkle_leaves_vector, concat(leafFor(total, 0), zeros(32)));
    aborted(await attest(dev, a, stack, wrong, leafFor(total, 1)), 'EStackAlreadyInDispute', 312012046);
    // Being in dispute is not checked on the matching path (§2.7): the attestation still completes.
    const events = ok(await attest(dev, a, stack, commitmentFor(total, 1), leafFor(total, 1)));
    assert.deepEqual(
      events.map((e) => e.name),
      ['NewStackSettlementAttestationEvent', 'StackSettlementTicketEvent'],
    );
    assert.equal(dev.ticket(stack)!.is_in_dispute, true);
  });

  it('all attested but the slots do not hash to the proof: a dispute with the original proof', async (t) => {
    const h = await harness(t, { samplingProbability: 1 });
    const { dev } = h;
    const { a, p, stack, total } = await peerSettledWithMeAsAttester(h);
    const proof = commitmentFor(total, 1);
    const p0 = only(
      ok(await attest(dev, a, stack, proof, hashOf('wrong leaf'))),
      'StackAttestationDisputeEvent',
    );
    assert.deepEqual(p0, {
      stack_small_id: stack,
      attestation_commitment: proof,
      attestation_node_id: 1,
      original_node_id: p,
      original_commitment: proof,
    });
    const ticket = dev.ticket(stack)!;
    assert.equal(ticket.is_in_dispute, true);
    assert.deepEqual(ticket.already_attested_nodes, [1], 'the leaf and the attester were recorded');
  });

  it('an attester listed twice fills only its first slot, so the final check fails (k = 2)', async (t) => {
    const h = await harness(t, { samplingProbability: 1, attestationNodes: 2 });
    const { dev } = h;
    const { a, stack, total } = await peerSettledWithMeAsAttester(h, 2);
    const proof = commitmentFor(total, 2);
    const first = ok(await attest(dev, a, stack, proof, leafFor(total, 1)));
    assert.deepEqual(
      first.map((e) => e.name),
      ['NewStackSettlementAttestationEvent'],
    );
    only(ok(await attest(dev, a, stack, proof, leafFor(total, 2))), 'StackAttestationDisputeEvent');
    const ticket = dev.ticket(stack)!;
    assert.deepEqual(ticket.already_attested_nodes, [1, 1]);
    assert.deepEqual(
      ticket.stack_merkle_leaves_vector,
      concat(leafFor(total, 0), leafFor(total, 2), zeros(32)),
    );
  });

  it('k = 2 with one eligible node: the settler commits over the one slot the sampling fills', async (t) => {
    const { dev } = await harness(t, { samplingProbability: 1, attestationNodes: 2 });
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task, 9_000_000)); // above the stack's price cap: never eligible
    const p = await peer(dev, [task]);
    const stack = await buy(dev, task, p);
    const total = hashOf('one of two');
    const settled = await dev.peerTrySettle(stack, { num_claimed_compute_units: 700, total_hash: total });
    assert.deepEqual(settled.requested_attestation_nodes, [p], 'fewer eligible than k: all of them');
    assert.deepEqual(dev.ticket(stack)!.committed_stack_proof, commitmentFor(total, 2, 1));
    const events = ok((await dev.peerAttest(stack, p, total)).submission);
    assert.deepEqual(
      events.map((e) => e.name),
      ['NewStackSettlementAttestationEvent', 'StackSettlementTicketEvent'],
      'slot 2 stays zero, and the proof said so',
    );
    assert.deepEqual(
      dev.ticket(stack)!.stack_merkle_leaves_vector,
      concat(leafFor(total, 0), leafFor(total, 1), zeros(32)),
    );
    assert.equal(dev.ticket(stack)!.is_in_dispute, false);
  });

  it('an attester drawn twice that attests once never reaches the final check: no dispute, paid twice', async (t) => {
    const h = await harness(t, { samplingProbability: 1, attestationNodes: 2 });
    const { dev } = h;
    const { a, p, stack, total } = await peerSettledWithMeAsAttester(h, 2);
    const only1 = ok(await attest(dev, a, stack, commitmentFor(total, 2), leafFor(total, 1)));
    assert.deepEqual(
      only1.map((e) => e.name),
      ['NewStackSettlementAttestationEvent'],
    );
    assert.deepEqual(dev.ticket(stack)!.already_attested_nodes, [1]);
    assert.equal(dev.ticket(stack)!.is_in_dispute, false);
    await dev.advanceEpoch();
    await buy(dev, 1, p, 1_000_000, 2_000_000); // a deposit for the attester's rewards (§4.3)
    ok((await dev.peerClaim(p, [stack])).submission);
    // fee(700) at 2_000_000 = 1680; node 1 is listed twice, attested, so it is credited 1680 / 2 twice.
    assert.equal(dev.nodeAccount(1)!.available_fee_amount, 1680);
  });

  it('start_attestation_dispute: any node, any time; checks in order', async (t) => {
    const { dev } = await harness(t, { samplingProbability: 0 });
    const a = await register(dev);
    const sc = await createTask(dev, SAMPLING);
    const plain = await createTask(dev, NO_SECURITY);
    ok(await subscribe(dev, a, sc));
    ok(await subscribe(dev, a, plain));
    const p = await peer(dev, [sc]);
    const theirs = await buy(dev, sc, p);
    const total = hashOf('theirs');
    ok((await dev.peerTrySettle(theirs, { num_claimed_compute_units: 5, total_hash: total })).submission);
    const plainStack = await buy(dev, plain, 1);
    const unsettled = await buy(dev, sc, 1);
    ok(await settle(dev, a, plainStack, 1, total));
    framework(await dispute(dev, a, unsettled, zeros(32)));
    framework(await dispute(dev, a, 99, zeros(32)));
    aborted(
      await dispute(dev, a, plainStack, zeros(32)),
      'ETaskSecurityLevelNotSamplingConsensus',
      312012047,
    );
    for (let i = 0; i < 5; i++) await dev.advanceEpoch();
    // Node 1 was never requested (nobody was) and the window is long over: no check stops it.
    const commitment = new Uint8Array([1, 2, 3]);
    const p0 = only(ok(await dispute(dev, a, theirs, commitment)), 'StackAttestationDisputeEvent');
    assert.deepEqual(p0, {
      stack_small_id: theirs,
      attestation_commitment: commitment,
      attestation_node_id: 1,
      original_node_id: p,
      original_commitment: commitmentFor(total, 1),
    });
    aborted(await dispute(dev, a, theirs, commitment), 'EStackAlreadyInDispute', 312012046);
    // A peer disputes the signer's own ticket: claim_funds is then blocked for good.
    const mine = await buy(dev, sc, 1);
    ok(await settle(dev, a, mine, 1, total));
    const byPeer = only(ok((await dev.peerDispute(mine, p)).submission), 'StackAttestationDisputeEvent');
    assert.equal(byPeer.attestation_commitment.length, 32);
    assert.equal(byPeer.attestation_node_id, p);
    await dev.advanceEpoch();
    aborted(await claim(dev, a, [mine]), 'EStackInDispute', 312012031);
  });
});

describe('dev network: claims and funds (§4)', () => {
  it('claim_funds: checks in order, epoch gating E vs E+1, NoSecurity arithmetic', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const task = await createTask(dev, NO_SECURITY);
    const cc = await createTask(dev, CONFIDENTIAL);
    const doomed = await createTask(dev, NO_SECURITY);
    ok(await subscribe(dev, a, task));
    ok(await subscribe(dev, a, cc));
    ok(await subscribe(dev, a, doomed));
    const p = await peer(dev, [task]);
    const mine = await buy(dev, task, 1, 1000, 1_500_000); // pays 1500
    const theirs = await buy(dev, task, p);
    const claimedCc = await buy(dev, cc, 1);
    const orphan = await buy(dev, doomed, 1);
    const total = hashOf('claims');
    framework(await claim(dev, a, [mine]));
    ok(await settle(dev, a, mine, 333, total));
    ok((await dev.peerTrySettle(theirs, { num_claimed_compute_units: 1, total_hash: total })).submission);
    ok(await claimForStacks(dev, a, [claimedCc], [10]));
    ok(await settle(dev, a, claimedCc, 10, total)); // try-settle does not look at is_claimed
    ok(await settle(dev, a, orphan, 10, total));
    ok((await dev.deprecateTask(doomed)).submission);
    aborted(await claim(dev, a, [theirs]), 'ENodeNotSelectedForSettlement', 312012033);
    aborted(await claim(dev, a, [mine]), 'EStackDisputePeriodIsNotOver', 312012032);
    assert.equal(await dev.advanceEpoch(), 1);
    aborted(await claim(dev, a, [claimedCc]), 'EStackAlreadyClaimed', 312012053);
    ok((await dev.removeTask(doomed)).submission);
    framework(await claim(dev, a, [orphan])); // its task is gone: the stack is stranded

    const signerBefore = dev.balanceOf(SIGNER);
    const userBefore = dev.balanceOf(dev.userAddress);
    const treasuryBefore = dev.feeTreasury();
    const p0 = only(ok(await claim(dev, a, [mine])), 'StackSettlementTicketClaimedEvent');
    // fee(333) = floor(333 × 1.5) = 499; refund fee(667) = floor(1000.5) = 1000; 1 unit of dust stays.
    assert.deepEqual(p0, {
      stack_small_id: mine,
      selected_node_id: 1,
      attestation_nodes: [],
      num_claimed_compute_units: 333,
      user_refund_amount: 1000,
    });
    assert.equal(dev.balanceOf(SIGNER) - signerBefore, 499n);
    assert.equal(dev.balanceOf(dev.userAddress) - userBefore, 1000n);
    assert.equal(treasuryBefore - dev.feeTreasury(), 1499n);
    assert.equal(dev.stack(mine), undefined);
    assert.equal(dev.ticket(mine), undefined);
    framework(await claim(dev, a, [mine]));
    // An empty list is a plain withdraw_fees: a success with no events.
    assert.deepEqual(ok(await claim(dev, a, [])), []);
  });

  it('claim_funds is atomic: one bad id reverts the whole batch', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const task = await createTask(dev, NO_SECURITY);
    ok(await subscribe(dev, a, task));
    const s1 = await buy(dev, task, 1);
    const s2 = await buy(dev, task, 1);
    const s3 = await buy(dev, task, 1);
    ok(await settle(dev, a, s1, 100, hashOf('1')));
    ok(await settle(dev, a, s2, 200, hashOf('2')));
    await dev.advanceEpoch();
    const before = {
      signer: dev.balanceOf(SIGNER),
      user: dev.balanceOf(dev.userAddress),
      treasury: dev.feeTreasury(),
      cursor: (await dev.events.readPage(null)).nextCursor,
    };
    const failed = await claim(dev, a, [s1, s2, s3]);
    framework(failed);
    assert.equal(failed.cursor, before.cursor);
    framework(await claim(dev, a, [s1, s1])); // the second borrow finds the first one's deletion
    assert.equal(dev.balanceOf(SIGNER), before.signer);
    assert.equal(dev.balanceOf(dev.userAddress), before.user);
    assert.equal(dev.feeTreasury(), before.treasury);
    assert.ok(dev.ticket(s1) && dev.ticket(s2) && dev.stack(s1) && dev.stack(s2));
    const events = ok(await claim(dev, a, [s1, s2]));
    assert.deepEqual(
      events.map((e) => [e.name, (e.payload as Payload<'StackSettlementTicketClaimedEvent'>).stack_small_id]),
      [
        ['StackSettlementTicketClaimedEvent', s1],
        ['StackSettlementTicketClaimedEvent', s2],
      ],
    );
    // Price 2e6: fees 200 + 400 to the signer, refunds 1800 + 1600 to the user.
    assert.equal(dev.balanceOf(SIGNER) - before.signer, 600n);
    assert.equal(dev.balanceOf(dev.userAddress) - before.user, 3400n);
  });

  it('SamplingConsensus: the attester reward comes on top of the deposit, so a short treasury aborts', async (t) => {
    const { dev } = await harness(t, { samplingProbability: 1 });
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    const stack = await buy(dev, task, 1, 10_000, 2_500_000);
    assert.equal(dev.feeTreasury(), 30_300n);
    const total = hashOf('self');
    const settled = only(ok(await settle(dev, a, stack, 3333, total)), 'StackTrySettleEvent');
    assert.deepEqual(settled.requested_attestation_nodes, [1]);
    ok(await attest(dev, a, stack, commitmentFor(total, 1), leafFor(total, 1)));
    await dev.advanceEpoch();
    // Payouts: fee 9999 + refund 20_001 + the node's own attester reward 9999 (withdrawn at once) = 39_999,
    // more than the 30_300 deposited.
    aborted(await claim(dev, a, [stack]), 'ENotEnough', 2, 'balance');
    assert.equal(dev.nodeAccount(1)!.available_fee_amount, 0);
    assert.equal(dev.feeTreasury(), 30_300n);
    assert.ok(dev.ticket(stack));
    await buy(dev, task, 1, 10_000, 2_500_000); // another user's deposit fills the pool
    const signerBefore = dev.balanceOf(SIGNER);
    const userBefore = dev.balanceOf(dev.userAddress);
    const claimed = only(ok(await claim(dev, a, [stack])), 'StackSettlementTicketClaimedEvent');
    assert.equal(claimed.user_refund_amount, 20_001);
    assert.deepEqual(claimed.attestation_nodes, [1]);
    assert.equal(dev.balanceOf(SIGNER) - signerBefore, 19_998n);
    assert.equal(dev.balanceOf(dev.userAddress) - userBefore, 20_001n);
    assert.equal(dev.feeTreasury(), 60_600n - 39_999n);
    assert.equal(dev.nodeAccount(1)!.available_fee_amount, 0);
  });

  it('k set to 0 after sampling: the claim divides by k only for an attester that attested (§2.9)', async (t) => {
    const h = await harness(t, { samplingProbability: 1, attestationNodes: 1 });
    const a = await register(h.dev);
    const task = await createTask(h.dev, SAMPLING);
    ok(await subscribe(h.dev, a, task));
    const silent = await buy(h.dev, task, 1, 10_000, 2_500_000);
    const attested = await buy(h.dev, task, 1, 10_000, 2_500_000);
    const total = hashOf('k = 0');
    for (const stack of [silent, attested]) {
      const p = only(ok(await settle(h.dev, a, stack, 1000, total)), 'StackTrySettleEvent');
      assert.deepEqual(p.requested_attestation_nodes, [1]);
    }
    ok(await attest(h.dev, a, attested, commitmentFor(total, 1), leafFor(total, 1)));
    await h.dev.advanceEpoch();
    await h.dev.close();
    const dev = h.open({ attestationNodes: 0 });
    assert.equal((await dev.parameters()).cross_validation_extra_nodes_count, 0n);
    // Nobody attested: only the slashing path runs, which never divides, so the claim goes through.
    const claimed = only(ok(await claim(dev, a, [silent])), 'StackSettlementTicketClaimedEvent');
    assert.deepEqual(claimed.attestation_nodes, [1]);
    assert.equal(claimed.user_refund_amount, 27_000);
    // The attester that did attest is credited fee / k: k = 0 is a division by zero, an arithmetic error.
    aborted(await claim(dev, a, [attested]), 'ArithmeticError', 0);
    assert.ok(dev.ticket(attested));
  });

  it('a destroyed attester is skipped when it did not attest, and aborts the claim when it did (§2.9)', async (t) => {
    const h = await harness(t, { samplingProbability: 1, attestationNodes: 1 });
    const { dev } = h;
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    const p = await peer(dev, [task]);
    const silent = await buy(dev, task, 1);
    const attested = await buy(dev, task, 1);
    const total = hashOf('destroyed');
    for (const stack of [silent, attested]) {
      h.draws.push(0, 1); // r = 1, then eligible [1, p] at index 1: the peer
      const settled = only(ok(await settle(dev, a, stack, 100, total)), 'StackTrySettleEvent');
      assert.deepEqual(settled.requested_attestation_nodes, [p]);
    }
    ok((await dev.peerAttest(attested, p, total)).submission);
    ok((await dev.peerDisableNode(p)).submission);
    for (let i = 0; i < 4; i++) await dev.advanceEpoch();
    ok((await dev.peerDestroyNode(p)).submission);
    assert.equal(dev.nodeAccount(p), undefined);
    // slash_node_on_timeout returns a zero balance for a node that no longer exists (db:2428-2437).
    const claimed = only(ok(await claim(dev, a, [silent])), 'StackSettlementTicketClaimedEvent');
    assert.deepEqual(claimed.attestation_nodes, [p]);
    // Crediting an attester borrows its entry with no contains-check (db:2894).
    framework(await claim(dev, a, [attested]));
    assert.ok(dev.ticket(attested));
  });

  it('attesters are handled before the refund is paid: a short treasury meets their abort first (§2.9)', async (t) => {
    const h = await harness(t, { samplingProbability: 1, attestationNodes: 1 });
    const a = await register(h.dev);
    const task = await createTask(h.dev, SAMPLING);
    ok(await subscribe(h.dev, a, task));
    const drain = await buy(h.dev, task, 1, 10_000, 2_500_000);
    const refunded = await buy(h.dev, task, 1, 10_000, 2_500_000);
    assert.equal(h.dev.feeTreasury(), 60_600n);
    const total = hashOf('order');
    ok(await settle(h.dev, a, drain, 10_000, total));
    ok(await settle(h.dev, a, refunded, 0, total));
    for (const stack of [drain, refunded]) {
      ok(await attest(h.dev, a, stack, commitmentFor(total, 1), leafFor(total, 1)));
    }
    await h.dev.advanceEpoch();
    // fee(10_000) = 30_000 to the node, 30_000 more as its own attester reward: 600 stay in the pool.
    ok(await claim(h.dev, a, [drain]));
    assert.equal(h.dev.feeTreasury(), 600n);
    await h.dev.close();
    const dev = h.open({ attestationNodes: 0 });
    // The refund of 30_000 would not fit in the pool (ENotEnough), but the attester's fee / 0 comes first.
    aborted(await claim(dev, a, [refunded]), 'ArithmeticError', 0);
    assert.equal(dev.feeTreasury(), 600n);
    assert.ok(dev.ticket(refunded));
  });

  it('claim_funds_for_stacks: ConfidentialCompute, no ticket and no wait; checks in order', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const cc = await createTask(dev, CONFIDENTIAL);
    const plain = await createTask(dev, NO_SECURITY);
    ok(await subscribe(dev, a, cc));
    ok(await subscribe(dev, a, plain));
    const p = await peer(dev, [cc]);
    const stack = await buy(dev, cc, 1, 999, 3_000_001); // pays floor(2997.000999) = 2997
    const theirs = await buy(dev, cc, p);
    const plainStack = await buy(dev, plain, 1, 999);
    aborted(await claimForStacks(dev, a, [99], []), 'EInvalidNumClaimedComputeUnitsPerStack', 312012052);
    framework(await claimForStacks(dev, a, [99], [1]));
    aborted(await claimForStacks(dev, a, [theirs], [1]), 'ENodeNotSelectedForClaim', 312012054);
    // The units are checked before the security level.
    aborted(
      await claimForStacks(dev, a, [plainStack], [1000]),
      'EInvalidNumClaimedComputeUnitsPerStack',
      312012052,
    );
    aborted(await claimForStacks(dev, a, [plainStack], [1]), 'ETaskIsNotConfidentialCompute', 312012051);
    aborted(
      await claimForStacks(dev, a, [stack], [1000]),
      'EInvalidNumClaimedComputeUnitsPerStack',
      312012052,
    );
    const signerBefore = dev.balanceOf(SIGNER);
    const userBefore = dev.balanceOf(dev.userAddress);
    const treasuryBefore = dev.feeTreasury();
    const p0 = only(ok(await claimForStacks(dev, a, [stack], [500])), 'ClaimedStackEvent');
    // fee = floor(500 × 3_000_001 / 1e6) = 1500; refund = floor(499 × 3_000_001 / 1e6) = 1497.
    assert.deepEqual(p0, {
      stack_small_id: stack,
      selected_node_id: 1,
      num_claimed_compute_units: 500,
      user_refund_amount: 1497,
    });
    assert.equal(dev.balanceOf(SIGNER) - signerBefore, 1500n);
    assert.equal(dev.balanceOf(dev.userAddress) - userBefore, 1497n);
    assert.equal(treasuryBefore - dev.feeTreasury(), 2997n);
    assert.equal(dev.stack(stack)!.is_claimed, true, 'the stack stays, marked claimed');
    aborted(await claimForStacks(dev, a, [stack], [1000]), 'EStackAlreadyClaimed', 312012053);
  });
});

describe('dev network: refusals before execution', () => {
  it('gas: the coin, then the price, then the budget; the exact minimum passes', async (t) => {
    const { dev } = await harness(t);
    const register = { kind: 'register_node' } as const;
    await assert.rejects(
      dev.submit(register, { gas: `0x${'00'.repeat(32)}` }),
      rejectedWith('gas_coin_not_owned'),
    );
    await assert.rejects(dev.submit(register, { gas_price: 999 }), rejectedWith('gas_price_too_low'));
    await assert.rejects(dev.submit(register, { gas_budget: 2_975_999 }), (error: unknown) => {
      rejectedWith('gas_budget_too_low')(error);
      assert.match((error as Error).message, /minimum 2976000/);
      return true;
    });
    await assert.rejects(
      dev.submit(register, { gas_price: 2000, gas_budget: 3_975_999 }),
      rejectedWith('gas_budget_too_low'),
    );
    assert.deepEqual(await dev.listBadges(), [], 'nothing ran');
    assert.equal((await dev.events.readPage(null)).nextCursor, '1');
    const exact = await dev.submit(register, { gas: dev.gasCoinId, gas_price: 1000, gas_budget: 2_976_000 });
    ok(exact);
    assert.deepEqual(exact.gas_used, {
      computation_cost: 1_000_000,
      storage_cost: 1_976_000,
      storage_rebate: 978_120,
    });
    const dear = await dev.submit(register, { gas_price: 2000 });
    assert.equal(dear.gas_used.computation_cost, 2_000_000);
    const [badge] = await dev.listBadges();
    // A batch costs 500 units more per id; a failed transaction costs the same as a successful one.
    const batch = await claim(dev, badge!, [1, 2, 3]);
    framework(batch);
    assert.equal(batch.gas_used.computation_cost, 2_500_000);
  });

  it("the badge must be the signer's, with its own small id", async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const task = await createTask(dev, NO_SECURITY);
    const created = await dev.createPeerNode();
    const theirs: Badge = { badge_id: created.badge_id!, node_small_id: created.node_small_id! };
    await assert.rejects(subscribe(dev, theirs, task), rejectedWith('badge_not_owned'));
    await assert.rejects(subscribe(dev, { ...a, node_small_id: 2 }, task), rejectedWith('badge_not_owned'));
    await assert.rejects(subscribe(dev, { ...a, node_small_id: 99 }, task), rejectedWith('badge_not_owned'));
    await assert.rejects(
      subscribe(dev, { ...theirs, node_small_id: 1 }, task),
      rejectedWith('badge_not_owned'),
    );
    await assert.rejects(
      dev.submit({
        kind: 'subscribe_node_to_task',
        badge: a,
        task_small_id: -1,
        price_per_one_million_compute_units: 1,
      }),
      rejectedWith('invalid_argument'),
    );
    ok(await subscribe(dev, { ...a, badge_id: a.badge_id.toUpperCase().replace('0X', '0x') }, task));
    // Peer helpers act only for peers.
    await assert.rejects(
      dev.peerDispute(1, a.node_small_id),
      (e: unknown) => e instanceof DevActorError && e.code === 'not_a_peer',
    );
    await assert.rejects(
      dev.peerTrySettle(99, { num_claimed_compute_units: 1, total_hash: zeros(32) }),
      (e: unknown) => e instanceof DevActorError && e.code === 'not_found',
    );
  });

  it('a failed transaction is recorded with its digest, abort and gas, and no events', async (t) => {
    const { dev } = await harness(t);
    const a = await register(dev);
    const one = await subscribe(dev, a, 99);
    const two = await subscribe(dev, a, 99);
    aborted(one, 'ETaskNotFound', 312012017);
    assert.notEqual(one.digest, two.digest);
    assert.match(one.digest, /^[1-9A-HJ-NP-Za-km-z]{43,44}$/);
    const record = dev.transaction(one.digest)!;
    assert.equal(record.status, 'failure');
    assert.deepEqual(record.abort, one.abort);
    assert.deepEqual(record.gas_used, one.gas_used);
    assert.deepEqual(record.events, []);
    assert.equal(record.sender, SIGNER);
    assert.equal(record.kind, 'subscribe_node_to_task');
  });
});

describe('dev network: events, persistence, concurrency', () => {
  it('pages the event source 500 at a time, by global sequence number', async (t) => {
    const { dev } = await harness(t);
    const submissions = [];
    for (let i = 0; i < 520; i++) submissions.push(await dev.submit({ kind: 'register_node' }));
    assert.equal(submissions.at(-1)!.cursor, '521');
    const first = await dev.events.readPage(null);
    assert.equal(first.events.length, 500);
    assert.equal(first.hasMore, true);
    assert.equal(first.nextCursor, '500');
    const second = await dev.events.readPage(first.nextCursor);
    assert.equal(second.events.length, 21);
    assert.equal(second.hasMore, false);
    assert.equal(second.nextCursor, '521');
    assert.deepEqual(second.events.at(-1)!.raw, submissions.at(-1)!.events[0]);
    const idle = await dev.events.readPage('521');
    assert.deepEqual(
      { ...idle, parameters: undefined },
      { events: [], nextCursor: '521', hasMore: false, epoch: 0, parameters: undefined },
    );
    // The page says the AtomaDb parameters as of the read: the charge a claim pays, k of the attesters.
    assert.equal(idle.parameters?.sampling_consensus_charge_permille, 1200n);
    assert.equal(idle.parameters?.cross_validation_extra_nodes_count, 1n);
    // Each event carries its transaction's epoch; a page, the chain's epoch as of the read.
    assert.ok(first.events.every((e) => e.epoch === 0));
    await dev.advanceEpoch();
    assert.equal((await dev.events.readPage('521')).epoch, 1);
    const keys = new Set([...first.events, ...second.events].map((e) => readEnvelope(e.raw).key));
    assert.equal(keys.size, 521);
    await assert.rejects(dev.events.readPage('abc'), /not a dev network event cursor/);
    await assert.rejects(dev.events.readPage('9999'), /beyond the dev network's last event/);
  });

  it('every event of a full lifecycle applies cleanly through the indexer', async (t) => {
    const h = await harness(t, { samplingProbability: 1 });
    const { dev } = h;
    const a = await register(dev);
    const sc = await createTask(dev, SAMPLING);
    const cc = await createTask(dev, CONFIDENTIAL);
    const old = await createTask(dev, NO_SECURITY);
    ok(await dev.submit({ kind: 'add_node_to_model', badge: a, model_name: QWEN, echelon_id: 1 }));
    ok(await subscribe(dev, a, sc));
    ok(await subscribe(dev, a, cc));
    ok(await subscribe(dev, a, old));
    ok(
      await dev.submit({
        kind: 'update_node_subscription',
        badge: a,
        task_small_id: cc,
        price_per_one_million_compute_units: 5,
      }),
    );
    ok(await dev.submit({ kind: 'unsubscribe_node_from_task', badge: a, task_small_id: old }));
    const p = await peer(dev, [sc]);
    const total = hashOf('lifecycle');
    const s1 = await buy(dev, sc, 1);
    h.draws.push(0, 1); // the peer attests
    ok(await settle(dev, a, s1, 500, total));
    ok((await dev.peerAttest(s1, p, total)).submission);
    const s2 = await buy(dev, sc, p);
    h.draws.push(0, 0); // the signer's node attests, wrongly
    ok((await dev.peerTrySettle(s2, { num_claimed_compute_units: 1, total_hash: total })).submission);
    ok(await attest(dev, a, s2, zeros(32), zeros(32)));
    const s3 = await buy(dev, cc, 1);
    ok(await claimForStacks(dev, a, [s3], [7]));
    ok((await dev.deprecateTask(old)).submission);
    await dev.advanceEpoch();
    ok((await dev.removeTask(old)).submission);
    ok(await claim(dev, a, [s1]));

    const tmp = tempDir('dev-network-store-');
    t.after(() => tmp.remove());
    const store = new SqliteStore({ dataDir: tmp.dir });
    t.after(() => store.close());
    const log = captureLogger('warn');
    const totals = emptyCounts();
    let cursor: string | null = null;
    const names = new Set<string>();
    for (;;) {
      const page = await dev.events.readPage(cursor);
      for (const e of page.events) names.add(readEnvelope(e.raw).name);
      addCounts(totals, await applyPage(store, dev.events.id, page, log.logger));
      cursor = page.nextCursor;
      if (!page.hasMore) break;
    }
    assert.deepEqual(
      { ...totals, applied: 0 },
      { applied: 0, duplicate: 0, ignored: 1, unknown: 0, malformed: 0, orphaned: 0 },
    );
    assert.equal(totals.applied, Number(cursor) - 1);
    assert.deepEqual(log.lines(), []);
    assert.equal(names.size, 16, [...names].join(', ')); // PublishedEvent and all 15 kinds the indexer applies
    assert.equal((await store.getCursor('dev'))?.cursor, cursor);
  });

  it('the store records the attesters the chain records, when the last check fails too (§2.7)', async (t) => {
    const h = await harness(t, { samplingProbability: 1 });
    const { dev } = h;
    const a = await register(dev);
    const sc = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, sc));
    const p = await peer(dev, [sc]);
    const total = hashOf('disputes');
    const proof = commitmentFor(total, 1);
    const theirs = async () => {
      const stack = await buy(dev, sc, p);
      h.draws.push(0, 0); // the signer's node attests
      ok((await dev.peerTrySettle(stack, { num_claimed_compute_units: 9, total_hash: total })).submission);
      return stack;
    };
    const failedCheck = await theirs();
    only(ok(await attest(dev, a, failedCheck, proof, zeros(32))), 'StackAttestationDisputeEvent');
    const mismatch = await theirs();
    only(ok(await attest(dev, a, mismatch, zeros(32), leafFor(total, 1))), 'StackAttestationDisputeEvent');
    const plain = await theirs();
    only(ok((await dev.peerDispute(plain, p)).submission), 'StackAttestationDisputeEvent');
    const honest = await buy(dev, sc, 1);
    h.draws.push(0, 1); // the peer attests
    ok(await settle(dev, a, honest, 9, total));
    ok((await dev.peerAttest(honest, p, total)).submission);

    const tmp = tempDir('dev-network-store-');
    t.after(() => tmp.remove());
    const store = new SqliteStore({ dataDir: tmp.dir });
    t.after(() => store.close());
    const log = captureLogger('warn');
    let cursor: string | null = null;
    for (;;) {
      const page = await dev.events.readPage(cursor);
      await applyPage(store, dev.events.id, page, log.logger);
      cursor = page.nextCursor;
      if (!page.hasMore) break;
    }
    for (const [stack, attested, disputed] of [
      [failedCheck, [1], true],
      [mismatch, [], true],
      [plain, [], true],
      [honest, [p], false],
    ] as const) {
      const chain = dev.ticket(stack)!;
      assert.deepEqual(chain.already_attested_nodes, attested, `stack ${stack} on chain`);
      assert.equal(chain.is_in_dispute, disputed);
      const indexed = (await store.getTicket(stack))!;
      assert.equal(indexed.already_attested_nodes, `[${attested.join(',')}]`, `stack ${stack} in the store`);
      assert.equal(indexed.is_in_dispute, disputed);
    }
    assert.deepEqual(
      (await store.listAttestationRequests(1)).map((r) => r.stack_small_id),
      [mismatch, plain],
      'node 1 attested the first, whose check failed',
    );
  });

  it('persists state, history and cursors across close and reopen; options apply at reopen', async (t) => {
    const h = await harness(t, { samplingProbability: 1 });
    const dev = h.dev;
    const a = await register(dev);
    const task = await createTask(dev, SAMPLING);
    ok(await subscribe(dev, a, task));
    const stack = await buy(dev, task, 1, 1000);
    ok(await settle(dev, a, stack, 400, hashOf('persist')));
    const failed = await subscribe(dev, a, 99);
    await dev.advanceEpoch();
    const before = {
      badges: await dev.listBadges(),
      epoch: await dev.currentEpoch(),
      ticket: dev.ticket(stack),
      stack: dev.stack(stack),
      user: dev.balanceOf(dev.userAddress),
      treasury: dev.feeTreasury(),
      page: await dev.events.readPage(null),
      addresses: [dev.userAddress, dev.adminAddress, dev.gasCoinId, dev.packageId],
    };
    // One process at a time: the ledger is locked while open.
    assert.throws(() => h.open(), /in use by another dev network/);
    await dev.close();
    await assert.rejects(dev.submit({ kind: 'register_node' }), ChainUnavailableError);
    await assert.rejects(dev.events.readPage(null), ChainUnavailableError);
    await dev.close();

    const again = h.open({ attestationNodes: 2, samplingProbability: 0 });
    assert.deepEqual(await again.listBadges(), before.badges);
    assert.equal(await again.currentEpoch(), before.epoch);
    assert.deepEqual(again.ticket(stack), before.ticket, 'the ticket keeps the k it was made with');
    assert.deepEqual(again.stack(stack), before.stack);
    assert.equal(again.balanceOf(again.userAddress), before.user);
    assert.equal(again.feeTreasury(), before.treasury);
    // The same history; the page's parameters are this run's (options apply at reopen).
    const page = await again.events.readPage(null);
    assert.deepEqual({ ...page, parameters: undefined }, { ...before.page, parameters: undefined });
    assert.equal(page.parameters?.cross_validation_extra_nodes_count, 2n);
    assert.equal(page.parameters?.cross_validation_probability_permille, 0n);
    assert.deepEqual(
      [again.userAddress, again.adminAddress, again.gasCoinId, again.packageId],
      before.addresses,
    );
    assert.equal(again.transaction(failed.digest)?.status, 'failure');
    assert.equal((await again.parameters()).cross_validation_extra_nodes_count, 2n);
    // The history continues: the next event follows the old cursor.
    const next = await again.submit({ kind: 'register_node' });
    assert.equal(next.cursor, String(Number(before.page.nextCursor) + 1));
    const tail = await again.events.readPage(before.page.nextCursor);
    assert.deepEqual(
      tail.events.map((e) => e.raw),
      next.events,
    );
    only(ok(await claim(again, a, [stack])), 'StackSettlementTicketClaimedEvent');
    // Probability 0 now: a SamplingConsensus try-settle draws nobody.
    const s2 = await buy(again, task, 1);
    const settled = only(ok(await settle(again, a, s2, 1, hashOf('x'), 2)), 'StackTrySettleEvent');
    assert.deepEqual(settled.requested_attestation_nodes, []);
  });

  it('serializes concurrent submissions in call order, and notifies listeners of new events', async (t) => {
    const { dev } = await harness(t);
    let calls = 0;
    const off = dev.onNewEvents(() => {
      calls += 1;
    });
    const submissions = await Promise.all(
      Array.from({ length: 20 }, () => dev.submit({ kind: 'register_node' })),
    );
    assert.deepEqual(
      submissions.map((s) => only(ok(s), 'NodeRegisteredEvent').node_small_id),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      submissions.map((s) => s.cursor),
      Array.from({ length: 20 }, (_, i) => String(i + 2)),
    );
    assert.equal(new Set(submissions.map((s) => s.digest)).size, 20);
    assert.equal(calls, 20);
    const task = await createTask(dev, NO_SECURITY);
    const [badge] = await dev.listBadges();
    const op: Operation = {
      kind: 'subscribe_node_to_task',
      badge: badge!,
      task_small_id: task,
      price_per_one_million_compute_units: 1,
    };
    // The second sees the first one's effect: it ran after the first committed.
    const [first, second] = await Promise.all([dev.submit(op), dev.submit(op)]);
    ok(first!);
    aborted(second!, 'ENodeAlreadySubscribedToTask', 312012016);
    assert.equal(calls, 22, 'the task and the subscription; not the failure');
    await dev.advanceEpoch();
    assert.equal(calls, 23, 'a new epoch is news for the event source too');
    off();
    await register(dev);
    assert.equal(calls, 23);
    // Calls made before close() still run; later ones are refused.
    const pending = dev.submit({ kind: 'register_node' });
    const closing = dev.close();
    await assert.rejects(dev.submit({ kind: 'register_node' }), ChainUnavailableError);
    ok(await pending);
    await closing;
  });
});
