import { randomBytes, randomInt } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Listeners } from '../../internal/listeners.ts';
import { normalizeU64, type U64, U64_MAX } from '../../internal/u64.ts';
import { type ProtocolParameters, pickParameters, SecurityLevel } from '../../protocol/constants.ts';
import { commitmentFor, expectedAttesters, leafFor } from '../../protocol/proofs.ts';
import { asciiArg, u64Arg, u64List, uintArg } from '../arguments.ts';
import {
  type Badge,
  type Chain,
  ChainRejectedError,
  type ChainTicket,
  ChainUnavailableError,
  type EventPage,
  type EventSource,
  type GasOptions,
  type GasUsed,
  type Operation,
  type Simulation,
  type Submission,
} from '../chain.ts';
import { gasFor, REFERENCE_GAS_PRICE } from './gas.ts';
import { deriveAddress, GENESIS_SIGNER_SUI, genesis } from './genesis.ts';
import {
  type DevNodeAccount,
  type DevStack,
  type DevTicket,
  readNodeAccount,
  readStack,
  readTicket,
} from './inspect.ts';
import { Ledger, type TransactionRecord } from './ledger.ts';
import { prepareOperation } from './prepare.ts';
import * as rules from './rules.ts';
import {
  type AtomaDbObject,
  type CoinObject,
  key,
  type NodeObject,
  type StackObject,
  type SystemObject,
  type TaskObject,
  type TicketObject,
  type WorldObject,
} from './state.ts';

/**
 * The embedded dev network: the Atoma db module's rules (contracts.md §2) run in-process, so the daemon
 * works on a laptop with nothing else running. Transactions run one at a time; each one is atomic and is
 * persisted with its events in <dataDir>/dev-network.sqlite, so a restart keeps the chain and its history.
 *
 * Besides the Chain interface it offers "dev actors", the other parties of the network, for the /dev routes
 * and tests: an admin holding the AtomaManagerBadge (tasks), peer node operators (settling, attesting,
 * disputing) and a user funded with USDC at genesis (buying stacks).
 */

export const DEV_NETWORK_FILE = 'dev-network.sqlite';
const PAGE_SIZE = 500;

export interface DevNetworkOptions {
  dataDir: string;
  /** The daemon's signer: every Chain.submit executes as this address. */
  signerAddress: string;
  /**
   * The chance (0..1) that a SamplingConsensus try-settle samples attesters. The contract keeps it in
   * permille (cross_validation_probability_permille), so it is rounded to 1/1000.
   */
  samplingProbability: number;
  /** k, cross_validation_extra_nodes_count: how many attesters a sampling draws. */
  attestationNodes: number;
  /** The source of sui::random draws: an integer in [0, bound). Defaults to crypto.randomInt; for tests. */
  random?: (bound: number) => number;
}

/** A dev actor could not act: the object it needs does not exist, or is the signer's own. */
export class DevActorError extends Error {
  readonly code: 'not_found' | 'not_a_peer';
  constructor(code: 'not_found' | 'not_a_peer', message: string) {
    super(message);
    this.name = 'DevActorError';
    this.code = code;
  }
}

const big = (value: bigint): U64 => normalizeU64(value);

export class DevNetwork implements Chain {
  readonly network = 'dev' as const;
  readonly signerAddress: string;
  readonly events: EventSource;
  readonly #ledger: Ledger;
  readonly #world: WorldObject;
  readonly #random: (bound: number) => number;
  readonly #listeners = new Listeners();
  #queue: Promise<unknown> = Promise.resolve();
  #closing: Promise<void> | undefined;

