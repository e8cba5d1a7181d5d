import { BcsReader } from '@mysten/bcs';
import { bcs } from '@mysten/sui/bcs';

/**
 * The BCS layouts of the db module's events (contracts.md §2.22: fields in declaration order, which is the
 * BCS order), at contract commit 9e53429. Parsing an event's BCS contents with its layout gives exactly the
 * JSON-RPC `parsedJson` rendering the indexer decodes (src/protocol/events.ts): u64 as decimal strings, u8
 * and u16 as numbers, IDs and addresses as 0x + 64 hex, vector<u8> as arrays of numbers, Option<T> as the
 * value or null, and the small-id newtypes as { inner } (EchelonId as { id }).
 *
 * The gRPC API's own `json` rendering differs (vector<u8> is a base64 string there), which is why the
 * adapter decodes the BCS instead.
 */

const u64 = bcs.u64();
const smallId = bcs.struct('SmallId', { inner: u64 });
const bytes = bcs.vector(bcs.u8());
/**
 * An ID or address: bcs.Address's bytes, rendered as it renders them (0x + 64 lowercase hex digits) but
 * with Buffer's hex encoder. bcs.Address builds the string a byte at a time and normalizes it again: about
 * 2.5 µs of a StackCreatedEvent's 4 to 5 (two addresses), for the same string.
 */
const id = bcs.bytes(32).transform({
  name: 'address',
  input: (value: string) => bcs.Address.serialize(value).toBytes(),
  output: (bytes) => `0x${Buffer.from(bytes.buffer, bytes.byteOffset, 32).toString('hex')}`,
});
const ascii = bcs.string();

/** What the adapter (parse) and the test double (serialize, from parsedJson) need of a layout. */
export interface EventLayout {
  parse(bytes: Uint8Array): Record<string, unknown>;
  read(reader: BcsReader): Record<string, unknown>;
  serialize(value: never): { toBytes(): Uint8Array };
}

