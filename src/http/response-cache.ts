import { hash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Pieces } from '../internal/pieces.ts';
import type { U64 } from '../internal/u64.ts';
import { VERSION } from '../internal/version.ts';
import type { VersionStore } from '../store/store.ts';
import type { ReadTurns } from './read-turns.ts';

/**
 * Read responses, serialized once and kept until what they show changes. Each response depends on a few
 * topics (the task list; node N's stacks, tickets, ...: store.ts `topics`), whose versions the store moves in
 * the transaction of every change, whichever process commits it. A cached response stays valid while its
 * topics' versions have not moved: a usage report on one node's stack does not evict /tasks or another node's
 * lists. How they are checked is the store's (VersionStore.checkBy): on SQLite, only once its data version
 * moved (both are local reads); on PostgreSQL, by reading them at once, every topic asked in one loop turn in
 * one statement (a round trip a turn, where the data version first made two under writes).
 *
 * Every read answers with a strong ETag made from its topics' versions (and the store's identity and the
 * daemon's version), so `If-None-Match` gets a 304 without a body, and without even loading the data.
 * Versions are read before the data: an ETag can be older than its body (the next request reloads), never
 * newer, so a 304 is never answered for a body that changed.
 */

interface Entry {
  body: Buffer | Pieces;
  etag: string;
  versions: readonly number[];
  /** The store's data version when these versions were last confirmed current. */
  checked: string;
  /** A page's last small id when more rows remain: the Link to the next page is built from it per request. */
  next: U64 | undefined;
  /** Used since eviction last passed over it (set and marked by ResponseCache only). */
  used?: boolean;
}

/** A key's load in flight (ResponseCache.loadOnce), for the ETag it was asked under; none once it settles. */
interface Loading {
  etag: string;
  promise: Promise<Entry> | undefined;
}

/** Keys whose load slots are kept (ResponseCache.loadOnce): past this many, all are dropped. */
const LOADING_KEYS = 4096;

/** A read's body: loaded from the store and serialized. */
export interface Loaded {
  /** The body, as text or already encoded (in pieces: a stack list). */
  body: string | Buffer | Pieces;
  /** A page's last small id, when rows remain after it (the next page's `after`). */
  next?: U64;
}

export class ResponseCache {
  readonly #maxBytes: number;
  readonly #entries = new Map<string, Entry>();
  readonly #loading = new Map<string, Loading>();
  /** Topic versions being read or read, for the data version #versionsOf only. */
  readonly #versions = new Map<string, Promise<number[]>>();
  #versionsOf: string | undefined;
  #bytes = 0;
  readonly #counted: (outcome: 'hit' | 'miss' | 'not_modified') => void;

  constructor(maxBytes: number, counted: (outcome: 'hit' | 'miss' | 'not_modified') => void = () => {}) {
    this.#maxBytes = maxBytes;
    this.#counted = counted;
  }

  /** Counts a lookup's outcome (node_daemon_http_cache_lookups_total). */
  count(outcome: 'hit' | 'miss' | 'not_modified'): void {
    this.#counted(outcome);
  }

  get enabled(): boolean {
    return this.#maxBytes > 0;
  }

