import { add, div, mul, sub } from '../../protocol/arithmetic.ts';
import {
  BYTES_PER_HASH_COMMITMENT,
  COMPUTE_UNITS_PER_STACK,
  isSecurityLevel,
  MAX_REPUTATION_SCORE,
  MAX_TASK_ROLE,
  PERMILLE,
  REPUTATION_SCORE_START,
  SecurityLevel,
  STACK_DISPUTE_SETTLEMENT_DELAY,
} from '../../protocol/constants.ts';
import { attesterReward, stackFeeAmount, stackPaymentAmount } from '../../protocol/fees.ts';
import { hashLeaves, ticketLeaves, withAttesterLeaf } from '../../protocol/proofs.ts';
import { abort, fieldDoesNotExist, notEnough, optionNotSet } from './aborts.ts';
import {
  type AtomaDbObject,
  type CoinObject,
  hex,
  key,
  type NodeObject,
  type NodePriceData,
  type StackObject,
  type TaskObject,
  type TicketObject,
  unhex,
} from './state.ts';

/**
 * The rules of the Atoma `db` Move module (contracts.md §2, at 9e53429), one function per entry function.
 * Every check runs in the order the contract evaluates it, because that order decides which abort a caller
 * sees. A function throws MoveAbortError to abort; the caller then discards every change the transaction
 * made, so these functions mutate freely.
 */

/** What an entry function sees of the transaction executing it. */
export interface TxContext {
  readonly sender: string;
  readonly epoch: bigint;
  /** A uniformly random integer in [0, bound): sui::random. */
  random(bound: number): number;
  /** The transaction's working copy of a state object; mutations of it are the transaction's effects. */
  get<T extends object>(key: string): T | undefined;
  put(key: string, value: object): void;
  remove(key: string): void;
  /** A fresh object id (0x + 64 hex), as object::new derives one. */
  newId(): string;
  emit(name: string, parsedJson: Record<string, unknown>): void;
}

// --- parsedJson rendering (Sui JSON-RPC): u64 as decimal strings, newtypes as objects ----------------------

const inner = (id: bigint) => ({ inner: id.toString() });
const u64 = (n: bigint) => n.toString();
const bytes = (b: Uint8Array) => Array.from(b);

// --- borrows -----------------------------------------------------------------------------------------------

export function atomaDb(tx: TxContext): AtomaDbObject {
  return tx.get<AtomaDbObject>(key.db)!;
}

function borrowNode(tx: TxContext, id: bigint): NodeObject {
  return tx.get<NodeObject>(key.node(id)) ?? fieldDoesNotExist(`AtomaDb.nodes has no node ${id}`);
}

function borrowTask(tx: TxContext, id: bigint): TaskObject {
  return tx.get<TaskObject>(key.task(id)) ?? fieldDoesNotExist(`AtomaDb.tasks has no task ${id}`);
}

function borrowStack(tx: TxContext, id: bigint): StackObject {
  return tx.get<StackObject>(key.stack(id)) ?? fieldDoesNotExist(`AtomaDb.stacks has no stack ${id}`);
}

function borrowTicket(tx: TxContext, stackId: bigint): TicketObject {
  return (
    tx.get<TicketObject>(key.ticket(stackId)) ??
    fieldDoesNotExist(`AtomaDb.stack_settlement_tickets has no ticket for stack ${stackId}`)
  );
}

// --- USDC ------------------------------------------------------------------------------------------------

/** Transfers a coin of `amount` to `address` (merged into its balance). */
function credit(tx: TxContext, address: string, amount: bigint): void {
  const coin = tx.get<CoinObject>(key.coin(address));
  if (coin) coin.balance = add(coin.balance, amount);
  else tx.put(key.coin(address), { balance: amount } satisfies CoinObject);
}

/** balance::split from the pooled fee_treasury, aborting when it is short (contracts.md §2.9, §4.3). */
function splitFeeTreasury(tx: TxContext, amount: bigint): void {
  const db = atomaDb(tx);
  if (amount > db.fee_treasury) notEnough(`fee_treasury holds ${db.fee_treasury}, ${amount} requested`);
  db.fee_treasury -= amount;
}

/** transfer_funds (db:3787-3792): a coin split from fee_treasury to `recipient`; nothing when the amount is 0. */
function transferFunds(tx: TxContext, amount: bigint, recipient: string): void {
  if (amount === 0n) return;
  splitFeeTreasury(tx, amount);
  credit(tx, recipient, amount);
}

// --- fees (contracts.md §4: src/protocol/fees.ts) ----------------------------------------------------

