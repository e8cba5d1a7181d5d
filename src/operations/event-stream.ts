import type { Logger } from 'pino';
import type { U64 } from '../internal/u64.ts';
import type { NodeEventRow, NodeEventType } from '../store/node-events.ts';
import type { NodeEventStore } from '../store/store.ts';

/**
 * The live side of the node events (GET /events): one reader follows the store's event sequence and hands
 * each new event to the streams that want it. A stream first catches up from the store (after the id it
 * resumes from, in pages, as fast as its client reads), then joins the live feed. What one stream may hold
 * unsent is bounded: a client that does not read gets a final event saying so, and is closed; it resumes
 * with its last id, losing nothing that the retention kept.
 */

/** What a stream wants: the events of these nodes (null: every node's) and of these types (null: all). */
export interface StreamFilter {
  nodes: readonly U64[] | null;
  types: readonly NodeEventType[] | null;
}

/** Where a stream's frames go: the HTTP response, in Server-Sent Events framing. */
export interface StreamSink {
  /** Writes a frame; answers how many bytes are waiting to be sent. */
  write(frame: string): number;
  /** Resolves once the bytes waiting have been sent (or the client went away). */
  drained(): Promise<void>;
  /** Ends the response. */
  end(): void;
}

export interface EventHubSettings {
  /** Events older than this are pruned (ms). */
  retentionMs: number;
  /** At most this many events are kept. */
  retentionRows: number;
  /** The most bytes a stream may hold unsent before it is closed. */
  maxBufferBytes: number;
  /** How often the store is asked for events no notification announced (another process's). */
  pollMs: number;
}

export const DEFAULT_HUB_SETTINGS: EventHubSettings = {
  retentionMs: 7 * 24 * 3600 * 1000,
  // About 1.1 GB of the operator's events (some 220 bytes a row): 7 days of a node with 1/200 of a
  // network at 1,000 events/s (6.5 a second of its own); docs/NODE-EVENTS.md, "Whose events".
  retentionRows: 5_000_000,
  maxBufferBytes: 1024 * 1024,
  pollMs: 1000,
};

const PAGE = 500;
const PRUNE_EVERY_MS = 3600 * 1000;

/** One event's JSON, as GET /events and the webhooks carry it: id, at, type, node_small_id, then its fields. */
export function eventJson(row: Pick<NodeEventRow, 'id' | 'at' | 'type' | 'node_small_id' | 'data'>): string {
  const head = `{"id":${row.id},"at":"${new Date(row.at).toISOString()}","type":"${row.type}","node_small_id":${row.node_small_id === null ? 'null' : String(row.node_small_id)}`;
  return row.data === '{}' ? `${head}}` : `${head},${row.data.slice(1)}`;
}

/** One event as a Server-Sent Events frame: its id, its type as the event name, its JSON as the data. */
export function frameOf(row: NodeEventRow): string {
  return `id: ${row.id}\nevent: ${row.type}\ndata: ${eventJson(row)}\n\n`;
}