  /**
   * The entry kept for `key`. A hit only marks it used: moving it to the Map's end on every hit (a delete
   * and a set, thousands a second) kept every replaced body alive until a full collection (see `set`).
   */
  get(key: string): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry !== undefined) entry.used = true;
    return entry;
  }

  /**
   * Keeps `entry` under `key`, then evicts until the cache fits its budget: oldest first, but an entry used
   * since it was last passed over gets a second chance at the end (the CLOCK approximation of least recently
   * used). The Map is reordered only when something is evicted, not on every hit: under 50 readers a reorder
   * per hit rewrote the Map's table thousands of times a second, and each 474 KB body an entry held then
   * outlived every young-generation collection (DECISIONS.md, "The response cache marks hits instead of
   * reordering on them (CLOCK)").
   */
  set(key: string, entry: Entry): void {
    if (!this.enabled || sizeOf(entry.body) > this.#maxBytes) return;
    const old = this.#entries.get(key);
    if (old !== undefined) {
      this.#bytes -= sizeOf(old.body);
      this.#entries.delete(key);
    }
    this.#entries.set(key, entry);
    entry.used = true;
    this.#bytes += sizeOf(entry.body);
    for (const [oldest, value] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(oldest);
      if (value.used) {
        value.used = false;
        this.#entries.set(oldest, value);
      } else this.#bytes -= sizeOf(value.body);
    }
  }

  delete(key: string): void {
    const old = this.#entries.get(key);
    if (old === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= sizeOf(old.body);
  }

  /**
   * The topics' versions as of the store's data version `version`, read once for all the requests that
   * saw that data version (after a commit, every cached response is checked: on PostgreSQL each check
   * is a round trip, and under load hundreds would otherwise ask the same question at once).
   */
  versionsAt(version: string, topics: readonly string[], read: () => Promise<number[]>): Promise<number[]> {
    if (version !== this.#versionsOf) {
      this.#versions.clear();
      this.#versionsOf = version;
    }
    const key = topics.join('\n');
    let pending = this.#versions.get(key);
    if (!pending) {
      pending = read();
      this.#versions.set(key, pending);
      pending.catch(() => {
        if (this.#versions.get(key) === pending) this.#versions.delete(key);
      });
    }
    return pending;
  }

  /**
   * One load per key and ETag at a time: concurrent misses that saw the same versions share it. Each key has
   * a slot, kept (empty) after its load settles, so a miss does not add and delete a Map entry: a Map whose
   * entries come and go thousands of times a second chains each old hash table to its successor, and a
   * young-generation collection counts what the old tables still reference as live. On PostgreSQL, where
   * loads overlap, a Map entry per load (holding the load's promise, so its body) had every body loaded
   * outlive two collections: 10 MB promoted per collection and 7 ms pauses under uncached filtered reads
   * (DECISIONS.md, "Concurrent misses share one load, and one read of the versions"). The slots are dropped,
   * all at once, past LOADING_KEYS.
   */
  loadOnce(key: string, etag: string, load: () => Promise<Entry>): Promise<Entry> {
    const kept = this.#loading.get(key);
    if (kept?.promise !== undefined && kept.etag === etag) return kept.promise;
    const slot = kept ?? this.#newSlot(key);
    const promise = load();
    slot.etag = etag;
    slot.promise = promise;
    const settled = () => {
      if (slot.promise === promise) slot.promise = undefined;
    };
    promise.then(settled, settled);
    return promise;
  }

  /** A key's first load slot (loadOnce), after dropping every slot once there are LOADING_KEYS. */
  #newSlot(key: string): Loading {
    if (this.#loading.size >= LOADING_KEYS) this.#loading.clear();
    const slot: Loading = { etag: '', promise: undefined };
    this.#loading.set(key, slot);
    return slot;
  }
}

/**
 * What a kept body counts against the cache's budget: the memory it keeps alive. A body in pieces may be
 * views of larger buffers (a filtered list keeps the pieces of its node's list it shows a part of).
 */
function sizeOf(body: Buffer | Pieces): number {
  return body instanceof Pieces ? body.retained : body.length;
}

/** The strong ETag of a response: what it shows is fixed by these topics' versions in this store. */
function etagOf(
  storeId: string,
  key: string,
  topics: readonly string[],
  versions: readonly number[],
): string {
  // The one-shot form: a Hash object for every miss (every read with --cache-mb 0) cost twice the time.
  const digest = hash(
    'sha256',
    `${VERSION}\n${storeId}\n${key}\n${topics.map((t, i) => `${t}=${versions[i]}`).join('\n')}`,
    'base64url',
  ).slice(0, 27);
  return `"${digest}"`;
}

/** Whether If-None-Match names this ETag (a list, or `*`; weak comparison, as RFC 9110 asks for GET). */
function matches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

const same = (a: readonly number[], b: readonly number[]) => a.every((v, i) => v === b[i]);

/**
 * Answers a read: 304 when the client's ETag is current, else the cached body while its topics have not
 * moved, else loads it (once for concurrent requests), caches and sends it.
 */
export async function sendCached(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: { cache: ResponseCache; store: VersionStore; turns?: ReadTurns | undefined },
  key: string,
  topics: readonly string[],
  load: (versions: readonly number[]) => Promise<Loaded>,
): Promise<void> {
  const { cache, store } = deps;
  const ifNoneMatch = request.headers['if-none-match'];
  reply.header('cache-control', 'no-cache');
  /** The store's data version when the topics' versions were read (SQLite's check; '' on PostgreSQL). */
  let version = '';
  /**
   * The topics' versions now (VersionStore.checkBy), or undefined when the data version is still `checked`:
   * then none of them can have moved.
   */
  const current = async (checked?: string): Promise<readonly number[] | undefined> => {
    if (store.checkBy === 'topics') return store.topicVersions(topics);
    version = await store.dataVersion();
    return version === checked
      ? undefined
      : cache.versionsAt(version, topics, () => store.topicVersions(topics));
  };
  let entry = cache.get(key);
  /** The topics' versions read for this request, when they were (a moved entry's are the load's too). */
  let versions: readonly number[] | undefined;
  if (entry !== undefined) {
    versions = await current(entry.checked);
    if (versions !== undefined) {
      if (same(versions, entry.versions)) entry.checked = version;
      else {
        cache.delete(key);
        entry = undefined;
      }
    }
  }
  if (entry === undefined) {
    // The data version first, then the topics' versions, then the data: each no newer than what follows.
    const read = versions ?? (await current())!;
    const etag = etagOf(await store.storeId(), key, topics, read);
    if (matches(ifNoneMatch, etag)) {
      cache.count('not_modified');
      reply.header('etag', etag);
      sendRaw(reply, 304);
      return;
    }
    cache.count('miss');
    // Shared only by requests that saw the same versions: one that arrives after a commit must not be
    // handed a load that started before it (on PostgreSQL a load is a round trip, commits land meanwhile).
    entry = await cache.loadOnce(key, etag, async () => {
      // The versions it was read after: a store may answer data it keeps at those versions as it is.
      const loaded = await load(read);
      return {
        body: typeof loaded.body === 'string' ? Buffer.from(loaded.body) : loaded.body,
        etag,
        versions: read,
        checked: version,
        next: loaded.next,
      };
    });
    cache.set(key, entry);
  } else {
    cache.count('hit');
  }
  reply.header('etag', entry.etag);
  if (matches(ifNoneMatch, entry.etag)) {
    sendRaw(reply, 304);
    return;
  }
  // Writes first under load (read-turns.ts); from here to the send, nothing awaits.
  if (deps.turns) await deps.turns.turn();
  // From this request's own URL: requests with other spellings of it (an alias path, `limit=05`) share
  // the entry, and each is sent on from where it is.
  if (entry.next !== undefined) reply.header('link', nextLink(request.url, entry.next));
  reply.type('application/json; charset=utf-8');
  if (entry.body instanceof Pieces) sendRaw(reply, 200, entry.body);
  else reply.send(entry.body);
}

/** The Link to a list's next page: this request's path and query, with `after` the page's last small id. */
function nextLink(requestUrl: string, last: U64): string {
  const url = new URL(requestUrl, 'http://daemon');
  url.searchParams.delete('after');
  url.searchParams.append('after', String(last));
  return `<${url.pathname}${url.search}>; rel="next"`;
}

/**
 * Sends the reply itself, with the headers set on it: a body kept in pieces as one write of all of them
 * (a writev, as Fastify's send of one buffer is; joining them first would copy the whole body per
 * request), or a 304 with no Content-Length (RFC 9110 8.6 allows none but the 200's; Fastify's HEAD
 * routes would add `content-length: 0`). The reply is taken over from Fastify here, which then runs no
 * onSend hook (the daemon has none) but still its onResponse hooks, on the response's finish. Node
 * sends no body for a HEAD request.
 */
function sendRaw(reply: FastifyReply, status: 200 | 304, body?: Pieces): void {
  const res = reply.raw;
  reply.hijack();
  if (res.destroyed) return;
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) res.setHeader(name, value);
  }
  if (body === undefined) {
    res.writeHead(status);
    res.end();
    return;
  }
  res.setHeader('content-length', body.length);
  res.writeHead(status);
  res.cork();
  for (const buffer of body.buffers) res.write(buffer);
  res.end();
}
