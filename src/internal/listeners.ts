/** Callbacks to tell that something happened; a listener's failure is its own and stops no other. */
export class Listeners {
  readonly #set = new Set<() => void>();

  /** Adds a listener; returns the function that removes it. */
  on(listener: () => void): () => void {
    this.#set.add(listener);
    return () => {
      this.#set.delete(listener);
    };
  }

  emit(): void {
    for (const listener of this.#set) {
      try {
        listener();
      } catch {
        // The listener's own failure: what happened has happened.
      }
    }
  }

  clear(): void {
    this.#set.clear();
  }
}
