import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Metrics } from '../internal/metrics.ts';
import type { TokenStore } from '../store/store.ts';
import { sendProblem } from './errors.ts';
import { grants, type RouteScope, requiredScope, type Scope, scopesGranting } from './scopes.ts';

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

/** The file token replaced by `token rotate`, and until when it is still accepted (ms since the epoch). */
export const PREVIOUS_TOKEN_FILE = 'api-token.previous';

/** How long `token rotate` keeps the old file token valid unless told (--grace, --now). */
export const DEFAULT_ROTATE_GRACE_MS = 10 * 60 * 1000;

/**
 * Replaces the token atomically (a running daemon picks the new one up within a second). The old one
 * stays valid for graceMs (written with its end to api-token.previous), so clients that hold it can move
 * over; 0 cuts it at once.
 */
export function rotateToken(dataDir: string, graceMs = 0, nowMs = Date.now()): string {
  const file = join(dataDir, TOKEN_FILE);
  const previous = join(dataDir, PREVIOUS_TOKEN_FILE);
  const old = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
  const write = (target: string, text: string) => {
    const temporary = `${target}.${process.pid}.tmp`;
    writeFileSync(temporary, text, { mode: 0o600 });
    renameSync(temporary, target);
  };
  // The old token's grace first: there is no moment when neither the old nor the new one is accepted.
  if (graceMs > 0 && old !== '') write(previous, `${old}\n${nowMs + graceMs}\n`);
  else rmSync(previous, { force: true });
  write(file, `${randomBytes(32).toString('base64url')}\n`);
  return file;
}

/** A token file's digest, re-read when the file changes (checked at most once a second). */
class WatchedFile {
  readonly #file: string;
  #mtimeMs = -1;
  #checkedAt = 0;
  #lines: string[] = [];

  constructor(file: string) {
    this.#file = file;
  }

  lines(now: number): string[] {
    if (now - this.#checkedAt > 1000) {
      this.#checkedAt = now;
      const stat = statSync(this.#file, { throwIfNoEntry: false });
      if (!stat) {
        this.#lines = [];
        this.#mtimeMs = -1;
      } else if (stat.mtimeMs !== this.#mtimeMs) {
        this.#mtimeMs = stat.mtimeMs;
        this.#lines = readFileSync(this.#file, 'utf8')
          .split('\n')
          .map((line) => line.trim());
      }
    }
    return this.#lines;
  }
}

/**
 * The file token (<data dir>/api-token, an admin token named api-token), and the one `token rotate`
 * replaced while its grace lasts (api-token.previous: the token, then until when).
 */
class TokenFile {
  readonly #current: WatchedFile;
  readonly #previous: WatchedFile;
  #digest: Buffer | undefined;
  #digestOf: string | undefined;
  #previousDigest: Buffer | undefined;
  #previousOf: string | undefined;

  constructor(file: string) {
    this.#current = new WatchedFile(file);
    this.#previous = new WatchedFile(`${file}.previous`);
  }

