import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_FLAG, type Config, loadConfig } from '../config.ts';
import { CliError } from '../internal/exit-codes.ts';
import { parseJson, stringifyJson } from '../internal/json.ts';
import { VERSION } from '../internal/version.ts';
import { PROBLEM_TYPE_PREFIX } from '../problems/catalog.ts';
import { ClientExitCode } from './exit-codes.ts';

/** The daemon settings the client reads to find the daemon: its address, its data dir, the config file. */
export const CONNECTION_SETTINGS = ['host', 'port', 'data-dir', CONFIG_FLAG.flag] as const;

export const URL_ENV = 'NODE_DAEMON_URL';
export const TOKEN_ENV = 'NODE_DAEMON_TOKEN';
export const TOKEN_FILE = 'api-token';

export interface ConnectionFlags {
  url?: string | undefined;
  token?: string | undefined;
  host?: string | undefined;
  port?: string | undefined;
  'data-dir'?: string | undefined;
  config?: string | undefined;
}

/** Where the daemon is and what to authenticate with; never printed with the token. */
export interface Connection {
  /** The base URL, without a trailing slash. */
  readonly url: string;
  /** Where the URL came from, for messages: `--url`, `NODE_DAEMON_URL` or `settings`. */
  readonly urlSource: '--url' | typeof URL_ENV | 'settings';
  readonly token: string | undefined;
  /** Where the token came from (a flag, a variable or the file's path), for messages. */
  readonly tokenSource: string | undefined;
}

/**
 * Finds the daemon like the daemon finds its own settings: --url, else NODE_DAEMON_URL, else host and
 * port from --host/--port, NODE_DAEMON_HOST/NODE_DAEMON_PORT, the config file or the defaults. The
 * token: --token, else NODE_DAEMON_TOKEN, else `<data dir>/api-token` (a missing file means no token).
 * The daemon's settings are read only when needed, so --url with --token works with any environment.
 */
export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Connection {
  let config: Config | undefined;
  const settings = (): Config => {
    config ??= loadConfig(
      {
        // The client only reads where the daemon is; `all` keeps the daemon's own exposure check (a
        // non-loopback --host needs --auth all) from refusing a client that merely names that host.
        auth: 'all',
        host: flags.host,
        port: flags.port,
        'data-dir': flags['data-dir'],
        [CONFIG_FLAG.flag]: flags.config,
      },
      env,
    );
    return config;
  };

  let url: string;
  let urlSource: Connection['urlSource'];
  if (flags.url !== undefined) {
    url = checkUrl(flags.url, '--url');
    urlSource = '--url';
  } else if (nonEmpty(env[URL_ENV]) !== undefined) {
    url = checkUrl(env[URL_ENV]!, URL_ENV);
    urlSource = URL_ENV;
  } else {
    const { host, port } = settings();
    if (port === 0) {
      throw new CliError(
        'the daemon settings say port 0 (a free port picked at start), so the client cannot derive the address; pass --url or set NODE_DAEMON_URL',
      );
    }
    url = `http://${connectHost(host)}:${port}`;
    urlSource = 'settings';
  }

  let token: string | undefined;
  let tokenSource: string | undefined;
  if (flags.token !== undefined) {
    token = flags.token.trim();
    tokenSource = '--token';
  } else if (nonEmpty(env[TOKEN_ENV]) !== undefined) {
    token = env[TOKEN_ENV]!.trim();
    tokenSource = TOKEN_ENV;
  } else {
    const file = join(settings().dataDir, TOKEN_FILE);
    token = readToken(file);
    tokenSource = token === undefined ? undefined : file;
  }
  if (token === '') {
    token = undefined;
    tokenSource = undefined;
  }
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) {
    throw new CliError(`the API token from ${tokenSource} holds characters an HTTP header cannot carry`);
  }
  return { url, urlSource, token, tokenSource };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function checkUrl(raw: string, source: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new CliError(
      `invalid ${source}: ${JSON.stringify(raw)} is not a URL; expected like http://127.0.0.1:3001`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CliError(`invalid ${source}: ${JSON.stringify(raw)} is not an http:// or https:// URL`);
  }
  if (url.search !== '' || url.hash !== '') {
    throw new CliError(`invalid ${source}: ${JSON.stringify(raw)} must not have a query or a fragment`);
  }
  return url.href.replace(/\/+$/, '');
}

