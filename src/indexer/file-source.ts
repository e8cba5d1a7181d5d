import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import type { EventPage, EventSource } from '../chain/chain.ts';
import { readWirePage } from './file-wire.ts';
import type { FileWorkerCommand, FileWorkerData, FileWorkerPage } from './file-worker.ts';

export { READ_BYTES } from './lines.ts';

/**
 * How many events the reader thread may have ready ahead of the indexer: two catch-up batches, so that the
 * next batch is ready whenever the indexer has applied one (a few hundred bytes of JSON text an event).
 */
const AHEAD_EVENTS = 20_000;

/**
 * Events from a JSON-lines file, one SuiEvent per line. The cursor is the number of lines consumed, so a
 * replay interrupted at any point resumes at the next unapplied page.
 *
 * A reader thread (file-worker.ts) reads, parses and decodes the lines ahead of the indexer, on the other
 * core; the events arrive decoded (RawEvent.decoded). A read from another cursor than the last page's end
 * starts a new reader there.
 */
export class FileEventSource implements EventSource {
  readonly id: string;
  readonly #file: string;
  readonly #pageSize: number;
  #reader: PageReader | undefined;
  /** Lines consumed by the pages read so far. */
  #position = 0;
  /** The last page read was the file's last: its reader is gone, and a read on from there finds nothing. */
  #ended = false;

  constructor(file: string, pageSize = 1000) {
    this.#file = resolve(file);
    this.#pageSize = pageSize;
    this.id = `file:${this.#file}`;
  }

  /** Throws an Error with a one-line reason when the file cannot be read. */
  static check(file: string): void {
    const stat = statSync(file, { throwIfNoEntry: false });
    if (!stat) throw new Error(`no such file: ${file}`);
    if (!stat.isFile()) throw new Error(`not a regular file: ${file}`);
  }

  async readPage(cursor: string | null): Promise<EventPage> {
    const start = cursor === null ? 0 : Number(cursor);
    if (!Number.isSafeInteger(start) || start < 0) throw new Error(`invalid file cursor ${cursor}`);
    if (this.#ended && start === this.#position) {
      return { events: [], nextCursor: String(start), hasMore: false };
    }
    let reader = this.#reader;
    if (reader === undefined || start !== this.#position) {
      // The new reader takes the old one's place before anything is awaited: reads that overlap leave no
      // reader behind that nothing can close.
      const old = reader;
      reader = new PageReader({
        file: this.#file,
        skip: start,
        pageSize: this.#pageSize,
        ahead: Math.max(2, Math.ceil(AHEAD_EVENTS / this.#pageSize)),
      });
      this.#reader = reader;
      this.#position = start;
      this.#ended = false;
      await old?.close();
    }
    let page: FileWorkerPage;
    try {
      page = await reader.next();
    } catch (error) {
      // A reader that failed is gone: the next read starts a new one, which may find the file readable.
      if (this.#reader === reader) this.#reader = undefined;
      await reader.close();
      throw error;
    }
    this.#position = page.position;
    if (!page.hasMore) {
      // At the end: the reader has let the file go, and goes too.
      await this.close();
      this.#ended = true;
    }
    return {
      events: readWirePage(this.#file, page.text),
      nextCursor: String(page.position),
      hasMore: page.hasMore,
    };
  }

  async close(): Promise<void> {
    const reader = this.#reader;
    this.#reader = undefined;
    this.#ended = false;
    await reader?.close();
  }
}

/** How long a reader told to stop may take to close its file and end before it is terminated. */
const STOP_MS = 5000;

/**
 * The reader thread's module, beside this one: file-worker.ts in the clone, file-worker.js in the built
 * package (tsc rewrites the specifiers of imports, not a URL's text).
 */
const WORKER_FILE = import.meta.url.endsWith('.ts') ? './file-worker.ts' : './file-worker.js';

/** One reader thread: its pages in order, and its failure (a file it cannot read) when it fails. */
class PageReader {
  readonly #worker: Worker;
  readonly #pages: FileWorkerPage[] = [];
  readonly #exited: Promise<void>;
  /** close() holds the process until the thread has ended: a read that waited must not let go of it. */
  #closing = false;
  #failure: Error | undefined;
  #wake: (() => void) | undefined;

  constructor(data: FileWorkerData) {
    this.#worker = new Worker(new URL(WORKER_FILE, import.meta.url), {
      name: 'file-source',
      workerData: data,
    });
    this.#worker.on('message', (page: FileWorkerPage) => {
      this.#pages.push(page);
      this.#wake?.();
    });
    this.#worker.on('error', (error) => {
      this.#failure = error;
      this.#wake?.();
    });
    this.#exited = new Promise((resolve) => {
      this.#worker.on('exit', (code) => {
        this.#failure ??= new Error(`the file reader stopped before the end of the file (exit code ${code})`);
        this.#wake?.();
        resolve();
      });
    });
    // A reader keeps the process alive only while a page is waited for (next).
    this.#worker.unref();
  }

  async next(): Promise<FileWorkerPage> {
    // The loop gets a turn for every page, as it did when the main thread read the file itself: a replay
    // on SQLite otherwise runs on microtasks alone while pages are ready, and its SIGINT and SIGTERM
    // handlers (which stop it between pages) would not run until it ended.
    await turn();
    while (this.#pages.length === 0) {
      if (this.#failure) throw this.#failure;
      this.#worker.ref();
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
      if (!this.#closing) this.#worker.unref();
    }
    const page = this.#pages.shift()!;
    // It may read one page more ahead.
    if (page.hasMore) this.#post('more');
    return page;
  }

  /** Resolves once the thread has ended and its file is closed. */
  async close(): Promise<void> {
    this.#post('stop');
    // The thread keeps the process alive until it has ended; the timer does not.
    this.#closing = true;
    this.#worker.ref();
    const timer = setTimeout(() => void this.#worker.terminate(), STOP_MS).unref();
    try {
      await this.#exited;
    } finally {
      clearTimeout(timer);
    }
  }

  #post(command: FileWorkerCommand): void {
    this.#worker.postMessage(command);
  }
}
