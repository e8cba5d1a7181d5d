import { isObjectId, normalizeObjectId } from '../internal/formats.ts';
import { parseU64, toU64, type U64 } from '../internal/u64.ts';

/**
 * The Atoma `db` module's events (contracts.md §2.22), as the chain delivers them, decoded field by field.
 * Decoding of Atoma `db` module events in the fullnode's JSON-RPC SuiEvent form:
 * { id: { txDigest, eventSeq }, packageId, transactionModule, sender, type, parsedJson, timestampMs }.
 * parsedJson follows Sui's rendering: u64 as decimal strings, u8/u16 as numbers, IDs and addresses as
 * 0x hex, vector<u8> as arrays of numbers, Option<T> as the value or null, and the small-id newtypes as
 * { inner } objects (EchelonId as { id }).
 */

/** Why an event could not be decoded, with the JSON path of the offending value. */
export class MalformedEventError extends Error {
  readonly path: string;
  constructor(path: string, expected: string, value: unknown) {
    super(`${path}: expected ${expected}, got ${describe(value)}`);
    this.name = 'MalformedEventError';
    this.path = path;
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    // Nested deeper than the stack goes: what it is, not what it holds.
    text = Array.isArray(value) ? 'an array nested too deep to show' : 'an object nested too deep to show';
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

type Codec<T> = (value: unknown, path: string) => T;

const u64: Codec<U64> = (value, path) => {
  const parsed = toU64(value);
  if (parsed === undefined) throw new MalformedEventError(path, 'a u64 (decimal string)', value);
  return parsed;
};

function uint(bits: 8 | 16): Codec<number> {
  const max = 2 ** bits - 1;
  return (value, path) => {
    const n = typeof value === 'string' && /^[0-9]{1,5}$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max) {
      throw new MalformedEventError(path, `a u${bits}`, value);
    }
    return n;
  };
}

/** An id already in the form Sui prints, which needs no normalising: what a fullnode sends. */
const CANONICAL_ID = /^0x[0-9a-f]{64}$/;

/** Object IDs and addresses, normalised to 0x + 64 lower-case hex digits, as Sui prints them. */
const address: Codec<string> = (value, path) => {
  if (typeof value === 'string' && value.length === 66 && CANONICAL_ID.test(value)) return value;
  if (!isObjectId(value)) throw new MalformedEventError(path, 'a 0x-prefixed hex id', value);
  return normalizeObjectId(value);
};

const MAX_BYTES = 1 << 20;
const byteVector: Codec<Uint8Array> = (value, path) => {
  if (!Array.isArray(value) || value.length > MAX_BYTES)
    throw new MalformedEventError(path, 'a byte array', value);
  const out = new Uint8Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const b = value[i];
    if (typeof b !== 'number' || !Number.isInteger(b) || b < 0 || b > 255) {
      throw new MalformedEventError(`${path}[${i}]`, 'a byte (0 to 255)', b);
    }
    out[i] = b;
  }
  return out;
};

const asciiString: Codec<string> = (value, path) => {
  // Move's ascii::String holds bytes 0 to 127, control characters included.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range is the definition of ASCII.
  if (typeof value !== 'string' || !/^[\x00-\x7f]*$/.test(value)) {
    throw new MalformedEventError(path, 'an ASCII string', value);
  }
  return value;
};

function object(value: unknown, path: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new MalformedEventError(path, 'an object', value);
  }
  return value as Record<string, unknown>;
}

/** A Move newtype rendered as { field: value }, e.g. NodeSmallId { inner } or EchelonId { id }. */
function wrapped<T>(field: string, codec: Codec<T>): Codec<T> {
  return (value, path) => codec(object(value, path)[field], `${path}.${field}`);
}