/** A frame that is not one of the recorded events (no id: a client's last id stays its last event's). */
export function controlFrame(event: string, data: Record<string, unknown>): string {
  return `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;
}

function matches(filter: StreamFilter, row: NodeEventRow): boolean {
  if (filter.types !== null && !filter.types.includes(row.type)) return false;
  if (filter.nodes === null || row.node_small_id === null) return true;
  const node = String(row.node_small_id);
  const other = row.other_node_small_id === null ? undefined : String(row.other_node_small_id);
  return filter.nodes.some((n) => String(n) === node || String(n) === other);
}

class Stream {
  readonly filter: StreamFilter;
  readonly sink: StreamSink;
  lastId: number;
  live = false;
  closed = false;

  constructor(filter: StreamFilter, sink: StreamSink, after: number) {
    this.filter = filter;
    this.sink = sink;
    this.lastId = after;
  }
}

export class EventHub {
  readonly #store: NodeEventStore;
  readonly #log: Logger;
  readonly #settings: EventHubSettings;
  readonly #streams = new Set<Stream>();
  /** The newest event handed to the live streams. */
  #head = 0;
  #reading: Promise<void> | undefined;
  #again = false;
  #stop: (() => void) | undefined;
  #timers: NodeJS.Timeout[] = [];
  #started: Promise<void> | undefined;

  constructor(deps: { store: NodeEventStore; log: Logger; settings?: Partial<EventHubSettings> }) {
    this.#store = deps.store;
    this.#log = deps.log;
    this.#settings = { ...DEFAULT_HUB_SETTINGS, ...deps.settings };
  }

  /** Starts following the store: its notifications, a slow poll for what they miss, the pruning. */
  start(): Promise<void> {
    this.#started ??= (async () => {
      this.#head = (await this.#store.nodeEventBounds()).newest;
      this.#stop = this.#store.onNodeEvents(() => this.#wake());
      const poll = setInterval(() => this.#wake(), this.#settings.pollMs);
      const prune = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
      poll.unref();
      prune.unref();
      this.#timers = [poll, prune];
      await this.prune();
    })();
    return this.#started;
  }

  /** Deletes the events past the retention. */
  async prune(): Promise<void> {
    try {
      const gone = await this.#store.pruneNodeEvents(
        Date.now() - this.#settings.retentionMs,
        this.#settings.retentionRows,
      );
      if (gone > 0) this.#log.info({ pruned: gone }, 'node events past the retention pruned');
    } catch (error) {
      this.#log.warn({ err: error }, 'could not prune node events');
    }
  }

  /** The number of open streams. */
  get streams(): number {
    return this.#streams.size;
  }

  /** Where a stream that starts with the newest `count` events of its filter resumes: -1 when none match. */
  async recentStart(filter: StreamFilter, count: number): Promise<number> {
    return (await this.#store.recentNodeEventsStart({ ...filter, count })) ?? -1;
  }

  /**
   * Opens a stream after the event `after` (0: from the oldest kept; negative: only events to come).
   * Frames go to the sink until the client goes away (close()) or reads too slowly. Resolves once open.
   */
  async open(filter: StreamFilter, after: number, sink: StreamSink): Promise<{ close: () => void }> {
    await this.start();
    const bounds = await this.#store.nodeEventBounds();
    // An id beyond the newest comes from another store (or one since reset): start from what exists.
    const stream = new Stream(filter, sink, after < 0 || after > bounds.newest ? bounds.newest : after);
    const oldest = bounds.oldest ?? bounds.newest + 1;
    if (after > 0 && after + 1 < oldest) {
      sink.write(
        controlFrame('events_lost', {
          after,
          oldest_available: bounds.oldest,
          detail: `events ${after + 1} to ${oldest - 1} are past the retention and gone; re-read the state, then follow from here`,
        }),
      );
    }
    this.#streams.add(stream);
    void this.#catchUp(stream);
    return {
      close: () => {
        stream.closed = true;
        this.#streams.delete(stream);
      },
    };
  }

  /** Reads the stream's backlog from the store, page by page at the client's pace, then makes it live. */
  async #catchUp(stream: Stream): Promise<void> {
    try {
      for (;;) {
        if (stream.closed) return;
        const rows = await this.#store.listNodeEvents({
          after: stream.lastId,
          limit: PAGE,
          nodes: stream.filter.nodes,
          types: stream.filter.types,
        });
        for (const row of rows) {
          stream.sink.write(frameOf(row));
          stream.lastId = row.id;
        }
        if (rows.length < PAGE) {
          // Caught up with the store. The hub may have handed out newer events meanwhile: read again
          // unless this stream has seen everything the hub has (nothing can come in between: no await).
          if (stream.lastId >= this.#head || rows.length === 0) {
            stream.lastId = Math.max(stream.lastId, this.#head);
            stream.live = true;
            return;
          }
          continue;
        }
        await stream.sink.drained();
      }
    } catch (error) {
      this.#log.warn({ err: error }, 'event stream catch-up failed; closing it');
      this.#close(stream);
    }
  }

  #wake(): void {
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = this.#read().finally(() => {
      this.#reading = undefined;
      if (this.#again) {
        this.#again = false;
        this.#wake();
      }
    });
  }

  /** Hands every event after the head to the live streams that want it. */
  async #read(): Promise<void> {
    try {
      for (;;) {
        if (this.#streams.size === 0) {
          // Nobody to hand events to: move the head past them without reading them. A stream opened
          // meanwhile reads its backlog from the store itself (#catchUp).
          this.#head = Math.max(this.#head, (await this.#store.nodeEventBounds()).newest);
          return;
        }
        const rows = await this.#store.listNodeEvents({
          after: this.#head,
          limit: PAGE,
          nodes: null,
          types: null,
        });
        for (const row of rows) {
          let frame: string | undefined;
          for (const stream of this.#streams) {
            if (!stream.live || row.id <= stream.lastId) continue;
            stream.lastId = row.id;
            if (!matches(stream.filter, row)) continue;
            frame ??= frameOf(row);
            if (stream.sink.write(frame) > this.#settings.maxBufferBytes) this.#overflow(stream);
          }
          this.#head = row.id;
        }
        if (rows.length < PAGE) return;
      }
    } catch (error) {
      this.#log.warn({ err: error }, 'could not read node events; the next notification retries');
    }
  }

  /** The client does not read: a last frame says so, and the stream ends. */
  #overflow(stream: Stream): void {
    stream.sink.write(
      controlFrame('overflow', {
        last_id: stream.lastId,
        detail: `this client read too slowly: more than ${this.#settings.maxBufferBytes} bytes were waiting; reconnect with Last-Event-ID ${stream.lastId} to resume`,
      }),
    );
    this.#close(stream);
  }

  #close(stream: Stream): void {
    stream.closed = true;
    this.#streams.delete(stream);
    stream.sink.end();
  }

  /** Ends every stream (the daemon is stopping) and stops following the store. */
  close(): void {
    this.#stop?.();
    for (const timer of this.#timers) clearInterval(timer);
    for (const stream of [...this.#streams]) this.#close(stream);
  }
}