/** attribute_fee_to_node (§4.4): fees of an earlier epoch unlock into available_fee_amount. */
function attributeFeeToNode(tx: TxContext, node: NodeObject, fee: bigint): void {
  const entry = node.entry;
  if (tx.epoch > entry.last_fee_epoch) {
    entry.available_fee_amount = add(entry.available_fee_amount, entry.last_fee_epoch_amount);
    entry.last_fee_epoch_amount = 0n;
    entry.last_fee_epoch = tx.epoch;
  }
  entry.last_fee_epoch_amount = add(entry.last_fee_epoch_amount, fee);
}

/** withdraw_fees (§2.11): pays the node's available fees to the sender. No event. */
function withdrawFees(tx: TxContext, nodeId: bigint): void {
  const node = borrowNode(tx, nodeId);
  attributeFeeToNode(tx, node, 0n);
  const amount = node.entry.available_fee_amount;
  if (amount > 0n) {
    node.entry.available_fee_amount = 0n;
    splitFeeTreasury(tx, amount);
    credit(tx, tx.sender, amount);
  }
}

// --- node entry functions ------------------------------------------------------------------------------------

/** register_node_entry (§2.1): no collateral; the NodeBadge goes to the sender. */
export function registerNode(tx: TxContext): { node_small_id: bigint; badge_id: string } {
  const db = atomaDb(tx);
  if (db.is_registration_disabled) abort('ENodeRegDisabled');
  const id = db.next_node_small_id;
  db.next_node_small_id = add(id, 1n);
  const badgeId = tx.newId();
  const node: NodeObject = {
    small_id: id,
    entry: {
      was_disabled_in_epoch: null,
      collateral: 0n,
      last_fee_epoch: tx.epoch,
      last_fee_epoch_amount: 0n,
      available_fee_amount: 0n,
      reputation_score: REPUTATION_SCORE_START,
    },
    badge: { id: badgeId, owner: tx.sender, task_subscriptions: [], model_subscriptions: [] },
  };
  tx.put(key.node(id), node);
  tx.emit('NodeRegisteredEvent', { badge_id: badgeId, node_small_id: inner(id) });
  return { node_small_id: id, badge_id: badgeId };
}

/** add_node_to_model (§2.2). Echelons matter only to the legacy prompt flow; stacks never look at them. */
export function addNodeToModel(tx: TxContext, nodeId: bigint, modelName: string, echelonId: bigint): void {
  const db = atomaDb(tx);
  const model =
    db.models.find((m) => m.name === modelName) ?? fieldDoesNotExist(`AtomaDb.models has no ${modelName}`);
  if (model.is_disabled) abort('EModelDisabled');
  const node = borrowNode(tx, nodeId);
  // One dynamic field per model name on the badge: one echelon per model, whichever (§1.9).
  if (node.badge.model_subscriptions.some((s) => s.model_name === modelName)) {
    abort('ENodeAlreadySubscribedToModel');
  }
  const echelon = model.echelons.find((e) => e.id === echelonId) ?? abort('EEchelonNotFound');
  echelon.nodes.push(nodeId);
  node.badge.model_subscriptions.push({ model_name: modelName, echelon_id: echelonId });
  tx.emit('NodeSubscribedToModelEvent', {
    node_small_id: inner(nodeId),
    model_name: modelName,
    echelon_id: { id: u64(echelonId) },
  });
}

/** subscribe_node_to_task (§2.3). A disabled node may subscribe; it is just never sampled. */
export function subscribeNodeToTask(tx: TxContext, nodeId: bigint, taskId: bigint, price: bigint): void {
  const task = tx.get<TaskObject>(key.task(taskId)) ?? abort('ETaskNotFound');
  const node = borrowNode(tx, nodeId);
  if (node.entry.reputation_score < task.minimum_reputation_score) abort('ENodeDoesNotMeetTaskRequirements');
  if (!task.is_public && !task.whitelisted_nodes.includes(nodeId)) abort('ENodeNotWhitelistedForTask');
  if (task.is_deprecated) abort('ETaskDeprecated');
  if (node.badge.task_subscriptions.includes(taskId)) abort('ENodeAlreadySubscribedToTask');
  if (price === 0n) abort('EInvalidPricePerComputeUnit');
  task.subscribed_nodes[nodeId.toString()] = {
    node_id: nodeId,
    price_per_one_million_compute_units: price,
    max_num_compute_units: COMPUTE_UNITS_PER_STACK,
  };
  // A re-subscription before any cleanup appends the id a second time (§3.3): double sampling weight.
  task.subscribed_nodes_small_ids.push(nodeId);
  node.badge.task_subscriptions.push(taskId);
  tx.emit('NodeSubscribedToTaskEvent', {
    task_small_id: inner(taskId),
    node_small_id: inner(nodeId),
    price_per_one_million_compute_units: u64(price),
    max_num_compute_units: u64(COMPUTE_UNITS_PER_STACK),
  });
}

