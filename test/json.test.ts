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

  it('reads back what stringifyJson writes', () => {
    const value = { price: 18_446_744_073_709_551_615n, units: 500, fill: 0.25, id: '0xab' };
    assert.deepEqual(parseJson(stringifyJson(value)), value);
  });
});
