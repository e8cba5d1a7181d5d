import type { SuiClientTypes } from '@mysten/sui/client';
import { GrpcTypes } from '@mysten/sui/grpc';
import { normalizeStructTag, normalizeSuiAddress, normalizeSuiObjectId } from '@mysten/sui/utils';
import { toU64, type U64 } from '../../internal/u64.ts';
import { type ChainTicket, ChainUnavailableError } from '../chain.ts';
import { parsedJsonFromBcs } from './event-bcs.ts';

/**
 * What the fullnode's gRPC answers hold, in the daemon's shapes: protobuf values and timestamps as plain
 * JSON and milliseconds, events as the SuiEvent JSON the indexer decodes, a ticket object as a ChainTicket,
 * and the owned objects a transaction's effects left with an address.
 */

type ProtoValue = NonNullable<GrpcTypes.Event['json']>;

/** A protobuf Timestamp in milliseconds since the epoch. */
export function timestampMs(timestamp: { seconds: bigint; nanos: number } | undefined): number | undefined {
  if (!timestamp) return undefined;
  return Number(timestamp.seconds) * 1000 + Math.floor(timestamp.nanos / 1_000_000);
}

/** google.protobuf.Value to plain JSON. */
export function protoValueToJson(value: ProtoValue | undefined): unknown {
  if (!value) return undefined;
  const kind = value.kind;
  switch (kind.oneofKind) {
    case 'nullValue':
      return null;
    case 'numberValue':
      return kind.numberValue;
    case 'stringValue':
      return kind.stringValue;
    case 'boolValue':
      return kind.boolValue;
    case 'structValue':
      return Object.fromEntries(
        Object.entries(kind.structValue.fields).map(([k, v]) => [k, protoValueToJson(v)]),
      );
    case 'listValue':
      return kind.listValue.values.map((v) => protoValueToJson(v));
    default:
      return null;
  }
}

/** A vector<NodeSmallId> in the gRPC JSON rendering ([{ inner }]) as small ids. */
export function smallIds(value: unknown): U64[] {
  if (!Array.isArray(value)) return [];
  return value
    .map((v) => toU64((v as { inner?: unknown } | null)?.inner))
    .filter((v): v is U64 => v !== undefined);
}

/** A StackSettlementTicket object's JSON (the gRPC rendering) as the daemon's ChainTicket. */
export function parseTicket(json: Record<string, unknown>, id: string): ChainTicket {
  const stack = toU64((json.stack_small_id as { inner?: unknown } | undefined)?.inner);
  const node = toU64((json.selected_node_id as { inner?: unknown } | undefined)?.inner);
  const epoch = toU64(json.dispute_settled_at_epoch);
  if (stack === undefined || node === undefined || epoch === undefined) {
    throw new ChainUnavailableError(`object ${id} is not a StackSettlementTicket`);
  }
  return {
    stack_small_id: stack,
    selected_node_id: node,
    dispute_settled_at_epoch: epoch,
    is_in_dispute: json.is_in_dispute === true,
    requested_attestation_nodes: smallIds(json.requested_attestation_nodes),
    already_attested_nodes: smallIds(json.already_attested_nodes),
  };
}

/**
 * An event of the event stream (event-pages.ts) as SuiEvent JSON: `parsed` is its BCS contents decoded
 * (parsedJsonFromBcs), or undefined when they do not decode and the fullnode's JSON rendering stands in.
 */
export function listedEventJson(
  event: SuiClientTypes.EventEntry,
  parsed: Record<string, unknown> | undefined,
): Record<string, unknown> {
  return {
    id: { txDigest: event.transactionDigest, eventSeq: String(event.eventIndex) },
    packageId: event.packageId,
    transactionModule: event.module,
    sender: event.sender,
    type: event.eventType,
    parsedJson: parsed ?? event.json,
  };
}

/**
 * An event of an executed transaction as SuiEvent JSON, the same as the event stream will deliver it (plus
 * the transaction's time): the digest, index and sender fill what the answer leaves out.
 */
export function executedEventJson(
  event: GrpcTypes.Event,
  at: { digest: string; index: number; timeMs: number | undefined; sender: string },
): Record<string, unknown> {
  const type = normalizeStructTag(event.eventType ?? '');
  const json: Record<string, unknown> = {
    id: { txDigest: event.transactionDigest ?? at.digest, eventSeq: String(event.eventIndex ?? at.index) },
    packageId: normalizeSuiAddress(event.packageId ?? '0x0'),
    transactionModule: event.module ?? '',
    sender: normalizeSuiAddress(event.sender ?? at.sender),
    type,
    parsedJson:
      parsedJsonFromBcs(type, event.contents?.value ?? new Uint8Array()) ??
      protoValueToJson(event.json) ??
      null,
  };
  if (at.timeMs !== undefined) json.timestampMs = String(at.timeMs);
  return json;
}

/** An object a transaction changed: its new ref when the address still owns it, else undefined. */
export interface OwnedChange {
  objectId: string;
  ref: { objectId: string; version: string; digest: string } | undefined;
}

/** The objects the effects changed, each with its new ref when `owner` owns it afterwards. */
export function ownedChanges(effects: GrpcTypes.TransactionEffects, owner: string): OwnedChange[] {
  const out: OwnedChange[] = [];
  for (const change of effects.changedObjects) {
    if (!change.objectId) continue;
    const objectId = normalizeSuiObjectId(change.objectId);
    const output = change.outputOwner;
    const ours =
      change.outputState === GrpcTypes.ChangedObject_OutputObjectState.OBJECT_WRITE &&
      output?.kind === GrpcTypes.Owner_OwnerKind.ADDRESS &&
      output.address !== undefined &&
      normalizeSuiAddress(output.address) === owner;
    out.push({
      objectId,
      ref: ours
        ? { objectId, version: String(change.outputVersion ?? 0n), digest: change.outputDigest ?? '' }
        : undefined,
    });
  }
  return out;
}
