/**
 * TEST DOUBLE: NOT A SUI FULLNODE. Test code only; nothing in src/ may import it.
 *
 * A loopback server (127.0.0.1, an ephemeral port) that speaks the wire protocol the Sui SDK's
 * SuiGrpcClient uses, gRPC-web (the text and binary forms), for the calls the Sui adapter makes, with the
 * SDK's own generated protobuf types (GrpcTypes). Behind it is the embedded dev network (src/chain/dev),
 * the Atoma db module's rules, so that what the adapter sends is executed by those rules:
 *
 * - ExecuteTransaction decodes the BCS transaction (Transaction.from), verifies its signature against the
 *   sender (verifyTransactionSignature), checks every input like a validator would (the AtomaDb and Random
 *   shared refs, the NodeBadge and gas coins at their current version and digest, owned by the sender),
 *   maps the single MoveCall (target and arguments, in the Move signature's order) to the contract
 *   operation, applies it, and answers with effects (status with the Move abort, gas used, changed objects
 *   at the lamport version with new digests) and events (BCS contents, and the gRPC JSON rendering).
 * - It refuses an owned object at a version other than its current one, and names an equivocation when
 *   that version was already consumed by another transaction: a test can prove the adapter never does.
 * - Re-sending an executed transaction returns its recorded result, as Sui does.
 * - Simulation checks the same inputs and prices the call with the dev network's gas model; it does not
 *   run the Move code, so it never predicts an abort (execution still reports it). A Move abort comes back
 *   as MOVE_ABORT with its code and location; an arithmetic error (u64 overflow, division by zero) as a
 *   fullnode sends it: MOVE_PRIMITIVE_RUNTIME_ERROR with the location and no abort code.
 * - ListEvents streams the dev network's events, digest-mapped to the Sui transactions, one checkpoint per
 *   transaction, with opaque cursors; each transaction of a dev actor (admin, user, peers) is one too.
 * - The ledger follows the dev network's epochs: each checkpoint is in the epoch its transaction ran in, an
 *   epoch ends with a checkpoint of its own and the next starts with one (so the head checkpoint is always
 *   in the current epoch), and GetServiceInfo, GetEpoch (first and last checkpoint) and GetCheckpoint
 *   (summary.epoch) answer from that, honouring read masks.
 *
 * Fault injection for tests: fail(method, times, status), dropResponses(method, times), and a log of every
 * request. Gas is the dev network's deterministic model at a reference price of 1000 MIST.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { bcs } from '@mysten/sui/bcs';
import { GrpcTypes } from '@mysten/sui/grpc';
import { Transaction, TransactionDataBuilder } from '@mysten/sui/transactions';
import {
  deriveDynamicFieldID,
  normalizeStructTag,
  normalizeSuiAddress,
  normalizeSuiObjectId,
  toBase58,
  toBase64,
} from '@mysten/sui/utils';
import { verifyTransactionSignature } from '@mysten/sui/verify';
import { blake2b } from '@noble/hashes/blake2.js';
import type { Operation, Submission } from '../../src/chain/chain.ts';
import { DevNetwork } from '../../src/chain/dev/dev-network.ts';
import { gasFor, REFERENCE_GAS_PRICE } from '../../src/chain/dev/gas.ts';
import { DB_EVENT_LAYOUTS, structName } from '../../src/chain/sui/event-bcs.ts';
import { Mutex } from '../../src/internal/mutex.ts';
import { ARITHMETIC_ERROR } from '../../src/protocol/aborts.ts';
import type { ProtocolParameters } from '../../src/protocol/constants.ts';

const T = GrpcTypes;
const SUI_COIN = normalizeStructTag('0x2::coin::Coin<0x2::sui::SUI>');
const RANDOM_ID = normalizeSuiObjectId('0x8');
export const RANDOM_INITIAL_SHARED_VERSION = 17n;
export const ATOMA_DB_INITIAL_SHARED_VERSION = 3n;
export const MIST_PER_SUI = 1_000_000_000n;
const BYTE_FIELDS = new Set([
  'committed_stack_proof',
  'stack_merkle_leaf',
  'attestation_commitment',
  'original_commitment',
  'new_public_key',
  'evidence_bytes',
  'stack_merkle_leaves_vector',
]);

/** gRPC status codes used here. */
export const Status = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNIMPLEMENTED: 12,
} as const;

class GrpcFailure extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

interface Owner {
  kind: 'address' | 'shared';
  address?: string;
  initialSharedVersion?: bigint;
}

interface LiveObject {
  id: string;
  version: bigint;
  digest: string;
  owner: Owner;
  type: string;
  json: () => unknown;
  balance?: bigint;
}

interface LoggedEvent {
  seq: number;
  txDigest: string;
  index: number;
  checkpoint: bigint;
  packageId: string;
  module: string;
  sender: string;
  type: string;
  parsedJson: Record<string, unknown>;
}

/** What the double records of every transaction it executed. */
export interface ExecutedRecord {
  digest: string;
  bytes: Uint8Array;
  signatures: string[];
  sender: string;
  status: 'success' | 'failure';
  operation: Operation['kind'];
}

/** One Move parameter of a db entry function, as the double checks it. */
type Param = 'db' | 'badge_mut' | 'badge' | 'u64' | 'bytes' | 'u64s' | 'ascii' | 'random';

/** The db entry functions a node operator calls (contracts.md §0, §2), parameters in Move order. */
export const DB_SIGNATURES: Record<string, { kind: Operation['kind']; params: Param[] }> = {
  register_node_entry: { kind: 'register_node', params: ['db'] },
  add_node_to_model: { kind: 'add_node_to_model', params: ['db', 'badge_mut', 'ascii', 'u64'] },
  subscribe_node_to_task: { kind: 'subscribe_node_to_task', params: ['db', 'badge_mut', 'u64', 'u64'] },
  update_node_subscription: { kind: 'update_node_subscription', params: ['db', 'badge_mut', 'u64', 'u64'] },
  unsubscribe_node_from_task: { kind: 'unsubscribe_node_from_task', params: ['db', 'badge_mut', 'u64'] },
  try_settle_stack: {
    kind: 'try_settle_stack',
    params: ['db', 'badge', 'u64', 'u64', 'bytes', 'bytes', 'random'],
  },
  submit_stack_settlement_attestation: {
    kind: 'submit_stack_settlement_attestation',
    params: ['db', 'badge', 'u64', 'bytes', 'bytes'],
  },
  start_attestation_dispute: { kind: 'start_attestation_dispute', params: ['db', 'badge', 'u64', 'bytes'] },
  claim_funds: { kind: 'claim_funds', params: ['db', 'badge', 'u64s'] },
  claim_funds_for_stacks: { kind: 'claim_funds_for_stacks', params: ['db', 'badge', 'u64s', 'u64s'] },
};

export interface FullnodeDoubleOptions {
  dataDir: string;
  /** The only sender this double executes for (the dev network's signer). */
  signerAddress: string;
  /** The signer's SUI coins, in MIST (default two of 10 SUI). */
  coins?: bigint[];
  samplingProbability?: number;
  attestationNodes?: number;
  random?: (bound: number) => number;
  /** The loopback port to listen on (default: an ephemeral one). */
  port?: number;
}

type Transport = 'text' | 'binary';
type ServiceName = 'LedgerService' | 'StateService' | 'TransactionExecutionService';