/** update_node_subscription (§2.4): the price is checked first, before the task. */
export function updateNodeSubscription(tx: TxContext, nodeId: bigint, taskId: bigint, price: bigint): void {
  if (price === 0n) abort('EInvalidPricePerComputeUnit');
  const task = tx.get<TaskObject>(key.task(taskId)) ?? abort('ETaskNotFound');
  const node = borrowNode(tx, nodeId);
  if (!node.badge.task_subscriptions.includes(taskId)) abort('ENodeNotSubscribedToTask');
  if (task.is_deprecated) abort('ETaskDeprecated');
  const entry =
    task.subscribed_nodes[nodeId.toString()] ??
    fieldDoesNotExist(`task ${taskId} has no subscription of node ${nodeId}`);
  entry.price_per_one_million_compute_units = price;
  tx.emit('NodeSubscriptionUpdatedEvent', {
    node_small_id: inner(nodeId),
    task_small_id: inner(taskId),
    price_per_one_million_compute_units: u64(price),
    max_num_compute_units: u64(entry.max_num_compute_units),
  });
}

/** unsubscribe_node_from_task (§2.5): the id stays in the iteration list until a stack purchase cleans it. */
export function unsubscribeNodeFromTask(tx: TxContext, nodeId: bigint, taskId: bigint): void {
  const task = tx.get<TaskObject>(key.task(taskId)) ?? abort('ETaskNotFound');
  const node = borrowNode(tx, nodeId);
  const at = node.badge.task_subscriptions.indexOf(taskId);
  if (at < 0) abort('ENodeNotSubscribedToTask');
  node.badge.task_subscriptions.splice(at, 1);
  if (task.is_deprecated) abort('ETaskDeprecated');
  const removed =
    task.subscribed_nodes[nodeId.toString()] ??
    fieldDoesNotExist(`task ${taskId} has no subscription of node ${nodeId}`);
  delete task.subscribed_nodes[nodeId.toString()];
  if (removed.node_id !== nodeId) abort('ENodeIndexMismatch');
  tx.emit('NodeUnsubscribedFromTaskEvent', { task_small_id: inner(taskId), node_small_id: inner(nodeId) });
}

/**
 * permanently_disable_node (§2.16, db:2214-2222): no event, no undo. A disabled node is never sampled
 * again, for stacks or attestations; it can still settle and claim what it has.
 */
export function permanentlyDisableNode(tx: TxContext, nodeId: bigint): void {
  const node = borrowNode(tx, nodeId);
  if (node.entry.was_disabled_in_epoch !== null) abort('ENodeAlreadyDisabled');
  node.entry.was_disabled_in_epoch = tx.epoch;
}

/**
 * destroy_disabled_node (§2.17, db:2236-2267), in the contract's order: withdraw_fees, then the NodeEntry
 * is removed, then the disabled epoch is extracted (a node never disabled aborts in std::option), then the
 * wait of four epochs is checked. The badge is deleted with it; the subscriber lists keep the id. No event.
 */
export function destroyDisabledNode(tx: TxContext, nodeId: bigint): void {
  withdrawFees(tx, nodeId);
  const node = borrowNode(tx, nodeId);
  tx.remove(key.node(nodeId));
  const disabledAt = node.entry.was_disabled_in_epoch ?? optionNotSet('the node was never disabled');
  if (add(disabledAt, 4n) > tx.epoch) abort('ENodeMustWaitBeforeDestroy');
  // The collateral goes back to the sender as a coin: always zero at HEAD (§4.5).
  if (node.entry.collateral > 0n) credit(tx, tx.sender, node.entry.collateral);
}

// --- stacks ----------------------------------------------------------------------------------------------

/**
 * sample_node_for_stack (§2.15): walks the iteration list, dropping ids with no live subscription (lazy
 * cleanup, by swap_remove as TableVec does, so the list order changes), and picks uniformly among the
 * eligible ones. `forced` is the dev network's way to choose the node: it must still be eligible.
 */
