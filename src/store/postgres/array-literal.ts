/**
 * A JavaScript array as a PostgreSQL array literal: what pg sends for an array parameter (its utils.js
 * arrayString), for the values the PostgreSQL store binds: null and undefined, strings, numbers, bigints,
 * byte arrays, and arrays of them. pg escapes every element with two regular expressions; the store's
 * elements are mostly decimal ids and hex, with nothing to escape, and pg's way was about 7 % of the
 * indexer's main thread (DECISIONS.md, "The PostgreSQL store writes its array parameters' literals itself").
 * The literal is the same text, so the server reads the same values.
 */
export function arrayLiteral(values: readonly unknown[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v === 'string') out += quoted(v);
    else if (typeof v === 'number' || typeof v === 'bigint') out += `"${v}"`;
    else if (Array.isArray(v)) out += arrayLiteral(v);
    else if (ArrayBuffer.isView(v)) {
      out += `\\\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}`;
    } else throw new TypeError(`no array literal for an element of type ${typeof v}`);
  }
  return `${out}}`;
}

/** An element in double quotes, its backslashes and double quotes escaped. */
function quoted(s: string): string {
  if (!s.includes('"') && !s.includes('\\')) return `"${s}"`;
  return `"${s.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}