export class FullnodeDouble {
  readonly dev: DevNetwork;
  readonly packageId: string;
  readonly atomaDbId: string;
  readonly signerAddress: string;
  /** Every transaction executed, in order. */
  readonly executed: ExecutedRecord[] = [];
  /** Every transaction refused before execution, with the reason. */
  readonly refused: { digest: string; reason: string }[] = [];
  /** Every request: the method, when it arrived, its read mask's paths (empty without one), and its gRPC-web form. */
  readonly requests: { method: string; at: number; paths: string[]; form: Transport }[] = [];
  /** Owned-object versions already consumed by another transaction that were offered again. */
  equivocations = 0;
  url = '';
  readonly #server: Server;
  readonly #objects = new Map<string, LiveObject>();
  /** `${id}@${version}` of every owned object version a transaction consumed, to the transaction. */
  readonly #locks = new Map<string, string>();
  readonly #transactions = new Map<string, GrpcTypes.ExecutedTransaction>();
  readonly #events: LoggedEvent[] = [];
  /** ListEvents' frame for each logged event, encoded on first use: by seq, and by -seq without its JSON. */
  readonly #eventFrames = new Map<number, Buffer>();
  /** Event structs whose contents ListEvents serves with a byte more (growContents). */
  readonly #grown = new Set<string>();
  readonly #devToSui = new Map<string, string>();
  readonly #checkpointOf = new Map<string, bigint>();
  /** Every checkpoint: its epoch and time. Checkpoint 0 is genesis, in epoch 0. */
  readonly #checkpoints = new Map<bigint, { epoch: bigint; timestampMs: number }>();
  /** The first checkpoint of each epoch; an epoch ends where the next begins. */
  readonly #epochFirst = new Map<bigint, bigint>([[0n, 0n]]);
  readonly #faults = new Map<string, { times: number; code: number; message: string }>();
  readonly #drops = new Map<string, number>();
  readonly #mutex = new Mutex();
  readonly #ticketsTable: string;
  #devCursor: string | null = null;
  #checkpoint = 0n;
  /** The epoch of the latest checkpoint: the dev network's, once synced. */
  #epoch = 0n;
  #counter = 0;
  /** How many events ListEvents may serve (holdEvents); null: all. */
  #visible: number | null = null;

