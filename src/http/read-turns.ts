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
 *
 * A report waits, at the median, about half a slice. Shorter slices answer it sooner but cost the reads:
 * each slice ends with a turn of the loop (an `epoll_pwait`, the store's data version), and at 0.25 ms
 * that was about 6 % of a saturating read load's throughput cached and 13 % uncached (DECISIONS.md, "Reads
 * send in turns, so that usage reports are not queued behind them"). So slices are short only while writes
 * arrive: for `busyForMs` after any write (`writeArrived`) a slice lasts `busySliceMs`, and otherwise
 * `sliceMs`. A daemon that only serves reads sends them as before; one whose node reports usage pays for
 * the shorter wait it gets.
 */
export interface ReadTurnsOptions {
  /** A slice's length while no write arrived for `busyForMs`. */
  sliceMs?: number;
  /** A slice's length within `busyForMs` of a write. */
  busySliceMs?: number;
  /** How long after a write the slices stay short. */
  busyForMs?: number;
}

export class ReadTurns {
  readonly #sliceMs: number;
  readonly #busySliceMs: number;
  readonly #busyForMs: number;
  /** When the last write arrived (performance.now()). */
  #lastWrite = -Infinity;
  /** The slice in progress's length. */
  #currentSliceMs: number;
  readonly #waiting: (() => void)[] = [];
  #head = 0;
  #scheduled = false;
  #sliceStart = 0;
  #given = 0;

  constructor({ sliceMs = 0.5, busySliceMs = 0.25, busyForMs = 100 }: ReadTurnsOptions = {}) {
    this.#sliceMs = sliceMs;
    this.#busySliceMs = busySliceMs;
    this.#busyForMs = busyForMs;
    this.#currentSliceMs = sliceMs;
  }

  /** Whether a write arrived within `busyForMs`: slices are short. */
  get busy(): boolean {
    return performance.now() - this.#lastWrite < this.#busyForMs;
  }

  /** A write arrived: slices are short for the next `busyForMs`. */
  writeArrived(): void {
    this.#lastWrite = performance.now();
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
    this.#currentSliceMs = this.busy ? this.#busySliceMs : this.#sliceMs;
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
    if (this.#given > 0 && performance.now() - this.#sliceStart >= this.#currentSliceMs) {
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
