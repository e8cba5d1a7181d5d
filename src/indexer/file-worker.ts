/**
 * The file source's reader thread (FileEventSource): it reads the JSON-lines file, parses each line and
 * decodes its event (decodeEvent), and posts the pages to the main thread, which applies them. Parsing
 * and decoding a SuiEvent's JSON cost the replay about a quarter of its main thread's time.
 *
 * A page travels as JSON text (FileWorkerPage): the main thread parses a decoded event's few hundred bytes
 * in far less time than a whole SuiEvent's, and than a structured clone of the decoded objects takes
 * (measured: docs/PERFORMANCE.md, twenty-seventh pass). The two values JSON has no form for are wrapped:
 * a u64 above 2^53 - 1 as { "$u64": "digits" }, bytes as { "$bytes": "base64" } (fromWire undoes it).
 *
 * workerData is a FileWorkerData. The reader may post `ahead` pages before the main thread takes any; each
 * FileWorkerCommand 'more' lets it post one more. After the last page, or on 'stop', it closes the file
 * and ends: the file is let go when its exit is seen. (A terminated thread's file handle is closed later,
 * in its teardown, so terminate alone does not tell when.)
 */
import { open } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { type DecodeOutcome, decodeEvent } from '../protocol/events.ts';
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

/** One event of a page: its line's number (from 1), and the event decoded, or why the line is not JSON. */
export type FileWorkerEvent = { line: number; decoded: DecodeOutcome } | { line: number; parseError: string };

/** What the main thread tells the reader: it took a page, or the reader is to close its file and end. */
export type FileWorkerCommand = 'more' | 'stop';

export interface FileWorkerPage {
  /** The page's FileWorkerEvent[], as JSON text. */
  text: string;
  /** Lines consumed after this page: the cursor past it. */
  position: number;
  hasMore: boolean;
}

/** A payload value as JSON text carries it (see the top of this file). */
function toWire(value: unknown): unknown {
  if (typeof value === 'bigint') return { $u64: String(value) };
  if (value instanceof Uint8Array) {
    return { $bytes: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  }
  if (Array.isArray(value)) return value.map(toWire);
  return value;
}

/** Whether JSON carries the value as it is (a vector of plain values is plain). */
function plain(value: unknown): boolean {
  if (typeof value === 'bigint' || value instanceof Uint8Array) return false;
  return !Array.isArray(value) || value.every(plain);
}

/** The outcome with its payload's bigints and bytes wrapped; the same object when it has none. */
function wire(outcome: DecodeOutcome): DecodeOutcome {
  if (outcome.kind !== 'event') return outcome;
  const payload = outcome.event.payload as Record<string, unknown>;
  let wired: Record<string, unknown> | undefined;
  for (const field in payload) {
    if (plain(payload[field])) continue;
    wired ??= { ...payload };
    wired[field] = toWire(payload[field]);
  }
  if (wired === undefined) return outcome;
  return { ...outcome, event: { ...outcome.event, payload: wired } as typeof outcome.event };
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
    const events: FileWorkerEvent[] = [];
    while (events.length < data.pageSize) {
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
        events.push({ line: position, parseError: `not JSON: ${(error as Error).message}` });
        continue;
      }
      let decoded: DecodeOutcome;
      try {
        decoded = decodeEvent(raw);
      } catch (error) {
        // Not a malformed event (those are outcomes) but a failure to decode at all: where it happened.
        throw new Error(`${data.file}:${position}: ${(error as Error).message}`, { cause: error });
      }
      events.push({ line: position, decoded: wire(decoded) });
    }
    port.postMessage({ text: JSON.stringify(events), position, hasMore } satisfies FileWorkerPage);
  }
}

if (parentPort !== null) await run(parentPort, workerData as FileWorkerData);