/** Option<T>: the value or null (the field itself is always present); the older { vec } form too. */
function option<T>(codec: Codec<T>): Codec<T | null> {
  return (value, path) => {
    if (value === undefined) throw new MalformedEventError(path, 'a value or null', value);
    if (value === null) return null;
    if (typeof value === 'object' && !Array.isArray(value) && 'vec' in value) {
      const vec = (value as { vec: unknown }).vec;
      if (!Array.isArray(vec) || vec.length > 1)
        throw new MalformedEventError(`${path}.vec`, 'an option', vec);
      return vec.length === 0 ? null : codec(vec[0], `${path}.vec[0]`);
    }
    return codec(value, path);
  };
}

function vector<T>(codec: Codec<T>): Codec<T[]> {
  return (value, path) => {
    if (!Array.isArray(value)) throw new MalformedEventError(path, 'an array', value);
    return value.map((item, i) => codec(item, `${path}[${i}]`));
  };
}

const smallIdChecked = wrapped('inner', u64);
/** A small id ({ inner: "7" }): read at once when it is well formed, else checked field by field. */
const smallId: Codec<U64> = (value, path) => {
  const inner =
    typeof value === 'object' && value !== null ? (value as { inner?: unknown }).inner : undefined;
  const parsed = typeof inner === 'string' ? parseU64(inner) : undefined;
  return parsed ?? smallIdChecked(value, path);
};

/** The payload of every event the indexer applies, field by field, in the contract's declaration order. */
const SHAPES = {
  TaskRegisteredEvent: {
    task_id: address,
    task_small_id: smallId,
    role: wrapped('inner', uint(16)),
    model_name: option(asciiString),
    security_level: wrapped('inner', uint(16)),
    minimum_reputation_score: option(uint(8)),
  },
  TaskDeprecationEvent: { task_id: address, task_small_id: smallId, epoch: u64 },
  TaskRemovedEvent: { task_id: address, task_small_id: smallId, removed_at_epoch: u64 },
  NodeRegisteredEvent: { badge_id: address, node_small_id: smallId },
  NodeSubscribedToModelEvent: {
    node_small_id: smallId,
    model_name: asciiString,
    echelon_id: wrapped('id', u64),
  },
  NodeSubscribedToTaskEvent: {
    task_small_id: smallId,
    node_small_id: smallId,
    price_per_one_million_compute_units: u64,
    max_num_compute_units: u64,
  },
  NodeSubscriptionUpdatedEvent: {
    node_small_id: smallId,
    task_small_id: smallId,
    price_per_one_million_compute_units: u64,
    max_num_compute_units: u64,
  },
  NodeUnsubscribedFromTaskEvent: { task_small_id: smallId, node_small_id: smallId },
  StackCreatedEvent: {
    stack_id: address,
    stack_small_id: smallId,
    owner: address,
    task_small_id: smallId,
    selected_node_id: smallId,
    num_compute_units: u64,
    price_per_one_million_compute_units: u64,
  },
  StackTrySettleEvent: {
    stack_small_id: smallId,
    selected_node_id: smallId,
    requested_attestation_nodes: vector(smallId),
    committed_stack_proof: byteVector,
    stack_merkle_leaf: byteVector,
    num_claimed_compute_units: u64,
  },
  NewStackSettlementAttestationEvent: {
    stack_small_id: smallId,
    attestation_node_id: smallId,
    committed_stack_proof: byteVector,
    stack_merkle_leaf: byteVector,
  },
  StackSettlementTicketEvent: {
    stack_small_id: smallId,
    selected_node_id: smallId,
    num_claimed_compute_units: u64,
    requested_attestation_nodes: vector(smallId),
    dispute_settled_at_epoch: u64,
    committed_stack_proof: byteVector,
  },
  StackSettlementTicketClaimedEvent: {
    stack_small_id: smallId,
    selected_node_id: smallId,
    attestation_nodes: vector(smallId),
    num_claimed_compute_units: u64,
    user_refund_amount: u64,
  },
  StackAttestationDisputeEvent: {
    stack_small_id: smallId,
    attestation_commitment: byteVector,
    attestation_node_id: smallId,
    original_node_id: smallId,
    original_commitment: byteVector,
  },
  ClaimedStackEvent: {
    stack_small_id: smallId,
    selected_node_id: smallId,
    num_claimed_compute_units: u64,
    user_refund_amount: u64,
  },
} as const satisfies Record<string, Record<string, Codec<unknown>>>;

