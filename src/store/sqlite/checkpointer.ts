import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints off the writer's thread. SQLite's own automatic checkpoint runs inside the COMMIT that
 * crosses the threshold: the indexer then waits while the WAL is copied into the database file and both
 * are fsynced (about 10 % of ingest wall time). Here the writer only looks at the WAL's size after it
 * commits, and a worker thread with its own connection runs the PASSIVE checkpoint, which never blocks the
 * writer or the readers. A checkpoint is an ordinary SQLite operation whoever runs it: a crash during one
 * loses nothing committed.
 *
 * The WAL starts over only at a write transaction that begins after a checkpoint has copied every frame
 * (https://www.sqlite.org/wal.html, "Avoiding Excessively Large WAL Files"). A checkpoint beside the writer
 * races it: under a steady run of small commits (usage reports) the next BEGIN nearly always came while the
 * checkpoint of the frames before it was still running, so the WAL did not start over, stayed past the
 * threshold, and every commit asked for one more checkpoint, with its fsyncs: measured, 0.6 fsyncs a
 * report and a WAL ten times the threshold. So the checkpoints that copy the bulk run beside the writer,
 * and the one that copies the last few frames is waited for: the writer begins nothing until it is done
 * (`held`, at most HOLD_LIMIT_MS), and its next transaction starts the WAL over.
 */

/** WAL bytes past which the worker is asked to checkpoint: ~40 MB, SQLite's threshold before this. */
export const CHECKPOINT_WAL_BYTES = 10_000 * 4096;
/**
 * The size the WAL file is cut back to when it starts over (PRAGMA journal_size_limit). Above what one
 * checkpoint cycle fills, so that the file is reused, not truncated: truncating 40 MB dropped its pages
 * from the page cache inside the writer's next COMMIT, 10 to 18 ms of kernel time on the event loop every
 * cycle. A WAL that once grew past it (a reader held a checkpoint back) is cut back to it.
 */
export const WAL_SIZE_LIMIT_BYTES = 4 * CHECKPOINT_WAL_BYTES;
/**
 * The writer's own automatic checkpoint, in pages, kept as a safety net: reached only when the worker is
 * gone or cannot keep up (a reader holding an old snapshot).
 */
export const WRITER_AUTOCHECKPOINT_PAGES = 40_000;
/**
 * The frames left to copy (the WAL's frames less those a checkpoint has already copied) at or below which
 * the writer waits for the checkpoint, so that it copies all of them: about 1 MB, a few ms at most.
 */
export const FINAL_CHECKPOINT_FRAMES = 256;
/**
 * The longest the writer waits for a checkpoint (a disk that stalls): then it goes on, and waits again only
 * once the WAL has grown by the threshold. Measured under 500 reports/s and the live stream on the daemon's
 * one core: 1.2 to 11 ms, ten waits in 24 s of reports; with three busy loops on a two-core machine, p50
 * 0.7 ms, p99 9.5 ms. A wait that included the worker thread's start took 55 to 127 ms, so the worker
 * starts earlier (afterCommit).
 */
const HOLD_LIMIT_MS = 250;
/** The worker's thread name, as `top -H` and /proc/PID/task/TID/comm show it (at most 15 bytes on Linux). */
export const CHECKPOINT_THREAD = 'wal-checkpoint';
/** Where the worker counts its checkpoints, and says that one failed. */
const COMPLETED = 0;
const FAILED = 1;

// The worker's code, run from a string: it needs no module of ours, and nothing to ship beside this file.
// It reports through shared memory, not messages: the writer may not return to the event loop for a long
// time (an indexer catching up runs on microtasks), and it must still see that a checkpoint finished. A
// message after each checkpoint only wakes a writer that is idle, to look at the WAL once more.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const state = new Int32Array(workerData.state);
let db;
try {
  db = new DatabaseSync(workerData.file, { timeout: 5000 });
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('PRAGMA wal_autocheckpoint = 0');
} catch {
  Atomics.store(state, ${FAILED}, 1);
}
parentPort.on('message', (message) => {
  if (message === 'close') {
    db?.close();
    parentPort.close();
    return;
  }
  try {
    if (db) db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get();
  } catch {
    Atomics.store(state, ${FAILED}, 1);
  }
  Atomics.add(state, ${COMPLETED}, 1);
  Atomics.notify(state, ${COMPLETED});
  parentPort.postMessage('done');
});
`;

/** The WAL-index is in this machine's byte order. */
const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * What a database's WAL holds now, from the WAL-index in its -shm file (https://www.sqlite.org/walformat.html):
 * "The WAL-Index Header" gives mxFrame, the u32 at byte 16, and szPage, the u16 at byte 14, in native byte
 * order (SQLite keeps two copies, at 0 and 48, and a reader trusts them only when they agree); the
 * checkpoint information after them begins with nBackfill, the u32 at byte 96: the frames a checkpoint has
 * copied into the database file. The file's size says nothing once the WAL is reused instead of truncated.
 * Undefined while there is no -shm file or the copies differ (a writer in another process mid-commit).
 */
export class WalFill {
  readonly #shm: string;
  #fd: number | undefined;
  readonly #header = Buffer.alloc(100);

  constructor(file: string) {
    this.#shm = `${file}-shm`;
  }

  /** The bytes of WAL frames the WAL holds. */
  bytes(): number | undefined {
    return this.read()?.bytes;
  }

  /** The WAL's frames, the bytes they take, and how many of them a checkpoint has copied. */
  read(): { frames: number; bytes: number; copied: number } | undefined {
    let read: number;
    try {
      this.#fd ??= openSync(this.#shm, 'r');
      read = readSync(this.#fd, this.#header, 0, 100, 0);
    } catch {
      return undefined;
    }
    if (read < 96 || !this.#header.subarray(0, 48).equals(this.#header.subarray(48, 96))) return undefined;
    const u32 = (at: number) =>
      LITTLE_ENDIAN ? this.#header.readUInt32LE(at) : this.#header.readUInt32BE(at);
    const frames = u32(16);
    const pageField = LITTLE_ENDIAN ? this.#header.readUInt16LE(14) : this.#header.readUInt16BE(14);
    // Read without SQLite's locks: a checkpoint may be moving it. Never more than the frames there are.
    const copied = read < 100 ? 0 : Math.min(u32(96), frames);
    // A WAL frame is a 24-byte header and a page; a page size of 65,536 is stored as 1.
    return { frames, bytes: frames * ((pageField === 1 ? 65_536 : pageField) + 24), copied };
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}

/** Checkpoints the WAL of one database file from a worker thread, started on first need. */
export class WalCheckpointer {
  readonly #fill: WalFill;
  readonly #file: string;
  readonly #onFailure: () => void;
  readonly #threshold: number;
  /** [checkpoints completed, failed (0 or 1)], written by the worker. */
  readonly #state = new Int32Array(new SharedArrayBuffer(8));
  #requested = 0;
  /**
   * A commit came while a checkpoint ran, and asked for none: once it is done, the writer's thread looks
   * again, so that a burst of commits that ends while a checkpoint runs does not leave its last frames
   * in the WAL until the next commit (which may be hours away on a quiet node).
   */
  #missed = false;
  /**
   * The WAL's bytes below which the writer does not wait again: a wait that did not start the WAL over (a
   * reader in another process kept an older snapshot) is not repeated before the WAL has grown by the
   * threshold once more, so that a stuck WAL never makes every commit wait.
   */
  #waitFrom = 0;
  #held: Promise<void> | undefined;
  #worker: Worker | undefined;
  #failed = false;
  #closed = false;

  /**
   * onFailure: the worker could not run a checkpoint; the writer should checkpoint itself again.
   * thresholdBytes: the WAL size that asks for one (smaller in tests).
   */
  constructor(file: string, onFailure: () => void, thresholdBytes = CHECKPOINT_WAL_BYTES) {
    this.#file = file;
    this.#fill = new WalFill(file);
    this.#onFailure = onFailure;
    this.#threshold = thresholdBytes;
  }

  /** Checkpoints the worker has completed. */
  get completed(): number {
    return Atomics.load(this.#state, COMPLETED);
  }

  /**
   * While the writer must wait for a checkpoint to finish before it begins a transaction (see the top of
   * this file): a promise that settles when it has. Undefined when the writer need not wait.
   */
  get held(): Promise<void> | undefined {
    return this.#held;
  }

  /**
   * After a commit: asks for a checkpoint when the WAL has grown past the threshold and none is running.
   * When few frames are left to copy, the writer waits for this one (`held`).
   */
  afterCommit(): void {
    if (this.#failed || this.#closed) return;
    if (Atomics.load(this.#state, FAILED) === 1) {
      this.#fail();
      return;
    }
    if (this.completed < this.#requested) {
      this.#missed = true;
      return;
    }
    this.#missed = false;
    const wal = this.#fill.read();
    if (wal === undefined || wal.bytes < this.#threshold) {
      this.#waitFrom = 0;
      // The worker starts once the WAL is half way there, not with its first checkpoint: a thread takes
      // tens of ms to start, and a writer waiting for that checkpoint would wait for the start too. A store
      // that stays small never starts it.
      if (wal !== undefined && wal.bytes >= this.#threshold / 2) this.#start();
      return;
    }
    const done = this.completed;
    this.#requested += 1;
    this.#start().postMessage('checkpoint');
    // Many frames left: this checkpoint runs beside the writer, and the next one, after the next commit,
    // has fewer to copy. A writer that appends faster than checkpoints copy (an indexer catching up, in
    // transactions of thousands of frames) is never held: its WAL starts over when a checkpoint happens to
    // finish between two of them, as it did before.
    if (wal.frames - wal.copied > FINAL_CHECKPOINT_FRAMES || wal.bytes < this.#waitFrom) return;
    this.#waitFrom = wal.bytes + this.#threshold;
    const wait = Atomics.waitAsync(this.#state, COMPLETED, done, HOLD_LIMIT_MS);
    if (!wait.async) return;
    // A waitAsync holds no handle of the event loop: the timer does, so that a process with a transaction
    // waiting here does not exit.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, HOLD_LIMIT_MS);
    });
    const held = Promise.race([wait.value, limit]).then(() => {
      clearTimeout(timer);
      if (this.#held === held) this.#held = undefined;
    });
    this.#held = held;
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      name: CHECKPOINT_THREAD,
      workerData: { file: this.#file, state: this.#state.buffer },
    });
    worker.on('error', () => this.#fail());
    worker.on('message', () => {
      if (this.#missed) this.afterCommit();
    });
    // It must not keep the process alive: a daemon exits when its work is done, whatever the WAL. After
    // the listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #fail(): void {
    if (this.#failed || this.#closed) return;
    this.#failed = true;
    // A writer waiting for the worker's checkpoint goes on.
    Atomics.notify(this.#state, COMPLETED);
    void this.#worker?.terminate();
    this.#worker = undefined;
    this.#onFailure();
  }

  /** Lets a running checkpoint finish, then closes the worker's connection and ends the thread. */
  async close(): Promise<void> {
    this.#closed = true;
    Atomics.notify(this.#state, COMPLETED);
    this.#fill.close();
    const worker = this.#worker;
    if (!worker) return;
    this.#worker = undefined;
    worker.ref();
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('close');
    await exited;
  }
}
