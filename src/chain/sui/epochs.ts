/**
 * Which epoch each checkpoint belongs to, for the event source: an event's epoch is its transaction's, and
 * that is its checkpoint's (contracts.md §3.5: a try-settle's epoch decides when the stack can be claimed).
 *
 * Epochs are runs of consecutive checkpoints, so the index learns each epoch's range once and answers from
 * it: an ended epoch from its first and last checkpoint (GetCheckpoint for the epoch of one of its
 * checkpoints, then GetEpoch for the range), the running one from its first checkpoint and the chain head
 * (GetServiceInfo: the latest checkpoint and its epoch), which also gives each page the chain's current
 * epoch. Catching up costs about one lookup per epoch (GetEpoch for the epoch after the last one learnt; two
 * more where events skip epochs), and following the head one head read per page with new events, whatever
 * the number of events.
 */

/** The chain head as the fullnode reports it: its latest executed checkpoint and that checkpoint's epoch. */
export interface Head {
  epoch: bigint;
  checkpoint: bigint;
  timestampMs: number | undefined;
}

/** The ledger reads the index makes, one fullnode call each. */
export interface LedgerReads {
  /** GetServiceInfo. */
  head(): Promise<Head>;
  /** GetEpoch's first and last checkpoint; the last is unset while the epoch runs. */
  epochRange(epoch: bigint): Promise<{ first: bigint | undefined; last: bigint | undefined }>;
  /** GetCheckpoint's summary.epoch. */
  checkpointEpoch(sequence: bigint): Promise<bigint>;
}

interface Range {
  epoch: bigint;
  first: bigint;
  last: bigint;
}

export class EpochIndex {
  readonly #reads: LedgerReads;
  /** Ended epochs' ranges, learned once each, sorted by first checkpoint (a few bytes per epoch). */
  readonly #ended: Range[] = [];
  /** The running epoch: its first checkpoint, and the highest checkpoint known to be in it. */
  #running: Range | undefined;
  #head: (Head & { at: number }) | undefined;
  #reading: Promise<Head> | undefined;

  constructor(reads: LedgerReads) {
    this.#reads = reads;
  }

  /** The chain head, read again when the last read is older than maxAgeMs. */
  async head(maxAgeMs: number): Promise<Head> {
    if (this.#head && Date.now() - this.#head.at < maxAgeMs) return this.#head;
    return this.#readHead();
  }

  /** The epoch of each checkpoint. */
  async epochsOf(checkpoints: Iterable<bigint>): Promise<Map<bigint, bigint>> {
    const out = new Map<bigint, bigint>();
    let headRead = false;
    for (const checkpoint of [...new Set(checkpoints)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
      let epoch = this.#find(checkpoint);
      // Past what is known of the running epoch: the head says how far it runs now (once per call).
      if (epoch === undefined && !headRead && (!this.#running || checkpoint >= this.#running.first)) {
        await this.#readHead();
        headRead = true;
        epoch = this.#find(checkpoint);
      }
      epoch ??= await this.#learn(checkpoint);
      out.set(checkpoint, epoch);
    }
    return out;
  }

  #find(checkpoint: bigint): bigint | undefined {
    let low = 0;
    let high = this.#ended.length - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      const range = this.#ended[middle]!;
      if (checkpoint < range.first) high = middle - 1;
      else if (checkpoint > range.last) low = middle + 1;
      else return range.epoch;
    }
    const running = this.#running;
    if (running && checkpoint >= running.first && checkpoint <= running.last) return running.epoch;
    return undefined;
  }

  #readHead(): Promise<Head> {
    this.#reading ??= (async () => {
      try {
        const head = await this.#reads.head();
        const running = this.#running;
        if (running && head.epoch === running.epoch) {
          if (head.checkpoint > running.last) running.last = head.checkpoint;
        } else if (!running || head.epoch > running.epoch) {
          const { first } = await this.#reads.epochRange(head.epoch);
          if (first !== undefined) {
            // The epoch just before the new one ended where the new one starts.
            if (running && head.epoch === running.epoch + 1n && first > running.first) {
              this.#addEnded({ epoch: running.epoch, first: running.first, last: first - 1n });
            }
            this.#running = { epoch: head.epoch, first, last: head.checkpoint };
          }
        }
        this.#head = { ...head, at: Date.now() };
        return head;
      } finally {
        this.#reading = undefined;
      }
    })();
    return this.#reading;
  }

  /** A checkpoint outside every known range: its epoch, and that epoch's range for the next ones. */
  async #learn(checkpoint: bigint): Promise<bigint> {
    // Catching up, the checkpoint is most likely in the epoch after the last one learnt: one lookup.
    const before = this.#endedBefore(checkpoint);
    const guess = before === undefined ? undefined : before.epoch + 1n;
    if (
      guess !== undefined &&
      !this.#ended.some((known) => known.epoch === guess) &&
      (!this.#running || guess < this.#running.epoch)
    ) {
      const { first, last } = await this.#reads.epochRange(guess);
      if (first !== undefined && last !== undefined) {
        this.#addEnded({ epoch: guess, first, last });
        if (checkpoint >= first && checkpoint <= last) return guess;
      }
    }
    const epoch = await this.#reads.checkpointEpoch(checkpoint);
    const { first, last } = await this.#reads.epochRange(epoch);
    if (first === undefined) return epoch;
    if (last !== undefined) this.#addEnded({ epoch, first, last });
    else if (!this.#running || epoch > this.#running.epoch) {
      this.#running = { epoch, first, last: checkpoint };
    } else if (epoch === this.#running.epoch && checkpoint > this.#running.last) {
      this.#running.last = checkpoint;
    }
    return epoch;
  }

  /** The ended epoch that ends last before the checkpoint. */
  #endedBefore(checkpoint: bigint): Range | undefined {
    for (let i = this.#ended.length - 1; i >= 0; i--) {
      if (this.#ended[i]!.last < checkpoint) return this.#ended[i];
    }
    return undefined;
  }

  #addEnded(range: Range): void {
    if (this.#ended.some((known) => known.epoch === range.epoch)) return;
    const at = this.#ended.findIndex((known) => known.first > range.first);
    this.#ended.splice(at === -1 ? this.#ended.length : at, 0, range);
  }
}
