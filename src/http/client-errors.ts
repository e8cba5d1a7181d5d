import { randomUUID } from 'node:crypto';
import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  maxHeaderSize,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import FindMyWay from 'find-my-way';
import { stringifyJson } from '../internal/json.ts';
import type { Metrics } from '../internal/metrics.ts';
import { ERRORS, type ErrorCode } from '../problems/catalog.ts';
import { problemDocument, problemHeaders, type SendOptions } from './errors.ts';

/**
 * Requests that never reach a route: those Node's HTTP parser refuses (a malformed request line or
 * header, Content-Length with Transfer-Encoding, headers beyond the size limit), those that do not arrive
 * whole in time, and CONNECT. Node and Fastify answer them with a plain JSON body of their own, or not at
 * all; here they get the problem+json of every other error, written straight to the socket (there is no
 * request to answer through), and the connection closes, since what follows on it cannot be framed.
 */

/** The methods a path is matched against, to answer 405 with `Allow` (the daemon's routes use no others). */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/** A mirror of the route table: which methods a path takes, to tell 405 from 404. */
export class MethodTable {
  readonly #routes = FindMyWay({ ignoreTrailingSlash: true });
  /** The same routes without the router's limit on a parameter's length, to name the parameter past it. */
  readonly #unlimited = FindMyWay({ ignoreTrailingSlash: true, maxParamLength: Number.MAX_SAFE_INTEGER });
  readonly #any = new Set<string>();

  add(methods: string | string[], url: string): void {
    for (const method of [methods].flat().map((m) => m.toUpperCase() as (typeof METHODS)[number])) {
      this.#any.add(method);
      // With ignoreTrailingSlash, /a and /a/ are one route to the mirror too.
      if (!this.#routes.find(method, url)) this.#routes.on(method, url, () => undefined);
      if (!this.#unlimited.find(method, url)) this.#unlimited.on(method, url, () => undefined);
    }
  }

  /** The path parameter of the route `target` takes that is longer than `max` characters, if any. */
  longParameter(method: string, target: string, max: number): { name: string; length: number } | undefined {
    const path = target.split('?')[0] ?? target;
    const found = this.#unlimited.find(method.toUpperCase() as (typeof METHODS)[number], path);
    for (const [name, value] of Object.entries(found?.params ?? {})) {
      if (typeof value === 'string' && value.length > max) return { name, length: value.length };
    }
    return undefined;
  }

  /** The methods a path takes; for a target that is no path (`*`, CONNECT's host:port), those of any route. */
  allowed(target: string): string[] {
    if (!target.startsWith('/')) return METHODS.filter((method) => this.#any.has(method));
    return METHODS.filter((method) => this.#routes.find(method, target) !== null);
  }
}

/** A problem to answer, before it is tied to a request. */
export interface PendingProblem {
  code: ErrorCode;
  detail: string;
  options?: SendOptions;
}

/** 405 with Allow when the target exists for other methods, else 404: for any method the daemon does not take. */
export function methodProblem(table: MethodTable, method: string, target: string): PendingProblem {
  // The path of an absolute-form target (http://host/path) is what is routed.
  const path = target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '').split('?')[0] || '/';
  const allowed = table.allowed(path);
  if (allowed.length === 0)
    return { code: 'not_found', detail: `no endpoint at ${path}; see /docs for the API` };
  const options = { headers: { allow: allowed.join(', ') } };
  if (!path.startsWith('/')) {
    const why =
      method === 'CONNECT'
        ? 'CONNECT is not supported: the daemon is not a proxy'
        : `${method} ${path} is not supported`;
    const detail = `${why}; send ${allowed.join(', ')} to one of its paths (see /docs)`;
    return { code: 'method_not_allowed', detail, options };
  }
  const upper = method.toUpperCase();
  const hint = upper !== method && allowed.includes(upper) ? ` (methods are case-sensitive: ${upper})` : '';
  const detail = `${method} is not supported on ${path}; use ${allowed.join(' or ')}${hint}`;
  return { code: 'method_not_allowed', detail, options };
}

/** A sane incoming X-Request-Id is kept, so a caller can follow its request in the logs; else a new one. */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const incoming = headers['x-request-id'];
  return typeof incoming === 'string' && /^[\w.:-]{1,64}$/.test(incoming) ? incoming : randomUUID();
}

/** How many Host headers a request has. */
function hostHeaders(rawHeaders: string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.length === 4 && rawHeaders[i]?.toLowerCase() === 'host') count += 1;
  }
  return count;
}

