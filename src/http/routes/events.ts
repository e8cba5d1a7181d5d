import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_SMALL_ID } from '../../internal/formats.ts';
import type { U64 } from '../../internal/u64.ts';
import type { EventHub, StreamFilter } from '../../operations/event-stream.ts';
import { ProblemError, refuse } from '../../problems/catalog.ts';
import {
  EVENTS_DESCRIPTION,
  EventsQuerySchema,
  NODE_EVENT_TYPES,
  type NodeEventType,
} from '../../schemas/events.ts';
import { problems } from '../openapi.ts';

export interface EventRoutesOptions {
  hub: EventHub;
  /** The signer's nodes (the default filter); null where there is no signer: every node. */
  ownNodes: () => Promise<U64[] | null>;
  /** Frees the request's slot in the in-flight limit: a stream lives for hours, not a request's time. */
  release: (request: FastifyRequest) => void;
  /** At most this many streams at once. */
  maxStreams?: number;
  /** A comment line this often keeps proxies from closing an idle stream. */
  heartbeatMs?: number;
}

const MAX_STREAMS = 64;
const HEARTBEAT_MS = 15_000;
const ID = /^[0-9]{1,15}$/;

/** GET /events: the node events as Server-Sent Events, resumable (operations/event-stream.ts). */
export const eventRoutes: FastifyPluginAsyncTypebox<EventRoutesOptions> = async (app, options) => {
  const { hub } = options;
  const maxStreams = options.maxStreams ?? MAX_STREAMS;
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
  /** The open streams of this app: ended when it closes, so a shutdown does not wait on them. */
  const open = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of [...open]) end();
  });

  app.get('/events', {
    schema: {
      tags: ['events'],
      summary: 'A live stream of what happens to the node (Server-Sent Events), resumable with Last-Event-ID',
      description: EVENTS_DESCRIPTION,
      querystring: EventsQuerySchema,
      headers: Type.Object({
        'last-event-id': Type.Optional(
          Type.String({ description: 'The id of the last event received: the stream resumes after it' }),
        ),
      }),
      response: {
        200: {
          description: 'The stream: one frame per event (see the description)',
          content: { 'text/event-stream': { schema: Type.String() } },
        },
        ...problems('invalid_parameter', 'overloaded', 'store_unavailable'),
      },
    },
    handler: async (request, reply) => {
      const filter: StreamFilter = {
        nodes: await nodesOf(request.query.node_id, options.ownNodes),
        types: typesOf(request.query.types),
      };
      let after = resumeAfter(request.headers['last-event-id'], request.query.after);
      // A fresh client (not resuming) may ask for the newest events first, then the live ones.
      if (after < 0 && request.query.last !== undefined) {
        after = await hub.recentStart(filter, lastCount(request.query.last));
      }
      if (open.size >= maxStreams) {
        throw new ProblemError(
          'overloaded',
          `${open.size} event streams are open, the most this daemon serves at once; close one, or retry in a moment`,
          { retryAfterSeconds: 5 },
        );
      }
      const res = reply.raw;
      reply.hijack();
      res.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        // A stream is never followed by another request on its connection: it closes when the stream ends.
        connection: 'close',
      });
      if (request.method === 'HEAD') {
        // The stream's head and no stream: Node sends no head for HEAD until the response ends.
        options.release(request);
        res.end();
        return;
      }
      res.write(`retry: 2000\n: node-daemon events${after > 0 ? ` after ${after}` : ''}\n\n`);
      options.release(request);
      const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), heartbeatMs);
      heartbeat.unref();
      let stream: { close: () => void } | undefined;
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        clearInterval(heartbeat);
        stream?.close();
        open.delete(end);
        res.end();
      };
      open.add(end);
      // The response closes when the client goes away (a request's own 'close' comes once it is read).
      res.on('close', end);
      stream = await hub.open(filter, after, {
        write: (frame) => {
          if (!ended) res.write(frame);
          return res.writableLength;
        },
        drained: () =>
          ended || res.writableLength === 0
            ? Promise.resolve()
            : new Promise<void>((resolve) => {
                res.once('drain', resolve);
                res.once('close', resolve);
              }),
        end,
      });
      if (ended) stream.close();
    },
  });
};

async function nodesOf(raw: string | undefined, own: () => Promise<U64[] | null>): Promise<U64[] | null> {
  if (raw === undefined) return own();
  if (raw === 'all') return null;
  const parts = raw.split(',');
  const ids: U64[] = [];
  for (const part of parts) {
    if (!ID.test(part) || Number(part) > MAX_SMALL_ID) {
      throw refuse(
        'invalid_parameter',
        `node_id must be small ids separated by commas (for example 4 or 4,7) or all; got ${JSON.stringify(raw)}`,
        { parameter: 'node_id' },
      );
    }
    ids.push(Number(part));
  }
  return ids;
}

function typesOf(raw: string | undefined): NodeEventType[] | null {
  if (raw === undefined) return null;
  const types = raw.split(',');
  const unknown = types.filter((t) => !(NODE_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) {
    throw refuse(
      'invalid_parameter',
      `unknown event type ${unknown.map((t) => JSON.stringify(t)).join(', ')}; the types are ${NODE_EVENT_TYPES.join(', ')}`,
      { parameter: 'types' },
    );
  }
  return types as NodeEventType[];
}

/** The most events ?last= asks for: what a console or a terminal shows at once. */
export const MAX_LAST = 1000;

function lastCount(raw: string): number {
  const count = Number(raw);
  if (!/^[0-9]{1,7}$/.test(raw) || count < 1 || count > MAX_LAST) {
    throw refuse(
      'invalid_parameter',
      `last must be a count of events from 1 to ${MAX_LAST}; got ${JSON.stringify(raw)}`,
      {
        parameter: 'last',
      },
    );
  }
  return count;
}

function resumeAfter(header: string | undefined, query: string | undefined): number {
  if (header !== undefined && header !== '') {
    if (!ID.test(header)) {
      throw refuse(
        'invalid_parameter',
        `Last-Event-ID must be an event id (digits); got ${JSON.stringify(header)}`,
        {
          parameter: 'last-event-id',
        },
      );
    }
    return Number(header);
  }
  return query === undefined ? -1 : Number(query);
}