export const DB_EVENT_LAYOUTS: Record<string, EventLayout> = {
  PublishedEvent: bcs.struct('PublishedEvent', { db: id, manager_badge: id }),
  NodeRegisteredEvent: bcs.struct('NodeRegisteredEvent', { badge_id: id, node_small_id: smallId }),
  NewKeyRotationEvent: bcs.struct('NewKeyRotationEvent', {
    key_rotation_counter: u64,
    epoch: u64,
    nonce: u64,
  }),
  NodePublicKeyCommittmentEvent: bcs.struct('NodePublicKeyCommittmentEvent', {
    epoch: u64,
    key_rotation_counter: u64,
    node_id: smallId,
    new_public_key: bytes,
    device_type: bcs.u16(),
    evidence_bytes: bytes,
  }),
  NodeSubscribedToModelEvent: bcs.struct('NodeSubscribedToModelEvent', {
    node_small_id: smallId,
    model_name: ascii,
    echelon_id: bcs.struct('EchelonId', { id: u64 }),
  }),
  NodeSubscribedToTaskEvent: bcs.struct('NodeSubscribedToTaskEvent', {
    task_small_id: smallId,
    node_small_id: smallId,
    price_per_one_million_compute_units: u64,
    max_num_compute_units: u64,
  }),
  NodeSubscriptionUpdatedEvent: bcs.struct('NodeSubscriptionUpdatedEvent', {
    node_small_id: smallId,
    task_small_id: smallId,
    price_per_one_million_compute_units: u64,
    max_num_compute_units: u64,
  }),
  NodeUnsubscribedFromTaskEvent: bcs.struct('NodeUnsubscribedFromTaskEvent', {
    task_small_id: smallId,
    node_small_id: smallId,
  }),
  TaskRegisteredEvent: bcs.struct('TaskRegisteredEvent', {
    task_id: id,
    task_small_id: smallId,
    role: bcs.struct('TaskRole', { inner: bcs.u16() }),
    model_name: bcs.option(ascii),
    security_level: bcs.struct('SecurityLevel', { inner: bcs.u16() }),
    minimum_reputation_score: bcs.option(bcs.u8()),
  }),
  TaskDeprecationEvent: bcs.struct('TaskDeprecationEvent', {
    task_id: id,
    task_small_id: smallId,
    epoch: u64,
  }),
  TaskRemovedEvent: bcs.struct('TaskRemovedEvent', {
    task_id: id,
    task_small_id: smallId,
    removed_at_epoch: u64,
  }),
  StackCreatedEvent: bcs.struct('StackCreatedEvent', {
    stack_id: id,
    stack_small_id: smallId,
    owner: id,
    task_small_id: smallId,
    selected_node_id: smallId,
    num_compute_units: u64,
    price_per_one_million_compute_units: u64,
  }),
  StackTrySettleEvent: bcs.struct('StackTrySettleEvent', {
    stack_small_id: smallId,
    selected_node_id: smallId,
    requested_attestation_nodes: bcs.vector(smallId),
    committed_stack_proof: bytes,
    stack_merkle_leaf: bytes,
    num_claimed_compute_units: u64,
  }),
  NewStackSettlementAttestationEvent: bcs.struct('NewStackSettlementAttestationEvent', {
    stack_small_id: smallId,
    attestation_node_id: smallId,
    committed_stack_proof: bytes,
    stack_merkle_leaf: bytes,
  }),
  StackSettlementTicketEvent: bcs.struct('StackSettlementTicketEvent', {
    stack_small_id: smallId,
    selected_node_id: smallId,
    num_claimed_compute_units: u64,
    requested_attestation_nodes: bcs.vector(smallId),
    dispute_settled_at_epoch: u64,
    committed_stack_proof: bytes,
  }),
  StackSettlementTicketClaimedEvent: bcs.struct('StackSettlementTicketClaimedEvent', {
    stack_small_id: smallId,
    selected_node_id: smallId,
    attestation_nodes: bcs.vector(smallId),
    num_claimed_compute_units: u64,
    user_refund_amount: u64,
  }),
  StackAttestationDisputeEvent: bcs.struct('StackAttestationDisputeEvent', {
    stack_small_id: smallId,
    attestation_commitment: bytes,
    attestation_node_id: smallId,
    original_node_id: smallId,
    original_commitment: bytes,
  }),
  ClaimedStackEvent: bcs.struct('ClaimedStackEvent', {
    stack_small_id: smallId,
    selected_node_id: smallId,
    num_claimed_compute_units: u64,
    user_refund_amount: u64,
  }),
};

/** The struct name of a Move type tag: `0x…::db::StackCreatedEvent` gives StackCreatedEvent. */
export function structName(type: string): string {
  const base = type.split('<', 1)[0] ?? type;
  return base.slice(base.lastIndexOf('::') + 2);
}

/**
 * An event's parsedJson in JSON-RPC form, from its BCS contents: undefined when the event is not a db
 * event this table knows, or when the bytes do not match its layout (a deployment older than the table).
 */
export function parsedJsonFromBcs(type: string, contents: Uint8Array): Record<string, unknown> | undefined {
  const layout = Object.hasOwn(DB_EVENT_LAYOUTS, structName(type))
    ? DB_EVENT_LAYOUTS[structName(type)]
    : undefined;
  if (!layout || !/::db::/.test(type)) return undefined;
  try {
    const reader = new BcsReader(contents);
    const value = layout.read(reader);
    // A layout that consumed fewer bytes than the event holds is not this event's layout. The reader's
    // position says how many it consumed (a field its types call private); serializing the value again to
    // measure it, the fallback, cost more than parsing it.
    const consumed = (reader as unknown as { bytePosition?: unknown }).bytePosition;
    const length =
      typeof consumed === 'number' ? consumed : layout.serialize(value as never).toBytes().length;
    return length === contents.length ? value : undefined;
  } catch {
    return undefined;
  }
}
