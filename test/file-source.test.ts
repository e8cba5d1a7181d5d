import assert from 'node:assert/strict';
import { createReadStream, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import type { RawEvent } from '../src/chain/chain.ts';
import { FileEventSource, READ_BYTES } from '../src/indexer/file-source.ts';
import { tempDir } from './helpers/tmp.ts';

/** What node:readline makes of the file: the reference the source's own line splitting is held to. */
async function readlineLines(file: string): Promise<string[]> {
  const lines: string[] = [];
  const reader = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of reader) lines.push(line);
  return lines;
}

/** The events the file's lines make, by the source's rules: blank lines skipped, the cursor past each. */
function expectedEvents(file: string, lines: string[]): Omit<RawEvent, 'parseError'>[] {
  const events: Omit<RawEvent, 'parseError'>[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      raw = 'not JSON';
    }
    events.push({ position: `${file}:${index + 1}`, raw, cursor: String(index + 1) });
  });
  return events;
}

async function readAll(
  source: FileEventSource,
  from: string | null,
): Promise<Omit<RawEvent, 'parseError'>[]> {
  const events: Omit<RawEvent, 'parseError'>[] = [];
  let cursor = from;
  for (;;) {
    const page = await source.readPage(cursor);
    for (const e of page.events) {
      events.push({
        position: e.position,
        raw: e.parseError === undefined ? e.raw : 'not JSON',
        cursor: e.cursor,
      });
    }
    cursor = page.nextCursor;
    if (!page.hasMore) return events;
  }
}

describe('FileEventSource', () => {
  it('splits lines as node:readline does, across its reads, and resumes at any cursor', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.jsonl');
    const line = (s: string) => JSON.stringify({ s });
    // The first line ends 40 bytes short of the first read's end; in the second, a four-byte character
    // starts a byte before it, so the read ends inside it.
    const first = line('a'.repeat(READ_BYTES - 40 - 9));
    const straddling = `${line(`${'b'.repeat(33)}😀 é 日本`)}`;
    assert.equal(Buffer.byteLength(`${first}\n`), READ_BYTES - 40);
    assert.equal(Buffer.byteLength(`${first}\n{"s":"${'b'.repeat(33)}`), READ_BYTES - 1);
    const text = [
      `${first}\n`,
      `${straddling}\r\n`,
      '\n',
      '   \t \n',
      `${line('after a lone CR')}\r${line('and before it')}\n`,
      'not json at all\n',
      `${line('c'.repeat(READ_BYTES * 2 + 12_345))}\n`, // longer than a read
      `${line('ü'.repeat(200_000))}\r\n\r\n`,
      `${line('the last, with no line end')}`,
    ].join('');
    writeFileSync(file, text);
    const lines = await readlineLines(file);
    assert.equal(lines.length, 11);
    const expected = expectedEvents(file, lines);
    assert.equal(expected.length, 8);

    const source = new FileEventSource(file, 3);
    try {
      assert.deepEqual(await readAll(source, null), expected);
      for (const cursor of [1, 2, 4, 5, 7, 9, 10, 11]) {
        assert.deepEqual(
          await readAll(source, String(cursor)),
          expected.filter((e) => Number(e.cursor) > cursor),
          `from cursor ${cursor}`,
        );
      }
      const end = await source.readPage('11');
      assert.deepEqual(end, { events: [], nextCursor: '11', hasMore: false });
    } finally {
      await source.close();
      await remove();
    }
  });

  it('splits as node:readline does files of every line end, each line end around each read end', async () => {
    const { dir, remove } = tempDir();
    try {
      // Lines cut so that each line end falls just before, on and just after the end of the first and the
      // second read.
      const ends = ['\r\n', '\n', '\r', '\r\r', '\n\r'];
      for (const lineEnd of ends) {
        for (const shift of [-2, -1, 0, 1]) {
          const file = join(dir, `ends-${ends.indexOf(lineEnd)}-${shift + 2}.jsonl`);
          const first = `"${'x'.repeat(READ_BYTES + shift - 2 - 1)}"`;
          const second = `"${'y'.repeat(READ_BYTES - lineEnd.length - 2 + shift)}"`;
          const more = Array.from({ length: 10 }, (_, i) => `${i}`).join(lineEnd);
          writeFileSync(file, `${first}${lineEnd}${second}${lineEnd}${more}${lineEnd}`);
          const source = new FileEventSource(file, 50_000);
          try {
            const expected = expectedEvents(file, await readlineLines(file));
            assert.deepEqual(await readAll(source, null), expected, `${JSON.stringify(lineEnd)} ${shift}`);
          } finally {
            await source.close();
          }
        }
      }
      // Lines that end in a lone \r only, over three reads.
      const file = join(dir, 'cr.jsonl');
      writeFileSync(
        file,
        Array.from({ length: 30_000 }, (_, i) => `"${String(i).padStart(98, '0')}"\r`).join(''),
      );
      const source = new FileEventSource(file, 50_000);
      try {
        const expected = expectedEvents(file, await readlineLines(file));
        assert.equal(expected.length, 30_000);
        assert.deepEqual(await readAll(source, null), expected);
      } finally {
        await source.close();
      }
    } finally {
      await remove();
    }
  });

  it('lets the file go when it reaches its end, before it is closed', async (t) => {
    if (!existsSync('/proc/self/fd')) return t.skip('counts open files through /proc/self/fd (Linux)');
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.jsonl');
    writeFileSync(file, `${JSON.stringify({ a: 1 })}\n${JSON.stringify({ b: 2 })}\n`);
    const open = () => readdirSync('/proc/self/fd').length;
    const before = open();
    const source = new FileEventSource(file, 1);
    try {
      assert.equal((await source.readPage(null)).hasMore, true);
      assert.equal(open(), before + 1);
      assert.equal((await source.readPage('1')).hasMore, true);
      const end = await source.readPage('2');
      assert.deepEqual([end.events.length, end.hasMore], [0, false]);
      assert.equal(open(), before);
      // Read again from a cursor, it opens the file again.
      assert.equal((await source.readPage('1')).events.length, 1);
    } finally {
      await source.close();
      await remove();
    }
    assert.equal(open(), before);
  });

  it('reads an empty file as no events', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'empty.jsonl');
    writeFileSync(file, '');
    const source = new FileEventSource(file);
    try {
      assert.deepEqual(await source.readPage(null), { events: [], nextCursor: '0', hasMore: false });
    } finally {
      await source.close();
      await remove();
    }
  });
});
