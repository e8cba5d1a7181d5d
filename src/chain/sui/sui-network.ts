import { bcs } from '@mysten/sui/bcs';
import { ObjectError, type SuiClientTypes } from '@mysten/sui/client';
import { GrpcTypes, RpcError, type RpcTransport, SuiGrpcClient } from '@mysten/sui/grpc';
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { Transaction, TransactionDataBuilder } from '@mysten/sui/transactions';
import { deriveDynamicFieldID, fromBase64, normalizeSuiObjectId } from '@mysten/sui/utils';
import type { Logger } from 'pino';
import { Mutex } from '../../internal/mutex.ts';
import { normalizeU64, toU64, type U64 } from '../../internal/u64.ts';
import { type ProtocolParameters, readParameters } from '../../protocol/constants.ts';
import { u64Arg } from '../arguments.ts';
import {
  type Badge,
  type Chain,
  ChainOutcomeUnknownError,
  ChainRejectedError,
  type ChainTicket,
  ChainUnavailableError,
  type EventSource,
  type GasOptions,
  type GasUsed,
  type Operation,
  type Simulation,
  type Submission,
} from '../chain.ts';
import { decodeExecutionError } from './aborts.ts';
import { type BadgeRef, BadgeRefs } from './badge-refs.ts';
import { type Connected, checkFullnode, FullnodeConnection, SuiConfigError } from './connection.ts';
import { SuiEventReader, type SuiIndexerLag } from './event-reader.ts';
import { type CoinRef, GasCoins } from './gas-coins.ts';
import { KeystoreError, loadKeystore } from './keystore.ts';
import { addMoveCall, type MoveCall, moveCall, RANDOM_ID } from './move-calls.ts';
import { executedEventJson, ownedChanges, parseTicket, timestampMs } from './proto-json.ts';
import type { SuiSettings } from './settings.ts';
import { describeFailure, failureOf, markingFetch } from './transport.ts';

/**
 * The Sui network adapter: the Chain interface against a Sui fullnode's gRPC API (gRPC-web over fetch,
 * through the SDK's SuiGrpcClient).
 *
 * - Writes: every operation is one MoveCall of the Atoma db module, built fully offline with explicit
 *   object refs (contracts.md §0, §2): AtomaDb as a mutable shared object, the NodeBadge at its current
 *   version, Random (0x8) immutable for try_settle_stack. Gas: the reference gas price, the signer's SUI
 *   coins, a budget from a simulation plus a margin under the configured cap; the caller's gas, gas_budget
 *   and gas_price override. Submissions run one at a time and the owned refs (badges, gas coins) follow
 *   each transaction's effects, so back-to-back transactions never reuse a version (no equivocation).
 * - Events: the db module's events, ascending, from the indexer's opaque cursor (the gRPC watermark), read
 *   by event-reader.ts.
 *
 * Beside it: move-calls.ts (which db function and arguments each Operation becomes), gas-coins.ts (the
 * signer's SUI coins), badge-refs.ts (its NodeBadges), proto-json.ts (the fullnode's answers in the daemon's shapes), transport.ts (how a
 * call failed), aborts.ts, event-bcs.ts and keystore.ts.
 */

export { EVENT_PAGE_SIZE, type SuiIndexerLag } from './event-reader.ts';
export { SuiConfigError };

export const DEFAULT_GAS_BUDGET_CAP = 1_000_000_000n;
/** The margin added to the simulated gas, in percent. */
export const GAS_MARGIN_PERCENT = 20n;
/** The smallest budget sent, in gas units (× the gas price): Sui refuses budgets below its minimum. */
const MIN_BUDGET_UNITS = 2_000n;
/** Sui's largest transaction budget (protocol max_tx_gas, 50 SUI): a simulation asks for no more. */
const MAX_TX_GAS = 50_000_000_000n;
const DEFAULT_TIMEOUT_MS = 15_000;
const EXECUTE_ATTEMPTS = 3;
const PARAMETERS_TTL_MS = 10_000;
const GAS_PRICE_TTL_MS = 60_000;
const EXECUTED_PATHS = ['digest', 'effects', 'events', 'checkpoint', 'timestamp'];
const OBJECT_ID = /^0x[0-9a-fA-F]{1,64}$/;
const EMPTY_EXECUTED: GrpcTypes.ExecutedTransaction = { signatures: [], balanceChanges: [] };

