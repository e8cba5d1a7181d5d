import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  createReadStream,
  existsSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import type { RawEvent } from '../src/chain/chain.ts';
import { FileEventSource } from '../src/indexer/file-source.ts';
import { readWirePage, WirePageWriter } from '../src/indexer/file-wire.ts';
import { LineReader, READ_BYTES } from '../src/indexer/lines.ts';
import { type DecodeOutcome, decodeEvent } from '../src/protocol/events.ts';
import { event, history, inner, jsonl, stack, trySettle } from './helpers/sui-events.ts';
import { tempDir } from './helpers/tmp.ts';

/** What node:readline makes of the file: the reference the source's own line splitting is held to. */
async function readlineLines(file: string): Promise<string[]> {
  const lines: string[] = [];
  const reader = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of reader) lines.push(line);
  return lines;
}

/** What the file source's LineReader makes of the file. */
async function readerLines(file: string): Promise<string[]> {
  const handle = await open(file, 'r');
  try {
    const reader = new LineReader(handle);
    const lines: string[] = [];
    for (let line = await reader.next(); line !== undefined; line = await reader.next()) lines.push(line);
    return lines;
  } finally {
    await handle.close();
  }
}

/**
 * The events a file's lines make, by the source's rules, worked out here on the main thread: blank lines
 * skipped, the cursor past each line, each event decoded with decodeEvent (or the line's parse error).
 */
function expectedEvents(file: string, lines: string[]): RawEvent[] {
  const events: RawEvent[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    const where = { position: `${file}:${index + 1}`, cursor: String(index + 1) };
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (error) {
      events.push({ ...where, parseError: `not JSON: ${(error as Error).message}` });
      return;
    }
    events.push({ ...where, decoded: decodeEvent(raw) });
  });
  return events;
}

async function readAll(source: FileEventSource, from: string | null): Promise<RawEvent[]> {
  const events: RawEvent[] = [];
  let cursor = from;
  for (;;) {
    const page = await source.readPage(cursor);
    events.push(...page.events);
    cursor = page.nextCursor;
    if (!page.hasMore) return events;
  }
}

/** How many entries of /proc/self/`dir` read as `want` (one gone while it is read does not count). */
function procEntries(dir: 'fd' | 'task', read: (path: string) => string, want: string): number {
  return readdirSync(`/proc/self/${dir}`).filter((entry) => {
    try {
      return read(`/proc/self/${dir}/${entry}`) === want;
    } catch {
      return false;
    }
  }).length;
}

/** How many of this process's open files are this file (the reader thread's are counted too). */
function openCopies(file: string): number {
  return procEntries('fd', (path) => readlinkSync(path), file);
}

/** How many of this process's threads are file readers (the worker's thread name). */
function readers(): number {
  return procEntries('task', (path) => readFileSync(`${path}/comm`, 'utf8').trim(), 'file-source');
}

describe('LineReader', () => {
  it('splits lines as node:readline does, across its reads', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'lines.txt');
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
    try {
      const lines = await readlineLines(file);
      assert.equal(lines.length, 11);
      assert.deepEqual(await readerLines(file), lines);
    } finally {
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
          const file = join(dir, `ends-${ends.indexOf(lineEnd)}-${shift + 2}.txt`);
          const first = `"${'x'.repeat(READ_BYTES + shift - 2 - 1)}"`;
          const second = `"${'y'.repeat(READ_BYTES - lineEnd.length - 2 + shift)}"`;
          const more = Array.from({ length: 10 }, (_, i) => `${i}`).join(lineEnd);
          writeFileSync(file, `${first}${lineEnd}${second}${lineEnd}${more}${lineEnd}`);
          assert.deepEqual(
            await readerLines(file),
            await readlineLines(file),
            `${JSON.stringify(lineEnd)} ${shift}`,
          );
        }
      }
      // Lines that end in a lone \r only, over three reads.
      const file = join(dir, 'cr.txt');
      writeFileSync(
        file,
        Array.from({ length: 30_000 }, (_, i) => `"${String(i).padStart(98, '0')}"\r`).join(''),
      );
      const lines = await readlineLines(file);
      assert.equal(lines.length, 30_000);
      assert.deepEqual(await readerLines(file), lines);
    } finally {
      await remove();
    }
  });
});

