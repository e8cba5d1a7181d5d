import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { arrayLiteral } from '../src/store/postgres/array-literal.ts';
import { postgresAvailable, TEST_PG_URL, withClient } from './helpers/postgres.ts';
import { mulberry32 } from './helpers/random.ts';

/** pg's own conversion of a parameter (utils.js prepareValue): what arrayLiteral must write for arrays. */
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as {
  prepareValue: (value: unknown) => unknown;
};

const CHARS = ['a', '0', 'x', '"', '\\', '{', '}', ',', ' ', '\n', 'é', '😀', "'", 'N', 'U', 'L'];

function element(rand: () => number, depth: number): unknown {
  const kind = Math.floor(rand() * 9);
  const text = () =>
    Array.from({ length: Math.floor(rand() * 8) }, () => CHARS[Math.floor(rand() * CHARS.length)]).join('');
  switch (kind) {
    case 0:
      return null;
    case 1:
      return undefined;
    case 2:
      return Math.floor(rand() * 1e9) - 5e8;
    case 3:
      return BigInt(Math.floor(rand() * 1e9)) ** 2n;
    case 4: {
      const bytes = Buffer.from(
        Array.from({ length: 1 + Math.floor(rand() * 5) }, () => Math.floor(rand() * 256)),
      );
      // A view into a larger buffer, at an offset, as well as a Buffer of its own.
      return rand() < 0.5
        ? bytes
        : new Uint8Array(Buffer.concat([Buffer.from([9, 9]), bytes]).buffer).subarray(2);
    }
    case 5:
      return depth < 2
        ? Array.from({ length: Math.floor(rand() * 3) }, () => element(rand, depth + 1))
        : 'deep';
    case 6:
      return String(Math.floor(rand() * 1e12));
    default:
      return text();
  }
}

describe('array parameters for PostgreSQL', () => {
  it('are written as pg writes them, for every kind of element the store binds', () => {
    assert.equal(arrayLiteral([]), prepareValue([]));
    for (const fixed of [
      ['NULL', 'null', ''],
      ['a"b', 'c\\d', '\\"', '{x,y}'],
      [null, undefined, 0, -1, 18446744073709551615n],
      [Buffer.from([0, 255]), new Uint8Array([1, 2, 3])],
    ]) {
      assert.equal(arrayLiteral(fixed), prepareValue(fixed), JSON.stringify(fixed.map(String)));
    }
    for (let seed = 1; seed <= 2000; seed++) {
      const rand = mulberry32(seed);
      const values = Array.from({ length: Math.floor(rand() * 6) }, () => element(rand, 0));
      assert.equal(arrayLiteral(values), prepareValue(values), `seed ${seed}`);
    }
  });

  it('refuses an element it has no literal for, rather than writing something else', () => {
    assert.throws(() => arrayLiteral([{ a: 1 }]), TypeError);
    assert.throws(() => arrayLiteral([true]), TypeError);
  });
});

if (await postgresAvailable('array parameters on the server')) {
  it('reach the server as the values they were', async () => {
    const texts = [
      'plain',
      '',
      'NULL',
      'a "quoted" \\ word',
      '{braces,commas}',
      'é 😀',
      `0x${'ab'.repeat(32)}`,
    ];
    const bytes = [Buffer.from([0, 1, 254, 255]), Buffer.alloc(0)];
    const numbers = ['0', '18446744073709551615', null];
    const rows = await withClient(
      TEST_PG_URL,
      async (client) =>
        (
          await client.query('SELECT $1::text[] AS t, $2::bytea[] AS b, $3::numeric[]::text[] AS n', [
            arrayLiteral(texts),
            arrayLiteral(bytes),
            arrayLiteral(numbers),
          ])
        ).rows,
    );
    assert.deepEqual(rows[0]!.t, texts);
    assert.deepEqual(rows[0]!.b, bytes);
    assert.deepEqual(rows[0]!.n, numbers);
  });
}