  private constructor(dev: DevNetwork, atomaDbId: string, signerAddress: string) {
    this.dev = dev;
    this.packageId = dev.packageId;
    this.atomaDbId = atomaDbId;
    this.signerAddress = signerAddress;
    this.#ticketsTable = hashId(`${atomaDbId}:stack_settlement_tickets`);
    this.#checkpoints.set(0n, { epoch: 0n, timestampMs: Date.now() });
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((error: unknown) => {
        res.destroy(error as Error);
      });
    });
  }

  static async start(options: FullnodeDoubleOptions): Promise<FullnodeDouble> {
    const signer = normalizeSuiAddress(options.signerAddress);
    const dev = DevNetwork.open({
      dataDir: options.dataDir,
      signerAddress: signer,
      samplingProbability: options.samplingProbability ?? 0,
      attestationNodes: options.attestationNodes ?? 1,
      ...(options.random ? { random: options.random } : {}),
    });
    const first = await dev.events.readPage(null);
    const published = first.events
      .map((e) => e.raw as { type: string; parsedJson: { db: string } })
      .find((e) => e.type.endsWith('::db::PublishedEvent'));
    if (!published) throw new Error('the dev network has no PublishedEvent');
    const double = new FullnodeDouble(dev, normalizeSuiObjectId(published.parsedJson.db), signer);
    double.#genesis(options.coins ?? [10n * MIST_PER_SUI, 10n * MIST_PER_SUI]);
    try {
      await new Promise<void>((resolve, reject) => {
        double.#server.once('error', reject);
        double.#server.listen(options.port ?? 0, '127.0.0.1', resolve);
      });
    } catch (error) {
      await dev.close();
      throw error;
    }
    const address = double.#server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    double.url = `http://127.0.0.1:${address.port}`;
    return double;
  }

  /**
   * Holds the event stream where it is: ListEvents serves no event executed from now on until it is
   * released (for a benchmark that prepares transactions first and lets them arrive at a set rate).
   */
  async holdEvents(): Promise<void> {
    await this.#mutex.run(() => this.#sync());
    this.#visible = this.#events.length;
  }

  /** Lets n more held events through (all of them with Infinity, which also ends the hold). */
  async releaseEvents(n: number): Promise<void> {
    await this.#mutex.run(() => this.#sync());
    if (this.#visible === null) return;
    this.#visible = Math.min(this.#events.length, this.#visible + n);
    if (n === Number.POSITIVE_INFINITY) this.#visible = null;
  }

  /**
   * Encodes the held events' ListEvents frames now (about 0.1 ms each), so that serving them later costs
   * little: the mixed benchmark's stream is served on the load generator's core, beside wrk.
   */
  async encodeHeld(): Promise<void> {
    await this.#mutex.run(() => this.#sync());
    for (const e of this.#events.slice(this.#visible ?? this.#events.length)) {
      this.#eventFrame(e, true);
      this.#eventFrame(e, false);
    }
  }

  /** Events executed but held back by holdEvents. */
  get heldEvents(): number {
    return this.#visible === null ? 0 : this.#events.length - this.#visible;
  }

  /** Stops listening (dropping kept-alive connections) and closes the dev network. */
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    await this.dev.close();
  }

  /** The next `times` calls of `method` (e.g. 'ListEvents') fail with the gRPC status `code`. */
  fail(method: string, times: number, code: number = Status.UNAVAILABLE, message = 'injected failure'): void {
    this.#faults.set(method, { times, code, message });
  }

  /**
   * ListEvents serves the contents of every event of this struct (e.g. 'StackCreatedEvent') with one byte
   * more, as a package upgrade that added a field would: its BCS no longer reads with the old layout.
   */
  growContents(struct: string): void {
    this.#grown.add(struct);
    this.#eventFrames.clear();
  }

  /** The next `times` calls of `method` are processed, but the connection drops before the answer. */
  dropResponses(method: string, times: number): void {
    this.#drops.set(method, times);
  }

  /** Gives the address a SUI coin; returns its id. */
  mintCoin(owner: string, balance: bigint): string {
    const id = hashId(`coin:${this.#counter++}`);
    this.#objects.set(id, {
      id,
      version: 1n,
      digest: objectDigest(id, 1n),
      owner: { kind: 'address', address: normalizeSuiAddress(owner) },
      type: SUI_COIN,
      balance,
      json: () => ({ id, balance: String(this.#objects.get(id)?.balance ?? 0n) }),
    });
    return id;
  }

  /** Another client of the owner uses the object: its version and digest move on behind the adapter's back. */
  touch(id: string): void {
    const object = this.#objects.get(normalizeSuiObjectId(id));
    if (!object) throw new Error(`no object ${id}`);
    object.version += 1n;
    object.digest = objectDigest(object.id, object.version);
  }

  /** The current version of an object, for assertions. */
  objectVersion(id: string): bigint | undefined {
    return this.#objects.get(normalizeSuiObjectId(id))?.version;
  }

  /** The signer's SUI coins: id and balance. */
  coinsOf(owner: string): { id: string; balance: bigint }[] {
    const address = normalizeSuiAddress(owner);
    return [...this.#objects.values()]
      .filter((o) => o.type === SUI_COIN && o.owner.address === address)
      .map((o) => ({ id: o.id, balance: o.balance ?? 0n }));
  }

  // --- world -----------------------------------------------------------------------------------------------

  #genesis(coins: bigint[]): void {
    const db = this.atomaDbId;
    this.#objects.set(db, {
      id: db,
      version: ATOMA_DB_INITIAL_SHARED_VERSION,
      digest: objectDigest(db, ATOMA_DB_INITIAL_SHARED_VERSION),
      owner: { kind: 'shared', initialSharedVersion: ATOMA_DB_INITIAL_SHARED_VERSION },
      type: normalizeStructTag(`${this.packageId}::db::AtomaDb`),
      json: () => this.#atomaDbJson(),
    });
    this.#objects.set(RANDOM_ID, {
      id: RANDOM_ID,
      version: RANDOM_INITIAL_SHARED_VERSION,
      digest: objectDigest(RANDOM_ID, RANDOM_INITIAL_SHARED_VERSION),
      owner: { kind: 'shared', initialSharedVersion: RANDOM_INITIAL_SHARED_VERSION },
      type: normalizeStructTag('0x2::random::Random'),
      json: () => ({ id: RANDOM_ID }),
    });
    for (const balance of coins) this.mintCoin(this.signerAddress, balance);
  }

  #atomaDbJson(): unknown {
    // The gRPC JSON rendering of the fields the adapter reads (contracts.md §1.3): u64 as decimal strings,
    // tables as { id, size }; the dev network's parameters as of its last sync.
    const parameters = this.#devParameters;
    return {
      id: this.atomaDbId,
      stack_settlement_tickets: { id: this.#ticketsTable, size: '0' },
      ...(parameters
        ? Object.fromEntries(Object.entries(parameters).map(([name, value]) => [name, String(value)]))
        : {}),
      fee_treasury: String(this.dev.feeTreasury()),
    };
  }

  #devParameters: ProtocolParameters | undefined;

  /** Reads new dev network events into the log: digests mapped, one checkpoint per transaction, badges made. */
  async #sync(): Promise<void> {
    this.#devParameters = await this.dev.parameters();
    for (;;) {
      const page = await this.dev.events.readPage(this.#devCursor);
      for (const item of page.events) {
        const raw = item.raw as {
          id: { txDigest: string; eventSeq: string };
          packageId: string;
          transactionModule: string;
          sender: string;
          type: string;
          parsedJson: Record<string, unknown>;
          timestampMs: string;
        };
        const txDigest = this.#devToSui.get(raw.id.txDigest) ?? raw.id.txDigest;
        let checkpoint = this.#checkpointOf.get(txDigest);
        if (checkpoint === undefined) {
          // A dev actor's transaction, in the epoch the dev network executed it in.
          const epoch = item.epoch === undefined ? this.#epoch : BigInt(item.epoch);
          checkpoint = this.#nextCheckpoint(Number(raw.timestampMs), epoch);
          this.#checkpointOf.set(txDigest, checkpoint);
        }
        const sender = normalizeSuiAddress(raw.sender);
        this.#events.push({
          seq: this.#events.length + 1,
          txDigest,
          index: Number(raw.id.eventSeq),
          checkpoint,
          packageId: normalizeSuiAddress(raw.packageId),
          module: raw.transactionModule,
          sender,
          type: normalizeStructTag(raw.type),
          parsedJson: raw.parsedJson,
        });
        if (raw.type.endsWith('::db::NodeRegisteredEvent')) {
          this.#makeBadge(String(raw.parsedJson.badge_id), raw.parsedJson.node_small_id, sender, 1n);
        }
      }
      this.#devCursor = page.nextCursor;
      if (!page.hasMore) break;
    }
    // Epochs pass without transactions (dev.advanceEpoch): the ledger follows.
    this.#rollTo(BigInt(await this.dev.currentEpoch()), Date.now());
  }

  #makeBadge(badgeId: string, smallId: unknown, owner: string, version: bigint): void {
    const id = normalizeSuiObjectId(badgeId);
    if (this.#objects.has(id)) return;
    const inner = String((smallId as { inner?: unknown }).inner);
    this.#objects.set(id, {
      id,
      version,
      digest: objectDigest(id, version),
      owner: { kind: 'address', address: owner },
      type: normalizeStructTag(`${this.packageId}::db::NodeBadge`),
      json: () => ({ id, small_id: { inner } }),
    });
  }

  /** The checkpoint of a new transaction executed in `epoch` (the epochs before it end first). */
  #nextCheckpoint(timestampMs: number, epoch: bigint): bigint {
    this.#rollTo(epoch, timestampMs);
    return this.#addCheckpoint(timestampMs);
  }

  #addCheckpoint(timestampMs: number): bigint {
    this.#checkpoint += 1n;
    this.#checkpoints.set(this.#checkpoint, { epoch: this.#epoch, timestampMs });
    return this.#checkpoint;
  }

  /**
   * Ends epochs up to `epoch` as Sui does: each ends with its end-of-epoch checkpoint, and the next starts
   * with a checkpoint of its own, so the head checkpoint is always in the current epoch (GetServiceInfo).
   */
  #rollTo(epoch: bigint, timestampMs: number): void {
    while (this.#epoch < epoch) {
      this.#addCheckpoint(timestampMs);
      this.#epoch += 1n;
      this.#epochFirst.set(this.#epoch, this.#checkpoint + 1n);
      this.#addCheckpoint(timestampMs);
    }
  }

  /** An epoch as GetEpoch answers: its range, the last checkpoint once it has ended. */
  #epochOf(epoch: bigint): Record<string, unknown> | undefined {
    const first = this.#epochFirst.get(epoch);
    if (first === undefined) return undefined;
    const next = this.#epochFirst.get(epoch + 1n);
    const last = next === undefined ? undefined : next - 1n;
    return {
      epoch,
      firstCheckpoint: first,
      start: timestamp(this.#checkpoints.get(first)!.timestampMs),
      referenceGasPrice: REFERENCE_GAS_PRICE,
      ...(last === undefined
        ? {}
        : { lastCheckpoint: last, end: timestamp(this.#checkpoints.get(last)!.timestampMs) }),
    };
  }

  /** The settlement tickets as objects: each a dynamic object field of the tickets table, and the ticket. */
  #ticketObjects(): Map<string, LiveObject> {
    const out = new Map<string, LiveObject>();
    const stacks = new Set(
      this.#events
        .filter((e) => e.type.endsWith('::db::StackCreatedEvent'))
        .map((e) => String((e.parsedJson.stack_small_id as { inner: string }).inner)),
    );
    for (const stack of stacks) {
      const ticket = this.dev.ticket(BigInt(stack));
      if (!ticket) continue;
      const fieldId = normalizeSuiObjectId(
        deriveDynamicFieldID(
          this.#ticketsTable,
          `0x2::dynamic_object_field::Wrapper<${this.packageId}::db::StackSmallId>`,
          bcs.u64().serialize(BigInt(stack)).toBytes(),
        ),
      );
      const ticketId = hashId(`ticket:${fieldId}`);
      out.set(fieldId, {
        id: fieldId,
        version: 1n,
        digest: objectDigest(fieldId, 1n),
        owner: { kind: 'address', address: this.#ticketsTable },
        type: normalizeStructTag(
          `0x2::dynamic_field::Field<0x2::dynamic_object_field::Wrapper<${this.packageId}::db::StackSmallId>,0x2::object::ID>`,
        ),
        json: () => ({ id: fieldId, name: { name: { inner: stack } }, value: ticketId }),
      });
      const inner = (n: unknown) => ({ inner: String(n) });
      out.set(ticketId, {
        id: ticketId,
        version: 1n,
        digest: objectDigest(ticketId, 1n),
        owner: { kind: 'address', address: fieldId },
        type: normalizeStructTag(`${this.packageId}::db::StackSettlementTicket`),
        json: () => ({
          id: ticketId,
          stack_small_id: inner(ticket.stack_small_id),
          selected_node_id: inner(ticket.selected_node_id),
          num_claimed_compute_units: String(ticket.num_claimed_compute_units),
          requested_attestation_nodes: ticket.requested_attestation_nodes.map(inner),
          dispute_settled_at_epoch: String(ticket.dispute_settled_at_epoch),
          committed_stack_proof: toBase64(ticket.committed_stack_proof),
          stack_merkle_leaves_vector: toBase64(ticket.stack_merkle_leaves_vector),
          already_attested_nodes: ticket.already_attested_nodes.map(inner),
          is_in_dispute: ticket.is_in_dispute,
        }),
      });
    }
    return out;
  }

  // --- HTTP / gRPC-web ---------------------------------------------------------------------------------------

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const match = /^\/sui\.rpc\.v2\.([A-Za-z]+)\/([A-Za-z]+)$/.exec(req.url ?? '');
    const contentType = String(req.headers['content-type'] ?? '');
    const transport: Transport = contentType.startsWith('application/grpc-web-text') ? 'text' : 'binary';
    if (req.method !== 'POST' || !match || !contentType.startsWith('application/grpc-web')) {
      res.writeHead(404);
      res.end();
      return;
    }
    const [, serviceName, method] = match as unknown as [string, ServiceName, string];
    const record = { method: method!, at: Date.now(), paths: [] as string[], form: transport };
    this.requests.push(record);
    const service = (
      T as unknown as Record<
        string,
        { methods: { name: string; I: Codec; O: Codec; serverStreaming?: boolean }[] }
      >
    )[serviceName];
    const info = service?.methods.find((m) => m.name === method);
    if (!info)
      return this.#error(
        res,
        transport,
        Status.UNIMPLEMENTED,
        `${serviceName}/${method} is not implemented by the double`,
      );
    const fault = this.#faults.get(method!);
    if (fault && fault.times > 0) {
      fault.times -= 1;
      return this.#error(res, transport, fault.code, fault.message);
    }
    let body = Buffer.concat(chunks);
    if (transport === 'text') body = Buffer.from(body.toString('latin1'), 'base64');
    const length = body.length >= 5 ? body.readUInt32BE(1) : 0;
    const input = info.I.fromBinary(new Uint8Array(body.subarray(5, 5 + length)));
    record.paths = (input as { readMask?: { paths?: string[] } }).readMask?.paths ?? [];
    let outputs: object[];
    try {
      outputs = await this.#mutex.run(async () => {
        await this.#sync();
        const result = await this.#dispatch(method!, input);
        await this.#sync();
        return Array.isArray(result) ? result : [result];
      });
    } catch (error) {
      if (error instanceof GrpcFailure) return this.#error(res, transport, error.code, error.message);
      return this.#error(res, transport, Status.INTERNAL, (error as Error).stack ?? String(error));
    }
    const drops = this.#drops.get(method!) ?? 0;
    if (drops > 0) {
      this.#drops.set(method!, drops - 1);
      res.socket?.destroy();
      return;
    }
    const frames = outputs.map(
      (o) => (o as { [ENCODED]?: Buffer })[ENCODED] ?? frame(0, info.O.toBinary(info.O.create(o))),
    );
    frames.push(frame(0x80, new TextEncoder().encode('grpc-status: 0\r\ngrpc-message: \r\n')));
    const payload = Buffer.concat(frames);
    res.writeHead(200, {
      'content-type': transport === 'text' ? 'application/grpc-web-text' : 'application/grpc-web+proto',
    });
    res.end(transport === 'text' ? payload.toString('base64') : payload);
  }

  #error(res: ServerResponse, transport: Transport, code: number, message: string): void {
    res.writeHead(200, {
      'content-type': transport === 'text' ? 'application/grpc-web-text' : 'application/grpc-web+proto',
      'grpc-status': String(code),
      'grpc-message': encodeURIComponent(message.split('\n')[0] ?? ''),
    });
    res.end();
  }

  async #dispatch(method: string, input: unknown): Promise<object | object[]> {
    switch (method) {
      case 'GetServiceInfo':
        return {
          chainId: 'double-chain-id',
          chain: 'test-double',
          epoch: this.#epoch,
          checkpointHeight: this.#checkpoint,
          timestamp: timestamp(this.#checkpoints.get(this.#checkpoint)!.timestampMs),
        } satisfies GrpcTypes.GetServiceInfoResponse;
      case 'GetEpoch': {
        const request = input as GrpcTypes.GetEpochRequest;
        const epoch = this.#epochOf(request.epoch ?? this.#epoch);
        if (!epoch) throw new GrpcFailure(Status.NOT_FOUND, `epoch ${request.epoch} not found`);
        return { epoch: masked(epoch, request.readMask?.paths ?? ['epoch']) };
      }
      case 'GetCheckpoint': {
        const request = input as GrpcTypes.GetCheckpointRequest;
        const id = request.checkpointId;
        const checkpoint =
          id.oneofKind === 'sequenceNumber' ? this.#checkpoints.get(id.sequenceNumber) : undefined;
        if (id.oneofKind !== 'sequenceNumber' || !checkpoint) {
          throw new GrpcFailure(Status.NOT_FOUND, 'checkpoint not found');
        }
        const digest = toBase58(
          blake2b(new TextEncoder().encode(`checkpoint:${id.sequenceNumber}`), { dkLen: 32 }),
        );
        const full = {
          sequenceNumber: id.sequenceNumber,
          digest,
          summary: {
            digest,
            epoch: checkpoint.epoch,
            sequenceNumber: id.sequenceNumber,
            timestamp: timestamp(checkpoint.timestampMs),
          },
        };
        return { checkpoint: masked(full, request.readMask?.paths ?? ['sequence_number', 'digest']) };
      }
      case 'GetObject': {
        const request = input as GrpcTypes.GetObjectRequest;
        const object = this.#lookup(request.objectId ?? '');
        if (!object) throw new GrpcFailure(Status.NOT_FOUND, `object ${request.objectId} not found`);
        return { object: toProtoObject(object) } satisfies GrpcTypes.GetObjectResponse;
      }
      case 'BatchGetObjects': {
        const request = input as GrpcTypes.BatchGetObjectsRequest;
        return {
          objects: request.requests.map((r): GrpcTypes.GetObjectResult => {
            const object = this.#lookup(r.objectId ?? '');
            return object
              ? { result: { oneofKind: 'object', object: toProtoObject(object) } }
              : {
                  result: {
                    oneofKind: 'error',
                    error: { code: Status.NOT_FOUND, message: `object ${r.objectId} not found`, details: [] },
                  },
                };
          }),
        } satisfies GrpcTypes.BatchGetObjectsResponse;
      }
      case 'ListOwnedObjects':
        return this.#listOwned(input as GrpcTypes.ListOwnedObjectsRequest);
      case 'GetBalance': {
        const request = input as GrpcTypes.GetBalanceRequest;
        if (normalizeStructTag(request.coinType ?? '') !== normalizeStructTag('0x2::sui::SUI'))
          throw new GrpcFailure(Status.UNIMPLEMENTED, 'the double holds only SUI balances');
        const sum = this.coinsOf(request.owner ?? '').reduce((total, coin) => total + coin.balance, 0n);
        return {
          balance: { coinType: request.coinType, balance: sum, coinBalance: sum, addressBalance: 0n },
        } satisfies GrpcTypes.GetBalanceResponse;
      }
      case 'GetTransaction': {
        const request = input as GrpcTypes.GetTransactionRequest;
        const transaction = this.#transactions.get(request.digest ?? '');
        if (!transaction) throw new GrpcFailure(Status.NOT_FOUND, `transaction ${request.digest} not found`);
        return { transaction } satisfies GrpcTypes.GetTransactionResponse;
      }
      case 'SimulateTransaction':
        return this.#simulate(input as GrpcTypes.SimulateTransactionRequest);
      case 'ExecuteTransaction':
        return this.#execute(input as GrpcTypes.ExecuteTransactionRequest);
      case 'ListEvents':
        return this.#listEvents(input as GrpcTypes.ListEventsRequest);
      default:
        throw new GrpcFailure(Status.UNIMPLEMENTED, `${method} is not implemented by the double`);
    }
  }

  #lookup(id: string): LiveObject | undefined {
    let normalized: string;
    try {
      normalized = normalizeSuiObjectId(id);
    } catch {
      return undefined;
    }
    return this.#objects.get(normalized) ?? this.#ticketObjects().get(normalized);
  }

  #listOwned(request: GrpcTypes.ListOwnedObjectsRequest): GrpcTypes.ListOwnedObjectsResponse {
    const owner = normalizeSuiAddress(request.owner ?? '');
    const type = request.objectType ? normalizeStructTag(request.objectType) : undefined;
    const all = [...this.#objects.values()]
      .filter((o) => o.owner.kind === 'address' && o.owner.address === owner && (!type || o.type === type))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const offset = request.pageToken ? Number(new DataView(request.pageToken.buffer).getUint32(0)) : 0;
    const size = Math.min(request.pageSize || 50, 50);
    const page = all.slice(offset, offset + size);
    const response: GrpcTypes.ListOwnedObjectsResponse = { objects: page.map(toProtoObject) };
    if (offset + size < all.length) {
      const token = new Uint8Array(4);
      new DataView(token.buffer).setUint32(0, offset + size);
      response.nextPageToken = token;
    }
    return response;
  }

  #listEvents(request: GrpcTypes.ListEventsRequest): GrpcTypes.ListEventsResponse[] {
    const literal = request.filter?.terms[0]?.literals[0]?.predicate;
    const matches = (e: LoggedEvent): boolean => {
      if (!literal || literal.oneofKind === undefined) return true;
      if (literal.oneofKind === 'eventType') {
        const wanted = literal.eventType.eventType ?? '';
        const parts = wanted.split('::');
        if (parts.length === 2) return e.type.startsWith(`${normalizeSuiAddress(parts[0]!)}::${parts[1]}::`);
        return e.type === normalizeStructTag(wanted);
      }
      if (literal.oneofKind === 'emitModule') {
        const [pkg, module] = (literal.emitModule.module ?? '').split('::');
        return e.packageId === normalizeSuiAddress(pkg ?? '') && e.module === module;
      }
      if (literal.oneofKind === 'sender')
        return e.sender === normalizeSuiAddress(literal.sender.address ?? '');
      return false;
    };
    // The read mask's fields, as a fullnode honours them; the JSON rendering is the one a client may skip.
    const paths = request.readMask?.paths;
    const json = paths === undefined || paths.length === 0 || paths.includes('json');
    const after = request.options?.after ? decodeCursor(request.options.after) : 0;
    const limit = Math.min(request.options?.limit ?? 50, 1000);
    const frames: GrpcTypes.ListEventsResponse[] = [];
    let scanned = after;
    // Event seq n is at index n - 1: start right after the cursor.
    const end = this.#visible ?? this.#events.length;
    for (let i = after; i < end; i++) {
      const e = this.#events[i]!;
      scanned = e.seq;
      if (!matches(e)) continue;
      if (frames.length + 1 >= limit) {
        frames.push({ ...this.#eventResponse(e, json), end: { reason: T.QueryEndReason.ITEM_LIMIT } });
        return frames;
      }
      frames.push({ [ENCODED]: this.#eventFrame(e, json) } as GrpcTypes.ListEventsResponse);
    }
    frames.push({
      watermark: { cursor: encodeCursor(scanned) },
      end: { reason: T.QueryEndReason.LEDGER_TIP },
    });
    return frames;
  }

  #eventResponse(e: LoggedEvent, json: boolean): GrpcTypes.ListEventsResponse {
    const { json: rendering, ...event } = this.#protoEvent(e);
    if (event.contents?.value && this.#grown.has(structName(e.type))) {
      event.contents = { ...event.contents, value: new Uint8Array([...event.contents.value, 0]) };
    }
    return {
      event: json ? { ...event, json: rendering } : event,
      watermark: { cursor: encodeCursor(e.seq), checkpoint: e.checkpoint },
    };
  }

  /** A logged event never changes: its ListEvents frame is encoded once (with and without its JSON). */
  #eventFrame(e: LoggedEvent, json: boolean): Buffer {
    const key = json ? e.seq : -e.seq;
    let encoded = this.#eventFrames.get(key);
    if (encoded === undefined) {
      const response = T.ListEventsResponse.create(this.#eventResponse(e, json));
      encoded = frame(0, T.ListEventsResponse.toBinary(response));
      this.#eventFrames.set(key, encoded);
    }
    return encoded;
  }

  #protoEvent(e: LoggedEvent): GrpcTypes.Event {
    const layout = DB_EVENT_LAYOUTS[structName(e.type)];
    return {
      packageId: e.packageId,
      module: e.module,
      sender: e.sender,
      eventType: e.type,
      ...(layout
        ? { contents: { name: e.type, value: layout.serialize(e.parsedJson as never).toBytes() } }
        : {}),
      json: toProtoValue(grpcRendering(e.parsedJson)),
      checkpoint: e.checkpoint,
      transactionDigest: e.txDigest,
      eventIndex: e.index,
    };
  }

  // --- transactions ------------------------------------------------------------------------------------------

  /** Every check a validator makes before executing; returns the operation and the inputs it consumes. */
  #check(bytes: Uint8Array): Checked {
    let data: ReturnType<Transaction['getData']>;
    try {
      data = Transaction.from(bytes).getData();
    } catch (error) {
      throw new GrpcFailure(
        Status.INVALID_ARGUMENT,
        `cannot decode the transaction: ${(error as Error).message}`,
      );
    }
    const sender = normalizeSuiAddress(data.sender ?? '0x0');
    if (sender !== this.signerAddress) {
      throw new GrpcFailure(Status.INVALID_ARGUMENT, `this double executes only for ${this.signerAddress}`);
    }
    const gas = data.gasData;
    if (normalizeSuiAddress(gas.owner ?? sender) !== sender) {
      throw new GrpcFailure(Status.INVALID_ARGUMENT, 'the gas owner must be the sender');
    }
    const price = BigInt(gas.price ?? 0);
    const budget = BigInt(gas.budget ?? 0);
    if (price < REFERENCE_GAS_PRICE) {
      throw new GrpcFailure(
        Status.INVALID_ARGUMENT,
        `gas price ${price} is below the reference ${REFERENCE_GAS_PRICE}`,
      );
    }
    const payment = gas.payment ?? [];
    if (payment.length === 0) throw new GrpcFailure(Status.INVALID_ARGUMENT, 'no gas payment');
    const owned: LiveObject[] = [];
    let balance = 0n;
    for (const ref of payment) {
      const coin = this.#owned(ref, sender, 'gas coin');
      if (coin.type !== SUI_COIN)
        throw new GrpcFailure(Status.INVALID_ARGUMENT, `gas object ${coin.id} is not a SUI coin`);
      balance += coin.balance ?? 0n;
      owned.push(coin);
    }
    if (balance < budget) {
      throw new GrpcFailure(
        Status.INVALID_ARGUMENT,
        `GasBalanceTooLow: gas balance ${balance} is less than the budget ${budget}`,
      );
    }
    if (data.commands.length !== 1 || !data.commands[0]?.MoveCall) {
      throw new GrpcFailure(Status.INVALID_ARGUMENT, 'expected exactly one MoveCall');
    }
    const call = data.commands[0].MoveCall;
    if (normalizeSuiAddress(call.package) !== this.packageId || call.module !== 'db') {
      throw new GrpcFailure(
        Status.INVALID_ARGUMENT,
        `not a call of ${this.packageId}::db: ${call.package}::${call.module}`,
      );
    }
    const signature = DB_SIGNATURES[call.function];
    if (!signature)
      throw new GrpcFailure(Status.INVALID_ARGUMENT, `db::${call.function} is not a node operation`);
    if (call.typeArguments.length !== 0 || call.arguments.length !== signature.params.length) {
      throw new GrpcFailure(
        Status.INVALID_ARGUMENT,
        `db::${call.function} takes ${signature.params.length} arguments, got ${call.arguments.length}`,
      );
    }
    const values: unknown[] = [];
    let badge: LiveObject | undefined;
    signature.params.forEach((param, i) => {
      const arg = call.arguments[i]!;
      if (arg.$kind !== 'Input')
        throw new GrpcFailure(Status.INVALID_ARGUMENT, `argument ${i} is not an input`);
      const inp = data.inputs[arg.Input];
      const where = `db::${call.function} argument ${i} (${param})`;
      if (!inp) throw new GrpcFailure(Status.INVALID_ARGUMENT, `${where}: no such input`);
      switch (param) {
        case 'db':
        case 'random': {
          const shared = inp.Object?.SharedObject;
          const [id, version, mutable] =
            param === 'db'
              ? [this.atomaDbId, ATOMA_DB_INITIAL_SHARED_VERSION, true]
              : [RANDOM_ID, RANDOM_INITIAL_SHARED_VERSION, false];
          if (
            !shared ||
            normalizeSuiObjectId(shared.objectId) !== id ||
            BigInt(shared.initialSharedVersion) !== version ||
            shared.mutable !== mutable
          ) {
            throw new GrpcFailure(
              Status.INVALID_ARGUMENT,
              `${where}: expected shared ${id} (initial version ${version}, mutable ${mutable})`,
            );
          }
          return;
        }
        case 'badge':
        case 'badge_mut': {
          const ref = inp.Object?.ImmOrOwnedObject;
          if (!ref) throw new GrpcFailure(Status.INVALID_ARGUMENT, `${where}: expected an owned object`);
          badge = this.#owned(ref, sender, 'NodeBadge');
          if (badge.type !== normalizeStructTag(`${this.packageId}::db::NodeBadge`)) {
            throw new GrpcFailure(Status.INVALID_ARGUMENT, `${where}: ${badge.id} is not a NodeBadge`);
          }
          owned.push(badge);
          return;
        }
        default: {
          const pure = inp.Pure?.bytes;
          if (pure === undefined)
            throw new GrpcFailure(Status.INVALID_ARGUMENT, `${where}: expected a pure value`);
          const raw = fromB64(pure);
          try {
            const codec =
              param === 'u64'
                ? bcs.u64()
                : param === 'bytes'
                  ? bcs.byteVector()
                  : param === 'u64s'
                    ? bcs.vector(bcs.u64())
                    : bcs.string();
            const value = codec.parse(raw);
            if (codec.serialize(value as never).toBytes().length !== raw.length)
              throw new Error('trailing bytes');
            // biome-ignore lint/suspicious/noControlCharactersInRegex: the range is the definition of ASCII.
            if (param === 'ascii' && !/^[\x00-\x7f]*$/.test(value as string)) throw new Error('not ASCII');
            values.push(value);
          } catch (error) {
            throw new GrpcFailure(Status.INVALID_ARGUMENT, `${where}: ${(error as Error).message}`);
          }
        }
      }
    });
    const badgeRef = badge
      ? {
          badge_id: badge.id,
          node_small_id: Number((badge.json() as { small_id: { inner: string } }).small_id.inner),
        }
      : undefined;
    const operation = toOperation(signature.kind, badgeRef, values);
    const items =
      operation.kind === 'claim_funds'
        ? operation.settled_ticket_ids.length
        : operation.kind === 'claim_funds_for_stacks'
          ? operation.stack_small_ids.length
          : 0;
    return {
      sender,
      price,
      budget,
      payment: owned.slice(0, payment.length),
      owned,
      operation,
      items,
      fn: call.function,
    };
  }

  /** An owned input at exactly its current version and digest, owned by the sender. */
  #owned(
    ref: { objectId: string; version: string | number | bigint; digest: string },
    sender: string,
    what: string,
  ): LiveObject {
    const id = normalizeSuiObjectId(ref.objectId);
    const object = this.#objects.get(id);
    if (!object) throw new GrpcFailure(Status.INVALID_ARGUMENT, `${what} ${id} does not exist`);
    const version = BigInt(ref.version);
    if (object.version !== version || object.digest !== ref.digest) {
      const holder = this.#locks.get(`${id}@${version}`);
      if (holder) {
        this.equivocations += 1;
        throw new GrpcFailure(
          Status.INVALID_ARGUMENT,
          `equivocation: ${what} ${id} version ${version} was already used by transaction ${holder}`,
        );
      }
      throw new GrpcFailure(
        Status.INVALID_ARGUMENT,
        `ObjectVersionUnavailableForConsumption: ${what} ${id} version ${version} is not its current version ${object.version}`,
      );
    }
    if (object.owner.kind !== 'address' || object.owner.address !== sender) {
      throw new GrpcFailure(Status.INVALID_ARGUMENT, `${what} ${id} is not owned by ${sender}`);
    }
    return object;
  }

  #simulate(request: GrpcTypes.SimulateTransactionRequest): GrpcTypes.SimulateTransactionResponse {
    const bytes = request.transaction?.bcs?.value;
    if (!bytes) throw new GrpcFailure(Status.INVALID_ARGUMENT, 'the double simulates only BCS transactions');
    const checked = this.#guard(bytes, () => this.#check(bytes));
    const gas = gasFor(checked.operation.kind, checked.items, checked.price);
    const enough = checked.budget >= gas.total;
    return {
      transaction: {
        digest: TransactionDataBuilder.getDigestFromBytes(bytes),
        signatures: [],
        balanceChanges: [],
        effects: {
          status: enough ? { success: true } : { success: false, error: insufficientGas() },
          gasUsed: enough
            ? {
                computationCost: gas.computation_cost as bigint,
                storageCost: gas.storage_cost as bigint,
                storageRebate: gas.storage_rebate as bigint,
                nonRefundableStorageFee: 0n,
              }
            : {
                computationCost: checked.budget,
                storageCost: 0n,
                storageRebate: 0n,
                nonRefundableStorageFee: 0n,
              },
          dependencies: [],
          changedObjects: [],
          unchangedConsensusObjects: [],
          unchangedLoadedRuntimeObjects: [],
        },
      },
      commandOutputs: [],
    };
  }

  async #execute(
    request: GrpcTypes.ExecuteTransactionRequest,
  ): Promise<GrpcTypes.ExecuteTransactionResponse> {
    const bytes = request.transaction?.bcs?.value;
    if (!bytes) throw new GrpcFailure(Status.INVALID_ARGUMENT, 'no transaction bytes');
    const digest = TransactionDataBuilder.getDigestFromBytes(bytes);
    const known = this.#transactions.get(digest);
    if (known) return { transaction: known };
    const signatures = request.signatures.map((s) => toBase64(s.bcs?.value ?? new Uint8Array()));
    // As a validator does: the signature first (against the sender the bytes name), then the inputs.
    let sender: string;
    try {
      sender = normalizeSuiAddress(Transaction.from(bytes).getData().sender ?? '0x0');
    } catch (error) {
      throw this.#refuse(digest, `cannot decode the transaction: ${(error as Error).message}`);
    }
    if (signatures.length !== 1) throw this.#refuse(digest, 'expected exactly one signature');
    try {
      await verifyTransactionSignature(bytes, signatures[0]!, { address: sender });
    } catch (error) {
      throw this.#refuse(digest, `Invalid user signature: ${(error as Error).message}`);
    }
    const checked = this.#guard(bytes, () => this.#check(bytes));

    const gas = gasFor(checked.operation.kind, checked.items, checked.price);
    let submission: Submission | undefined;
    let charged: { computation: bigint; storage: bigint; rebate: bigint };
    if (checked.budget < gas.total) {
      charged = { computation: checked.budget, storage: 0n, rebate: 0n };
    } else {
      try {
        submission = await this.dev.submit(checked.operation, { gas_price: checked.price });
      } catch (error) {
        throw this.#refuse(digest, `the dev network refused: ${(error as Error).message}`);
      }
      this.#devToSui.set(submission.digest, digest);
      charged = {
        computation: BigInt(submission.gas_used.computation_cost),
        storage: BigInt(submission.gas_used.storage_cost),
        rebate: BigInt(submission.gas_used.storage_rebate),
      };
    }
    const success = submission?.status === 'success';
    const nowMs = Date.now();
    const epoch = BigInt(await this.dev.currentEpoch());
    const checkpoint = this.#nextCheckpoint(nowMs, epoch);
    this.#checkpointOf.set(digest, checkpoint);

    // Effects: every owned input and the mutable shared AtomaDb move to the lamport version.
    const db = this.#objects.get(this.atomaDbId)!;
    let lamport = db.version;
    for (const o of checked.owned) if (o.version > lamport) lamport = o.version;
    lamport += 1n;
    const changed: GrpcTypes.ChangedObject[] = [];
    const write = (o: LiveObject) => {
      const input = { version: o.version, digest: o.digest };
      this.#locks.set(`${o.id}@${o.version}`, digest);
      o.version = lamport;
      o.digest = objectDigest(o.id, lamport);
      changed.push(changedObject(o, input, 'write'));
    };
    const [gasCoin, ...merged] = checked.payment;
    const total = checked.payment.reduce((sum, c) => sum + (c.balance ?? 0n), 0n);
    const net = charged.computation + charged.storage - charged.rebate;
    gasCoin!.balance = total - net;
    for (const coin of merged) {
      this.#locks.set(`${coin.id}@${coin.version}`, digest);
      changed.push(changedObject(coin, { version: coin.version, digest: coin.digest }, 'delete'));
      this.#objects.delete(coin.id);
    }
    write(gasCoin!);
    for (const o of checked.owned.slice(checked.payment.length)) write(o);
    write(db);

    let events: GrpcTypes.Event[] = [];
    if (success && submission) {
      for (const e of submission.events as { type: string; parsedJson: Record<string, unknown> }[]) {
        if (e.type.endsWith('::db::NodeRegisteredEvent')) {
          this.#makeBadge(String(e.parsedJson.badge_id), e.parsedJson.node_small_id, checked.sender, lamport);
          const badge = this.#objects.get(normalizeSuiObjectId(String(e.parsedJson.badge_id)))!;
          changed.push(changedObject(badge, undefined, 'create'));
        }
      }
      await this.#sync();
      events = this.#events.filter((e) => e.txDigest === digest).map((e) => this.#protoEvent(e));
    }
    const abort = submission?.abort;
    let status: GrpcTypes.ExecutionStatus;
    if (success) status = { success: true };
    else if (!submission) status = { success: false, error: insufficientGas() };
    else if (abort?.name === ARITHMETIC_ERROR)
      status = { success: false, error: this.#arithmeticError(checked.fn) };
    else {
      status = {
        success: false,
        error: {
          description: `MoveAbort in ${abort?.module}: ${abort?.code}`,
          command: 0n,
          kind: T.ExecutionError_ExecutionErrorKind.MOVE_ABORT,
          errorDetails: {
            oneofKind: 'abort',
            abort: {
              abortCode: BigInt(abort?.code ?? 0),
              location: {
                package: abort?.module === 'db' ? this.packageId : normalizeSuiAddress('0x2'),
                module: abort?.module ?? 'db',
                functionName: abort?.module === 'db' ? checked.fn : 'borrow',
              },
            },
          },
        },
      };
    }
    const transaction: GrpcTypes.ExecutedTransaction = {
      digest,
      signatures: request.signatures,
      balanceChanges: [],
      effects: {
        digest: toBase58(blake2b(new TextEncoder().encode(`effects:${digest}`), { dkLen: 32 })),
        version: 2,
        status,
        epoch,
        gasUsed: {
          computationCost: charged.computation,
          storageCost: charged.storage,
          storageRebate: charged.rebate,
          nonRefundableStorageFee: 0n,
        },
        transactionDigest: digest,
        gasObject: changed[merged.length],
        lamportVersion: lamport,
        dependencies: [],
        changedObjects: changed,
        unchangedConsensusObjects: [
          ...(checked.fn === 'try_settle_stack'
            ? [
                {
                  kind: T.UnchangedConsensusObject_UnchangedConsensusObjectKind.READ_ONLY_ROOT,
                  objectId: RANDOM_ID,
                  version: RANDOM_INITIAL_SHARED_VERSION,
                },
              ]
            : []),
        ],
        unchangedLoadedRuntimeObjects: [],
      },
      events: { events },
      checkpoint,
      timestamp: timestamp(nowMs),
    };
    this.#transactions.set(digest, transaction);
    this.executed.push({
      digest,
      bytes,
      signatures,
      sender: checked.sender,
      status: success ? 'success' : 'failure',
      operation: checked.operation.kind,
    });
    return { transaction };
  }

  /**
   * u64 overflow or division by zero as a fullnode reports it (sui-rpc's conversion of
   * ExecutionFailureStatus::MovePrimitiveRuntimeError): kind MOVE_PRIMITIVE_RUNTIME_ERROR, the location in
   * the abort details, and no abort code. The double runs no bytecode, so the location names the entry
   * function, at function index 0 and offset 0.
   */
  #arithmeticError(fn: string): GrpcTypes.ExecutionError {
    const location = { package: this.packageId, module: 'db', function: 0, instruction: 0, functionName: fn };
    return {
      description: `Move Primitive Runtime Error. Location: ${this.packageId}::db::${fn} (function index 0) at offset 0. Arithmetic error, stack overflow, max value depth, etc.`,
      command: 0n,
      kind: T.ExecutionError_ExecutionErrorKind.MOVE_PRIMITIVE_RUNTIME_ERROR,
      errorDetails: { oneofKind: 'abort', abort: { location } },
    };
  }

  #guard<X>(bytes: Uint8Array, fn: () => X): X {
    try {
      return fn();
    } catch (error) {
      if (error instanceof GrpcFailure) {
        this.refused.push({
          digest: TransactionDataBuilder.getDigestFromBytes(bytes),
          reason: error.message,
        });
      }
      throw error;
    }
  }

  #refuse(digest: string, reason: string): GrpcFailure {
    this.refused.push({ digest, reason });
    return new GrpcFailure(Status.INVALID_ARGUMENT, reason);
  }
}