describe('a page between the reader thread and the main thread (file-wire)', () => {
  it('gives back each outcome as it was given, whatever its shape, and the lines that were not JSON', () => {
    const outcome = (name: string, payload: Record<string, unknown>, at?: number): DecodeOutcome =>
      ({
        kind: 'event',
        envelope: { key: `${name}:0`, module: 'db', name, sender: name === 'A' ? '0xab' : null },
        event: { name, payload },
        at,
      }) as DecodeOutcome;
    const given: [number, DecodeOutcome | string][] = [
      [1, outcome('A', { x: 1n << 64n, y: new Uint8Array([0, 255]), z: [2n ** 60n, 3] }, 5)],
      // The same name with other fields, then with the first ones again, and another module's.
      [2, outcome('A', { y: 'text', x: null })],
      [4, outcome('A', { x: 7, y: new Uint8Array([]), z: [] }, 6)],
      [
        5,
        {
          ...(outcome('A', { x: 1 }) as object),
          envelope: { key: 'k:1', module: 'other', name: 'A', sender: null },
        } as DecodeOutcome,
      ],
      [6, 'not JSON: Unexpected token'],
      [7, { kind: 'malformed', reason: '$.x: expected a u64', tx: 'T' }],
      [8, { kind: 'ignored' }],
      [9, { kind: 'unknown', eventKind: 'm::E', tx: 'U' }],
      [10, outcome('B', {})],
    ];
    const writer = new WirePageWriter();
    for (const [line, item] of given) {
      if (typeof item === 'string') writer.addParseError(line, item);
      else writer.add(line, item);
    }
    assert.equal(writer.length, given.length);
    assert.deepEqual(
      readWirePage('/f', writer.text()),
      given.map(([line, item]) => ({
        position: `/f:${line}`,
        cursor: String(line),
        ...(typeof item === 'string' ? { parseError: item } : { decoded: item }),
      })),
    );
  });
});

