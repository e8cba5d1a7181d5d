/**
 * Writes test/fixtures/events.jsonl: a deterministic history of Atoma `db` module events over six epochs, in
 * the fullnode's JSON-RPC SuiEvent form, one event per line. The story follows the contract's rules
 * (docs: contracts.md §2-§4) so the fixture can be replayed and queried as if it came from the chain.
 *
 * Usage: node scripts/generate-fixture.ts [out-file]. Same code, same bytes: the only randomness is a
 * seeded PRNG, and time is simulated.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { blake2b } from '@noble/hashes/blake2.js';
import { EVENT_NAMES } from '../src/protocol/events.ts';
import { mulberry32 } from '../test/helpers/random.ts';

type Json = string | number | null | Json[] | { [key: string]: Json };
type Payload = { [field: string]: Json };

const SEED = 0x5ea1ed;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Epoch 740 starts here (2025-05-12T00:00Z); Sui epochs last 24h. */
const EPOCH_START_MS = 1_747_008_000_000;
const FIRST_EPOCH = 740;
/** The fixture deployment raised cross_validation_probability_permille (default 10) so attestations show up. */
const ATTESTATION_PROBABILITY = 0.45;

// ---- Deterministic randomness (mulberry32) and value helpers

const rand = mulberry32(SEED);
const int = (lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
const chance = (p: number): boolean => rand() < p;
const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const randomBytes = (n: number): number[] => Array.from({ length: n }, () => int(0, 255));
const hex = (data: readonly number[]): string => data.map((b) => b.toString(16).padStart(2, '0')).join('');
const objectId = (): string => `0x${hex(randomBytes(32))}`;
const ZERO_SLOT: number[] = new Array(32).fill(0);
const hash = (data: number[]): number[] => Array.from(blake2b(Uint8Array.from(data), { dkLen: 32 }));

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
function base58(data: readonly number[]): string {
  let n = BigInt(`0x${hex(data)}`);
  let out = '';
  while (n > 0n) {
    out = B58[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (let i = 0; i < data.length && data[i] === 0; i++) out = `1${out}`;
  return out;
}

// Sui's JSON rendering: u64 as decimal strings, small-id newtypes as { inner }, u8/u16 as numbers.
const u64 = (n: number | bigint): string => String(n);
const small = (n: number): Payload => ({ inner: String(n) });

// ---- The event log: each transaction gets one digest and timestamp; eventSeq counts from 0 within it

const PACKAGE = objectId();
const ADMIN = objectId();
const USERS = Array.from({ length: 12 }, objectId);
const lines: string[] = [];
const counts = new Map<string, number>();
let now = EPOCH_START_MS + 9 * HOUR;

const epochOf = (ms: number): number => FIRST_EPOCH + Math.floor((ms - EPOCH_START_MS) / DAY);
const at = (day: number, hour: number): number => EPOCH_START_MS + day * DAY + hour * HOUR;

function tx(sender: string, events: [name: string, payload: Payload][]): void {
  const txDigest = base58(randomBytes(32));
  events.forEach(([name, parsedJson], seq) => {
    const event = {
      id: { txDigest, eventSeq: String(seq) },
      packageId: PACKAGE,
      transactionModule: 'db',
      sender,
      type: `${PACKAGE}::db::${name}`,
      parsedJson,
      timestampMs: String(now),
    };
    lines.push(JSON.stringify(event));
    counts.set(name, (counts.get(name) ?? 0) + 1);
  });
  now += int(400, 9000); // the next transaction lands in a later checkpoint
}

const emit = (sender: string, name: string, payload: Payload): void => tx(sender, [[name, payload]]);

// ---- Protocol state the story needs to stay legal

interface Task {
  id: number;
  objectId: string; // the Task object; TaskRegisteredEvent carries the TaskBadge id instead
  level: 0 | 1 | 2;
  weight: number; // how often buyers pick it
  subs: Map<number, number>; // node small id -> price per million units
  removed: boolean;
}

interface Stack {
  id: number;
  task: Task;
  node: number;
  units: number;
  price: number;
  createdAt: number;
  state: 'open' | 'settling' | 'disputed' | 'claimed';
  settledEpoch: number;
  claimed: number;
  attesters: number[];
  proof: number[];
  /** A requested attestation still to come: when, and whether the attester agrees. */
  attestation: { due: number; agrees: boolean; leaf: number[] } | null;
}

const tasks: Task[] = [];
const operators = new Map<number, string>(); // node small id -> operator address (the tx sender)
const stacks: Stack[] = [];
const node1 = { disputedAgainst: false, disputedBy: false };

function fee(level: number, price: number, units: number): bigint {
  // calculate_stack_fee_amount (contracts.md §4.2): SamplingConsensus pays 1.2x, the rest pay price x units.
  const base = BigInt(units) * BigInt(price);
  return level === 2 ? (base * 1200n) / 1_000_000_000n : base / 1_000_000n;
}

function createTask(role: number, model: string, level: 0 | 1 | 2, minRep: number | null, weight: number) {
  const task: Task = {
    id: tasks.length + 1,
    objectId: objectId(),
    level,
    weight,
    subs: new Map(),
    removed: false,
  };
  tasks.push(task);
  emit(ADMIN, 'TaskRegisteredEvent', {
    task_id: objectId(),
    task_small_id: small(task.id),
    role: { inner: role },
    model_name: model,
    security_level: { inner: level },
    minimum_reputation_score: minRep,
  });
}

/** Registers the next node, then its model subscriptions and its task subscriptions (task id -> price). */
function registerNode(models: [name: string, echelon: number][], subs: Record<number, number>) {
  const id = operators.size + 1;
  const operator = objectId();
  operators.set(id, operator);
  emit(operator, 'NodeRegisteredEvent', { badge_id: objectId(), node_small_id: small(id) });
  for (const [model, echelon] of models) {
    const payload = { node_small_id: small(id), model_name: model, echelon_id: { id: u64(echelon) } };
    emit(operator, 'NodeSubscribedToModelEvent', payload);
  }
  for (const [task, price] of Object.entries(subs)) subscribe(id, Number(task), price);
}

const taskById = (id: number): Task => tasks[id - 1]!;

function subscribe(node: number, taskId: number, price: number) {
  taskById(taskId).subs.set(node, price);
  emit(operators.get(node)!, 'NodeSubscribedToTaskEvent', {
    task_small_id: small(taskId),
    node_small_id: small(node),
    price_per_one_million_compute_units: u64(price),
    max_num_compute_units: '1000000', // fixed at COMPUTE_UNITS_PER_STACK
  });
}

function updatePrice(node: number, taskId: number, price: number) {
  taskById(taskId).subs.set(node, price);
  // Note the field order: node before task, unlike NodeSubscribedToTaskEvent.
  emit(operators.get(node)!, 'NodeSubscriptionUpdatedEvent', {
    node_small_id: small(node),
    task_small_id: small(taskId),
    price_per_one_million_compute_units: u64(price),
    max_num_compute_units: '1000000',
  });
}

function unsubscribe(node: number, taskId: number) {
  taskById(taskId).subs.delete(node); // existing stacks stay the node's to settle and claim
  const payload = { task_small_id: small(taskId), node_small_id: small(node) };
  emit(operators.get(node)!, 'NodeUnsubscribedFromTaskEvent', payload);
}

function deprecate(taskId: number) {
  const task = taskById(taskId);
  task.weight /= 2; // buyers may still acquire stacks on a deprecated task, but fewer do
  const payload = { task_id: task.objectId, task_small_id: small(taskId), epoch: u64(epochOf(now)) };
  emit(ADMIN, 'TaskDeprecationEvent', payload);
}

function removeTask(taskId: number) {
  const task = taskById(taskId);
  task.removed = true; // its unclaimed stacks are stranded from here on
  const payload = {
    task_id: task.objectId,
    task_small_id: small(taskId),
    removed_at_epoch: u64(epochOf(now)),
  };
  emit(ADMIN, 'TaskRemovedEvent', payload);
}

function keyRotation() {
  const nonce = (BigInt(int(0, 0xffffffff)) << 32n) | BigInt(int(0, 0xffffffff));
  const payload = { key_rotation_counter: '1', epoch: u64(epochOf(now)), nonce: u64(nonce) };
  emit(ADMIN, 'NewKeyRotationEvent', payload);
}

function weighted(items: Task[]): Task {
  let r = rand() * items.reduce((sum, t) => sum + t.weight, 0);
  for (const item of items) {
    r -= item.weight;
    if (r < 0) return item;
  }
  return items[items.length - 1]!;
}

/** Subscribers a stack at this price may be given to, or sampled from for attestation. */
const eligible = (task: Task, price: number): number[] =>
  [...task.subs].filter(([, ask]) => ask <= price).map(([node]) => node);

function buyStack() {
  const task = weighted(tasks.filter((t) => !t.removed && t.subs.size > 0));
  // The buyer's cap sits somewhat above the cheapest ask; the node is then drawn uniformly below the cap.
  const cheapest = Math.min(...task.subs.values());
  const price = Math.ceil((cheapest * (1 + 0.6 * rand())) / 100_000) * 100_000;
  const node = pick(eligible(task, price));
  const units = chance(0.6) ? pick([50_000, 100_000, 250_000, 500_000, 1_000_000]) : int(1, 100) * 10_000;
  const stack: Stack = {
    id: stacks.length + 1,
    task,
    node,
    units,
    price,
    createdAt: now,
    state: 'open',
    settledEpoch: 0,
    claimed: 0,
    attesters: [],
    proof: [],
    attestation: null,
  };
  stacks.push(stack);
  const owner = USERS[Math.floor(USERS.length * rand() ** 2)]!; // a few heavy users, a long tail
  emit(owner, 'StackCreatedEvent', {
    stack_id: objectId(),
    stack_small_id: small(stack.id),
    owner,
    task_small_id: small(task.id),
    selected_node_id: small(node),
    num_compute_units: u64(units),
    price_per_one_million_compute_units: u64(price),
  });
}

const usedUnits = (units: number): number =>
  chance(0.3) ? units : Math.floor(units * (0.1 + 0.89 * rand()));

function trySettle(stack: Stack) {
  stack.claimed = usedUnits(stack.units);
  const leaf = randomBytes(32);
  if (stack.task.level === 2 && chance(ATTESTATION_PROBABILITY)) {
    // k = 1: one node drawn among eligible subscribers, possibly the settler itself.
    const attester = pick(eligible(stack.task, stack.price));
    const attesterLeaf = randomBytes(32);
    stack.attesters = [attester];
    // The settler commits to blake2b over both slots: its leaf, then the attester's (contracts.md §2.6).
    stack.proof = hash([...leaf, ...attesterLeaf]);
    const due = now + int(20, 360) * MINUTE; // well inside the window (epochs E and E+1)
    // The first disagreement involving node 1 either way is forced, so it has disputes of both kinds.
    const forced =
      (stack.node === 1 && attester !== 1 && !node1.disputedAgainst) ||
      (attester === 1 && stack.node !== 1 && !node1.disputedBy);
    const roll = rand();
    if (forced || roll < 0.12) stack.attestation = { due, agrees: false, leaf: attesterLeaf };
    else if (roll < 0.9) stack.attestation = { due, agrees: true, leaf: attesterLeaf };
    // else: the attester never answers; the settler claims anyway from E+1 (it gets slashed, of nothing)
    if (forced) {
      if (stack.node === 1) node1.disputedAgainst = true;
      else node1.disputedBy = true;
    }
  } else {
    stack.attesters = [];
    stack.proof = hash([...leaf, ...ZERO_SLOT]); // unfilled slot stays zero; nobody checks it
  }
  stack.state = 'settling';
  stack.settledEpoch = epochOf(now);
  emit(operators.get(stack.node)!, 'StackTrySettleEvent', {
    stack_small_id: small(stack.id),
    selected_node_id: small(stack.node),
    requested_attestation_nodes: stack.attesters.map(small),
    committed_stack_proof: stack.proof,
    stack_merkle_leaf: leaf,
    num_claimed_compute_units: u64(stack.claimed),
  });
}

function attest(stack: Stack) {
  const { agrees, leaf } = stack.attestation!;
  const attester = stack.attesters[0]!;
  stack.attestation = null;
  if (!agrees) {
    // A different proof: submit_stack_settlement_attestation starts the dispute; the leaf is not stored.
    stack.state = 'disputed';
    emit(operators.get(attester)!, 'StackAttestationDisputeEvent', {
      stack_small_id: small(stack.id),
      attestation_commitment: hash(randomBytes(64)),
      attestation_node_id: small(attester),
      original_node_id: small(stack.node),
      original_commitment: stack.proof,
    });
    return;
  }
  // The last (only) expected attestation and the slots hash to the proof: both events, in this order.
  tx(operators.get(attester)!, [
    [
      'NewStackSettlementAttestationEvent',
      {
        stack_small_id: small(stack.id),
        attestation_node_id: small(attester),
        committed_stack_proof: stack.proof,
        stack_merkle_leaf: leaf,
      },
    ],
    [
      'StackSettlementTicketEvent',
      {
        stack_small_id: small(stack.id),
        selected_node_id: small(stack.node),
        num_claimed_compute_units: u64(stack.claimed),
        requested_attestation_nodes: stack.attesters.map(small),
        dispute_settled_at_epoch: u64(epochOf(now)), // the contract reports the current epoch here
        committed_stack_proof: stack.proof,
      },
    ],
  ]);
}

/** claim_funds: one node claims its tickets from epoch E+1, one event per stack in a single transaction. */
function claimTickets() {
  const epoch = epochOf(now);
  const claimable = stacks.filter(
    (s) => s.state === 'settling' && !s.attestation && !s.task.removed && epoch >= s.settledEpoch + 1,
  );
  if (claimable.length === 0) return;
  const node = pick(claimable).node;
  const batch = claimable.filter((s) => s.node === node).slice(0, 8);
  const events = batch.map((s): [string, Payload] => {
    s.state = 'claimed';
    return [
      'StackSettlementTicketClaimedEvent',
      {
        stack_small_id: small(s.id),
        selected_node_id: small(s.node),
        attestation_nodes: s.attesters.map(small), // the requested list, attested or not
        num_claimed_compute_units: u64(s.claimed),
        user_refund_amount: u64(fee(s.task.level, s.price, s.units - s.claimed)),
      },
    ];
  });
  tx(operators.get(node)!, events);
}

/** claim_funds_for_stacks: the ConfidentialCompute fast path, no ticket and no epoch wait. */
function claimConfidential() {
  const open = stacks.filter(
    (s) => s.state === 'open' && s.task.level === 1 && now - s.createdAt >= 3 * HOUR,
  );
  if (open.length === 0) return;
  const node = pick(open).node;
  const batch = open.filter((s) => s.node === node).slice(0, 4);
  const events = batch.map((s): [string, Payload] => {
    s.state = 'claimed';
    s.claimed = usedUnits(s.units);
    return [
      'ClaimedStackEvent',
      {
        stack_small_id: small(s.id),
        selected_node_id: small(s.node),
        num_claimed_compute_units: u64(s.claimed),
        user_refund_amount: u64(fee(1, s.price, s.units - s.claimed)),
      },
    ];
  });
  tx(operators.get(node)!, events);
}

// ---- The story

const LLAMA_70B = 'meta-llama/Llama-3.3-70B-Instruct';
const DEEPSEEK = 'deepseek-ai/DeepSeek-V3';
const QWEN_VL = 'Qwen/Qwen2.5-VL-72B-Instruct';

// Epoch 740: publish, tasks, the first seven nodes. Node 1 serves every task, cheaply, so it stays busy.
// Prices are per million compute units in the smallest USDC unit (4e6 = 4 USDC at 6 decimals).
emit(ADMIN, 'PublishedEvent', { db: objectId(), manager_badge: objectId() });
createTask(0, LLAMA_70B, 0, null, 0.25);
createTask(0, LLAMA_70B, 1, 50, 0.2);
createTask(0, DEEPSEEK, 2, 30, 0.2);
createTask(1, 'intfloat/multilingual-e5-large-instruct', 0, null, 0.1);
createTask(2, QWEN_VL, 2, null, 0.12);
createTask(0, 'meta-llama/Llama-3.1-8B-Instruct', 0, 10, 0.13);
registerNode([[LLAMA_70B, 1]], { 1: 4e6, 2: 8e6, 3: 10e6, 4: 1e6, 5: 15e6, 6: 2e6 });
registerNode([[LLAMA_70B, 2]], { 1: 3.5e6, 4: 1.2e6 });
registerNode([[DEEPSEEK, 1]], { 1: 5e6, 3: 9e6 });
registerNode([], { 2: 7.5e6, 6: 1.8e6 });
registerNode([[DEEPSEEK, 1]], { 3: 11e6, 5: 14e6 });
registerNode([], { 3: 12e6, 4: 1.5e6 });
registerNode([], { 1: 4.5e6, 6: 2.5e6 });

// Later operator and admin actions, at fixed points of the simulated clock.
const schedule: [time: number, action: () => void][] = [
  [at(1, 6), () => updatePrice(3, 1, 3.8e6)],
  [at(1, 8), () => registerNode([[QWEN_VL, 3]], { 2: 9e6, 5: 20e6 })],
  [at(1, 20), () => unsubscribe(7, 1)],
  [at(2, 3), () => deprecate(6)],
  [at(2, 10), () => updatePrice(1, 3, 9.5e6)],
  [at(2, 14), () => subscribe(8, 3, 10e6)],
  [at(3, 12), () => updatePrice(6, 4, 1.1e6)],
  [at(3, 15), keyRotation],
  [at(4, 9), () => removeTask(6)], // deprecated in epoch 742; removal needs epoch >= 743
  [at(5, 2), () => deprecate(4)],
];

// Epochs 740-745: a tick every 10-50 minutes; buyers, settlers, attesters and claimers act on the state.
const lastPurchase = at(5, 18);
const end = at(5, 23);
while (now < end) {
  now += int(10, 50) * MINUTE;
  while (schedule.length > 0 && schedule[0]![0] <= now) schedule.shift()![1]();
  if (now < lastPurchase && chance(0.55)) buyStack();
  for (const s of stacks) if (s.attestation && s.attestation.due <= now) attest(s);
  if (chance(0.4)) {
    // ConfidentialCompute stacks take the fast path; a removed task's stacks can no longer be settled.
    const ready = stacks.filter(
      (s) => s.state === 'open' && s.task.level !== 1 && !s.task.removed && now - s.createdAt >= 2 * HOUR,
    );
    if (ready.length > 0) trySettle(pick(ready));
  }
  if (chance(0.15)) claimTickets();
  if (chance(0.1)) claimConfidential();
}

// ---- Check the story covers what tests and newcomers rely on, then write

const nodeOneHas = {
  stacks: stacks.some((s) => s.node === 1),
  ticketClaims: stacks.some((s) => s.node === 1 && s.state === 'claimed' && s.task.level !== 1),
  confidentialClaims: stacks.some((s) => s.node === 1 && s.state === 'claimed' && s.task.level === 1),
  disputesAgainst: stacks.some((s) => s.node === 1 && s.state === 'disputed'),
  disputesRaised: stacks.some((s) => s.attesters[0] === 1 && s.node !== 1 && s.state === 'disputed'),
};
const problems = Object.entries(nodeOneHas)
  .filter(([, ok]) => !ok)
  .map(([what]) => `node 1 has no ${what}`);
for (const name of EVENT_NAMES) {
  const min = name === 'NodeUnsubscribedFromTaskEvent' || name === 'TaskRemovedEvent' ? 1 : 2;
  if ((counts.get(name) ?? 0) < min) problems.push(`${name} appears ${counts.get(name) ?? 0} times`);
}
if (lines.length < 300 || lines.length > 450) problems.push(`${lines.length} events, wanted 300 to 450`);
if (problems.length > 0) throw new Error(`fixture story is incomplete: ${problems.join('; ')}`);

const out = process.argv[2] ?? fileURLToPath(new URL('../test/fixtures/events.jsonl', import.meta.url));
mkdirSync(dirname(resolve(out)), { recursive: true });
writeFileSync(out, `${lines.join('\n')}\n`);
const summary = [...counts].map(([name, n]) => `${name} ${n}`).join(', ');
process.stdout.write(`wrote ${lines.length} events to ${out}: ${summary}\n`);
