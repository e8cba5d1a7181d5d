import type { SuiGrpcClient } from '@mysten/sui/grpc';
import { normalizeU64, type U64 } from '../../internal/u64.ts';
import type { ProtocolParameters } from '../../protocol/constants.ts';
import { ChainUnavailableError, type EventPage, type RawEvent } from '../chain.ts';
import type { FullnodeConnection } from './connection.ts';
import { EpochIndex, type Head } from './epochs.ts';
import { parsedJsonFromBcs } from './event-bcs.ts';
import { listDbEventsPage } from './event-pages.ts';
import { listedEventJson, timestampMs } from './proto-json.ts';

/**
 * The Sui adapter's reading side: the db module's events a page at a time from the indexer's opaque cursor
 * (the gRPC watermark), each with its checkpoint's epoch, and how far that read is behind the chain head.
 * The writing side (building, signing, executing) is sui-network.ts; the two share the client, the
 * connection check and the deadline of a read.
 */

/**
 * Events asked for a page (a fullnode clamps a larger limit to its own maximum). 200, not the SDK's 50:
 * each ListEvents call costs the daemon about half a millisecond in fetch and gRPC-web besides its events,
 * and at a live chain's 1,000 events/s 50 a page made 20 calls a second. Larger pages once held the loop
 * while the SDK decoded them (tens of ms at 1,000 with the text form); with 200 binary frames the stream's
 * read p99 did not grow (DECISIONS.md, "The Sui event source asks for 200 events a page").
 */
export const EVENT_PAGE_SIZE = 200;
const LAG_TTL_MS = 2_000;
/** How old the chain head may be when a page says the current epoch (an epoch lasts about a day). */
const PAGE_EPOCH_TTL_MS = 5_000;

/** How far the event source is behind the chain, for /ready and /status. */
export interface SuiIndexerLag {
  /** Whether the last page read reached the end of the db module's events. */
  caught_up: boolean;
  /**
   * Seconds of chain time the source is behind: when caught up, the age of that last read; otherwise the
   * head checkpoint's time minus that of the checkpoint of the last event read (null when not known yet).
   */
  seconds: number | null;
  /** Checkpoints between the last event read and the chain head (null when caught up or not known). */
  checkpoints: number | null;
  head_checkpoint: U64;
}

/** A read call with a deadline, failing with ChainUnavailableError that names what was being read. */
export type FullnodeRead = <T>(what: string, call: (signal: AbortSignal) => PromiseLike<T>) => Promise<T>;

export interface SuiEventReaderInit {
  client: SuiGrpcClient;
  connection: FullnodeConnection;
  read: FullnodeRead;
  /** The protocol parameters each page carries (the AtomaDb object, cached by the adapter). */
  parameters: () => Promise<ProtocolParameters>;
  /** Told each chain head read: a new epoch has a new reference gas price. */
  onHead: (head: Head) => void;
}

export class SuiEventReader {
  readonly #client: SuiGrpcClient;
  readonly #connection: FullnodeConnection;
  readonly #read: FullnodeRead;
  readonly #parameters: () => Promise<ProtocolParameters>;
  readonly #onHead: (head: Head) => void;
  readonly #epochs: EpochIndex;
  readonly #checkpointTimes = new Map<bigint, number>();
  #lastRead: { at: number; caughtUp: boolean; checkpoint: bigint | undefined } | undefined;
  #lag: { value: SuiIndexerLag; at: number } | undefined;

