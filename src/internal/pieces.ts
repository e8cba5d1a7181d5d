/**
 * A response body kept in pieces: a node's whole stack list (store/stack-list/body.ts ListBody), where a
 * usage report replaces the one piece that holds its stack instead of copying the whole 474 KB body, or views
 * of some of its stacks (a filtered list or a page). Sent as it is, in one write of all the pieces
 * (response-cache.ts); `length` is the body's size in bytes.
 */
export class Pieces {
  readonly buffers: readonly Buffer[];
  readonly length: number;
  #retained: number | undefined;

  constructor(buffers: readonly Buffer[]) {
    this.buffers = buffers;
    let length = 0;
    for (const buffer of buffers) length += buffer.length;
    this.length = length;
  }

  /**
   * The bytes this body keeps alive: each of its buffers' whole memory, once however many views of it the
   * body holds. A filtered list is views of its node's kept list (store/stack-list/body.ts listSlice): it
   * keeps the pieces it shows a part of, which a cache that holds it must count.
   */
  get retained(): number {
    if (this.#retained === undefined) {
      const seen = new Set<ArrayBufferLike>();
      let bytes = 0;
      for (const { buffer } of this.buffers) {
        if (seen.has(buffer)) continue;
        seen.add(buffer);
        bytes += buffer.byteLength;
      }
      this.#retained = bytes;
    }
    return this.#retained;
  }

  /** The whole body as one buffer (a copy): for tests and callers that need it joined. */
  joined(): Buffer {
    return Buffer.concat(this.buffers as Buffer[], this.length);
  }

  /** The body's text (UTF-8). */
  toString(): string {
    return this.joined().toString('utf8');
  }
}
