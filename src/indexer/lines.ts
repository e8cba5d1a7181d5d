import type { FileHandle } from 'node:fs/promises';

/** How much of the file one read takes. */
export const READ_BYTES = 1 << 20;
const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
/** node:readline's line ends: a line ends at \r\n, \n or a lone \r. */
const LINE_END = /\r\n|\n|\r/;

/**
 * A file's lines, as node:readline splits them (\r\n, \n or a lone \r), read a MiB at a time.
 *
 * It reads bytes and decodes each read up to its last newline with Buffer#toString. A UTF-8 byte sequence
 * never contains the byte 0x0a, so no character is cut. node:readline over a utf8 stream decodes through
 * StringDecoder, 13 to 15 times slower on the replay's file (360 MB/s against about 5,000): reading and
 * parsing took 8.7 to 9.2 µs an event that way, 5.4 to 6.0 this way (DECISIONS.md, "The file source splits
 * its lines on bytes, a MiB at a time").
 */
export class LineReader {
  readonly #file: FileHandle;
  #buffer = Buffer.allocUnsafe(READ_BYTES);
  /** Bytes at the buffer's start that belong to a line not yet ended. */
  #kept = 0;
  #lines: string[] = [];
  #next = 0;
  #ended = false;

  constructor(file: FileHandle) {
    this.#file = file;
  }

  /** The next line, without its line end; undefined at the end of the file. */
  async next(): Promise<string | undefined> {
    while (this.#next === this.#lines.length) {
      if (this.#ended) return undefined;
      await this.#read();
    }
    return this.#lines[this.#next++];
  }

  async #read(): Promise<void> {
    if (this.#kept === this.#buffer.length) {
      // One line longer than the buffer: make room for the rest of it.
      const larger = Buffer.allocUnsafe(this.#buffer.length * 2);
      this.#buffer.copy(larger, 0, 0, this.#kept);
      this.#buffer = larger;
    }
    const { bytesRead } = await this.#file.read(this.#buffer, this.#kept, this.#buffer.length - this.#kept);
    const end = this.#kept + bytesRead;
    // At the end of the file, what is left is the last line, ended or not.
    const cut = bytesRead === 0 ? end : wholeLinesEnd(this.#buffer, end);
    if (bytesRead === 0) this.#ended = true;
    this.#lines = cut === 0 ? [] : splitLines(this.#buffer.toString('utf8', 0, cut));
    this.#next = 0;
    this.#buffer.copy(this.#buffer, 0, cut, end);
    this.#kept = end - cut;
  }
}

/**
 * Where the whole lines in buffer[0, end) end: after the last \n, or after a lone \r past it (a file whose
 * lines end in \r alone is then read a MiB at a time too, not held whole). A \r that is the last byte read
 * waits for the next read, which may start with its \n.
 */
function wholeLinesEnd(buffer: Buffer, end: number): number {
  const newline = buffer.lastIndexOf(NEWLINE, end - 1);
  const carriageReturn = buffer.subarray(newline + 1, end - 1).lastIndexOf(CARRIAGE_RETURN);
  return carriageReturn < 0 ? newline + 1 : newline + 1 + carriageReturn + 1;
}

/** The lines of a text that ends with a line end or at the end of the file. */
function splitLines(text: string): string[] {
  const lines = text.includes('\r') ? text.split(LINE_END) : text.split('\n');
  // What follows the last line end is no line (readline emits none for it).
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