/** The address to connect to for the address the daemon listens on. */
function connectHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

function readToken(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new CliError(
      `cannot read the API token file ${file}: ${code === 'EACCES' ? 'permission denied' : (error as Error).message}; run as the daemon's user, or pass --token or NODE_DAEMON_TOKEN`,
    );
  }
}

/** A successful answer: the body as sent (for --json) and parsed with exact u64 values. */
export interface Reply {
  /** What was asked: `GET /stacks/nodes/7`. */
  request: string;
  status: number;
  text: string;
  body: unknown;
  headers: Headers;
}

/** A refusal or failure node-daemon answered: an RFC 9457 problem document. */
export class DaemonProblem extends Error {
  readonly status: number;
  readonly text: string;
  /** The problem document, with at least type, code and detail. */
  readonly problem: Record<string, unknown> & { code: string; detail: string };
  readonly headers: Headers;
  readonly path: string;
  constructor(
    status: number,
    text: string,
    problem: DaemonProblem['problem'],
    headers: Headers,
    path: string,
  ) {
    super(problem.detail);
    this.name = 'DaemonProblem';
    this.status = status;
    this.text = text;
    this.problem = problem;
    this.headers = headers;
    this.path = path;
  }
}

export interface RequestOptions {
  body?: unknown;
  timeoutMs: number;
  /** Sent as Idempotency-Key; named in the messages when the outcome of a write is unknown. */
  idempotencyKey?: string | undefined;
}

const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  ECONNRESET: 'the connection was closed before an answer',
  UND_ERR_SOCKET: 'the connection was closed before an answer',
  EPIPE: 'the connection was closed before an answer',
};

/** The daemon's HTTP API, with the token on every request and a timeout on each. */
export class Daemon {
  readonly connection: Connection;
  constructor(connection: Connection) {
    this.connection = connection;
  }

