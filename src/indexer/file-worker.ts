/**
 * The file source's reader thread (FileEventSource): it reads the JSON-lines file, parses each line and
 * decodes its event (decodeEvent), and posts the pages to the main thread, which applies them. Parsing
 * and decoding a SuiEvent's JSON cost the replay about a quarter of its main thread's time.
 *
 * A page travels as JSON text in the positional form of file-wire.ts: the main thread parses it in far less
 * time than a whole SuiEvent's JSON, or a structured clone of the decoded objects, takes.
 *
 * workerData is a FileWorkerData. The reader may post `ahead` pages before the main thread takes any; each
 * FileWorkerCommand 'more' lets it post one more. After the last page, or on 'stop', it closes the file
 * and ends: the file is let go when its exit is seen. (A terminated thread's file handle is closed later,
 * in its teardown, so terminate alone does not tell when.)
 */
import { open } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { type DecodeOutcome, decodeEvent } from '../protocol/events.ts';
import { WirePageWriter } from './file-wire.ts';
import { LineReader } from './lines.ts';

export interface FileWorkerData {
  file: string;
  /** Lines to pass over first: the cursor the reading resumes at. */
  skip: number;
  /** Events a page holds at most (a blank line is no event). */
  pageSize: number;
  /** Pages it may post before the main thread has taken any. */
  ahead: number;
}

/** What the main thread tells the reader: it took a page, or the reader is to close its file and end. */
export type FileWorkerCommand = 'more' | 'stop';

export interface FileWorkerPage {
  /** The page's events, decoded, as file-wire.ts writes them (readWirePage reads them). */
  text: string;
  /** Lines consumed after this page: the cursor past it. */
  position: number;
  hasMore: boolean;
}

async function run(port: NonNullable<typeof parentPort>, data: FileWorkerData): Promise<void> {
  let credits = data.ahead;
  let stopped = false;
  let wake: (() => void) | undefined;
  port.on('message', (command: FileWorkerCommand) => {
    if (command === 'stop') stopped = true;
    else credits += 1;
    wake?.();
  });
  const handle = await open(data.file, 'r');
  try {
    await readPages(port, data, new LineReader(handle), {
      stopped: () => stopped,
      credit: async () => {
        while (credits === 0 && !stopped) {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
        credits -= 1;
        return !stopped;
      },
    });
  } finally {
    await handle.close();
  }
  port.close();
}

/** Posts the pages until the file ends or the main thread says stop. */
async function readPages(
  port: NonNullable<typeof parentPort>,
  data: FileWorkerData,
  lines: LineReader,
  control: { stopped: () => boolean; credit: () => Promise<boolean> },
): Promise<void> {
  let position = 0;
  while (position < data.skip && !control.stopped() && (await lines.next()) !== undefined) position += 1;
  for (let hasMore = true; hasMore; ) {
    if (!(await control.credit())) return;
    const page = new WirePageWriter();
    while (page.length < data.pageSize) {
      if (control.stopped()) return;
      const next = await lines.next();
      if (next === undefined) {
        hasMore = false;
        break;
      }
      position += 1;
      const line = next.trim();
      if (line === '') continue;
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch (error) {
        page.addParseError(position, `not JSON: ${(error as Error).message}`);
        continue;
      }
      let decoded: DecodeOutcome;
      try {
        decoded = decodeEvent(raw);
      } catch (error) {
        // Not a malformed event (those are outcomes) but a failure to decode at all: where it happened.
        throw new Error(`${data.file}:${position}: ${(error as Error).message}`, { cause: error });
      }
      page.add(position, decoded);
    }
    port.postMessage({ text: page.text(), position, hasMore } satisfies FileWorkerPage);
  }
}

if (parentPort !== null) await run(parentPort, workerData as FileWorkerData);