export type EventName = keyof typeof SHAPES;
export type Payload<N extends EventName> = {
  -readonly [F in keyof (typeof SHAPES)[N]]: (typeof SHAPES)[N][F] extends Codec<infer T> ? T : never;
};
export type DecodedEvent = { [N in EventName]: { name: N; payload: Payload<N> } }[EventName];

export const EVENT_NAMES = Object.keys(SHAPES) as EventName[];

/** db module events that carry nothing the read model keeps; they are counted as ignored. */
export const IGNORED_EVENT_NAMES: ReadonlySet<string> = new Set([
  'PublishedEvent',
  'NewKeyRotationEvent',
  'NodePublicKeyCommittmentEvent',
  // The legacy prompt flow emits these; the stack flow never does. They count as ignored whatever
  // module defines them.
  'FirstSubmissionEvent',
  'DisputeEvent',
  'NewlySampledNodesEvent',
  'SettledEvent',
  'RetrySettlementEvent',
  'Text2ImagePromptEvent',
  'Text2TextPromptEvent',
]);

/** The identity and kind of a raw SuiEvent, read before its payload. */
export interface EventEnvelope {
  /** txDigest:eventSeq, unique per event on chain. */
  key: string;
  /** The struct name, e.g. StackCreatedEvent. */
  name: string;
  module: string;
  sender: string | null;
}

const TYPE_TAG = /^0x[0-9a-fA-F]{1,64}::([A-Za-z_][A-Za-z0-9_]*)::([A-Za-z_][A-Za-z0-9_]*)(<.*>)?$/;
const DIGEST = /^[1-9A-HJ-NP-Za-km-z]{32,64}$/;

/** Reads the envelope (id, type, sender) of a SuiEvent; throws MalformedEventError when it is not one. */
export function readEnvelope(raw: unknown): EventEnvelope {
  const event = object(raw, '$');
  const id = object(event.id, '$.id');
  if (typeof id.txDigest !== 'string' || !DIGEST.test(id.txDigest)) {
    throw new MalformedEventError('$.id.txDigest', 'a base58 transaction digest', id.txDigest);
  }
  const seq = toU64(id.eventSeq);
  if (seq === undefined) throw new MalformedEventError('$.id.eventSeq', 'a u64', id.eventSeq);
  if (typeof event.type !== 'string') throw new MalformedEventError('$.type', 'a Move type', event.type);
  const tag = typeTag(event.type);
  const sender =
    event.sender === undefined || event.sender === null ? null : address(event.sender, '$.sender');
  return { key: `${id.txDigest}:${String(seq)}`, module: tag.module, name: tag.name, sender };
}

// A stream repeats a handful of event types: parse each once (bounded, so odd input cannot grow it).
const typeTags = new Map<string, { module: string; name: string }>();

function typeTag(type: string): { module: string; name: string } {
  const known = typeTags.get(type);
  if (known) return known;
  const tag = TYPE_TAG.exec(type);
  if (!tag) throw new MalformedEventError('$.type', 'a Move type like 0x2::db::Name', type);
  const parsed = { module: tag[1]!, name: tag[2]! };
  if (typeTags.size < 1000) typeTags.set(type, parsed);
  return parsed;
}

export function isEventName(name: string): name is EventName {
  return Object.hasOwn(SHAPES, name);
}

/** Decodes parsedJson of a known event; throws MalformedEventError naming the first bad field. */
export function decodePayload(name: EventName, parsedJson: unknown): DecodedEvent {
  const json = object(parsedJson, '$.parsedJson');
  const payload: Record<string, unknown> = {};
  for (const { field, codec, path } of FIELDS[name]) payload[field] = codec(json[field], path);
  return { name, payload } as DecodedEvent;
}