interface Checked {
  sender: string;
  price: bigint;
  budget: bigint;
  payment: LiveObject[];
  owned: LiveObject[];
  operation: Operation;
  items: number;
  fn: string;
}

interface Codec {
  fromBinary(bytes: Uint8Array): object;
  toBinary(message: object): Uint8Array;
  create(value?: object): object;
}

/** The operation the MoveCall's decoded arguments (after AtomaDb and the badge) stand for. */
function toOperation(
  kind: Operation['kind'],
  badge: { badge_id: string; node_small_id: number } | undefined,
  values: unknown[],
): Operation {
  const u = (i: number) => BigInt(values[i] as string);
  const b = (i: number) => values[i] as Uint8Array;
  const us = (i: number) => (values[i] as string[]).map((v) => BigInt(v));
  switch (kind) {
    case 'register_node':
      return { kind };
    case 'add_node_to_model':
      return { kind, badge: badge!, model_name: values[0] as string, echelon_id: u(1) };
    case 'subscribe_node_to_task':
    case 'update_node_subscription':
      return { kind, badge: badge!, task_small_id: u(0), price_per_one_million_compute_units: u(1) };
    case 'unsubscribe_node_from_task':
      return { kind, badge: badge!, task_small_id: u(0) };
    case 'try_settle_stack':
      return {
        kind,
        badge: badge!,
        stack_small_id: u(0),
        num_claimed_compute_units: u(1),
        committed_stack_proof: b(2),
        stack_merkle_leaf: b(3),
      };
    case 'submit_stack_settlement_attestation':
      return {
        kind,
        badge: badge!,
        stack_small_id: u(0),
        committed_stack_proof: b(1),
        stack_merkle_leaf: b(2),
      };
    case 'start_attestation_dispute':
      return { kind, badge: badge!, stack_small_id: u(0), attestation_commitment: b(1) };
    case 'claim_funds':
      return { kind, badge: badge!, settled_ticket_ids: us(0) };
    case 'claim_funds_for_stacks':
      return { kind, badge: badge!, stack_small_ids: us(0), num_compute_units_per_stack_to_claim: us(1) };
  }
}

