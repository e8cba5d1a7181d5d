import type { EventPage, RawEvent } from '../src/chain/chain.ts';

/**
 * Deterministic SuiEvent streams for the benchmark, in the fullnode's JSON-RPC form (see
 * src/protocol/events.ts): u64 as decimal strings, small ids as { inner }, object ids and addresses as
 * 0x + 64 hex digits, txDigest as base58 of 32 bytes. Same seed, same stream, byte for byte.
 */

export const PACKAGE_ID = `0x${'a7'.repeat(32)}`;
const TIMESTAMP_BASE = 1_763_000_000_000;

/** xorshift32: fast, deterministic, good enough to make ids look random. */
export class Rng {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0 || 0x9e3779b9;
  }
  next(): number {
    let x = this.#state;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    this.#state = x;
    return x;
  }
  int(n: number): number {
    return this.next() % n;
  }
  bytes(n: number): number[] {
    const out = new Array<number>(n);
    for (let i = 0; i < n; i++) out[i] = this.next() & 0xff;
    return out;
  }
  /** 0x + 64 lower-case hex digits. */
  objectId(): string {
    let out = '0x';
    for (let i = 0; i < 8; i++) out += this.next().toString(16).padStart(8, '0');
    return out;
  }
}

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function base58(bytes: readonly number[]): string {
  const digits: number[] = [0];
  for (const byte of bytes) {
    let carry = byte;
    for (let j = 0; j < digits.length; j++) {
      carry += digits[j]! << 8;
      digits[j] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = (carry / 58) | 0;
    }
  }
  let out = '';
  for (const byte of bytes) {
    if (byte !== 0) break;
    out += '1';
  }
  for (let i = digits.length - 1; i >= 0; i--) out += B58[digits[i]!];
  return out;
}

const inner = (n: number) => ({ inner: String(n) });

/** Builds SuiEvent objects; every event gets its own transaction digest (unique by construction). */
export class EventFactory {
  readonly #rng: Rng;
  #tx = 0;
  readonly owners: string[];
  readonly #bcs = new Map<string, string>();

  constructor(seed: number, ownerCount = 5000) {
    this.#rng = new Rng(seed);
    this.owners = Array.from({ length: ownerCount }, () => this.#rng.objectId());
  }

  get rng(): Rng {
    return this.#rng;
  }

  /** A 32-byte digest: a non-zero first byte, the transaction counter in bytes 1-6, random after. */
  #digest(): string {
    const n = this.#tx++;
    const bytes = this.#rng.bytes(32);
    bytes[0] = bytes[0]! | 1;
    for (let i = 0; i < 6; i++) bytes[1 + i] = Math.floor(n / 256 ** i) % 256;
    return base58(bytes);
  }

  /** A plausible bcs field (the indexer never reads it, but a real stream carries it). */
  #bcsFor(kind: string, approxBytes: number): string {
    let bcs = this.#bcs.get(kind);
    if (bcs === undefined) {
      bcs = Buffer.from(this.#rng.bytes(approxBytes)).toString('base64');
      this.#bcs.set(kind, bcs);
    }
    return bcs;
  }

