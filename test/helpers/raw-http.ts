import { connect } from 'node:net';

/** One HTTP response as it came off the wire. */
export interface RawResponse {
  status: number;
  /** Lowercase names; a repeated header's values joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

/** What a raw exchange gave: the final responses read, whether the server closed, and how long it took. */
export interface RawExchange {
  responses: RawResponse[];
  /** The server ended the connection (FIN or reset) before the client stopped reading. */
  closed: boolean;
  /** A reset or other socket error, if one came. */
  error: string | undefined;
  elapsedMs: number;
  /** Bytes received that were not a whole response. */
  rest: Buffer;
}

export interface RawOptions {
  /** Stop once this many final responses are read (default: read until the server closes). */
  responses?: number;
  /** End the client's side once the request is written (a request cut short). */
  halfClose?: boolean;
  /** Give up after this long (default 5 s); the exchange is returned as it stands. */
  timeoutMs?: number;
  /** The request is HEAD: its responses have no body. */
  head?: boolean;
  /** Write the request's parts this many ms apart (a slow client); default all at once. */
  paceMs?: number;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/** Parses the first complete response in data: the response and the bytes it took, or undefined. */
export function parseResponse(
  data: Buffer,
  options: { head?: boolean; closed?: boolean } = {},
): { response: RawResponse; length: number } | undefined {
  const end = data.indexOf(HEAD_END);
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = data.toString('latin1', 0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!Number.isInteger(status))
    throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  const start = end + HEAD_END.length;
  const done = (body: Buffer, length: number) => ({ response: { status, headers, body }, length });
  const streamed = /^text\/event-stream/.test(headers['content-type'] ?? '');
  if (options.head || status === 204 || status === 304 || (status >= 100 && status < 200) || streamed) {
    return done(Buffer.alloc(0), start);
  }
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const chunks: Buffer[] = [];
    let at = start;
    for (;;) {
      const lineEnd = data.indexOf('\r\n', at);
      if (lineEnd === -1) return undefined;
      const size = Number.parseInt(data.toString('latin1', at, lineEnd), 16);
      if (size === 0) {
        const trailerEnd = data.indexOf(HEAD_END, lineEnd);
        return trailerEnd === -1 ? undefined : done(Buffer.concat(chunks), trailerEnd + HEAD_END.length);
      }
      if (data.length < lineEnd + 2 + size + 2) return undefined;
      chunks.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
  }
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    return data.length < start + length
      ? undefined
      : done(data.subarray(start, start + length), start + length);
  }
  // No length: the body runs to the end of the connection.
  return options.closed ? done(data.subarray(start), data.length) : undefined;
}

/**
 * Sends bytes as they are over a new TCP connection and reads the responses: for what an HTTP client
 * library would never send.
 */
export function rawExchange(
  port: number,
  request: Buffer | string | (Buffer | string)[],
  options: RawOptions = {},
): Promise<RawExchange> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    const responses: RawResponse[] = [];
    let error: string | undefined;
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // What remains may be a response delimited by the end of the connection.
      const last = closed ? parseResponse(data, { head: options.head, closed }) : undefined;
      if (last) {
        responses.push(last.response);
        data = data.subarray(last.length);
      }
      socket.destroy();
      resolve({ responses, closed, error, elapsedMs: performance.now() - started, rest: data });
    };
    const timer = setTimeout(() => finish(false), options.timeoutMs ?? 5000);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      for (;;) {
        const parsed = parseResponse(data, { head: options.head });
        if (!parsed) break;
        data = data.subarray(parsed.length);
        if (parsed.response.status >= 200) responses.push(parsed.response);
        if (options.responses !== undefined && responses.length >= options.responses) return finish(false);
      }
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on('close', () => finish(true));
    socket.on('end', () => finish(true));
    const parts = [request].flat();
    const write = (): void => {
      const part = parts.shift();
      if (settled) return;
      if (part !== undefined) socket.write(part);
      if (parts.length > 0 && options.paceMs !== undefined) setTimeout(write, options.paceMs);
      else if (parts.length > 0) write();
      else if (options.halfClose) socket.end();
    };
    write();
  });
}