function sampleNodeForStack(
  tx: TxContext,
  task: TaskObject,
  units: bigint,
  price: bigint,
  forced: bigint | undefined,
): bigint {
  const ids = task.subscribed_nodes_small_ids;
  const eligible: bigint[] = [];
  let i = 0;
  while (i < ids.length) {
    const id = ids[i]!;
    const subscription = task.subscribed_nodes[id.toString()];
    if (subscription === undefined) {
      ids[i] = ids[ids.length - 1]!;
      ids.pop();
      continue;
    }
    const node = tx.get<NodeObject>(key.node(id));
    if (
      subscription.price_per_one_million_compute_units <= price &&
      subscription.max_num_compute_units >= units &&
      node !== undefined &&
      node.entry.was_disabled_in_epoch === null
    ) {
      eligible.push(id);
    }
    i += 1;
  }
  if (eligible.length === 0) abort('ENoNodesEligibleForTask');
  if (forced !== undefined) return eligible.includes(forced) ? forced : abort('ENoNodesEligibleForTask');
  return eligible[tx.random(eligible.length)]!;
}

/**
 * acquire_new_stack_entry (§2.15), the user side. The wallet is the sender's USDC balance. Deprecation is
 * not checked: a deprecated task still sells stacks (§3.1).
 */
export function acquireNewStack(
  tx: TxContext,
  taskId: bigint,
  units: bigint,
  price: bigint,
  forcedNode?: bigint,
): { stack_small_id: bigint; selected_node_id: bigint } {
  if (units === 0n) abort('EInvalidComputeUnits');
  if (price === 0n) abort('EInvalidPricePerComputeUnit');
  const task = tx.get<TaskObject>(key.task(taskId)) ?? abort('ETaskNotFound');
  const db = atomaDb(tx);
  const fee = stackPaymentAmount(db, task.security_level, price, units);
  const wallet = tx.get<CoinObject>(key.coin(tx.sender));
  if (wallet === undefined || wallet.balance < fee) abort('EInsufficientBalance');
  // The payment enters the pooled treasury before the node is sampled.
  wallet.balance -= fee;
  db.fee_treasury = add(db.fee_treasury, fee);
  // The raw length, before the lazy cleanup: stale ids alone pass this check (then fail eligibility).
  if (task.subscribed_nodes_small_ids.length === 0) abort('ENoNodesSubscribedToTask');
  const selected = sampleNodeForStack(tx, task, units, price, forcedNode);
  const id = db.next_stack_small_id;
  db.next_stack_small_id = add(id, 1n);
  const badgeId = tx.newId();
  const stack: StackObject = {
    small_id: id,
    badge_id: badgeId,
    owner: tx.sender,
    // The buyer's price cap, not the node's price: the node is paid at this price (§1.7).
    price_per_one_million_compute_units: price,
    num_compute_units: units,
    selected_node_id: selected,
    task_small_id: taskId,
    is_claimed: false,
  };
  tx.put(key.stack(id), stack);
  tx.emit('StackCreatedEvent', {
    stack_id: badgeId,
    stack_small_id: inner(id),
    owner: tx.sender,
    task_small_id: inner(taskId),
    selected_node_id: inner(selected),
    num_compute_units: u64(units),
    price_per_one_million_compute_units: u64(price),
  });
  return { stack_small_id: id, selected_node_id: selected };
}

/**
 * Whether sample_attestation_nodes counts a subscriber as eligible for the stack (§2.6, db:2702-2715):
 * priced within the stack's price, with room for its units, still existing and not disabled.
 */
function eligibleAttester(
  subscription: NodePriceData,
  node: NodeObject | undefined,
  stack: StackObject,
): boolean {
  return (
    subscription.price_per_one_million_compute_units <= stack.price_per_one_million_compute_units &&
    subscription.max_num_compute_units >= stack.num_compute_units &&
    node !== undefined &&
    node.entry.was_disabled_in_epoch === null
  );
}

/**
 * sample_attestation_nodes (§2.6): subscribers priced within the stack, still existing and not disabled.
 * Fewer than k eligible: all of them. Otherwise k draws WITH replacement, the settler not excluded. The
 * loop borrows subscribed_nodes[id] for every listed id with no contains-check, so a stale id left by an
 * unsubscribe aborts the whole try-settle.
 */
