import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';

/**
 * The WAL index header: two copies of a 48-byte struct at the start of the `-shm` file
 * (https://sqlite.org/walformat.html). Its `iChange` counts every write transaction, and SQLite rewrites
 * the header on every commit (walIndexWriteHdr), whichever connection of whichever process commits.
 */
const HEADER_BYTES = 96;
/** `iVersion`, the header's first field, in the file's native byte order: the WAL index format SQLite uses. */
const WAL_INDEX_VERSION = 3007000;

/**
 * Whether any connection committed to a WAL-mode SQLite file since the last look, read from its WAL index
 * with one `pread` of the header. `PRAGMA data_version` answers the same question but opens a read
 * transaction to do it (SQLite's locks and an `fstat`): once per loop turn, that was most of what a turn of
 * cached reads cost (DECISIONS.md, "The response cache reads the store version once per event-loop turn").
 *
 * Any difference in the header counts as a change, so a torn read (a commit writing the header meanwhile)
 * only costs a re-check. A commit that the header would not show is what must never happen; `committed`
 * checks that after each commit of this process, and the watch turns itself off for good if one did not
 * move it (the caller then reads PRAGMA data_version as before).
 */
export class WalIndexWatch {
  #fd: number | undefined;
  readonly #now = Buffer.alloc(HEADER_BYTES);
  readonly #last = Buffer.alloc(HEADER_BYTES);
  #changes = 0;

  private constructor(fd: number) {
    this.#fd = fd;
  }

  /** A watch on `databaseFile`'s WAL index, or undefined when it has none this can read. */
  static open(databaseFile: string): WalIndexWatch | undefined {
    let fd: number;
    try {
      fd = openSync(`${databaseFile}-shm`, 'r');
    } catch {
      return undefined;
    }
    const watch = new WalIndexWatch(fd);
    const header = watch.#read();
    const version =
      header === undefined
        ? undefined
        : endianness() === 'LE'
          ? header.readUInt32LE(0)
          : header.readUInt32BE(0);
    if (version !== WAL_INDEX_VERSION) {
      watch.close();
      return undefined;
    }
    watch.#last.set(watch.#now);
    return watch;
  }

  get active(): boolean {
    return this.#fd !== undefined;
  }

  /**
   * A version that moves when any connection has committed since it was last asked: a count of the
   * header's changes. Undefined once the watch is off.
   */
  version(): string | undefined {
    if (this.#read() === undefined) return undefined;
    if (!this.#now.equals(this.#last)) {
      this.#changes += 1;
      this.#last.set(this.#now);
    }
    return String(this.#changes);
  }

  /**
   * To be called right after this process committed, with the version read before its transaction: the
   * header must have moved. If it did not, the header does not show commits here, and the watch turns off.
   */
  committed(before: string | undefined): void {
    const after = this.version();
    if (after !== undefined && after === before) this.close();
  }

  close(): void {
    if (this.#fd === undefined) return;
    closeSync(this.#fd);
    this.#fd = undefined;
  }

  /** The header as it is now, into #now; undefined (and the watch off) when it cannot be read whole. */
  #read(): Buffer | undefined {
    if (this.#fd === undefined) return undefined;
    let n: number;
    try {
      n = readSync(this.#fd, this.#now, 0, HEADER_BYTES, 0);
    } catch {
      n = 0;
    }
    if (n !== HEADER_BYTES) {
      this.close();
      return undefined;
    }
    return this.#now;
  }
}
