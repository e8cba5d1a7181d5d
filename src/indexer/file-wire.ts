/**
 * How a page of the file source's decoded events travels from its reader thread (file-worker.ts) to the
 * main thread (file-source.ts): as JSON text, which the main thread parses in far less time than a
 * structured clone of the same objects takes (DECISIONS.md, "`node-daemon replay` reads, parses and
 * decodes its file on a thread of its own").
 *
 * The text is positional, so that the main thread parses half as many bytes as the decoded objects'
 * JSON would be (338 against 594 an event of the bench's stream) in half the time:
 *
 *   { "shapes": [[module, name, field...], ...], "rows": [row, ...] }
 *
 * A shape is an event kind's module, name and payload fields in order, written once a page. A row is one
 * line of the file that held something:
 * - an event to apply: [line, shape index, key, sender, at or null, value of each field...];
 * - an event skipped (ignored, unknown or malformed): [line, its DecodeOutcome];
 * - a line that is not JSON: [line, why].
 *
 * The two values JSON has no form for are wrapped: a u64 above 2^53 - 1 as { "$u64": "digits" }, bytes as
 * { "$bytes": "base64" }, in a vector too.
 */
import type { RawEvent } from '../chain/chain.ts';
import type { DecodedEvent, DecodeOutcome } from '../protocol/events.ts';

type Shape = [module: string, name: string, ...fields: string[]];
type Row =
  | [line: number, shape: number, key: string, sender: string | null, at: number | null, ...values: unknown[]]
  | [line: number, skipped: DecodeOutcome]
  | [line: number, parseError: string];

/** Index of a shape's first field in the shape, and of a row's first value in the row. */
const SHAPE_FIELDS = 2;
const ROW_VALUES = 5;

/** Builds one page's text, a line at a time, on the reader thread. */
export class WirePageWriter {
  readonly #shapes: Shape[] = [];
  readonly #shapeOf = new Map<string, number>();
  readonly #rows: Row[] = [];

  get length(): number {
    return this.#rows.length;
  }

  add(line: number, decoded: DecodeOutcome): void {
    if (decoded.kind !== 'event') {
      this.#rows.push([line, decoded]);
      return;
    }
    const payload = decoded.event.payload as Record<string, unknown>;
    const fields = Object.keys(payload);
    const shape = this.#shape(decoded.envelope.module, decoded.event.name, fields);
    const row: Row = [line, shape, decoded.envelope.key, decoded.envelope.sender, decoded.at ?? null];
    for (const field of fields) row.push(toWire(payload[field]));
    this.#rows.push(row);
  }

  addParseError(line: number, reason: string): void {
    this.#rows.push([line, reason]);
  }

  text(): string {
    return JSON.stringify({ shapes: this.#shapes, rows: this.#rows });
  }

  /** The index of the shape, added when the page has none like it (same module, name and fields). */
  #shape(module: string, name: string, fields: string[]): number {
    let index = this.#shapeOf.get(name);
    if (index !== undefined && sameShape(this.#shapes[index]!, module, fields)) return index;
    index = this.#shapes.length;
    this.#shapes.push([module, name, ...fields]);
    this.#shapeOf.set(name, index);
    return index;
  }
}

function sameShape(shape: Shape, module: string, fields: string[]): boolean {
  if (shape[0] !== module || shape.length !== SHAPE_FIELDS + fields.length) return false;
  for (let i = 0; i < fields.length; i++) if (shape[SHAPE_FIELDS + i] !== fields[i]) return false;
  return true;
}

/** A page's events as the main thread hands them to the indexer; `file` makes their positions. */
export function readWirePage(file: string, text: string): RawEvent[] {
  const { shapes, rows } = JSON.parse(text) as { shapes: Shape[]; rows: Row[] };
  const events: RawEvent[] = new Array(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    const line = row[0];
    const event: RawEvent = { position: `${file}:${line}`, cursor: String(line) };
    const second = row[1];
    if (typeof second === 'string') event.parseError = second;
    else if (typeof second === 'number') event.decoded = decodedOf(shapes[second]!, row);
    else event.decoded = second;
    events[r] = event;
  }
  return events;
}

/** The outcome decodeEvent gave, from its row: the same fields in the same order. */
function decodedOf(shape: Shape, row: Row): DecodeOutcome {
  const payload: Record<string, unknown> = {};
  for (let i = SHAPE_FIELDS; i < shape.length; i++) {
    const value = row[ROW_VALUES + i - SHAPE_FIELDS];
    payload[shape[i]!] = typeof value === 'object' && value !== null ? fromWire(value) : value;
  }
  const name = shape[1];
  return {
    kind: 'event',
    envelope: { key: row[2] as string, module: shape[0], name, sender: row[3] as string | null },
    event: { name, payload } as DecodedEvent,
    at: (row[4] as number | null) ?? undefined,
  };
}

/** A payload value as JSON text carries it. */
function toWire(value: unknown): unknown {
  if (typeof value === 'bigint') return { $u64: String(value) };
  if (value instanceof Uint8Array) {
    return { $bytes: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  }
  if (Array.isArray(value)) return value.map(toWire);
  return value;
}

/** Undoes toWire. */
function fromWire(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(fromWire);
  const wrapped = value as { $u64?: string; $bytes?: string };
  if (wrapped.$u64 !== undefined) return BigInt(wrapped.$u64);
  if (wrapped.$bytes !== undefined) return new Uint8Array(Buffer.from(wrapped.$bytes, 'base64'));
  return value;
}