  /** Compares in constant time (over fixed-length digests, so the token length leaks nothing either). */
  matches(candidate: string): boolean {
    const now = Date.now();
    const [current] = this.#current.lines(now);
    if (current !== this.#digestOf) {
      this.#digestOf = current;
      this.#digest = current ? sha256(current) : undefined;
    }
    const digest = sha256(candidate);
    if (this.#digest !== undefined && timingSafeEqual(this.#digest, digest)) return true;
    const [previous, until] = this.#previous.lines(now);
    if (!previous || !(Number(until) > now)) return false;
    if (previous !== this.#previousOf) {
      this.#previousOf = previous;
      this.#previousDigest = sha256(previous);
    }
    return this.#previousDigest !== undefined && timingSafeEqual(this.#previousDigest, digest);
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
/** The token a request was admitted (or refused for scope) with. */
const IDENTITY = Symbol('token identity');
type MarkedRequest = FastifyRequest & { [COUNTED]?: boolean; [IDENTITY]?: TokenIdentity };

/** Who sent a request: the name and scope of its token (never the token). */
export interface TokenIdentity {
  name: string;
  scope: Scope;
}

/** The token a request was checked with; undefined when it sent none (or it was not needed or wrong). */
export function identityOf(request: FastifyRequest): TokenIdentity | undefined {
  return (request as MarkedRequest)[IDENTITY];
}

export interface RequestGuard {
  /**
   * Runs the guards; true when it has answered the request (which must then go no further). A named
   * token is looked up in the store: then the answer comes as a promise.
   */
  check(request: FastifyRequest, reply: FastifyReply): boolean | Promise<boolean>;
  /** Call once the request is over (answered or aborted): it no longer counts as in flight. */
  release(request: FastifyRequest): void;
}

/**
 * The request guards, in order: shed load beyond maxInFlight (503 with Retry-After); refuse a Host that
 * is not this daemon's (DNS rebinding); refuse a token in the query string; require the bearer token for
 * writes (and reads with auth=all): 401 when missing, 403 when wrong. Synchronous: they run on every
 * request, so they cost no promise.
 */
export function createGuard(options: SecurityOptions, metrics: Metrics, tokens?: TokenStore): RequestGuard {
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
  const lastTouched = new Map<string, number>();
  const wrong = (request: FastifyRequest, reply: FastifyReply) =>
    deny(
      request,
      reply,
      'forbidden',
      `the API token is wrong; use the token in ${options.tokenFile} (node-daemon token rotate replaces it), or a named token of node-daemon token list`,
    );
  const admit = (
    request: FastifyRequest,
    reply: FastifyReply,
    identity: TokenIdentity,
    needed: RouteScope,
  ): boolean => {
    (request as MarkedRequest)[IDENTITY] = identity;
    if (grants(identity.scope, needed)) return false;
    return deny(
      request,
      reply,
      'insufficient_scope',
      `this request needs a token with scope ${scopesGranting(needed)}; the token ${identity.name} has scope ${identity.scope} (node-daemon token create --scope ${needed === 'token' ? 'read' : needed} makes one)`,
    );
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
      if (options.auth === 'none' || request.method === 'OPTIONS') return false;
      // The router ignores a trailing slash (/health/ is /health), and so does this check.
      const open = OPEN_PATHS.has(path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
      const route = request.routeOptions.url;
      // A path no route has (404, 405) needs any valid token where a request of its method would.
      const needed: RouteScope = route === undefined ? 'token' : requiredScope(request.method, route);
      const isRead = request.method === 'GET' || request.method === 'HEAD';
      // Admin routes, and who the caller is, always need a token; reads only with --auth all.
      const always = needed === 'admin' || (needed === 'token' && route !== undefined);
      if (!always && (open || (isRead && (options.auth === 'writes' || options.isPublic?.(path))))) {
        return false;
      }
      const header = request.headers.authorization;
      if (header === undefined) {
        return deny(
          request,
          reply,
          'unauthorized',
          `this request needs the API token${scopeWords(needed)}: send Authorization: Bearer <the token in ${options.tokenFile}>`,
          { 'www-authenticate': 'Bearer' },
        );
      }
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match) {
        // A raw token (or another scheme) is a common slip: say what is missing, not that it is wrong.
        return deny(
          request,
          reply,
          'unauthorized',
          /^\S+$/.test(header.trim())
            ? 'the Authorization header lacks the Bearer scheme: send Authorization: Bearer <token> (the word Bearer, a space, then the token)'
            : 'the Authorization header must use the Bearer scheme: send Authorization: Bearer <token>',
          { 'www-authenticate': 'Bearer' },
        );
      }
      const presented = match[1]!;
      if (token.matches(presented)) return admit(request, reply, FILE_IDENTITY, needed);
      if (!presented.startsWith(NAMED_TOKEN_PREFIX) || tokens === undefined) return wrong(request, reply);
      return tokens.findToken(tokenHash(presented)).then((row) => {
        if (row === undefined || !isScopeText(row.scope)) return wrong(request, reply);
        const now = Date.now();
        if (row.revoked_at !== null) {
          return deny(
            request,
            reply,
            'forbidden',
            `the token ${row.name} was revoked; use another (node-daemon token list), or create one with node-daemon token create`,
          );
        }
        if (row.expires_at !== null && row.expires_at <= now) {
          return deny(
            request,
            reply,
            'forbidden',
            `the token ${row.name} expired at ${new Date(row.expires_at).toISOString()}; create another with node-daemon token create`,
          );
        }
        // Last use is written at most once a minute per token and process, off the request's path.
        const touched = lastTouched.get(row.name) ?? row.last_used_at ?? 0;
        if (now - touched >= TOUCH_INTERVAL_MS) {
          lastTouched.set(row.name, now);
          tokens.touchToken(row.name, now).catch(() => lastTouched.delete(row.name));
        }
        return admit(request, reply, { name: row.name, scope: row.scope }, needed);
      });
    },
  };
}

/** The file token's identity: an admin token named after its file. */
const FILE_IDENTITY: TokenIdentity = Object.freeze({ name: TOKEN_FILE, scope: 'admin' });

/** The beginning of every named token (node-daemon token create), so that others cost no lookup. */
export const NAMED_TOKEN_PREFIX = 'ndt_';

/** A token's last use is recorded at most this often (per token, per process). */
const TOUCH_INTERVAL_MS = 60_000;

/** The hex sha256 of a token's text: what the store keeps and looks it up by. */
export function tokenHash(token: string): string {
  return hash('sha256', token, 'hex');
}

/** A new named token's text: the prefix and 32 random bytes. */
export function newNamedToken(): string {
  return `${NAMED_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

function isScopeText(scope: string): scope is Scope {
  return scope === 'read' || scope === 'usage' || scope === 'write' || scope === 'admin';
}

function scopeWords(needed: RouteScope): string {
  return needed === 'token' ? '' : ` (or a named token with scope ${scopesGranting(needed)})`;
}