  /**
   * One event as a source hands it over: parsed from JSON. The round trip matters for what the indexer is
   * measured on: the strings built here (digests, ids, the type) are V8 cons strings, which the indexer
   * would pay to flatten on first reading (about 1.5 us an event), where JSON.parse gives flat ones.
   */
  event(kind: string, parsedJson: Record<string, unknown>, bcsBytes: number, sender?: string): unknown {
    return JSON.parse(JSON.stringify(this.#event(kind, parsedJson, bcsBytes, sender)));
  }

  #event(kind: string, parsedJson: Record<string, unknown>, bcsBytes: number, sender?: string): unknown {
    return {
      id: { txDigest: this.#digest(), eventSeq: '0' },
      packageId: PACKAGE_ID,
      transactionModule: 'db',
      sender: sender ?? this.owners[this.#tx % this.owners.length],
      type: `${PACKAGE_ID}::db::${kind}`,
      parsedJson,
      bcsEncoding: 'base64',
      bcs: this.#bcsFor(kind, bcsBytes),
      timestampMs: String(TIMESTAMP_BASE + this.#tx * 250),
    };
  }

  task(taskSmallId: number): unknown {
    return this.event(
      'TaskRegisteredEvent',
      {
        task_id: this.#rng.objectId(),
        task_small_id: inner(taskSmallId),
        role: { inner: taskSmallId % 8 },
        model_name: taskSmallId % 10 === 0 ? null : `meta-llama/Llama-3.${taskSmallId % 4}-70B-Instruct`,
        security_level: { inner: taskSmallId % 3 },
        minimum_reputation_score: taskSmallId % 5 === 0 ? 50 : null,
      },
      80,
    );
  }

  node(nodeSmallId: number): unknown {
    return this.event(
      'NodeRegisteredEvent',
      { badge_id: this.#rng.objectId(), node_small_id: inner(nodeSmallId) },
      40,
      this.#rng.objectId(),
    );
  }

  subscription(nodeSmallId: number, taskSmallId: number, update: boolean): unknown {
    return this.event(
      update ? 'NodeSubscriptionUpdatedEvent' : 'NodeSubscribedToTaskEvent',
      {
        task_small_id: inner(taskSmallId),
        node_small_id: inner(nodeSmallId),
        price_per_one_million_compute_units: String(1000 + ((nodeSmallId * 31 + taskSmallId) % 9000)),
        max_num_compute_units: String(1_000_000 * (1 + (taskSmallId % 50))),
      },
      32,
    );
  }

  stack(s: StackParams): unknown {
    return this.event(
      'StackCreatedEvent',
      {
        stack_id: this.#rng.objectId(),
        stack_small_id: inner(s.stackSmallId),
        owner: this.owners[(s.stackSmallId * 7919) % this.owners.length],
        task_small_id: inner(s.taskSmallId),
        selected_node_id: inner(s.nodeSmallId),
        num_compute_units: String(s.numComputeUnits),
        price_per_one_million_compute_units: String(s.price),
      },
      120,
    );
  }

  trySettle(stackSmallId: number, nodeSmallId: number, attesters: number[], claimed: number): unknown {
    return this.event(
      'StackTrySettleEvent',
      {
        stack_small_id: inner(stackSmallId),
        selected_node_id: inner(nodeSmallId),
        requested_attestation_nodes: attesters.map(inner),
        committed_stack_proof: this.#rng.bytes(32),
        stack_merkle_leaf: this.#rng.bytes(32),
        num_claimed_compute_units: String(claimed),
      },
      100,
    );
  }

  ticketClaimed(stackSmallId: number, nodeSmallId: number, attesters: number[], claimed: number): unknown {
    return this.event(
      'StackSettlementTicketClaimedEvent',
      {
        stack_small_id: inner(stackSmallId),
        selected_node_id: inner(nodeSmallId),
        attestation_nodes: attesters.map(inner),
        num_claimed_compute_units: String(claimed),
        user_refund_amount: String(claimed % 997),
      },
      60,
    );
  }

  stackClaimed(stackSmallId: number, nodeSmallId: number, claimed: number): unknown {
    return this.event(
      'ClaimedStackEvent',
      {
        stack_small_id: inner(stackSmallId),
        selected_node_id: inner(nodeSmallId),
        num_claimed_compute_units: String(claimed),
        user_refund_amount: String(claimed % 991),
      },
      40,
    );
  }
}

export interface StackParams {
  stackSmallId: number;
  taskSmallId: number;
  nodeSmallId: number;
  numComputeUnits: number;
  price: number;
}

/** The benchmark data set's stack number s (1-based): node, task and size all follow from s. */
export function datasetStack(s: number, nodes: number, tasks: number): StackParams {
  return {
    stackSmallId: s,
    nodeSmallId: ((s - 1) % nodes) + 1,
    taskSmallId: ((s * 7) % tasks) + 1,
    // Multiples of 100, so the fill fractions k/100 of the data set are exact.
    numComputeUnits: 100 * (100 + ((s * 13) % 100_000)),
    price: 500 + ((s * 17) % 5000),
  };
}

/**
 * A realistic indexer stream: a prelude of tasks and node registrations, then blocks of 20 events:
 * 14 StackCreatedEvent, 2 subscriptions (or updates), 2 StackTrySettleEvent on earlier stacks and 2 claims
 * (settlement-ticket claims, every fourth one a confidential-compute ClaimedStackEvent).
 */
export function* mixedStream(total: number, seed: number): Generator<unknown> {
  const f = new EventFactory(seed);
  const tasks = 100;
  const nodes = 200;
  let emitted = 0;
  for (let t = 1; t <= tasks && emitted < total; t++, emitted++) yield f.task(t);
  for (let n = 1; n <= nodes && emitted < total; n++, emitted++) yield f.node(n);
  let stack = 0;
  let settled = 0;
  let claimed = 0;
  let subs = 0;
  const attestersOf = (s: number) => (s % 3 === 0 ? [] : [((s * 3) % nodes) + 1, ((s * 5) % nodes) + 1]);
  while (emitted < total) {
    for (let slot = 0; slot < 20 && emitted < total; slot++, emitted++) {
      if (slot < 14 || stack < 100) {
        stack += 1;
        yield f.stack(datasetStack(stack, nodes, tasks));
      } else if (slot < 16) {
        subs += 1;
        yield f.subscription(((subs * 13) % nodes) + 1, ((subs * 7) % tasks) + 1, subs > nodes * 2);
      } else if (slot < 18) {
        settled += 1;
        const p = datasetStack(settled, nodes, tasks);
        yield f.trySettle(settled, p.nodeSmallId, attestersOf(settled), p.numComputeUnits / 2);
      } else {
        claimed += 1;
        const p = datasetStack(claimed, nodes, tasks);
        yield claimed % 4 === 0
          ? f.stackClaimed(claimed, p.nodeSmallId, p.numComputeUnits / 2)
          : f.ticketClaimed(claimed, p.nodeSmallId, attestersOf(claimed), p.numComputeUnits / 2);
      }
    }
  }
}

/** Only StackCreatedEvent, as in the bulk of the HTTP data set. */
export function* stacksStream(total: number, seed: number, nodes = 1000, tasks = 1000): Generator<unknown> {
  const f = new EventFactory(seed);
  for (let s = 1; s <= total; s++) yield f.stack(datasetStack(s, nodes, tasks));
}

/** Groups a stream into pages of pageSize, as a source delivers them; the cursor is the event count. */
export function* pages(stream: Iterable<unknown>, pageSize: number, label: string): Generator<EventPage> {
  let events: RawEvent[] = [];
  let n = 0;
  for (const raw of stream) {
    n += 1;
    events.push({ position: `${label}:${n}`, raw });
    if (events.length === pageSize) {
      yield { events, nextCursor: String(n), hasMore: true };
      events = [];
    }
  }
  yield { events, nextCursor: String(n), hasMore: false };
}
