import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Metrics } from '../internal/metrics.ts';
import { sendProblem } from './errors.ts';

/** The API token's file in the data directory. */
export const TOKEN_FILE = 'api-token';

export type AuthMode = 'writes' | 'all' | 'none';

export interface SecurityOptions {
  /** writes: every POST/DELETE needs the token; all: reads too (except /health and /ready); none: no token. */
  auth: AuthMode;
  tokenFile: string;
  /** The address the daemon binds to; requests whose Host is not it, localhost or an allowed name get 403. */
  boundHost: string;
  allowedHosts: readonly string[];
  /** Requests answered concurrently before the daemon sheds load with 503. */
  maxInFlight: number;
  /** Paths whose reads never need the token, even with auth=all (the console's static files). */
  isPublic?: ((path: string) => boolean) | undefined;
}

/** Loads the API token, creating it (32 random bytes, mode 0600) when the file does not exist. */
export function loadOrCreateToken(dataDir: string): { file: string; created: boolean } {
  const file = join(dataDir, TOKEN_FILE);
  if (existsSync(file)) return { file, created: false };
  writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  return { file, created: true };
}

/** Replaces the token atomically (a running daemon picks the new one up within a second). */
export function rotateToken(dataDir: string): string {
  const file = join(dataDir, TOKEN_FILE);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
  renameSync(temporary, file);
  return file;
}

/** The current token, re-read when the file changes (checked at most once a second). */
class TokenFile {
  readonly #file: string;
  #digest: Buffer | undefined;
  #mtimeMs = -1;
  #checkedAt = 0;

  constructor(file: string) {
    this.#file = file;
  }

