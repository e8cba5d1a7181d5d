import type { SuiClientTypes } from '@mysten/sui/client';
import { GrpcTypes, type SuiGrpcClient } from '@mysten/sui/grpc';
import { fromBase64, normalizeStructTag, normalizeSuiAddress, toBase64 } from '@mysten/sui/utils';
import { protoValueToJson } from './proto-json.ts';

/**
 * One page of a package's db events from LedgerService.ListEvents, read as the SDK's `listEvents` reads
 * it (the same request, cursor and end-of-page rules), with one difference: the event's JSON rendering is
 * asked for only when `json` is set.
 *
 * The daemon decodes every db event from its BCS contents (event-bcs.ts). The JSON rendering is a
 * google.protobuf.Value tree that protobuf-ts decodes by reflection, field by field: at a live chain's
 * 1,000 events/s it was the indexer's largest cost, about a sixth of the daemon's core, and it was thrown
 * away. The caller reads a page again with `json` when an event's contents do not decode.
 */
export async function listDbEventsPage(
  client: SuiGrpcClient,
  options: {
    typePackage: string;
    after: string | null;
    limit: number;
    json: boolean;
    signal: AbortSignal;
  },
): Promise<{
  events: SuiClientTypes.EventEntry[];
  /** The resume cursor after each event (the watermark of its frame), in the order of the events. */
  cursors: (string | null)[];
  hasNextPage: boolean;
  endCursor: string | null;
}> {
  const call = client.ledgerService.listEvents(
    {
      readMask: { paths: options.json ? [...EVENT_FIELDS, 'json'] : EVENT_FIELDS },
      filter: {
        terms: [
          {
            literals: [
              {
                negated: false,
                predicate: {
                  oneofKind: 'eventType',
                  eventType: { eventType: `${normalizeSuiAddress(options.typePackage)}::db` },
                },
              },
            ],
          },
        ],
      },
      // One more than a page: an event past the page says there is a next one.
      options: {
        limit: options.limit + 1,
        ordering: GrpcTypes.Ordering.ASCENDING,
        after: options.after === null ? undefined : fromBase64(options.after),
      },
    },
    { abort: options.signal },
  );
  const events: SuiClientTypes.EventEntry[] = [];
  const cursors: (string | null)[] = [];
  let endCursor: string | null = null;
  let frontier: string | null = null;
  let end: GrpcTypes.QueryEnd | undefined;
  let lookahead = false;
  for await (const frame of call.responses) {
    if (frame.watermark?.cursor) frontier = toBase64(frame.watermark.cursor);
    const event = frame.event;
    if (event) {
      if (events.length >= options.limit) lookahead = true;
      else {
        endCursor = frontier;
        cursors.push(frontier);
        events.push({
          packageId: normalizeSuiAddress(event.packageId ?? ''),
          module: event.module ?? '',
          sender: normalizeSuiAddress(event.sender ?? ''),
          eventType: normalizeStructTag(event.eventType ?? ''),
          bcs: event.contents?.value ?? new Uint8Array(),
          json: (protoValueToJson(event.json) ?? null) as Record<string, unknown> | null,
          checkpoint: event.checkpoint?.toString() ?? null,
          transactionDigest: event.transactionDigest ?? '',
          eventIndex: event.eventIndex ?? 0,
        });
      }
    }
    if (frame.end) end = frame.end;
  }
  const hasNextPage =
    lookahead ||
    end?.reason === GrpcTypes.QueryEndReason.SCAN_LIMIT ||
    end?.reason === GrpcTypes.QueryEndReason.ITEM_LIMIT;
  // A page cut short by the node's limits (not by the event past it) goes on from how far it scanned.
  return {
    events,
    cursors,
    hasNextPage,
    endCursor: hasNextPage && !lookahead ? (frontier ?? endCursor) : endCursor,
  };
}

const EVENT_FIELDS = [
  'package_id',
  'module',
  'sender',
  'event_type',
  'contents',
  'checkpoint',
  'transaction_digest',
  'event_index',
];