/**
 * What Node's parser lets through to the routes but HTTP/1.1 refuses (RFC 9112, section 3): an HTTP/1.1
 * request without exactly one Host, the asterisk-form target (`*`) with a method other than OPTIONS, and
 * an Expect the daemon cannot meet, which Node hands over through 'checkExpectation' (without a listener
 * it answers an empty 417). Returns the check, run before the guards on every request.
 */
export function createHeadCheck(server: Server): (request: IncomingMessage) => PendingProblem | undefined {
  const unmetExpectations = new WeakSet<IncomingMessage>();
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    unmetExpectations.add(request);
    server.emit('request', request, response);
  });
  return (request) => {
    if (unmetExpectations.has(request)) {
      return {
        code: 'expectation_failed',
        detail: `the daemon cannot meet Expect: ${request.headers.expect}; send the request without it (or with Expect: 100-continue)`,
        options: { parameter: 'expect' },
      };
    }
    if (request.httpVersion === '1.1' && hostHeaders(request.rawHeaders) !== 1) {
      return {
        code: 'malformed_http',
        detail: 'an HTTP/1.1 request carries exactly one Host header',
        options: { parameter: 'host' },
      };
    }
    if (request.url?.startsWith('*') && request.method !== 'OPTIONS') {
      return {
        code: 'malformed_http',
        detail: `the target * is for OPTIONS only; send ${request.method} to one of the daemon's paths`,
      };
    }
    return undefined;
  };
}

/** Node's parse errors (llhttp's codes) and its request timeout, with what the parser had read. */
interface ClientError extends Error {
  code?: string;
  reason?: string;
  bytesParsed?: number;
  rawPacket?: Buffer;
}

/**
 * What Node's HTTP server keeps on a connection's socket (internal, as its own clientError handling
 * reads it): the response being written until it is finished, and the parser with the request it is
 * parsing until that request's body has ended.
 */