  private constructor(
    ledger: Ledger,
    world: WorldObject,
    signerAddress: string,
    random: (n: number) => number,
  ) {
    this.#ledger = ledger;
    this.#world = world;
    this.signerAddress = signerAddress;
    this.#random = random;
    this.events = { id: 'dev', readPage: async (cursor) => this.#readPage(cursor) };
  }

  /**
   * Opens the dev network in dataDir, running genesis on first use. The options are this run's protocol
   * parameters: they are written into AtomaDb at every open, as the admin setters would (which emit no
   * event). Tickets keep the k they were created with.
   */
  static open(options: DevNetworkOptions): DevNetwork {
    const signer = options.signerAddress.toLowerCase();
    if (!/^0x[0-9a-f]{64}$/.test(signer)) throw new RangeError('signerAddress must be 0x and 64 hex digits');
    const p = options.samplingProbability;
    if (!(typeof p === 'number' && p >= 0 && p <= 1))
      throw new RangeError('samplingProbability must be in 0..1');
    const k = options.attestationNodes;
    if (!Number.isInteger(k) || k < 0 || k > 254) throw new RangeError('attestationNodes must be 0..254');
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    const ledger = Ledger.open(join(options.dataDir, DEV_NETWORK_FILE));
    const random = options.random ?? ((bound: number) => randomInt(bound));
    try {
      const world = ledger.read<WorldObject>(key.world) ?? genesis(ledger, random);
      const db = ledger.read<AtomaDbObject>(key.db)!;
      const permille = BigInt(Math.round(p * 1000));
      if (
        db.cross_validation_probability_permille !== permille ||
        db.cross_validation_extra_nodes_count !== BigInt(k)
      ) {
        db.cross_validation_probability_permille = permille;
        db.cross_validation_extra_nodes_count = BigInt(k);
        ledger.writeObjects([[key.db, db]]);
      }
      return new DevNetwork(ledger, world, signer, random);
    } catch (error) {
      ledger.close();
      throw error;
    }
  }

  // --- Chain ---------------------------------------------------------------------------------------------

  /** The signer's gas coin: the only object a caller may name as `gas`. */
  get gasCoinId(): string {
    return this.#derive(`gas-coin:${this.signerAddress}`);
  }

  submit(operation: Operation, gas?: GasOptions): Promise<Submission> {
    return this.#serialized(() => {
      const call = prepareOperation(operation);
      const { used, payment } = this.#chargeGas(operation.kind, call.items, gas);
      const nodeId = 'badge' in operation ? this.#ownedBadge(operation.badge) : undefined;
      return this.#execute(
        this.signerAddress,
        operation.kind,
        operation,
        used,
        (tx) => call.run(tx, nodeId ?? 0n),
        payment,
      ).submission;
    });
  }

  /** Transactions run in process and commit with their events: nothing is ever in flight after a restart. */
  readonly outcomeWindowMs = 0;

  /** Runs the operation on a copy of the state (see Ledger.simulate): its gas and its abort, nothing kept. */
  simulate(operation: Operation): Promise<Simulation> {
    return this.#serialized(() => {
      const call = prepareOperation(operation);
      const nodeId = 'badge' in operation ? this.#ownedBadge(operation.badge) : undefined;
      const abort = this.#ledger.simulate({
        sender: this.signerAddress,
        body: (tx) => call.run(tx, nodeId ?? 0n),
        packageId: this.#world.package_id,
        random: this.#random,
      });
      return { gas: gasFor(operation.kind, call.items, REFERENCE_GAS_PRICE).total, abort };
    });
  }

  async listBadges(): Promise<Badge[]> {
    this.#assertOpen();
    return this.#ledger
      .keys('node/')
      .map((k) => this.#ledger.read<NodeObject>(k)!)
      .filter((node) => node.badge.owner === this.signerAddress)
      .sort((a, b) => (a.small_id < b.small_id ? -1 : 1))
      .map((node) => ({ badge_id: node.badge.id, node_small_id: big(node.small_id) }));
  }

  /** The signer's USDC, and its SUI for gas (MIST). */
  async balances(): Promise<Record<string, U64>> {
    return {
      USDC: normalizeU64(this.balanceOf(this.signerAddress)),
      SUI: normalizeU64(this.gasBalance()),
    };
  }

  /** The signer's SUI for gas, in MIST. */
  gasBalance(): bigint {
    this.#assertOpen();
    return this.#gasBalance();
  }

  #gasBalance(): bigint {
    return this.#ledger.read<CoinObject>(key.gas(this.signerAddress))?.balance ?? GENESIS_SIGNER_SUI;
  }

  /**
   * Sets the signer's SUI for gas (a faucet when it adds, a spend elsewhere when it takes), outside any
   * transaction, as the dev network's epoch clock is: no event comes of it.
   */
  setGasBalance(mist: bigint): void {
    this.#assertOpen();
    if (mist < 0n || mist > U64_MAX) throw new RangeError('a SUI balance is a u64 of MIST');
    this.#ledger.writeObjects([[key.gas(this.signerAddress), { balance: mist } satisfies CoinObject]]);
  }

  async currentEpoch(): Promise<U64> {
    this.#assertOpen();
    return big(this.#epoch());
  }

  async parameters(): Promise<ProtocolParameters> {
    this.#assertOpen();
    return pickParameters(this.#db());
  }

  async getTicket(stackSmallId: U64): Promise<ChainTicket | undefined> {
    return this.ticket(stackSmallId);
  }

  onNewEvents(listener: () => void): () => void {
    return this.#listeners.on(listener);
  }

  /** Refuses new calls, lets the queued ones finish, then closes the ledger. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#queue;
      this.#ledger.close();
      this.#listeners.clear();
    })();
    return this.#closing;
  }

  // --- dev actors ------------------------------------------------------------------------------------------

  /** The admin: the holder of the AtomaManagerBadge and of every TaskBadge. */
  get adminAddress(): string {
    return this.#world.admin_address;
  }

  /** The user who buys stacks, funded at genesis. */
  get userAddress(): string {
    return this.#world.user_address;
  }

  get packageId(): string {
    return this.#world.package_id;
  }

  /** create_task_entry by the admin. */
  createTask(args: {
    role: number;
    model_name: string | null;
    security_level: number;
    minimum_reputation_score?: number | null;
    is_public?: boolean;
  }): Promise<{ submission: Submission; task_small_id: U64 | undefined }> {
    return this.#serialized(() => {
      const input = {
        role: uintArg(args.role, 'role', 16),
        model_name: args.model_name === null ? null : asciiArg(args.model_name, 'model_name'),
        security_level: uintArg(args.security_level, 'security_level', 16),
        minimum_reputation_score:
          args.minimum_reputation_score === undefined || args.minimum_reputation_score === null
            ? null
            : uintArg(args.minimum_reputation_score, 'minimum_reputation_score', 8),
        is_public: args.is_public ?? true,
      };
      const { submission, result } = this.#actorExecute(this.adminAddress, 'create_task_entry', input, (tx) =>
        rules.createTask(tx, input),
      );
      return { submission, task_small_id: result && big(result.task_small_id) };
    });
  }

  /** whitelist_nodes_for_task by the admin (no event). */
  whitelistNodes(taskSmallId: U64, nodeSmallIds: U64[]): Promise<{ submission: Submission }> {
    return this.#serialized(() => {
      const task = u64Arg(taskSmallId, 'task_small_id');
      const nodes = u64List(nodeSmallIds, 'nodes');
      const { submission } = this.#actorExecute(
        this.adminAddress,
        'whitelist_nodes_for_task',
        { task, nodes },
        (tx) => rules.whitelistNodesForTask(tx, task, nodes),
      );
      return { submission };
    });
  }

  /** disable_model by the admin (no event): add_node_to_model then aborts with EModelDisabled. */
  disableModel(modelName: string): Promise<{ submission: Submission }> {
    return this.#serialized(() => {
      const model = asciiArg(modelName, 'model_name');
      const { submission } = this.#actorExecute(this.adminAddress, 'disable_model', { model }, (tx) =>
        rules.disableModel(tx, model),
      );
      return { submission };
    });
  }

  /** deprecate_task by the TaskBadge holder (the admin). */
  deprecateTask(taskSmallId: U64): Promise<{ submission: Submission }> {
    return this.#serialized(() => {
      const task = u64Arg(taskSmallId, 'task_small_id');
      const { submission } = this.#actorExecute(this.adminAddress, 'deprecate_task', { task }, (tx) =>
        rules.deprecateTask(tx, task),
      );
      return { submission };
    });
  }

  /** remove_deprecated_task by the TaskBadge holder (the admin). */
  removeTask(taskSmallId: U64): Promise<{ submission: Submission }> {
    return this.#serialized(() => {
      const task = u64Arg(taskSmallId, 'task_small_id');
      const { submission } = this.#actorExecute(this.adminAddress, 'remove_deprecated_task', { task }, (tx) =>
        rules.removeDeprecatedTask(tx, task),
      );
      return { submission };
    });
  }

  /**
   * A peer node operator with a fresh address: register_node_entry, then one subscribe_node_to_task per
   * subscription, stopping at the first failure. `submission` is the last transaction.
   */
  createPeerNode(
    args: { subscriptions?: { task_small_id: U64; price_per_one_million_compute_units: U64 }[] } = {},
  ): Promise<{
    submission: Submission;
    submissions: Submission[];
    node_small_id: U64 | undefined;
    badge_id: string | undefined;
    address: string;
  }> {
    return this.#serialized(() => {
      const subscriptions = (args.subscriptions ?? []).map((s, i) => ({
        task: u64Arg(s.task_small_id, `subscriptions[${i}].task_small_id`),
        price: u64Arg(
          s.price_per_one_million_compute_units,
          `subscriptions[${i}].price_per_one_million_compute_units`,
        ),
      }));
      const address = this.#derive(`peer:${this.#db().next_node_small_id}`);
      const registered = this.#actorExecute(address, 'register_node', {}, (tx) => rules.registerNode(tx));
      const submissions = [registered.submission];
      const node = registered.result;
      if (node) {
        for (const { task, price } of subscriptions) {
          const { submission } = this.#actorExecute(
            address,
            'subscribe_node_to_task',
            { task, price },
            (tx) => rules.subscribeNodeToTask(tx, node.node_small_id, task, price),
          );
          submissions.push(submission);
          if (submission.status === 'failure') break;
        }
      }
      return {
        submission: submissions.at(-1)!,
        submissions,
        node_small_id: node && big(node.node_small_id),
        badge_id: node?.badge_id,
        address,
      };
    });
  }

  /**
   * acquire_new_stack_entry by the user. `selected_node_id` replaces the random draw, but the node must
   * still be an eligible subscriber (else ENoNodesEligibleForTask).
   */
  buyStack(args: {
    task_small_id: U64;
    num_compute_units: U64;
    price_per_one_million_compute_units: U64;
    selected_node_id?: U64;
  }): Promise<{
    submission: Submission;
    stack_small_id: U64 | undefined;
    selected_node_id: U64 | undefined;
  }> {
    return this.#serialized(() => {
      const input = {
        task: u64Arg(args.task_small_id, 'task_small_id'),
        units: u64Arg(args.num_compute_units, 'num_compute_units'),
        price: u64Arg(args.price_per_one_million_compute_units, 'price_per_one_million_compute_units'),
        forced:
          args.selected_node_id === undefined ? undefined : u64Arg(args.selected_node_id, 'selected_node_id'),
      };
      const { submission, result } = this.#actorExecute(
        this.userAddress,
        'acquire_new_stack_entry',
        input,
        (tx) => rules.acquireNewStack(tx, input.task, input.units, input.price, input.forced),
      );
      return {
        submission,
        stack_small_id: result && big(result.stack_small_id),
        selected_node_id: result && big(result.selected_node_id),
      };
    });
  }

  /**
   * try_settle_stack by the stack's selected node, which must be a peer, settling as the daemon does:
   * leaf = leafFor(total_hash, 0), proof = commitmentFor(total_hash, k, filled) with the current k and the
   * slots the sampling would fill, counted from the chain's state (docs/WRITES.md, "Claimed units and
   * proofs").
   */
  peerTrySettle(
    stackSmallId: U64,
    args: { num_claimed_compute_units: U64; total_hash: Uint8Array },
  ): Promise<{ submission: Submission; requested_attestation_nodes: U64[] | undefined }> {
    return this.#serialized(() => {
      const stackId = u64Arg(stackSmallId, 'stack_small_id');
      const claimed = u64Arg(args.num_claimed_compute_units, 'num_claimed_compute_units');
      const total = args.total_hash;
      const stack = this.#ledger.read<StackObject>(key.stack(stackId));
      if (!stack) throw new DevActorError('not_found', `stack ${stackId} does not exist`);
      const node = this.#peer(stack.selected_node_id);
      const k = Number(this.#db().cross_validation_extra_nodes_count);
      const task = this.#ledger.read<TaskObject>(key.task(stack.task_small_id));
      const eligible =
        task?.security_level === SecurityLevel.SamplingConsensus
          ? rules.countEligibleAttesters((name) => this.#ledger.read(name), task, stack)
          : k;
      const proof = commitmentFor(total, k, expectedAttesters(k, eligible));
      const leaf = leafFor(total, 0);
      const input = { stackId, claimed, proof, leaf };
      const { submission, result } = this.#actorExecute(node.badge.owner, 'try_settle_stack', input, (tx) =>
        rules.trySettleStack(tx, node.small_id, stackId, claimed, proof, leaf),
      );
      return { submission, requested_attestation_nodes: result?.requested_attestation_nodes.map(big) };
    });
  }

  /**
   * submit_stack_settlement_attestation by a peer, for its first index i among the ticket's requested
   * attesters: proof commitmentFor(total_hash, k of the ticket, the number requested), leaf
   * leafFor(total_hash, i + 1). A node that was not requested submits slot 1's leaf (and the contract
   * refuses it).
   */
  peerAttest(
    stackSmallId: U64,
    nodeSmallId: U64,
    totalHash: Uint8Array,
  ): Promise<{ submission: Submission }> {
    return this.#serialized(() => {
      const stackId = u64Arg(stackSmallId, 'stack_small_id');
      const node = this.#peer(u64Arg(nodeSmallId, 'node_small_id'));
      const total = totalHash;
      const ticket = this.#ledger.read<TicketObject>(key.ticket(stackId));
      const k = ticket
        ? ticket.stack_merkle_leaves_vector.length / 64 - 1
        : Number(this.#db().cross_validation_extra_nodes_count);
      const index = ticket?.requested_attestation_nodes.indexOf(node.small_id) ?? -1;
      const proof = commitmentFor(total, k, ticket?.requested_attestation_nodes.length ?? k);
      const leaf = leafFor(total, Math.max(index, 0) + 1);
      const input = { stackId, proof, leaf };
      const { submission } = this.#actorExecute(
        node.badge.owner,
        'submit_stack_settlement_attestation',
        input,
        (tx) => rules.submitStackSettlementAttestation(tx, node.small_id, stackId, proof, leaf),
      );
      return { submission };
    });
  }

  /** start_attestation_dispute by a peer, with 32 random bytes as its commitment. */
  peerDispute(stackSmallId: U64, nodeSmallId: U64): Promise<{ submission: Submission }> {
    return this.#serialized(() => {
      const stackId = u64Arg(stackSmallId, 'stack_small_id');
      const node = this.#peer(u64Arg(nodeSmallId, 'node_small_id'));
      const commitment = new Uint8Array(randomBytes(32));
      const { submission } = this.#actorExecute(
        node.badge.owner,
        'start_attestation_dispute',
        { stackId, commitment },
        (tx) => rules.startAttestationDispute(tx, node.small_id, stackId, commitment),
      );
      return { submission };
    });
  }

  /** claim_funds by a peer for its settled stacks: its fee, the buyers' refunds, the attesters' rewards. */
  peerClaim(nodeSmallId: U64, stackSmallIds: U64[]): Promise<{ submission: Submission }> {
    return this.#serialized(() => {
      const node = this.#peer(u64Arg(nodeSmallId, 'node_small_id'));
      const stacks = u64List(stackSmallIds, 'stack_small_ids');
      const { submission } = this.#actorExecute(node.badge.owner, 'claim_funds', { stacks }, (tx) =>
        rules.claimFunds(tx, node.small_id, stacks),
      );
      return { submission };
    });
  }

  /** permanently_disable_node by a peer (no event): it is never sampled again. */
  peerDisableNode(nodeSmallId: U64): Promise<{ submission: Submission }> {
    return this.#serialized(() => {
      const node = this.#peer(u64Arg(nodeSmallId, 'node_small_id'));
      const { submission } = this.#actorExecute(node.badge.owner, 'permanently_disable_node', {}, (tx) =>
        rules.permanentlyDisableNode(tx, node.small_id),
      );
      return { submission };
    });
  }

  /** destroy_disabled_node by a peer (no event): its NodeEntry and badge are gone, four epochs after disabling. */
  peerDestroyNode(nodeSmallId: U64): Promise<{ submission: Submission }> {
    return this.#serialized(() => {
      const node = this.#peer(u64Arg(nodeSmallId, 'node_small_id'));
      const { submission } = this.#actorExecute(node.badge.owner, 'destroy_disabled_node', {}, (tx) =>
        rules.destroyDisabledNode(tx, node.small_id),
      );
      return { submission };
    });
  }

  /** Every transaction a sender made, failed ones included, in order (a dev read helper for tests). */
  transactionsOf(sender: string): TransactionRecord[] {
    this.#assertOpen();
    return this.#ledger.transactionsOf(sender.toLowerCase());
  }

  /**
   * Ends the epoch (a system event: no transaction record, no events); the event source's next page says
   * so, and its listeners are told. Resolves to the new epoch.
   */
  advanceEpoch(): Promise<U64> {
    return this.#serialized(() => {
      const next = this.#epoch() + 1n;
      this.#ledger.writeObjects([[key.system, { epoch: next } satisfies SystemObject]]);
      this.#listeners.emit();
      return big(next);
    });
  }

  // --- dev read helpers (the committed state) --------------------------------------------------------------

  ticket(stackSmallId: U64): DevTicket | undefined {
    this.#assertOpen();
    return readTicket(this.#ledger, stackSmallId);
  }

  stack(stackSmallId: U64): DevStack | undefined {
    this.#assertOpen();
    return readStack(this.#ledger, stackSmallId);
  }

  nodeAccount(nodeSmallId: U64): DevNodeAccount | undefined {
    this.#assertOpen();
    return readNodeAccount(this.#ledger, nodeSmallId);
  }

  /** The subscriber iteration list of a task, stale ids included (contracts.md §3.3). */
  taskSubscriberList(taskSmallId: U64): U64[] | undefined {
    this.#assertOpen();
    return this.#ledger
      .read<{ subscribed_nodes_small_ids: bigint[] }>(key.task(BigInt(taskSmallId)))
      ?.subscribed_nodes_small_ids.map(big);
  }

  /** An address's USDC. */
  balanceOf(address: string): bigint {
    this.#assertOpen();
    return this.#ledger.read<CoinObject>(key.coin(address.toLowerCase()))?.balance ?? 0n;
  }

  /** AtomaDb.fee_treasury, the pooled balance every payout is split from. */
  feeTreasury(): bigint {
    this.#assertOpen();
    return this.#db().fee_treasury;
  }

  /** A recorded transaction (failed ones included), with its events. */
  transaction(digest: string): TransactionRecord | undefined {
    this.#assertOpen();
    return this.#ledger.transaction(digest);
  }

  // --- internals -------------------------------------------------------------------------------------------

  /** One transaction (or actor step) at a time, in call order. Calls made before close() still run. */
  #serialized<T>(fn: () => T): Promise<T> {
    if (this.#closing) return Promise.reject(new ChainUnavailableError('the dev network is closed'));
    const run = async (): Promise<T> => fn();
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  #assertOpen(): void {
    if (this.#closing) throw new ChainUnavailableError('the dev network is closed');
  }

  #db(): AtomaDbObject {
    return this.#ledger.read<AtomaDbObject>(key.db)!;
  }

  #epoch(): bigint {
    return this.#ledger.read<SystemObject>(key.system)!.epoch;
  }

  #derive(label: string): string {
    return deriveAddress(this.#world.seed, label);
  }

  #execute<T>(
    sender: string,
    kind: string,
    input: unknown,
    gas: GasUsed,
    body: (tx: rules.TxContext) => T,
    gasPayment?: { key: string; balance: bigint },
  ): { submission: Submission; result: T | undefined } {
    const outcome = this.#ledger.execute({
      sender,
      kind,
      input,
      gas,
      body,
      ...(gasPayment ? { gasPayment } : {}),
      seed: this.#world.seed,
      packageId: this.#world.package_id,
      random: this.#random,
    });
    if (outcome.submission.events.length > 0) this.#listeners.emit();
    return outcome;
  }

  /** A dev actor's transaction: the reference gas price, never refused for gas. */
  #actorExecute<T>(
    sender: string,
    kind: string,
    input: unknown,
    body: (tx: rules.TxContext) => T,
  ): { submission: Submission; result: T | undefined } {
    const { computation_cost, storage_cost, storage_rebate } = gasFor(kind, 0, REFERENCE_GAS_PRICE);
    return this.#execute(sender, kind, input, { computation_cost, storage_cost, storage_rebate }, body);
  }

  /**
   * The gas checks made before execution (see gas.ts): the gas the transaction will use, and the signer's
   * SUI once it has paid (the budget must be covered, as on Sui; the net gas is taken).
   */
  #chargeGas(
    kind: string,
    items: number,
    options: GasOptions | undefined,
  ): { used: GasUsed; payment: { key: string; balance: bigint } } {
    if (options?.gas !== undefined && options.gas.toLowerCase() !== this.gasCoinId) {
      throw new ChainRejectedError(
        'gas_coin_not_owned',
        `gas coin ${options.gas} is not a coin of ${this.signerAddress}; its gas coin is ${this.gasCoinId}`,
      );
    }
    const price =
      options?.gas_price === undefined ? REFERENCE_GAS_PRICE : u64Arg(options.gas_price, 'gas_price');
    if (price < REFERENCE_GAS_PRICE) {
      throw new ChainRejectedError(
        'gas_price_too_low',
        `gas price ${price} is below the reference gas price ${REFERENCE_GAS_PRICE}`,
      );
    }
    const { total, computation_cost, storage_cost, storage_rebate } = gasFor(kind, items, price);
    let budget = total;
    if (options?.gas_budget !== undefined) {
      budget = u64Arg(options.gas_budget, 'gas_budget');
      if (budget < total) {
        throw new ChainRejectedError(
          'gas_budget_too_low',
          `gas budget ${budget} is below the minimum ${total} for ${kind} at gas price ${price}`,
        );
      }
    }
    const balance = this.#gasBalance();
    if (balance < budget) {
      throw new ChainRejectedError(
        'insufficient_gas',
        `the SUI of ${this.signerAddress} holds ${balance} MIST, less than the gas budget of ${budget} MIST; fund the address (on the dev network: POST /dev/gas)`,
      );
    }
    const net = BigInt(computation_cost) + BigInt(storage_cost) - BigInt(storage_rebate);
    return {
      used: { computation_cost, storage_cost, storage_rebate },
      payment: { key: key.gas(this.signerAddress), balance: balance - net },
    };
  }

  /** The badge must be the signer's, with the right small id: else Sui refuses to sign with it. */
  #ownedBadge(badge: Badge): bigint {
    const id = u64Arg(badge?.node_small_id, 'badge.node_small_id');
    const node = this.#ledger.read<NodeObject>(key.node(id));
    const badgeId = typeof badge.badge_id === 'string' ? badge.badge_id.toLowerCase() : '';
    if (!node || node.badge.id !== badgeId || node.badge.owner !== this.signerAddress) {
      throw new ChainRejectedError(
        'badge_not_owned',
        `NodeBadge ${String(badge.badge_id)} of node ${id} is not owned by ${this.signerAddress}`,
      );
    }
    return id;
  }

  /** A node that a peer (not the signer) owns. */
  #peer(nodeId: bigint): NodeObject {
    const node = this.#ledger.read<NodeObject>(key.node(nodeId));
    if (!node) throw new DevActorError('not_found', `node ${nodeId} does not exist`);
    if (node.badge.owner === this.signerAddress) {
      throw new DevActorError('not_a_peer', `node ${nodeId} is the signer's own; use submit() for it`);
    }
    return node;
  }

  /** The event source: the cursor is the global sequence number of the last event read. */
  #readPage(cursor: string | null): EventPage {
    this.#assertOpen();
    let after = 0;
    if (cursor !== null) {
      if (!/^[0-9]{1,15}$/.test(cursor)) throw new Error(`"${cursor}" is not a dev network event cursor`);
      after = Number(cursor);
      if (after > this.#ledger.lastEventSeq) {
        throw new Error(
          `cursor ${cursor} is beyond the dev network's last event (${this.#ledger.lastEventSeq}): ` +
            'the dev network was reset under an existing store',
        );
      }
    }
    const rows = this.#ledger.readEvents(after, PAGE_SIZE + 1);
    const page = rows.slice(0, PAGE_SIZE);
    return {
      events: page.map((row) => ({
        position: `dev-network event ${row.seq}`,
        raw: row.raw,
        epoch: row.epoch,
        cursor: String(row.seq),
      })),
      nextCursor: page.length > 0 ? String(page.at(-1)!.seq) : cursor,
      hasMore: rows.length > PAGE_SIZE,
      epoch: big(this.#epoch()),
      parameters: pickParameters(this.#db()),
    };
  }
}