  async request(method: 'GET' | 'POST' | 'DELETE', path: string, options: RequestOptions): Promise<Reply> {
    const { url, token } = this.connection;
    const headers: Record<string, string> = {
      accept: 'application/json, application/problem+json',
      'user-agent': `node-daemon-cli/${VERSION}`,
    };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = stringifyJson(options.body);
    }
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${url}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(options.timeoutMs),
        redirect: 'error',
      });
      text = await response.text();
    } catch (error) {
      throw this.#unreachable(error, method, options);
    }
    const parsed = parseBody(text);
    const type = response.headers.get('content-type')?.split(';')[0]?.trim() || 'no content type';
    if (response.ok) {
      if (parsed === undefined) {
        throw this.notNodeDaemon(`${method} ${path}`, `HTTP ${response.status} and ${type}, not JSON`);
      }
      return {
        request: `${method} ${path}`,
        status: response.status,
        text,
        body: parsed,
        headers: response.headers,
      };
    }
    if (!isDaemonProblem(parsed)) {
      throw this.notNodeDaemon(
        `${method} ${path}`,
        `HTTP ${response.status} and ${text.trim() === '' ? 'no body' : type}, not a node-daemon problem document`,
      );
    }
    throw new DaemonProblem(response.status, text, parsed, response.headers, path);
  }

  /**
   * Opens a stream of Server-Sent Events (GET /events): the response once the daemon answers 200 with
   * text/event-stream; its problem, or why it could not be reached, otherwise. connectMs bounds the wait
   * for the answer's head, not the stream.
   */
  async stream(
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
    connectMs: number,
  ): Promise<Response> {
    const { url, token } = this.connection;
    const all: Record<string, string> = {
      accept: 'text/event-stream, application/problem+json',
      'user-agent': `node-daemon-cli/${VERSION}`,
      ...headers,
    };
    if (token !== undefined) all.authorization = `Bearer ${token}`;
    // The timeout bounds the wait for the answer's head only: the stream itself lasts.
    const connect = new AbortController();
    const timer = setTimeout(
      () => connect.abort(new DOMException('connect timeout', 'TimeoutError')),
      connectMs,
    );
    let response: Response;
    try {
      response = await fetch(`${url}${path}`, {
        headers: all,
        signal: AbortSignal.any([signal, connect.signal]),
        redirect: 'error',
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw this.#unreachable(connect.signal.aborted ? connect.signal.reason : error, 'GET', {
        timeoutMs: connectMs,
      });
    } finally {
      clearTimeout(timer);
    }
    const type = response.headers.get('content-type')?.split(';')[0]?.trim() || 'no content type';
    if (response.ok && type === 'text/event-stream') return response;
    const text = await response.text().catch(() => '');
    const parsed = parseBody(text);
    if (!response.ok && isDaemonProblem(parsed)) {
      throw new DaemonProblem(response.status, text, parsed, response.headers, path);
    }
    throw this.notNodeDaemon(`GET ${path}`, `HTTP ${response.status} and ${type}, not an event stream`);
  }

  /**
   * Why a node-daemon answered `not_found` for a route it has, when the address has a path: node-daemon
   * serves its API at the root, so `--url http://host:3001/api` asks it for /api/status. Undefined when
   * the address has no path.
   */
  underPath(): string | undefined {
    const { url, urlSource } = this.connection;
    const { origin, pathname } = new URL(url);
    if (pathname === '/' || pathname === '') return undefined;
    return `node-daemon serves its API at the root of its address, not under ${pathname}: give ${origin}${urlSource === 'settings' ? '' : ` (check ${urlSource})`}`;
  }

  /**
   * The error for an answer node-daemon would not give (the server at the address is something else):
   * `request` is what was asked (`GET /status`), `answer` what came back. Exit 5, as for no answer.
   */
  notNodeDaemon(request: string, answer: string): CliError {
    const { url, urlSource } = this.connection;
    const where = urlSource === 'settings' ? url : `${url} (from ${urlSource})`;
    const hint =
      urlSource === 'settings'
        ? 'if the daemon listens elsewhere, give its address with --url or NODE_DAEMON_URL'
        : `check ${urlSource}`;
    return new CliError(
      `the server at ${where} does not look like node-daemon: it answered ${request} with ${answer}; ${hint}`,
      ClientExitCode.unavailable,
    );
  }

  #unreachable(error: unknown, method: string, options: RequestOptions): CliError {
    const { url, urlSource } = this.connection;
    const where = urlSource === 'settings' ? url : `${url} (from ${urlSource})`;
    const err = error as Error & { cause?: { code?: string; message?: string } };
    const write = method !== 'GET';
    const retry =
      write && options.idempotencyKey !== undefined
        ? `; the write may have been applied: check before retrying, or repeat the command with --idempotency-key ${options.idempotencyKey} to get its result without a second transaction`
        : '';
    if (err?.name === 'TimeoutError' || err?.name === 'AbortError') {
      const seconds = options.timeoutMs / 1000;
      return new CliError(
        `the daemon at ${where} did not answer within ${seconds} s (raise it with --timeout)${retry}`,
        ClientExitCode.unavailable,
      );
    }
    const code = err?.cause?.code ?? '';
    const reason = CONNECTION_ERRORS[code] ?? err?.cause?.message ?? err?.message ?? String(error);
    const sent = code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE';
    const hint =
      urlSource === 'settings'
        ? 'start it with `node-daemon start` (with the same --host/--port/--config), or give its address with --url or NODE_DAEMON_URL'
        : 'is it running there? start it with `node-daemon start`';
    return new CliError(
      `cannot reach the daemon at ${where}: ${reason}; ${hint}${sent ? retry : ''}`,
      ClientExitCode.unavailable,
    );
  }
}

/** An RFC 9457 problem document as node-daemon writes them: its type, a code and a detail. */
function isDaemonProblem(body: unknown): body is DaemonProblem['problem'] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  const { type, code, detail } = body as Record<string, unknown>;
  return (
    typeof type === 'string' &&
    type.startsWith(PROBLEM_TYPE_PREFIX) &&
    typeof code === 'string' &&
    typeof detail === 'string'
  );
}

function parseBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return parseJson(text);
  } catch {
    return undefined;
  }
}