interface HttpSocket extends Socket {
  _httpMessage?: ServerResponse | null;
  parser?: { incoming?: IncomingMessage | null } | null;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REQUEST_LINE_ADVICE =
  'a request starts with a line such as GET /tasks HTTP/1.1, and each of its lines ends with CRLF';

/** What to tell the client for each parse error, and the header at fault. */
const PARSE_ERRORS: Record<string, { advice: string; parameter?: string }> = {
  HPE_INVALID_TRANSFER_ENCODING: {
    advice: 'frame the body with Content-Length, or with Transfer-Encoding: chunked alone (never both)',
    parameter: 'transfer-encoding',
  },
  HPE_UNEXPECTED_CONTENT_LENGTH: {
    advice: 'send one Content-Length header, or Transfer-Encoding: chunked instead (never both)',
    parameter: 'content-length',
  },
  HPE_INVALID_CONTENT_LENGTH: {
    advice: "Content-Length must be the body's size in bytes, in digits",
    parameter: 'content-length',
  },
  HPE_INVALID_CHUNK_SIZE: {
    advice:
      'a chunked body is chunks, each a hexadecimal size line and that many bytes, ending with a 0 chunk',
  },
  HPE_INVALID_HEADER_TOKEN: {
    advice: 'a header is a name (a token), a colon and a value without control characters, on one line',
  },
  HPE_INVALID_URL: {
    advice: 'the request target is a path of printable ASCII; percent-encode anything else',
  },
  HPE_INVALID_EOF_STATE: { advice: 'the connection ended before the request was whole; send all of it' },
};

/** The request line the parse error is in (method, target and version), from the bytes the parser had. */
function requestLineAt(error: ClientError): { method: string; target: string; version: string } | undefined {
  const raw = error.rawPacket;
  if (!Buffer.isBuffer(raw)) return undefined;
  const at = Math.min(error.bytesParsed ?? 0, raw.length);
  const start = at > 0 ? raw.lastIndexOf(0x0a, at - 1) + 1 : 0;
  const end = raw.indexOf(0x0a, start);
  const line = raw.toString('latin1', start, end === -1 ? raw.length : end).replace(/\r$/, '');
  const [method = '', target = '', version = '', ...rest] = line.split(' ');
  return rest.length === 0 ? { method, target, version } : undefined;
}

/** The path of the request a parse error is in, when it is known; else `*` (the connection as a whole). */
function instanceOf(error: ClientError, inFlight: IncomingMessage | undefined): string {
  const target =
    inFlight?.url ??
    requestLineAt(error)?.target ??
    // The first line of what the parser had, when the error is still in that request's head.
    (error.rawPacket?.subarray(0, error.bytesParsed).includes('\r\n\r\n') === false
      ? requestLineAt({ ...error, bytesParsed: 0 })?.target
      : undefined);
  return target?.startsWith('/') ? target.split('?')[0] || '/' : '*';
}

/** Sorts a client error into the problem to answer; undefined when no answer can reach the client. */
export function classifyClientError(
  error: ClientError,
  context: { table: MethodTable; requestTimeoutMs: number },
): PendingProblem | undefined {
  switch (error.code) {
    case 'ECONNRESET':
    case 'EPIPE':
      return undefined;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        code: 'request_timeout',
        detail: `the request did not arrive whole within ${context.requestTimeoutMs / 1000} s; send its head and body without pausing`,
      };
    case 'HPE_HEADER_OVERFLOW':
      return {
        code: 'headers_too_large',
        detail: `the request line and headers are larger than ${maxHeaderSize / 1024} KiB; send fewer or shorter headers, or a shorter URL`,
      };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return {
        code: 'payload_too_large',
        detail: 'the chunk extensions of the body are too large; send none',
      };
    case 'HPE_PAUSED_H2_UPGRADE':
      return {
        code: 'http_version_not_supported',
        detail: 'HTTP/2 is not supported; send HTTP/1.1 (or HTTP/1.0)',
      };
    case 'HPE_INVALID_METHOD': {
      // A well-formed method the parser does not know (lowercase get, FOO) is answered like any
      // other method the daemon does not take; bytes that are no method at all are malformed.
      const line = requestLineAt(error);
      if (line && TOKEN.test(line.method) && line.target !== '') {
        return methodProblem(context.table, line.method, line.target);
      }
      break;
    }
    case 'HPE_INVALID_VERSION': {
      const major = /^HTTP\/(\d+)\.\d+$/.exec(requestLineAt(error)?.version ?? '')?.[1];
      if (major !== undefined && major !== '1') {
        return {
          code: 'http_version_not_supported',
          detail: `HTTP/${major} is not supported; send HTTP/1.1 (or HTTP/1.0)`,
        };
      }
      break;
    }
  }
  const known = (error.code && PARSE_ERRORS[error.code]) || { advice: REQUEST_LINE_ADVICE };
  const reason = typeof error.reason === 'string' && error.reason !== '' ? ` (${error.reason})` : '';
  return {
    code: 'malformed_http',
    detail: `the request is not valid HTTP/1.1${reason}: ${known.advice}`,
    ...(known.parameter === undefined ? {} : { options: { parameter: known.parameter } }),
  };
}