/** Each event's fields in declaration order, with their codec and their JSON path made once. */
const FIELDS = Object.fromEntries(
  Object.entries(SHAPES).map(([name, shape]) => [
    name,
    Object.entries(shape as Record<string, Codec<unknown>>).map(([field, codec]) => ({
      field,
      codec,
      path: `$.parsedJson.${field}`,
    })),
  ]),
) as Record<EventName, { field: string; codec: Codec<unknown>; path: string }[]>;

/**
 * What one SuiEvent is to the indexer, decided from the event alone: an event to apply, one it skips on
 * purpose (ignored), one of a kind it does not know, or a malformed one and why. The indexer logs the
 * skipped ones (applyPage); a source may decide it on another thread (the file source does).
 */
export type DecodeOutcome =
  | {
      kind: 'event';
      envelope: EventEnvelope;
      event: DecodedEvent;
      /** When it happened (the fullnode's timestampMs), when the event says. */
      at?: number | undefined;
    }
  | { kind: 'malformed'; reason: string; tx?: string }
  | { kind: 'ignored'; tx?: string }
  | { kind: 'unknown'; eventKind: string; tx?: string };

/**
 * The digest of the transaction that emitted the event, when it says: the indexer's short transactions
 * never cut one chain transaction's events apart, skipped ones included.
 */
export function transactionOf(outcome: DecodeOutcome): string | undefined {
  return outcome.kind === 'event' ? keyTransaction(outcome.envelope.key) : outcome.tx;
}

/** The stack an event creates: a StackCreatedEvent's, and none for any other event. */
export function createdStackOf(event: DecodedEvent): U64 | undefined {
  return event.name === 'StackCreatedEvent' ? event.payload.stack_small_id : undefined;
}

/** The transaction digest of an event key (txDigest:eventSeq). */
export function keyTransaction(key: string): string {
  return key.slice(0, key.indexOf(':'));
}

/** The transaction digest a SuiEvent JSON value names, decoded or not, when it names one. */
export function rawTransactionOf(raw: unknown): string | undefined {
  const tx = (raw as { id?: { txDigest?: unknown } } | null | undefined)?.id?.txDigest;
  return typeof tx === 'string' ? tx : undefined;
}

/** Decodes one SuiEvent JSON value; never throws for anything the value contains. */
export function decodeEvent(raw: unknown): DecodeOutcome {
  try {
    const envelope = readEnvelope(raw);
    if (IGNORED_EVENT_NAMES.has(envelope.name)) return skipped(raw, { kind: 'ignored' as const });
    if (envelope.module !== 'db' || !isEventName(envelope.name)) {
      return skipped(raw, { kind: 'unknown' as const, eventKind: `${envelope.module}::${envelope.name}` });
    }
    const event = decodePayload(envelope.name, (raw as { parsedJson?: unknown }).parsedJson);
    if (envelope.name === 'NodeRegisteredEvent' && envelope.sender === null) {
      throw new MalformedEventError('$.sender', 'the address that registered the node', null);
    }
    return { kind: 'event', envelope, event, at: timestampOf(raw) };
  } catch (error) {
    if (!(error instanceof MalformedEventError)) throw error;
    return skipped(raw, { kind: 'malformed' as const, reason: error.message });
  }
}

/** A skipped event's outcome, with its transaction's digest when the event names one. */
function skipped<T extends object>(raw: unknown, outcome: T): T & { tx?: string } {
  const tx = rawTransactionOf(raw);
  return tx === undefined ? outcome : { ...outcome, tx };
}

/** A SuiEvent's timestampMs (decimal digits), when it has a sane one. */
function timestampOf(raw: unknown): number | undefined {
  const value = (raw as { timestampMs?: unknown }).timestampMs;
  const ms = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : value;
  return typeof ms === 'number' && Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}