/** The validated settings (src/config.ts), and for tests a transport and a deadline of their own. */
export interface SuiNetworkOptions extends SuiSettings {
  /** A protobuf-ts transport to use instead of gRPC-web over fetch (tests). */
  transport?: RpcTransport | undefined;
  /** The deadline of one fullnode call in milliseconds (default 15 000; an execution gets four times it). */
  timeoutMs?: number | undefined;
}

interface Signed {
  bytes: Uint8Array;
  signature: string;
  digest: string;
  payment: CoinRef[];
}

/** Not executed, for a reason other than the caller's: the fullnode refused the transaction. */
class Refused extends Error {}

export class SuiNetwork implements Chain {
  readonly network = 'sui' as const;
  /** A transaction that reached a fullnode executes within seconds, or never; two minutes is ample. */
  readonly outcomeWindowMs = 120_000;
  readonly signerAddress: string;
  readonly events: EventSource;
  readonly packageId: string;
  readonly atomaDbId: string;
  readonly #client: SuiGrpcClient;
  readonly #keypair: Ed25519Keypair;
  readonly #log: Logger;
  readonly #url: string;
  readonly #timeoutMs: number;
  readonly #cap: bigint;
  readonly #connection: FullnodeConnection;
  readonly #lock = new Mutex();
  readonly #listeners = new Set<() => void>();
  readonly #badges: BadgeRefs;
  readonly #coins: GasCoins;
  #gasPrice: { price: bigint; epoch: bigint; at: number } | undefined;
  #dbJson: { json: Record<string, unknown>; at: number } | undefined;
  #ticketsTable: string | undefined;
  #randomInitialSharedVersion: string | undefined;
  #pending: Signed | undefined;
  readonly #reader: SuiEventReader;
  #closing: Promise<void> | undefined;