function changedObject(
  o: LiveObject,
  input: { version: bigint; digest: string } | undefined,
  op: 'write' | 'delete' | 'create',
): GrpcTypes.ChangedObject {
  return {
    objectId: o.id,
    inputState: input
      ? T.ChangedObject_InputObjectState.EXISTS
      : T.ChangedObject_InputObjectState.DOES_NOT_EXIST,
    ...(input
      ? { inputVersion: input.version, inputDigest: input.digest, inputOwner: protoOwner(o.owner) }
      : {}),
    outputState:
      op === 'delete'
        ? T.ChangedObject_OutputObjectState.DOES_NOT_EXIST
        : T.ChangedObject_OutputObjectState.OBJECT_WRITE,
    ...(op === 'delete'
      ? {}
      : { outputVersion: o.version, outputDigest: o.digest, outputOwner: protoOwner(o.owner) }),
    idOperation:
      op === 'create'
        ? T.ChangedObject_IdOperation.CREATED
        : op === 'delete'
          ? T.ChangedObject_IdOperation.DELETED
          : T.ChangedObject_IdOperation.NONE,
    objectType: o.type,
  };
}

function protoOwner(owner: Owner): GrpcTypes.Owner {
  return owner.kind === 'shared'
    ? { kind: T.Owner_OwnerKind.SHARED, version: owner.initialSharedVersion! }
    : { kind: T.Owner_OwnerKind.ADDRESS, address: owner.address! };
}