function sampleAttestationNodes(tx: TxContext, task: TaskObject, stack: StackObject): bigint[] {
  const eligible: bigint[] = [];
  for (const id of task.subscribed_nodes_small_ids) {
    const subscription =
      task.subscribed_nodes[id.toString()] ??
      fieldDoesNotExist(`task ${task.small_id} lists node ${id}, which is no longer subscribed`);
    if (eligibleAttester(subscription, tx.get<NodeObject>(key.node(id)), stack)) eligible.push(id);
  }
  const count = atomaDb(tx).cross_validation_extra_nodes_count;
  if (BigInt(eligible.length) < count) return eligible;
  const chosen: bigint[] = [];
  for (let i = 0n; i < count; i++) chosen.push(eligible[tx.random(eligible.length)]!);
  return chosen;
}

/**
 * How many eligible entries sample_attestation_nodes would find for the stack now, read from committed
 * state: what a peer that knows the chain's state counts before it commits its proof. A node listed twice
 * (§3.3) counts twice, as in the sampling; a stale id is skipped (the sampling would abort on it).
 */
export function countEligibleAttesters(
  read: <T extends object>(key: string) => T | undefined,
  task: TaskObject,
  stack: StackObject,
): number {
  let count = 0;
  for (const id of task.subscribed_nodes_small_ids) {
    const subscription = task.subscribed_nodes[id.toString()];
    if (subscription && eligibleAttester(subscription, read<NodeObject>(key.node(id)), stack)) count += 1;
  }
  return count;
}

/** try_settle_stack (§2.6): one-shot per stack; creates the ticket. */
export function trySettleStack(
  tx: TxContext,
  nodeId: bigint,
  stackId: bigint,
  numClaimed: bigint,
  proof: Uint8Array,
  leaf: Uint8Array,
): { requested_attestation_nodes: bigint[] } {
  const stack = borrowStack(tx, stackId);
  if (stack.selected_node_id !== nodeId) abort('ENodeNotSelectedForStack');
  if (numClaimed > stack.num_compute_units) abort('ETooManyComputedUnits');
  // "In settlement dispute" just means "already try-settled": a ticket exists.
  if (tx.get<TicketObject>(key.ticket(stackId)) !== undefined) abort('EStackInSettlementDispute');
  if (proof.length !== BYTES_PER_HASH_COMMITMENT) abort('EInvalidCommittedStackProof');
  if (leaf.length !== BYTES_PER_HASH_COMMITMENT) abort('EInvalidStackMerkleLeaf');
  const task = borrowTask(tx, stack.task_small_id);
  const db = atomaDb(tx);
  let requested: bigint[] = [];
  if (task.security_level === SecurityLevel.SamplingConsensus) {
    // r uniform in [1, 1000]; attesters are sampled when r <= the probability in permille.
    const r = BigInt(tx.random(1000) + 1);
    if (r <= db.cross_validation_probability_permille) requested = sampleAttestationNodes(tx, task, stack);
  }
  // Slot 0 is the settler's leaf; k zeroed slots follow, k as it is now (§1.8), whatever was sampled.
  const leaves = ticketLeaves(leaf, Number(db.cross_validation_extra_nodes_count));
  const ticket: TicketObject = {
    id: tx.newId(),
    stack_small_id: stackId,
    selected_node_id: nodeId,
    num_claimed_compute_units: numClaimed,
    requested_attestation_nodes: requested,
    dispute_settled_at_epoch: add(tx.epoch, STACK_DISPUTE_SETTLEMENT_DELAY),
    committed_stack_proof: hex(proof),
    stack_merkle_leaves_vector: hex(leaves),
    already_attested_nodes: [],
    is_in_dispute: false,
  };
  tx.put(key.ticket(stackId), ticket);
  tx.emit('StackTrySettleEvent', {
    stack_small_id: inner(stackId),
    selected_node_id: inner(nodeId),
    requested_attestation_nodes: requested.map(inner),
    committed_stack_proof: bytes(proof),
    stack_merkle_leaf: bytes(leaf),
    num_claimed_compute_units: u64(numClaimed),
  });
  return { requested_attestation_nodes: requested };
}

/**
 * submit_stack_settlement_attestation (§2.7). A proof unlike the settler's opens a dispute instead (the
 * leaf is not stored). The attester's leaf goes into slot (first index + 1); when every requested attester
 * has submitted, blake2b-256 of the whole leaves vector must equal the committed proof, else a dispute.
 */