  private constructor(init: {
    client: SuiGrpcClient;
    keypair: Ed25519Keypair;
    address: string;
    log: Logger;
    url: string;
    urlSource: string | undefined;
    timeoutMs: number;
    cap: bigint;
    packageId: string;
    atomaDbId: string;
    configuredVersion: bigint | undefined;
  }) {
    this.#client = init.client;
    this.#keypair = init.keypair;
    this.signerAddress = init.address;
    this.#log = init.log;
    this.#url = init.url;
    this.#timeoutMs = init.timeoutMs;
    this.#cap = init.cap;
    this.packageId = init.packageId;
    this.atomaDbId = init.atomaDbId;
    this.#badges = new BadgeRefs(init.address, (id, what) => this.#object(id, what));
    this.#coins = new GasCoins({
      owner: init.address,
      cap: init.cap,
      listPage: (cursor) =>
        this.#read('list the gas coins', (signal) =>
          this.#client.listCoins({ owner: this.signerAddress, limit: 50, cursor, signal }),
        ),
    });
    const target = {
      url: init.url,
      urlSource: init.urlSource,
      atomaDbId: init.atomaDbId,
      configuredVersion: init.configuredVersion,
      timeoutMs: init.timeoutMs,
    };
    this.#connection = new FullnodeConnection(
      () => checkFullnode(this.#client, target),
      init.log,
      init.url,
      (connected) => this.#onConnected(connected),
    );
    this.#reader = new SuiEventReader({
      client: init.client,
      connection: this.#connection,
      read: (what, call) => this.#read(what, call),
      parameters: () => this.parameters(),
      // A new epoch has a new reference gas price.
      onHead: ({ epoch }) => {
        if (this.#gasPrice && this.#gasPrice.epoch !== epoch) this.#gasPrice = undefined;
      },
    });
    this.events = { id: `sui:${init.packageId}`, readPage: (cursor) => this.#reader.readPage(cursor) };
  }

  /**
   * Loads the signing key and checks the fullnode once. A bad keystore, or an AtomaDb object the fullnode
   * says is not the configured one, throws SuiConfigError (one line). An unreachable fullnode does not: the
   * adapter opens, its calls fail with ChainUnavailableError naming the fullnode, and they check again
   * (connection.ts) until it answers.
   */
  static async open(options: SuiNetworkOptions, log: Logger): Promise<SuiNetwork> {
    let signer: ReturnType<typeof loadKeystore>;
    try {
      signer = loadKeystore(options.keystore, options.address);
    } catch (error) {
      if (error instanceof KeystoreError) {
        // Named with the setting that points at it, so the operator knows what to change.
        const from = options.keystoreSource === undefined ? '' : ` (set by ${options.keystoreSource})`;
        throw new SuiConfigError(
          `${error.message}${from}; point --sui-keystore (NODE_DAEMON_SUI_KEYSTORE) at the Sui CLI's keystore file`,
        );
      }
      throw error;
    }
    const client = options.transport
      ? new SuiGrpcClient({ network: 'unknown', transport: options.transport })
      : // gRPC-web's binary form, not the SDK's default text form (base64): the text form's reader builds
        // its base64 a character at a time, which was about a fifth of what a live chain's event cost.
        new SuiGrpcClient({
          network: 'unknown',
          baseUrl: options.url,
          fetch: markingFetch,
          format: 'binary',
        });
    const network = new SuiNetwork({
      client,
      keypair: signer.keypair,
      address: signer.address,
      log,
      url: options.url,
      urlSource: options.urlSource,
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      cap: options.gasBudgetCap,
      packageId: options.packageId,
      atomaDbId: options.atomaDbId,
      configuredVersion: options.atomaDbInitialSharedVersion,
    });
    await network.#connection.start();
    return network;
  }

  #onConnected(connected: Connected): void {
    this.#dbJson = { json: connected.dbJson, at: Date.now() };
    const { chain, initialSharedVersion, typePackage } = connected;
    this.#log.info(
      {
        chain,
        url: this.#url,
        address: this.signerAddress,
        packageId: this.packageId,
        atomaDbId: this.atomaDbId,
        initialSharedVersion,
        ...(typePackage === this.packageId ? {} : { typePackage }),
      },
      'connected to the Sui fullnode',
    );
  }

  /** Why the chain cannot be used now: the fullnode has not answered the connection check yet. */
  unavailableReason(): string | undefined {
    return this.#connection.problem();
  }

  // --- Chain -----------------------------------------------------------------------------------------------

  submit(operation: Operation, gas?: GasOptions): Promise<Submission> {
    if (this.#closing) return Promise.reject(new ChainUnavailableError('the Sui adapter is closed'));
    return this.#lock.run(() => this.#submit(operation, gas ?? {}));
  }

  /** Simulates the operation (nothing is signed or sent): the MIST it uses and the abort it meets. */
  simulate(operation: Operation): Promise<Simulation> {
    if (this.#closing) return Promise.reject(new ChainUnavailableError('the Sui adapter is closed'));
    return this.#lock.run(async () => {
      const connected = await this.#connection.get();
      const { build } = await this.#builder(moveCall(operation), {}, connected);
      return this.#simulated(build, {});
    });
  }

  async listBadges(): Promise<Badge[]> {
    const { typePackage } = await this.#connection.get();
    const badges: BadgeRef[] = [];
    let cursor: string | null = null;
    do {
      const page: SuiClientTypes.ListOwnedObjectsResponse<{ json: true }> = await this.#read(
        'list the NodeBadges',
        (signal) =>
          this.#client.listOwnedObjects({
            owner: this.signerAddress,
            type: `${typePackage}::db::NodeBadge`,
            include: { json: true },
            limit: 50,
            cursor,
            signal,
          }),
      );
      for (const object of page.objects) {
        const smallId = toU64((object.json as { small_id?: { inner?: unknown } } | null)?.small_id?.inner);
        if (smallId === undefined) continue;
        badges.push({
          objectId: normalizeSuiObjectId(object.objectId),
          version: object.version,
          digest: object.digest,
          node_small_id: smallId,
        });
      }
      cursor = page.hasNextPage ? page.cursor : null;
    } while (cursor);
    this.#badges.keep(badges);
    return badges
      .map((b) => ({ badge_id: b.objectId, node_small_id: b.node_small_id }))
      .sort((a, b) => (BigInt(a.node_small_id) < BigInt(b.node_small_id) ? -1 : 1));
  }

  /** The signer's SUI for gas (MIST), coins and address balance together, as the fullnode holds it now. */
  async balances(): Promise<Record<string, U64>> {
    await this.#connection.get();
    const { balance } = await this.#read('read the SUI balance', (signal) =>
      this.#client.getBalance({ owner: this.signerAddress, signal }),
    );
    return { SUI: normalizeU64(BigInt(balance.balance)) };
  }

  async currentEpoch(): Promise<U64> {
    await this.#connection.get();
    const { epoch } = await this.#fetchGasPrice(true);
    return normalizeU64(epoch);
  }

  async parameters(): Promise<ProtocolParameters> {
    const parameters = readParameters(await this.#atomaDbJson());
    if ('missing' in parameters) {
      throw new ChainUnavailableError(`the AtomaDb object has no ${parameters.missing} (not an Atoma db?)`);
    }
    return parameters;
  }

  async getTicket(stackSmallId: U64): Promise<ChainTicket | undefined> {
    const { typePackage } = await this.#connection.get();
    const table = await this.#ticketsTableId();
    const key = bcs.u64().serialize(BigInt(stackSmallId)).toBytes();
    const fieldId = deriveDynamicFieldID(
      table,
      `0x2::dynamic_object_field::Wrapper<${typePackage}::db::StackSmallId>`,
      key,
    );
    const field = await this.#object(fieldId, 'read a settlement ticket');
    if (!field) return undefined;
    const childId = (field.json as { value?: unknown } | null)?.value;
    if (typeof childId !== 'string')
      throw new ChainUnavailableError(`ticket field ${fieldId} has no object id`);
    const ticket = await this.#object(childId, 'read a settlement ticket');
    if (!ticket) return undefined;
    return parseTicket(ticket.json ?? {}, childId);
  }

  onNewEvents(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Refuses new submissions and waits for the one in progress. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#lock.run(async () => undefined);
      this.#listeners.clear();
    })();
    return this.#closing;
  }

  /**
   * How far the event source's last read is behind the chain head; undefined before its first read
   * (event-reader.ts).
   */
  lag(): Promise<SuiIndexerLag | undefined> {
    return this.#reader.lag();
  }

  // --- submission --------------------------------------------------------------------------------------------

  async #submit(operation: Operation, gas: GasOptions): Promise<Submission> {
    const call = moveCall(operation);
    const connected = await this.#connection.get();
    await this.#resolvePending();
    for (let attempt = 1; ; attempt++) {
      try {
        const signed = await this.#prepare(call, gas, connected);
        return await this.#execute(signed);
      } catch (error) {
        if (!(error instanceof Refused)) throw error;
        // The fullnode refused before executing, most likely over an object version another client of
        // this address moved on: read every ref afresh and build again, once.
        this.#forgetRefs();
        if (attempt >= 2) {
          throw new ChainUnavailableError(`the Sui fullnode refused the transaction: ${error.message}`, 5, {
            cause: error,
          });
        }
        this.#log.warn(
          { err: error.message },
          'the fullnode refused the transaction; rebuilding it with fresh object refs',
        );
      }
    }
  }

  /** The transaction of a call at given payment coins and budget, and the gas price it pays. */
  async #builder(call: MoveCall, gas: GasOptions, connected: Connected) {
    const badge = call.badge ? await this.#badges.ref(call.badge, connected.typePackage) : undefined;
    const randomVersion = call.random ? await this.#randomVersion() : undefined;
    const price = await this.#price(gas.gas_price);
    const build = (payment: CoinRef[], budget: bigint) => {
      const tx = new Transaction();
      tx.setSender(this.signerAddress);
      tx.setGasPrice(price);
      tx.setGasBudget(budget);
      tx.setGasPayment(payment.map(({ objectId, version, digest }) => ({ objectId, version, digest })));
      addMoveCall(tx, call, {
        packageId: this.packageId,
        atomaDb: { objectId: this.atomaDbId, initialSharedVersion: connected.initialSharedVersion },
        badge,
        randomVersion,
      });
      return tx.build();
    };
    return { build, price };
  }

  /** Builds, budgets and signs one transaction. */
  async #prepare(call: MoveCall, gas: GasOptions, connected: Connected): Promise<Signed> {
    const { build, price } = await this.#builder(call, gas, connected);

    let budget: bigint;
    if (gas.gas_budget !== undefined) {
      budget = u64Arg(gas.gas_budget, 'gas_budget');
      this.#checkCap(budget);
    } else {
      const { gas: base } = await this.#simulated(build, gas);
      const withMargin = base + (base * GAS_MARGIN_PERCENT + 99n) / 100n;
      const floor = MIN_BUDGET_UNITS * price;
      budget = withMargin > floor ? withMargin : floor;
      if (budget > this.#cap) {
        throw new ChainRejectedError(
          'gas_budget_too_high',
          `the transaction needs a gas budget of ${budget} MIST (simulated ${base} plus ${GAS_MARGIN_PERCENT}%), above the cap of ${this.#cap} MIST`,
        );
      }
    }
    const payment = await this.#coins.payment(budget, gas.gas);
    const bytes = await build(payment, budget);
    const { signature } = await this.#keypair.signTransaction(bytes);
    return { bytes, signature, digest: TransactionDataBuilder.getDigestFromBytes(bytes), payment };
  }

  /**
   * Simulates the transaction with everything the signer can pay (up to the cap): the gas it uses,
   * computation and storage (the budget it needs, before the margin and the storage rebate), and the
   * abort it meets.
   */
  async #simulated(
    build: (payment: CoinRef[], budget: bigint) => Promise<Uint8Array>,
    gas: GasOptions,
  ): Promise<Simulation> {
    const probe = await this.#coins.payment(undefined, gas.gas);
    const available = probe.reduce((sum, coin) => sum + coin.balance, 0n);
    const probeBudget = minBig(minBig(available, this.#cap), MAX_TX_GAS);
    const simulated = await this.#simulate(await build(probe, probeBudget));
    const status = simulated.effects?.status;
    const kind = status?.error?.kind;
    if (status?.success !== true && kind === GrpcTypes.ExecutionError_ExecutionErrorKind.INSUFFICIENT_GAS) {
      if (probeBudget < available) {
        throw new ChainRejectedError(
          'gas_budget_too_high',
          `the transaction needs more gas than the largest budget it may use, ${probeBudget} MIST (the cap is ${this.#cap} MIST)`,
        );
      }
      throw new ChainRejectedError(
        'insufficient_gas',
        `the gas coins of ${this.signerAddress} hold ${available} MIST, not enough for this transaction; fund the address`,
      );
    }
    const used = simulated.effects?.gasUsed;
    return {
      gas: (used?.computationCost ?? 0n) + (used?.storageCost ?? 0n),
      // No status at all (a fullnode that sent no effects) says nothing about an abort.
      abort: status === undefined || status.success ? null : decodeExecutionError(status.error),
    };
  }

  #checkCap(budget: bigint): void {
    if (budget > this.#cap) {
      throw new ChainRejectedError(
        'gas_budget_too_high',
        `gas budget ${budget} MIST is above the configured cap of ${this.#cap} MIST`,
      );
    }
  }

  async #simulate(bytes: Uint8Array): Promise<GrpcTypes.ExecutedTransaction> {
    try {
      const { response } = await this.#client.transactionExecutionService.simulateTransaction(
        {
          transaction: { bcs: { value: bytes } },
          readMask: { paths: ['transaction.effects.status', 'transaction.effects.gas_used'] },
          checks: GrpcTypes.SimulateTransactionRequest_TransactionChecks.ENABLED,
          doGasSelection: false,
        },
        { abort: AbortSignal.timeout(this.#timeoutMs) },
      );
      return response.transaction ?? EMPTY_EXECUTED;
    } catch (error) {
      if (failureOf(error) === 'refused') throw new Refused((error as Error).message);
      throw this.#unreachable('simulate', error, this.#timeoutMs);
    }
  }

  /**
   * Sends the signed bytes, re-sending the same bytes (which cannot execute twice) when the outcome is
   * unknown. Throws Refused when nothing executed and the fullnode said no, ChainUnavailableError when it
   * could not be reached at all, ChainOutcomeUnknownError when it may have executed.
   */
  async #execute(signed: Signed): Promise<Submission> {
    let sent = false;
    let lastError: unknown;
    for (let attempt = 0; attempt < EXECUTE_ATTEMPTS; attempt++) {
      if (attempt > 0) await sleep(250 * 2 ** attempt);
      try {
        const { response } = await this.#client.transactionExecutionService.executeTransaction(
          {
            transaction: { bcs: { value: signed.bytes } },
            signatures: [
              { bcs: { value: fromBase64(signed.signature) }, signature: { oneofKind: undefined } },
            ],
            readMask: { paths: EXECUTED_PATHS },
          },
          { abort: AbortSignal.timeout(this.#timeoutMs * 4) },
        );
        return this.#executed(response.transaction ?? EMPTY_EXECUTED, signed);
      } catch (error) {
        lastError = error;
        const failure = failureOf(error);
        if (failure === 'refused') {
          // If an earlier attempt got through, this refusal may be about the versions it consumed.
          if (sent) {
            const found = await this.#lookUp(signed);
            if (found) return found;
          }
          throw new Refused((error as Error).message);
        }
        if (failure === 'unknown') sent = true;
      }
    }
    const detail = describeFailure(lastError, this.#timeoutMs * 4);
    if (!sent) throw this.#unreachable('reach', lastError, this.#timeoutMs * 4);
    const found = await this.#lookUp(signed).catch(() => undefined);
    if (found) return found;
    this.#pending = signed;
    this.#forgetRefs();
    throw new ChainOutcomeUnknownError(signed.digest, detail);
  }

  /** The executed transaction by digest, or undefined when the fullnode does not know it. */
  async #lookUp(signed: Signed): Promise<Submission | undefined> {
    try {
      const { response } = await this.#client.ledgerService.getTransaction(
        { digest: signed.digest, readMask: { paths: EXECUTED_PATHS } },
        { abort: AbortSignal.timeout(this.#timeoutMs) },
      );
      return response.transaction ? this.#executed(response.transaction, signed) : undefined;
    } catch (error) {
      if (error instanceof RpcError && error.code === 'NOT_FOUND') return undefined;
      throw error;
    }
  }

  /**
   * Settles a transaction whose outcome was unknown before anything else is built: its objects may be locked
   * for it, so either it executed (adopt its effects) or the same bytes are sent again.
   */
  async #resolvePending(): Promise<void> {
    const pending = this.#pending;
    if (!pending) return;
    let submission: Submission | undefined;
    try {
      submission = (await this.#lookUp(pending)) ?? (await this.#execute(pending));
    } catch (error) {
      if (error instanceof Refused) {
        // It can no longer execute (its object versions are gone): it never will.
        this.#log.warn(
          { digest: pending.digest, err: error.message },
          'an earlier transaction of unknown outcome was not executed',
        );
        this.#pending = undefined;
        this.#forgetRefs();
        return;
      }
      if (error instanceof ChainOutcomeUnknownError) {
        throw new ChainUnavailableError(
          `the outcome of the earlier transaction ${pending.digest} is still unknown; retry shortly`,
          5,
        );
      }
      throw error;
    }
    this.#pending = undefined;
    this.#log.warn(
      { digest: pending.digest, status: submission.status },
      'an earlier transaction of unknown outcome is now known to have executed',
    );
  }

  /** Maps an executed transaction to a Submission, keeping the owned refs and the gas price current. */
  #executed(executed: GrpcTypes.ExecutedTransaction, signed: Signed): Submission {
    const effects = executed.effects;
    const digest = executed.digest ?? effects?.transactionDigest ?? signed.digest;
    const success = effects?.status?.success === true;
    const gasUsed = effects?.gasUsed;
    const gas_used: GasUsed = {
      computation_cost: normalizeU64(gasUsed?.computationCost ?? 0n),
      storage_cost: normalizeU64(gasUsed?.storageCost ?? 0n),
      storage_rebate: normalizeU64(gasUsed?.storageRebate ?? 0n),
    };
    const time = timestampMs(executed.timestamp);
    const events = success
      ? (executed.events?.events ?? []).map((event, index) =>
          executedEventJson(event, { digest, index, timeMs: time, sender: this.signerAddress }),
        )
      : [];
    if (this.#pending?.digest === digest) this.#pending = undefined;
    this.#applyEffects(effects, signed.payment, events);
    const submission: Submission = {
      digest,
      status: success ? 'success' : 'failure',
      events,
      gas_used,
      // The gRPC event cursor is an opaque watermark that execution does not report.
      cursor: '',
    };
    if (!success) submission.abort = decodeExecutionError(effects?.status?.error);
    if (success && events.length > 0) {
      for (const listener of this.#listeners) {
        try {
          listener();
        } catch {
          // A listener's failure is its own; the transaction is final.
        }
      }
    }
    return submission;
  }

  /** Follows the owned objects the transaction changed: new versions, deletions, and the gas paid. */
  #applyEffects(
    effects: GrpcTypes.TransactionEffects | undefined,
    payment: CoinRef[],
    events: unknown[],
  ): void {
    if (!effects) {
      this.#forgetRefs();
      return;
    }
    if (effects.epoch !== undefined && this.#gasPrice && this.#gasPrice.epoch !== effects.epoch)
      this.#gasPrice = undefined;
    const changes = ownedChanges(effects, this.signerAddress);
    this.#badges.follow(changes, events);
    this.#coins.follow(changes, payment, effects.gasUsed);
  }

  #forgetRefs(): void {
    this.#badges.forget();
    this.#coins.forget();
  }

  forgetCachedObjects(): void {
    this.#forgetRefs();
  }

  // --- object refs and gas -------------------------------------------------------------------------------------

  async #price(requested: U64 | undefined): Promise<bigint> {
    const { price: reference } = await this.#fetchGasPrice();
    if (requested === undefined) return reference;
    const price = u64Arg(requested, 'gas_price');
    if (price < reference) {
      throw new ChainRejectedError(
        'gas_price_too_low',
        `gas price ${price} is below the reference gas price ${reference}`,
      );
    }
    return price;
  }

  /** The epoch and its reference gas price, cached (and dropped when an effect shows a new epoch). */
  async #fetchGasPrice(fresh = false): Promise<{ price: bigint; epoch: bigint }> {
    if (!fresh && this.#gasPrice && Date.now() - this.#gasPrice.at < GAS_PRICE_TTL_MS) return this.#gasPrice;
    const { response } = await this.#read('read the epoch', (signal) =>
      this.#client.ledgerService.getEpoch(
        { readMask: { paths: ['epoch', 'reference_gas_price'] } },
        { abort: signal },
      ),
    );
    const price = response.epoch?.referenceGasPrice;
    const epoch = response.epoch?.epoch;
    if (price === undefined || epoch === undefined)
      throw new ChainUnavailableError('the fullnode did not report the epoch');
    this.#gasPrice = { price, epoch, at: Date.now() };
    return this.#gasPrice;
  }

  async #randomVersion(): Promise<string> {
    if (this.#randomInitialSharedVersion) return this.#randomInitialSharedVersion;
    const random = await this.#object(RANDOM_ID, 'read the Random object');
    if (random?.owner.$kind !== 'Shared') {
      throw new ChainUnavailableError(
        'the fullnode has no shared Random object (0x8); the network lacks randomness',
      );
    }
    this.#randomInitialSharedVersion = random.owner.Shared.initialSharedVersion;
    return this.#randomInitialSharedVersion;
  }

  async #atomaDbJson(): Promise<Record<string, unknown>> {
    await this.#connection.get();
    if (this.#dbJson && Date.now() - this.#dbJson.at < PARAMETERS_TTL_MS) return this.#dbJson.json;
    const db = await this.#object(this.atomaDbId, 'read the AtomaDb object');
    if (!db) throw new ChainUnavailableError(`the AtomaDb object ${this.atomaDbId} no longer exists`);
    this.#dbJson = { json: db.json ?? {}, at: Date.now() };
    return this.#dbJson.json;
  }

  async #ticketsTableId(): Promise<string> {
    if (this.#ticketsTable) return this.#ticketsTable;
    const table = (await this.#atomaDbJson()).stack_settlement_tickets as { id?: unknown } | undefined;
    if (typeof table?.id !== 'string' || !OBJECT_ID.test(table.id)) {
      throw new ChainUnavailableError('the AtomaDb object has no stack_settlement_tickets table');
    }
    this.#ticketsTable = normalizeSuiObjectId(table.id);
    return this.#ticketsTable;
  }

  /** One object with its JSON, or undefined when it does not exist. */
  async #object(id: string, what: string) {
    const {
      objects: [object],
    } = await this.#read(what, (signal) =>
      this.#client.getObjects({ objectIds: [id], include: { json: true }, signal }),
    );
    if (object instanceof ObjectError && object.reason === 'notFound') return undefined;
    if (!object || object instanceof Error) {
      throw new ChainUnavailableError(
        `cannot ${what} on the Sui fullnode: ${object?.message ?? 'no answer'}`,
        5,
        {
          cause: object,
        },
      );
    }
    return object;
  }

  /** A read call with a deadline; any failure is ChainUnavailableError naming what was being read. */
  async #read<T>(what: string, call: (signal: AbortSignal) => PromiseLike<T>): Promise<T> {
    let result: T;
    try {
      result = await call(AbortSignal.timeout(this.#timeoutMs));
    } catch (error) {
      if (error instanceof ChainUnavailableError || error instanceof ChainRejectedError) throw error;
      throw this.#unreachable(what, error, this.#timeoutMs);
    }
    this.#connection.answered();
    return result;
  }

  /** A call the fullnode did not answer: said in the log once per reason (connection.ts), and thrown. */
  #unreachable(what: string, error: unknown, timeoutMs: number): ChainUnavailableError {
    const where =
      what === 'reach'
        ? `cannot reach the Sui fullnode at ${this.#url}`
        : `cannot ${what} on the Sui fullnode at ${this.#url}`;
    const failure = new ChainUnavailableError(`${where}: ${describeFailure(error, timeoutMs)}`, 5, {
      cause: error,
    });
    return this.#connection.failed(failure, describeFailure(error));
  }
}

// --- helpers -----------------------------------------------------------------------------------------------

function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
