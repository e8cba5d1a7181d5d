/**
 * A response body kept in pieces: a node's whole stack list (store/rows.ts ListBody), where a usage report
 * replaces the one piece that holds its stack instead of copying the whole 474 KB body. Sent as it is, in
 * one write of all the pieces (response-cache.ts); `length` is the body's size in bytes.
 */
export class Pieces {
  readonly buffers: readonly Buffer[];
  readonly length: number;

  constructor(buffers: readonly Buffer[]) {
    this.buffers = buffers;
    let length = 0;
    for (const buffer of buffers) length += buffer.length;
    this.length = length;
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