describe('FileEventSource', () => {
  it('gives each line its event, decoded on the reader thread as decodeEvent decodes it, from any cursor', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.jsonl');
    const events = history(12);
    const lines = [
      ...jsonl(events.slice(0, 20)).trimEnd().split('\n'),
      '',
      '   \t ',
      'not json at all',
      JSON.stringify({ not: 'an event' }),
      // A u64 above 2^53 - 1 (a bigint once decoded), and an event whose payload holds bytes.
      JSON.stringify(stack(999, 1, 1, '18446744073709551615', '9007199254740993')),
      JSON.stringify(trySettle(3, 4, [5, 6], 700)),
      // An array nested deeper than JSON.stringify's stack goes (it names it without showing it).
      `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
      // One the indexer ignores, and one of a kind it does not know.
      JSON.stringify(event('PublishedEvent', {})),
      JSON.stringify(event('SomethingNew', { x: inner(1) }, { module: 'elsewhere' })),
      ...jsonl(events.slice(20)).trimEnd().split('\n'),
    ];
    writeFileSync(file, `${lines.join('\r\n')}\n`);
    const expected = expectedEvents(file, lines);
    const kinds = expected.map((e) => e.decoded?.kind ?? 'not JSON');
    for (const kind of ['event', 'malformed', 'ignored', 'unknown', 'not JSON']) {
      assert.ok(kinds.includes(kind as never), `the file has a line that is ${kind}`);
    }
    const big = expected.find(
      (e) => e.decoded?.kind === 'event' && e.decoded.event.name === 'StackCreatedEvent',
    );
    assert.ok(big);
    const source = new FileEventSource(file, 3);
    try {
      const all = await readAll(source, null);
      assert.deepEqual(all, expected);
      const decoded = all.map((e) => e.decoded);
      assert.ok(
        decoded.some(
          (d) => d?.kind === 'event' && Object.values(d.event.payload).some((v) => typeof v === 'bigint'),
        ),
        'a bigint came through',
      );
      assert.ok(
        decoded.some(
          (d) => d?.kind === 'event' && Object.values(d.event.payload).some((v) => v instanceof Uint8Array),
        ),
        'bytes came through',
      );
      for (const cursor of [1, 2, 20, 21, 22, 23, 24, 25, 27, 29, lines.length - 1]) {
        assert.deepEqual(
          await readAll(source, String(cursor)),
          expected.filter((e) => Number(e.cursor) > cursor),
          `from cursor ${cursor}`,
        );
      }
      const end = await source.readPage(String(lines.length));
      assert.deepEqual(end, { events: [], nextCursor: String(lines.length), hasMore: false });
    } finally {
      await source.close();
      await remove();
    }
  });

  it('lets the file go when it reaches its end, before it is closed, and holds one copy at most', async (t) => {
    if (!existsSync('/proc/self/fd')) return t.skip('counts open files through /proc/self/fd (Linux)');
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.jsonl');
    writeFileSync(file, jsonl(history(1).slice(0, 3)));
    const source = new FileEventSource(file, 1);
    try {
      assert.equal((await source.readPage(null)).hasMore, true);
      assert.ok(openCopies(file) <= 1);
      // Another cursor than the last page's end: a new reader, the old one gone with its file, whether it
      // was reading, waiting or at the end. A reader that was terminated let its file go later, or never
      // (its close still pending was dropped): with two busy cores, that failed this 3 runs in 4.
      let over = 0;
      for (let round = 0; round < 20; round++) {
        for (const cursor of [round % 3, (round % 2) + 1]) {
          await source.readPage(String(cursor));
          if (openCopies(file) > 1) over += 1;
        }
      }
      assert.equal(over, 0, 'reads after which more than one copy was open');
      assert.equal((await source.readPage('2')).events.length, 1);
      assert.ok(openCopies(file) <= 1);
      const end = await source.readPage('3');
      assert.deepEqual([end.events.length, end.hasMore], [0, false]);
      assert.equal(openCopies(file), 0);
      // Read again from a cursor, it reads the file again.
      assert.equal((await source.readPage('1')).events.length, 1);
    } finally {
      await source.close();
      await remove();
    }
    assert.equal(openCopies(file), 0);
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

  it('fails a read, and does not wait for ever, when the reader cannot read the file; a retry reads again', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'gone.jsonl');
    const source = new FileEventSource(file);
    try {
      await assert.rejects(source.readPage(null), /ENOENT/);
      writeFileSync(file, jsonl(history(1).slice(0, 2)));
      assert.equal((await source.readPage(null)).events.length, 2);
      // A directory: the reader opens it, and its first read fails.
      const directory = new FileEventSource(dir);
      await assert.rejects(directory.readPage(null), /EISDIR/);
      await directory.close();
    } finally {
      await source.close();
      await remove();
    }
  });

  it('closes while a read waits for its page, and holds the process until its reader has ended', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.jsonl');
    writeFileSync(file, jsonl(history(20_000)));
    // In a process of its own, where only the reader keeps it alive: when the waiting read's page arrived,
    // the read let go of the process, and the process ended in the middle of the close (exit code 13, an
    // unsettled top-level await).
    const script = `
      import { setImmediate as turn } from 'node:timers/promises';
      import { FileEventSource } from ${JSON.stringify(new URL('../src/indexer/file-source.ts', import.meta.url).href)};
      const source = new FileEventSource(process.argv[2], 200);
      let cursor = null;
      for (let i = 0; i < 3; i++) cursor = (await source.readPage(cursor)).nextCursor;
      const waiting = source.readPage(cursor).catch((error) => error);
      await turn();
      await turn();
      await source.close();
      await waiting;
      process.stdout.write('closed');
    `;
    try {
      const main = join(dir, 'close-while-reading.mjs');
      writeFileSync(main, script);
      const child = spawnSync(process.execPath, [main, file], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.deepEqual([child.status, child.stdout], [0, 'closed'], child.stderr);
    } finally {
      await remove();
    }
  });

  it('leaves no reader behind when reads overlap', async (t) => {
    if (!existsSync('/proc/self/task')) return t.skip('counts threads through /proc/self/task (Linux)');
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.jsonl');
    writeFileSync(file, jsonl(history(3_000)));
    const source = new FileEventSource(file, 100);
    try {
      // The second read starts its own reader in the first's place; the first read may fail, as the
      // reader it waited on is gone, but no reader is left that nothing closes.
      const [, second] = await Promise.allSettled([source.readPage(null), source.readPage('1000')]);
      assert.equal(second.status, 'fulfilled');
      assert.ok(readers() <= 1, `${readers()} readers`);
    } finally {
      await source.close();
      await remove();
    }
    assert.equal(readers(), 0);
    assert.equal(openCopies(file), 0);
  });
});
