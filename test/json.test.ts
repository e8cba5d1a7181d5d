import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJson, stringifyJson } from '../src/internal/json.ts';

describe('parseJson', () => {
  it('keeps every integer exact: a safe one as a number, a larger one as a bigint', () => {
    const cases: [string, unknown][] = [
      ['{"compute_units":1}', { compute_units: 1 }],
      ['999999999999999', 999_999_999_999_999],
      ['-999999999999999', -999_999_999_999_999],
      ['9007199254740991', 9_007_199_254_740_991],
      ['9007199254740993', 9_007_199_254_740_993n],
      ['-9007199254740993', -9_007_199_254_740_993n],
      ['[18446744073709551615, 1]', [18_446_744_073_709_551_615n, 1]],
      ['1e20', 1e20],
      ['12345678901234567.5', Number('12345678901234567.5')],
      ['"00000000000000000000"', '00000000000000000000'],
      [`{"id":"0x${'0'.repeat(63)}1","n":3}`, { id: `0x${'0'.repeat(63)}1`, n: 3 }],
    ];
    for (const [text, expected] of cases) assert.deepEqual(parseJson(text), expected, text);
  });

  it('answers as the reviver does whether or not the text has a run of 16 digits', () => {
    // The plain parse is taken when no integer literal can be beyond 2^53 - 1; each text below holds 15,
    // 16 or 17 digits in a row, in a number or in a string, beside an unsafe integer or not.
    const reviver = (text: string) =>
      (JSON.parse as (t: string, r: (k: string, v: unknown, c?: { source?: string }) => unknown) => unknown)(
        text,
        (_k, v, c) =>
          typeof v === 'number' &&
          !Number.isSafeInteger(v) &&
          c?.source !== undefined &&
          /^-?[0-9]+$/.test(c.source)
            ? BigInt(c.source)
            : v,
      );
    const texts = [
      '{"compute_units":123456789012345}',
      '{"compute_units":1234567890123456}',
      '{"compute_units":9007199254740992}',
      '{"units":12345678901234567,"id":"1234567890123456"}',
      '{"id":"12345678901234567890","n":1}',
      '[1e300, -0, 0.5, 123456789012345.5]',
      '{"a":{"b":[9007199254740993,{"c":"x"}]},"__proto__":1}',
    ];
    for (const text of texts) assert.deepEqual(parseJson(text), reviver(text), text);
    assert.equal(typeof (parseJson('{"u":9007199254740993}') as { u: unknown }).u, 'bigint');
    assert.throws(() => parseJson('{"u":1,}'), SyntaxError);
  });

  it('reads back what stringifyJson writes', () => {
    const value = { price: 18_446_744_073_709_551_615n, units: 500, fill: 0.25, id: '0xab' };
    assert.deepEqual(parseJson(stringifyJson(value)), value);
  });
});
