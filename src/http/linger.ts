import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * A lingering close, as nginx's: a request answered before its body was read (a 413, or a body whose
 * content type or JSON is refused) would otherwise close its connection with the rest of the body unread,
 * and the kernel then resets it, so a client still sending (Node's own fetch, say) meets EPIPE instead of
 * reading its answer. Fastify marks such answers `Connection: close`; instead the rest of the body is read
 * and dropped, up to LINGER_BYTES and within LINGER_MS, and the connection then serves the next request as
 * usual. A body beyond that bound, or that stalls, has its connection closed.
 */

/** The most of a refused body read and dropped before the connection is closed instead. */
export const LINGER_BYTES = 16 * 1024 * 1024;
/** How long the rest of a refused body may take to arrive. */
export const LINGER_MS = 5000;

/** Requests whose body was being read: an answer refusing one of them is the body's (not its head's). */
const reading = new WeakSet<object>();

export function installLingeringClose(app: FastifyInstance): void {
  app.addHook('preParsing', (request, _reply, payload, done) => {
    reading.add(request);
    done(null, payload);
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const req = request.raw;
    // A refused head (no Host, a malformed header) keeps its close: what follows it cannot be trusted.
    const refusedBody = reading.has(request) && reply.statusCode >= 400;
    if (refusedBody && unread(req) && reply.getHeader('connection') === 'close') {
      reply.removeHeader('connection');
      drain(req);
    }
    done(null, payload);
  });
}

/** Whether the request's body is still arriving on a real connection (not one app.inject makes up). */
function unread(req: IncomingMessage): boolean {
  return !req.complete && !req.readableEnded && !req.destroyed && typeof req.socket?.destroy === 'function';
}

/** Reads and drops the rest of the request's body; closes the connection past the bound or the time. */
function drain(req: IncomingMessage): void {
  const socket = req.socket;
  let read = 0;
  const close = () => socket.destroy();
  const timer = setTimeout(close, LINGER_MS);
  timer.unref();
  const onData = (chunk: Buffer) => {
    read += chunk.length;
    if (read > LINGER_BYTES) close();
  };
  req.on('data', onData);
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}
