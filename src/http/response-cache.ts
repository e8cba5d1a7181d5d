import type { FastifyReply } from 'fastify';
import { serialized } from './serialized.ts';

/**
 * Serialized read responses, keyed by a canonical request key and valid for one store data version. Any
 * commit, by this process or another one on the same store, changes the version and empties the cache.
 * Bounded in bytes; the least recently used entries go first.
 */
export class ResponseCache {
  readonly #maxBytes: number;
  readonly #entries = new Map<string, Buffer>();
  #bytes = 0;
  #version: string | undefined;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get enabled(): boolean {
    return this.#maxBytes > 0;
  }

  get(version: string, key: string): Buffer | undefined {
    if (version !== this.#version) {
      this.#entries.clear();
      this.#bytes = 0;
      this.#version = version;
      return undefined;
    }
    const body = this.#entries.get(key);
    if (body !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, body);
    }
    return body;
  }

  set(version: string, key: string, body: Buffer): void {
    if (version !== this.#version || body.length > this.#maxBytes) return;
    const old = this.#entries.get(key);
    if (old !== undefined) this.#bytes -= old.length;
    this.#entries.set(key, body);
    this.#bytes += body.length;
    for (const [oldest, value] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= value.length;
    }
  }
}

/**
 * Answers with the cached body for key at the store's current version, or loads, serializes (with the
 * route's response schema) and caches it.
 */
export async function sendCached(
  reply: FastifyReply,
  cache: ResponseCache,
  version: () => Promise<string>,
  key: string,
  load: () => Promise<unknown>,
): Promise<void> {
  reply.type('application/json; charset=utf-8');
  if (!cache.enabled) {
    reply.send(serialized(reply, await load()));
    return;
  }
  const current = await version();
  let body = cache.get(current, key);
  if (body === undefined) {
    body = Buffer.from(serialized(reply, await load()));
    cache.set(current, key, body);
  }
  reply.send(body);
}