export function submitStackSettlementAttestation(
  tx: TxContext,
  nodeId: bigint,
  stackId: bigint,
  proof: Uint8Array,
  leaf: Uint8Array,
): void {
  const stack = tx.get<StackObject>(key.stack(stackId)) ?? abort('EStackNotFound');
  const ticket = tx.get<TicketObject>(key.ticket(stackId)) ?? abort('EStackNotInSettlementDispute');
  if (proof.length !== BYTES_PER_HASH_COMMITMENT) abort('EInvalidCommittedStackProof');
  if (leaf.length !== BYTES_PER_HASH_COMMITMENT) abort('EInvalidStackMerkleLeaf');
  const task = borrowTask(tx, stack.task_small_id);
  if (task.security_level !== SecurityLevel.SamplingConsensus) abort('EStackDoesNotRequireSamplingConsensus');
  // Attestation is allowed in the try-settle epoch E and in E + 1.
  if (tx.epoch > ticket.dispute_settled_at_epoch) abort('EStackDisputePeriodOver');
  const index = ticket.requested_attestation_nodes.indexOf(nodeId);
  if (index < 0) abort('ENodeNotSelectedForAttestation');
  if (hex(proof) !== ticket.committed_stack_proof) {
    startAttestationDispute(tx, nodeId, stackId, proof);
    return;
  }
  // Neither "already attested" nor "already in dispute" is checked here (§2.7).
  const leaves = withAttesterLeaf(unhex(ticket.stack_merkle_leaves_vector), index, leaf);
  ticket.stack_merkle_leaves_vector = hex(leaves);
  ticket.already_attested_nodes.push(nodeId);
  const attestation = {
    stack_small_id: inner(stackId),
    attestation_node_id: inner(nodeId),
    committed_stack_proof: bytes(proof),
    stack_merkle_leaf: bytes(leaf),
  };
  if (ticket.already_attested_nodes.length !== ticket.requested_attestation_nodes.length) {
    tx.emit('NewStackSettlementAttestationEvent', attestation);
    return;
  }
  if (hex(hashLeaves(leaves)) !== ticket.committed_stack_proof) {
    // The dispute's "attestation commitment" is then the settler's own proof.
    startAttestationDispute(tx, nodeId, stackId, unhex(ticket.committed_stack_proof));
    return;
  }
  tx.emit('NewStackSettlementAttestationEvent', attestation);
  tx.emit('StackSettlementTicketEvent', {
    stack_small_id: inner(stackId),
    selected_node_id: inner(ticket.selected_node_id),
    num_claimed_compute_units: u64(ticket.num_claimed_compute_units),
    requested_attestation_nodes: ticket.requested_attestation_nodes.map(inner),
    // The event reports the CURRENT epoch; the ticket's own field is left unchanged (§2.7).
    dispute_settled_at_epoch: u64(tx.epoch),
    committed_stack_proof: bytes(unhex(ticket.committed_stack_proof)),
  });
}

/**
 * start_attestation_dispute (§2.8). It checks neither that the caller is a requested attester nor the
 * epoch window: any badge holder can dispute any SamplingConsensus ticket. Nothing ever resolves it.
 */
export function startAttestationDispute(
  tx: TxContext,
  nodeId: bigint,
  stackId: bigint,
  commitment: Uint8Array,
): void {
  const ticket = borrowTicket(tx, stackId);
  if (ticket.is_in_dispute) abort('EStackAlreadyInDispute');
  const stack = borrowStack(tx, stackId);
  const task = borrowTask(tx, stack.task_small_id);
  if (task.security_level !== SecurityLevel.SamplingConsensus)
    abort('ETaskSecurityLevelNotSamplingConsensus');
  ticket.is_in_dispute = true;
  tx.emit('StackAttestationDisputeEvent', {
    stack_small_id: inner(stackId),
    attestation_commitment: bytes(commitment),
    attestation_node_id: inner(nodeId),
    original_node_id: inner(ticket.selected_node_id),
    original_commitment: bytes(unhex(ticket.committed_stack_proof)),
  });
}

/**
 * claim_funds (§2.9, db:1996-2077): the batch is atomic (any abort reverts it all). Per stack: the node's
 * fee joins the total; the requested attesters are handled (fee / k to those that attested, a slash of a
 * collateral that is always zero to the others); only then is the user's refund paid; ticket and stack
 * are deleted. Then the total goes to the sender and withdraw_fees pays out the caller's available fees.
 * The attesters come before the refund in db.move (db:2046-2054; contracts.md §2.9 lists them after):
 * when the pooled treasury is short, an attester's abort (k = 0, a destroyed node) is the one met.
 */