function toProtoObject(o: LiveObject): GrpcTypes.Object {
  return {
    objectId: o.id,
    version: o.version,
    digest: o.digest,
    owner: protoOwner(o.owner),
    objectType: o.type,
    json: toProtoValue(o.json()),
    ...(o.balance === undefined ? {} : { balance: o.balance }),
  };
}

function insufficientGas(): GrpcTypes.ExecutionError {
  return {
    description: 'InsufficientGas',
    command: 0n,
    kind: T.ExecutionError_ExecutionErrorKind.INSUFFICIENT_GAS,
    errorDetails: { oneofKind: undefined },
  };
}

/** The gRPC API's JSON rendering of a parsedJson: byte vectors as base64 strings. */
function grpcRendering(json: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(json).map(([k, v]) => [
      k,
      BYTE_FIELDS.has(k) && Array.isArray(v) ? toBase64(new Uint8Array(v as number[])) : v,
    ]),
  );
}

type ProtoValue = NonNullable<GrpcTypes.Object['json']>;

function toProtoValue(value: unknown): ProtoValue {
  if (value === null || value === undefined) return { kind: { oneofKind: 'nullValue', nullValue: 0 } };
  if (typeof value === 'boolean') return { kind: { oneofKind: 'boolValue', boolValue: value } };
  if (typeof value === 'number') return { kind: { oneofKind: 'numberValue', numberValue: value } };
  if (typeof value === 'string' || typeof value === 'bigint') {
    return { kind: { oneofKind: 'stringValue', stringValue: String(value) } };
  }
  if (Array.isArray(value)) {
    return { kind: { oneofKind: 'listValue', listValue: { values: value.map(toProtoValue) } } };
  }
  return {
    kind: {
      oneofKind: 'structValue',
      structValue: {
        fields: Object.fromEntries(
          Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, toProtoValue(v)]),
        ),
      },
    },
  };
}

