/**
 * Group commit: items submitted while a group is being written wait, and go together in the next one.
 * An item that finds nothing running starts its group at once (alone), so an idle writer adds no delay;
 * under load, each group takes everything that arrived during the one before it, and the cost of a
 * commit (SQLite's WAL write, PostgreSQL's flush and its hot rows' locks) is paid once per group instead
 * of once per item. `write` answers one outcome per item, in order; when it throws, every item of that
 * group fails with its error (the group was one transaction: none of it was written).
 */
export class GroupCommit<Item, Outcome> {
  readonly #write: (items: Item[]) => Promise<Outcome[]>;
  readonly #max: number;
  #waiting: { item: Item; resolve: (outcome: Outcome) => void; reject: (error: unknown) => void }[] = [];
  #running = false;

  constructor(write: (items: Item[]) => Promise<Outcome[]>, maxGroup = 256) {
    this.#write = write;
    this.#max = maxGroup;
  }

  submit(item: Item): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#waiting.length > 0) {
        const group = this.#waiting.splice(0, this.#max);
        try {
          const outcomes = await this.#write(group.map((w) => w.item));
          group.forEach((w, i) => {
            w.resolve(outcomes[i]!);
          });
        } catch (error) {
          for (const w of group) w.reject(error);
        }
      }
    } finally {
      this.#running = false;
    }
  }
}