export function claimFunds(tx: TxContext, nodeId: bigint, stackIds: bigint[]): void {
  const db = atomaDb(tx);
  let total = 0n;
  for (const stackId of stackIds) {
    const ticket = borrowTicket(tx, stackId);
    const stack = borrowStack(tx, stackId);
    const task = borrowTask(tx, stack.task_small_id);
    if (ticket.selected_node_id !== nodeId) abort('ENodeNotSelectedForSettlement');
    if (ticket.is_in_dispute) abort('EStackInDispute');
    if (tx.epoch < ticket.dispute_settled_at_epoch) abort('EStackDisputePeriodIsNotOver');
    if (stack.is_claimed) abort('EStackAlreadyClaimed');
    const level = task.security_level;
    const price = stack.price_per_one_million_compute_units;
    const fee = stackFeeAmount(db, level, price, ticket.num_claimed_compute_units);
    total = add(total, fee);
    const unclaimed = sub(stack.num_compute_units, ticket.num_claimed_compute_units);
    const refund = stackFeeAmount(db, level, price, unclaimed);
    rewardAndSlashAttesters(tx, ticket, fee);
    transferFunds(tx, refund, stack.owner);
    tx.remove(key.ticket(stackId));
    tx.remove(key.stack(stackId));
    tx.emit('StackSettlementTicketClaimedEvent', {
      stack_small_id: inner(stackId),
      selected_node_id: inner(ticket.selected_node_id),
      // The requested attesters, whether or not they attested.
      attestation_nodes: ticket.requested_attestation_nodes.map(inner),
      num_claimed_compute_units: u64(ticket.num_claimed_compute_units),
      user_refund_amount: u64(refund),
    });
  }
  transferFunds(tx, total, tx.sender);
  withdrawFees(tx, nodeId);
}

/**
 * handle_attestation_nodes_rewards_and_slashing (§2.9, §4.2; db:2872-2905): per REQUESTED attester (a
 * node listed twice is visited twice). One that attested is credited fee / k straight into its
 * available_fee_amount, with no epoch lock, on top of the node's fee (drawing on the pooled treasury,
 * §4.3): k is divided by only on this path, and the division comes before the borrow of its entry, which
 * aborts when the node was destroyed (db:2893-2895, as §2.17 says). One that did not attest is slashed
 * through slash_node_on_timeout, which skips a node that no longer exists (db:2431-2435; §2.9's "hidden
 * aborts" reads as if every destroyed attester aborted the claim, but only one that attested does).
 */
function rewardAndSlashAttesters(tx: TxContext, ticket: TicketObject, fee: bigint): void {
  const db = atomaDb(tx);
  for (const attester of ticket.requested_attestation_nodes) {
    if (ticket.already_attested_nodes.includes(attester)) {
      const reward = attesterReward(db, fee);
      const node = borrowNode(tx, attester);
      node.entry.available_fee_amount = add(node.entry.available_fee_amount, reward);
    } else {
      slashNodeOnTimeout(tx, attester);
    }
  }
}

/**
 * slash_node_on_timeout (db:2428-2451) and the deposit of what it takes into the communal treasury:
 * ceil(collateral x permille / 1000), nothing for a node that no longer exists or has no collateral
 * (always the case at HEAD, §4.5).
 */
function slashNodeOnTimeout(tx: TxContext, nodeId: bigint): void {
  const node = tx.get<NodeObject>(key.node(nodeId));
  if (node === undefined || node.entry.collateral === 0n) return;
  const db = atomaDb(tx);
  const slashed = div(
    add(mul(node.entry.collateral, db.permille_to_slash_node_on_timeout), PERMILLE - 1n),
    PERMILLE,
  );
  node.entry.collateral = sub(node.entry.collateral, slashed);
  db.communal_treasury = add(db.communal_treasury, slashed);
}

/**
 * claim_funds_for_stacks (§2.10): the ConfidentialCompute fast path, no ticket, no epoch wait. The stack
 * stays, marked claimed.
 */
export function claimFundsForStacks(
  tx: TxContext,
  nodeId: bigint,
  stackIds: bigint[],
  units: bigint[],
): void {
  if (stackIds.length !== units.length) abort('EInvalidNumClaimedComputeUnitsPerStack');
  const db = atomaDb(tx);
  let total = 0n;
  for (const [i, stackId] of stackIds.entries()) {
    const claimed = units[i]!;
    const stack = borrowStack(tx, stackId);
    if (stack.selected_node_id !== nodeId) abort('ENodeNotSelectedForClaim');
    if (stack.is_claimed) abort('EStackAlreadyClaimed');
    if (claimed > stack.num_compute_units) abort('EInvalidNumClaimedComputeUnitsPerStack');
    const task = borrowTask(tx, stack.task_small_id);
    if (task.security_level !== SecurityLevel.ConfidentialCompute) abort('ETaskIsNotConfidentialCompute');
    const price = stack.price_per_one_million_compute_units;
    const fee = stackFeeAmount(db, task.security_level, price, claimed);
    const refund = stackFeeAmount(db, task.security_level, price, sub(stack.num_compute_units, claimed));
    total = add(total, fee);
    transferFunds(tx, refund, stack.owner);
    stack.is_claimed = true;
    tx.emit('ClaimedStackEvent', {
      stack_small_id: inner(stackId),
      selected_node_id: inner(nodeId),
      num_claimed_compute_units: u64(claimed),
      user_refund_amount: u64(refund),
    });
  }
  transferFunds(tx, total, tx.sender);
  withdrawFees(tx, nodeId);
}

