/**
 * Writes before reads when the daemon is busy. One event loop serves every request. Under a saturating
 * read load (dozens of connections fetching half-megabyte lists) each turn of the loop parses every
 * request that arrived and used to send each read's body in that same turn, so a usage report from the
 * node's inference server waited behind all of them: about 8 ms at the median while the daemon itself
 * served it in 0.2 ms.
 *
 * A read now waits for its turn just before its body is sent, the costly part (the copy into the
 * socket). Turns are given after the loop's I/O phase, in arrival order, for at most `sliceMs` at a time;
 * then the loop goes back to its sockets, and a write that arrived meanwhile is served there and then.
 * Reads keep their order and their throughput (the same work, in slices); an idle daemon sends a read in
 * the same turn of the loop it arrived in.
 */
export class ReadTurns {
  readonly #sliceMs: number;
  readonly #waiting: (() => void)[] = [];
  #head = 0;
  #scheduled = false;
  #sliceStart = 0;
  #given = 0;

  constructor(sliceMs = 0.5) {
    this.#sliceMs = sliceMs;
  }

  /** Reads waiting for their turn. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }

  /**
   * Resolves at this read's turn. What follows the await must be synchronous up to the send: the next
   * turn is given once it has run, and the slice's time is measured across it.
   */
  turn(): Promise<void> {
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#slice);
      }
    });
  }

  readonly #slice = (): void => {
    this.#sliceStart = performance.now();
    this.#given = 0;
    this.#next();
  };

  /**
   * Gives the next turn, while the slice lasts. It runs again as a microtask queued after the read it let
   * through, whose continuation sends synchronously: the time it reads includes that send.
   */
  readonly #next = (): void => {
    const resolve = this.#waiting[this.#head];
    if (resolve === undefined) {
      this.#waiting.length = 0;
      this.#head = 0;
      this.#scheduled = false;
      return;
    }
    // A slice gives at least one turn.
    if (this.#given > 0 && performance.now() - this.#sliceStart >= this.#sliceMs) {
      setImmediate(this.#slice);
      return;
    }
    this.#given += 1;
    this.#waiting[this.#head++] = noop;
    if (this.#head >= 1024) {
      this.#waiting.splice(0, this.#head);
      this.#head = 0;
    }
    resolve();
    queueMicrotask(this.#next);
  };
}

const noop = (): void => {};