/** The whole HTTP/1.1 response of a problem, closing the connection. */
export function rawProblemResponse(
  problem: PendingProblem,
  request: { instance: string; requestId: string; head?: boolean },
): Buffer {
  const options = problem.options ?? {};
  const { status } = ERRORS[problem.code];
  const body = Buffer.from(stringifyJson(problemDocument(problem.code, problem.detail, request, options)));
  const headers: Record<string, string> = {
    ...problemHeaders(options),
    'x-request-id': request.requestId,
    'content-type': 'application/problem+json; charset=utf-8',
    'content-length': String(body.length),
    date: new Date().toUTCString(),
    connection: 'close',
  };
  const head = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`]
    .concat(Object.entries(headers).map(([name, value]) => `${name}: ${value}`))
    .join('\r\n');
  return Buffer.concat([Buffer.from(`${head}\r\n\r\n`, 'latin1'), request.head ? Buffer.alloc(0) : body]);
}

/** How long a refused connection is kept open to read what the client still sends, at most. */
const LINGER_MS = 1000;

/**
 * Writes the response, if any, and closes the connection gently. Closing with unread request bytes makes the
 * kernel send a reset, which can discard the response before the client reads it (a long request refused
 * after its first bytes), so what else arrives is read and dropped until the client closes its side, or
 * for a second at most.
 */
function closeGently(socket: Socket, response?: Buffer): void {
  // A reset from the client now is no concern of the daemon's (and no listener may be left for it).
  socket.on('error', () => undefined);
  if (response) socket.end(response);
  else socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  if (socket.readableEnded) socket.once('finish', () => socket.destroy());
  else socket.once('end', () => socket.destroy());
  socket.resume();
}

export interface RawAnswerOptions {
  table: MethodTable;
  logger: FastifyBaseLogger;
  metrics: Metrics;
  requestTimeoutMs: number;
}

/** Calls then once the responses under way on the connection (pipelined requests') are all sent. */
function afterResponses(socket: HttpSocket, then: () => void): void {
  if (socket.destroyed) return;
  const pending = socket._httpMessage;
  if (!pending) then();
  // Node hands the connection to the next queued response before this one's 'close'.
  else pending.once('close', () => afterResponses(socket, then));
}

/**
 * The handler of Node's 'clientError' (Fastify's clientErrorHandler). What it answers depends on which
 * request the error is in:
 * - the request whose body is being read, not yet answered (a broken chunk, a body short of its
 *   Content-Length that never comes): its problem, at once;
 * - a request answered before its body was read (a 401, say): that answer stands and no other is sent,
 *   as it would be taken for the next request's; the connection just closes;
 * - a new request, after pipelined ones: its problem once their answers are sent.
 * Then the connection closes. The parser reports further errors as more bytes arrive: only the first
 * counts.
 */
export function createClientErrorHandler(options: RawAnswerOptions): (error: Error, socket: Socket) => void {
  const handled = new WeakSet<Socket>();
  const answer = (
    error: ClientError,
    socket: HttpSocket,
    problem: PendingProblem,
    inFlight?: IncomingMessage,
  ) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const requestId = inFlight ? requestIdOf(inFlight.headers) : randomUUID();
    const status = ERRORS[problem.code].status;
    options.logger.debug(
      { reqId: requestId, status, code: problem.code, error: error.code },
      'request refused before routing',
    );
    options.metrics.httpRequests.inc({ route: 'unmatched', method: 'unknown', status });
    const instance = instanceOf(error, inFlight);
    const head = inFlight?.method === 'HEAD';
    closeGently(socket, rawProblemResponse(problem, { instance, requestId, head }));
  };
  return (error: ClientError, socket: HttpSocket) => {
    if (handled.has(socket)) return;
    handled.add(socket);
    const problem = classifyClientError(error, options);
    if (!problem || socket.destroyed || !socket.writable) {
      socket.destroy();
      return;
    }
    const response = socket._httpMessage;
    const reading = socket.parser?.incoming;
    if (reading && !reading.complete) {
      if (reading === response?.req && !response.headersSent) answer(error, socket, problem, reading);
      else closeGently(socket);
      return;
    }
    afterResponses(socket, () => answer(error, socket, problem));
  };
}

/**
 * The handler of Node's 'connect': without one, Node closes a CONNECT's connection with no answer. The
 * daemon is not a proxy: CONNECT is answered as any method it does not take.
 */
export function createConnectHandler(
  options: RawAnswerOptions,
): (request: IncomingMessage, socket: Socket, head: Buffer) => void {
  return (request, socket) => {
    const target = request.url ?? '*';
    const problem = methodProblem(options.table, 'CONNECT', target);
    const requestId = requestIdOf(request.headers);
    const status = ERRORS[problem.code].status;
    options.logger.debug({ reqId: requestId, status, code: problem.code }, 'CONNECT refused');
    options.metrics.httpRequests.inc({ route: 'unmatched', method: 'CONNECT', status });
    const instance = target.split('?')[0] || '*';
    closeGently(socket, rawProblemResponse(problem, { instance, requestId }));
  };
}