/**
 * The fields of a message a read mask asks for, as a fullnode answers (paths in snake_case, e.g.
 * `summary.epoch`): a call that forgets a field gets none, as it would from a real one.
 */
function masked(message: Record<string, unknown>, paths: readonly string[]): Record<string, unknown> {
  const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(message)) {
    const name = snake(key);
    if (paths.includes(name)) out[key] = value;
    else {
      const nested = paths.filter((p) => p.startsWith(`${name}.`)).map((p) => p.slice(name.length + 1));
      if (nested.length > 0 && value && typeof value === 'object') {
        out[key] = masked(value as Record<string, unknown>, nested);
      }
    }
  }
  return out;
}

/** A response object's gRPC-web frame, already encoded. */
const ENCODED = Symbol('encoded frame');

function frame(flag: number, message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out[0] = flag;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

function encodeCursor(seq: number): Uint8Array {
  const out = new Uint8Array(12);
  out.set(new TextEncoder().encode('dbl:'));
  new DataView(out.buffer).setBigUint64(4, BigInt(seq));
  return out;
}

function decodeCursor(bytes: Uint8Array): number {
  if (bytes.length !== 12 || new TextDecoder().decode(bytes.subarray(0, 4)) !== 'dbl:') {
    throw new GrpcFailure(Status.INVALID_ARGUMENT, 'not a cursor of this double');
  }
  return Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(4));
}

function timestamp(ms: number): { seconds: bigint; nanos: number } {
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 };
}

function hashId(label: string): string {
  return `0x${Buffer.from(blake2b(new TextEncoder().encode(`double:${label}`), { dkLen: 32 })).toString('hex')}`;
}

function objectDigest(id: string, version: bigint): string {
  return toBase58(blake2b(new TextEncoder().encode(`object:${id}:${version}`), { dkLen: 32 }));
}

function fromB64(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'base64'));
}