// --- tasks (admin and TaskBadge holder) -------------------------------------------------------------------

/** create_task_entry (§2.12); task_id in the event is the TaskBadge's id, not the Task's. */
export function createTask(
  tx: TxContext,
  args: {
    role: number;
    model_name: string | null;
    security_level: number;
    minimum_reputation_score: number | null;
    is_public: boolean;
  },
): { task_small_id: bigint; task_id: string; badge_id: string } {
  if (args.role > MAX_TASK_ROLE) abort('EInvalidTaskRole');
  if (!isSecurityLevel(args.security_level)) abort('EInvalidSecurityLevel');
  if (args.minimum_reputation_score !== null && args.minimum_reputation_score > MAX_REPUTATION_SCORE) {
    abort('EInvalidMinimumReputationScore');
  }
  const db = atomaDb(tx);
  const id = db.next_task_small_id;
  db.next_task_small_id = add(id, 1n);
  const task: TaskObject = {
    id: tx.newId(),
    badge_id: tx.newId(),
    badge_owner: tx.sender,
    small_id: id,
    role: args.role,
    model_name: args.model_name,
    is_deprecated: false,
    deprecated_at_epoch: null,
    security_level: args.security_level,
    subscribed_nodes: {},
    subscribed_nodes_small_ids: [],
    minimum_reputation_score: args.minimum_reputation_score ?? 0,
    is_public: args.is_public,
    whitelisted_nodes: [],
  };
  tx.put(key.task(id), task);
  tx.emit('TaskRegisteredEvent', {
    task_id: task.badge_id,
    task_small_id: inner(id),
    role: { inner: args.role },
    model_name: args.model_name,
    security_level: { inner: args.security_level },
    minimum_reputation_score: args.minimum_reputation_score,
  });
  return { task_small_id: id, task_id: task.id, badge_id: task.badge_id };
}

/** whitelist_nodes_for_task (§2.19): only for non-public tasks; no dedupe, no event. */
export function whitelistNodesForTask(tx: TxContext, taskId: bigint, nodes: bigint[]): void {
  const task = tx.get<TaskObject>(key.task(taskId)) ?? abort('ETaskNotFound');
  if (task.is_public) abort('ETaskIsPublic');
  task.whitelisted_nodes.push(...nodes);
}

/** disable_model (§2.19), admin: no event. */
export function disableModel(tx: TxContext, modelName: string): void {
  const model =
    atomaDb(tx).models.find((m) => m.name === modelName) ??
    fieldDoesNotExist(`AtomaDb.models has no ${modelName}`);
  model.is_disabled = true;
}

/** deprecate_task (§2.13); the event carries the Task object's id. */
export function deprecateTask(tx: TxContext, taskId: bigint): void {
  const task = tx.get<TaskObject>(key.task(taskId)) ?? abort('ETaskNotFound');
  if (task.is_deprecated) abort('ETaskAlreadyDeprecated');
  task.is_deprecated = true;
  task.deprecated_at_epoch = tx.epoch;
  tx.emit('TaskDeprecationEvent', { task_id: task.id, task_small_id: inner(taskId), epoch: u64(tx.epoch) });
}

/** remove_deprecated_task (§2.14): one epoch after deprecation in code (the docs say two or four). */
export function removeDeprecatedTask(tx: TxContext, taskId: bigint): void {
  const task = tx.get<TaskObject>(key.task(taskId)) ?? abort('ETaskNotFound');
  if (!task.is_deprecated || task.deprecated_at_epoch === null) abort('ETaskNotDeprecated');
  if (tx.epoch < add(task.deprecated_at_epoch, 1n)) abort('ENotEnoughEpochsPassed');
  tx.remove(key.task(taskId));
  tx.emit('TaskRemovedEvent', {
    task_id: task.id,
    task_small_id: inner(taskId),
    removed_at_epoch: u64(tx.epoch),
  });
}