  constructor(init: SuiEventReaderInit) {
    this.#client = init.client;
    this.#connection = init.connection;
    this.#read = init.read;
    this.#parameters = init.parameters;
    this.#onHead = init.onHead;
    this.#epochs = new EpochIndex({
      head: () => this.#readHead(),
      epochRange: (epoch) => this.#epochRange(epoch),
      checkpointEpoch: (sequence) => this.#checkpointEpoch(sequence),
    });
  }

  /**
   * How far the event source's last read is behind the chain head; undefined before its first read.
   * Measures the source's read position, which the indexer commits right after reading.
   */
  async lag(): Promise<SuiIndexerLag | undefined> {
    const last = this.#lastRead;
    if (!last) return undefined;
    if (this.#lag && Date.now() - this.#lag.at < LAG_TTL_MS) return this.#lag.value;
    const { checkpoint: head, timestampMs: headTime } = await this.#epochs.head(LAG_TTL_MS);
    const headMs = headTime ?? Date.now();
    let value: SuiIndexerLag;
    if (last.caughtUp) {
      value = {
        caught_up: true,
        seconds: Math.max(0, (Math.min(Date.now(), headMs) - last.at) / 1000),
        checkpoints: null,
        head_checkpoint: normalizeU64(head),
      };
    } else if (last.checkpoint === undefined) {
      value = { caught_up: false, seconds: null, checkpoints: null, head_checkpoint: normalizeU64(head) };
    } else {
      const eventMs = await this.#checkpointTime(last.checkpoint);
      value = {
        caught_up: false,
        seconds: eventMs === undefined ? null : Math.max(0, (headMs - eventMs) / 1000),
        checkpoints: head > last.checkpoint ? Number(head - last.checkpoint) : 0,
        head_checkpoint: normalizeU64(head),
      };
    }
    this.#lag = { value, at: Date.now() };
    return value;
  }

  async readPage(cursor: string | null): Promise<EventPage> {
    // The indexer backs off between failed reads: each read may check the connection again.
    const { typePackage } = await this.#connection.get(true);
    // Events whose type the db module declares: the same filter before and after a package upgrade. Their
    // JSON rendering is asked for only when an event's BCS contents do not decode (event-pages.ts).
    const list = (json: boolean) =>
      this.#read('list the db events', (signal) =>
        listDbEventsPage(this.#client, { typePackage, after: cursor, limit: EVENT_PAGE_SIZE, json, signal }),
      );
    const parse = (listed: Awaited<ReturnType<typeof list>>) =>
      listed.events.map((event) => parsedJsonFromBcs(event.eventType, event.bcs));
    let page = await list(false);
    let parsed = parse(page);
    if (parsed.includes(undefined)) {
      page = await list(true);
      parsed = parse(page);
    }
    const checkpointOf = (event: (typeof page.events)[number]) =>
      event.checkpoint === null ? undefined : BigInt(event.checkpoint);
    const epochs = await this.#epochs.epochsOf(
      page.events.map(checkpointOf).filter((c): c is bigint => c !== undefined),
    );
    let current = (await this.#epochs.head(PAGE_EPOCH_TTL_MS)).epoch;
    const events = page.events.map((event, i): RawEvent => {
      const checkpoint = checkpointOf(event);
      const epoch = checkpoint === undefined ? undefined : epochs.get(checkpoint);
      if (epoch !== undefined && epoch > current) current = epoch;
      return {
        position: `sui:${event.transactionDigest}:${event.eventIndex}`,
        raw: listedEventJson(event, parsed[i]),
        epoch: epoch === undefined ? undefined : normalizeU64(epoch),
        cursor: page.cursors[i] ?? undefined,
      };
    });
    const last = page.events.at(-1)?.checkpoint;
    this.#lag = undefined;
    this.#lastRead = {
      at: Date.now(),
      caughtUp: !page.hasNextPage,
      checkpoint: last === null || last === undefined ? this.#lastRead?.checkpoint : BigInt(last),
    };
    return {
      events,
      nextCursor: page.endCursor ?? cursor,
      hasMore: page.hasNextPage,
      epoch: normalizeU64(current),
      parameters: await this.#parameters(),
    };
  }

  // --- the ledger: the head, epochs and checkpoints ------------------------------------------------------------

  /** GetServiceInfo: the latest checkpoint and its epoch. */
  async #readHead(): Promise<Head> {
    const { response } = await this.#read('read the chain head', (signal) =>
      this.#client.ledgerService.getServiceInfo({}, { abort: signal }),
    );
    if (response.epoch === undefined || response.checkpointHeight === undefined)
      throw new ChainUnavailableError('the fullnode did not report its latest checkpoint and epoch');
    const head = {
      epoch: response.epoch,
      checkpoint: response.checkpointHeight,
      timestampMs: timestampMs(response.timestamp),
    };
    this.#onHead(head);
    return head;
  }

  async #epochRange(epoch: bigint): Promise<{ first: bigint | undefined; last: bigint | undefined }> {
    const { response } = await this.#read(`read epoch ${epoch}`, (signal) =>
      this.#client.ledgerService.getEpoch(
        { epoch, readMask: { paths: ['epoch', 'first_checkpoint', 'last_checkpoint'] } },
        { abort: signal },
      ),
    );
    return { first: response.epoch?.firstCheckpoint, last: response.epoch?.lastCheckpoint };
  }

  async #checkpointEpoch(sequence: bigint): Promise<bigint> {
    const { response } = await this.#read(`read checkpoint ${sequence}`, (signal) =>
      this.#client.ledgerService.getCheckpoint(
        {
          checkpointId: { oneofKind: 'sequenceNumber', sequenceNumber: sequence },
          readMask: { paths: ['summary.epoch'] },
        },
        { abort: signal },
      ),
    );
    const epoch = response.checkpoint?.summary?.epoch;
    if (epoch === undefined)
      throw new ChainUnavailableError(`the fullnode did not report the epoch of checkpoint ${sequence}`);
    return epoch;
  }

  async #checkpointTime(sequence: bigint): Promise<number | undefined> {
    const known = this.#checkpointTimes.get(sequence);
    if (known !== undefined) return known;
    const { response } = await this.#read('read a checkpoint', (signal) =>
      this.#client.ledgerService.getCheckpoint(
        {
          checkpointId: { oneofKind: 'sequenceNumber', sequenceNumber: sequence },
          readMask: { paths: ['summary.timestamp'] },
        },
        { abort: signal },
      ),
    );
    const ms = timestampMs(response.checkpoint?.summary?.timestamp);
    if (ms !== undefined) {
      if (this.#checkpointTimes.size > 64) this.#checkpointTimes.clear();
      this.#checkpointTimes.set(sequence, ms);
    }
    return ms;
  }
}