  /** Compares in constant time (over fixed-length digests, so the token length leaks nothing either). */
  matches(candidate: string): boolean {
    const now = Date.now();
    if (now - this.#checkedAt > 1000) {
      this.#checkedAt = now;
      const stat = statSync(this.#file, { throwIfNoEntry: false });
      if (stat && stat.mtimeMs !== this.#mtimeMs) {
        this.#mtimeMs = stat.mtimeMs;
        this.#digest = sha256(readFileSync(this.#file, 'utf8').trim());
      }
    }
    return this.#digest !== undefined && timingSafeEqual(this.#digest, sha256(candidate));
  }
}

function sha256(text: string): Buffer {
  // The one-shot form: no Hash object for every write.
  return hash('sha256', text, 'buffer');
}

const TOKEN_PARAMS = /(?:^|[?&])(?:token|access_token|api_token|api-token|apikey|api_key|auth)=/i;
const TOKEN_VALUES = /([?&](?:token|access_token|api_token|api-token|apikey|api_key|auth)=)[^&#]*/gi;

/** The URL as it may be logged: the value of any token-like query parameter is replaced. */
export function loggableUrl(url: string): string {
  return url.includes('?') ? url.replace(TOKEN_VALUES, '$1[redacted]') : url;
}
const OPEN_PATHS = new Set(['/health', '/ready']);
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i;

function hostName(header: string): string {
  if (header.startsWith('[')) return header.slice(0, header.indexOf(']') + 1).toLowerCase();
  const colon = header.lastIndexOf(':');
  return (colon > -1 && header.indexOf(':') === colon ? header.slice(0, colon) : header).toLowerCase();
}

/** A wildcard bind address answers on every interface and is no name a client could use. */
const WILDCARDS = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The host_not_allowed detail: the host the request named, and the setting that admits it, since the
 * usual way to meet this refusal is a new route to the daemon (a container's gateway address, a service
 * name) rather than an attack.
 */
function hostRefusal(seen: string, boundHost: string): string {
  const bound = boundHost.toLowerCase();
  const usable =
    WILDCARDS.has(bound) || ['localhost', '127.0.0.1', '::1'].includes(bound) ? '' : ` or ${boundHost}`;
  // The setting takes addresses without brackets (::1, not [::1]) and names without a port.
  const name = seen.replace(/^\[|\]$/g, '');
  return (
    `requests for host ${seen} are refused (DNS rebinding protection); use localhost${usable}, or admit ${name} ` +
    `with --allowed-hosts ${name} (NODE_DAEMON_ALLOWED_HOSTS=${name}; a comma-separated list)`
  );
}

/**
 * Marks a request the guard counted until it is released: a property of the request itself, which lives
 * exactly as long as the request (a WeakSet of requests cost an ephemeron table entry, and a write barrier,
 * on every request).
 */
const COUNTED = Symbol('counted in flight');
type MarkedRequest = FastifyRequest & { [COUNTED]?: boolean };

export interface RequestGuard {
  /** Runs the guards; true when it has answered the request (which must then go no further). */
  check(request: FastifyRequest, reply: FastifyReply): boolean;
  /** Call once the request is over (answered or aborted): it no longer counts as in flight. */
  release(request: FastifyRequest): void;
}

/**
 * The request guards, in order: shed load beyond maxInFlight (503 with Retry-After); refuse a Host that
 * is not this daemon's (DNS rebinding); refuse a token in the query string; require the bearer token for
 * writes (and reads with auth=all): 401 when missing, 403 when wrong. Synchronous: they run on every
 * request, so they cost no promise.
 */
export function createGuard(options: SecurityOptions, metrics: Metrics): RequestGuard {
  const token = new TokenFile(options.tokenFile);
  const allowed = new Set(
    ['localhost', '127.0.0.1', '[::1]', options.boundHost, ...options.allowedHosts].map((h) =>
      isIP(h) === 6 ? `[${h.toLowerCase()}]` : h.toLowerCase(),
    ),
  );
  let inFlight = 0;
  metrics.countInFlight(() => inFlight);
  const deny = (
    request: FastifyRequest,
    reply: FastifyReply,
    code: Parameters<typeof sendProblem>[2],
    detail: string,
    headers?: Record<string, string>,
  ) => {
    sendProblem(request, reply, code, detail, headers ? { headers } : {});
    return true;
  };
  return {
    release(request) {
      const marked = request as MarkedRequest;
      if (marked[COUNTED] !== true) return;
      marked[COUNTED] = false;
      inFlight -= 1;
    },
    check(request, reply) {
      (request as MarkedRequest)[COUNTED] = true;
      inFlight += 1;
      if (inFlight > options.maxInFlight) {
        metrics.httpShed.inc();
        return deny(
          request,
          reply,
          'overloaded',
          'the daemon is answering too many requests at once; retry in a moment',
          {
            'retry-after': '1',
          },
        );
      }
      // An absolute-form target (http://host/path) names the host itself, and its Host header is ignored
      // (RFC 9112, section 3.2.2).
      const absolute = request.url.startsWith('/') ? undefined : ABSOLUTE_FORM.exec(request.url);
      const url = absolute ? request.url.slice(absolute[0].length) || '/' : request.url;
      const host = absolute ? absolute[1] : request.headers.host;
      if (host !== undefined && !allowed.has(hostName(host))) {
        return deny(request, reply, 'host_not_allowed', hostRefusal(hostName(host), options.boundHost));
      }
      const query = url.indexOf('?');
      if (query > -1 && TOKEN_PARAMS.test(url.slice(query))) {
        return deny(
          request,
          reply,
          'token_in_query',
          `tokens are never accepted in the URL; send the header Authorization: Bearer <the token in ${options.tokenFile}>`,
        );
      }
      const path = url.slice(0, query > -1 ? query : undefined);
      // The router ignores a trailing slash (/health/ is /health), and so does this check.
      const open = OPEN_PATHS.has(path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
      if (options.auth === 'none' || open || request.method === 'OPTIONS') return false;
      const isRead = request.method === 'GET' || request.method === 'HEAD';
      // A route whose config says token: 'always' (the webhooks) needs it for reads too.
      const always = (request.routeOptions.config as { token?: string } | undefined)?.token === 'always';
      if (isRead && !always && (options.auth === 'writes' || options.isPublic?.(path))) return false;
      const header = request.headers.authorization;
      if (header === undefined) {
        return deny(
          request,
          reply,
          'unauthorized',
          `this request needs the API token: send Authorization: Bearer <the token in ${options.tokenFile}>`,
          { 'www-authenticate': 'Bearer' },
        );
      }
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match || !token.matches(match[1]!)) {
        return deny(
          request,
          reply,
          'forbidden',
          `the API token is wrong; use the token in ${options.tokenFile} (node-daemon token rotate replaces it)`,
        );
      }
      return false;
    },
  };
}
