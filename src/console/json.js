// @ts-check
/**
 * JSON with exact integers. The daemon writes u64 amounts as plain JSON numbers, and a number above
 * 2^53 - 1 loses digits in JSON.parse. Here an integer that is not a safe JavaScript number becomes a
 * BigInt (the others stay numbers), and a BigInt is written back as plain digits.
 */

/** Whether JSON.parse hands the reviver each value's source text (Chrome 114+, Firefox 135+, Safari 18.4+). */
const NATIVE_SOURCE = (() => {
  try {
    let seen = '';
    JSON.parse('1', (_key, value, context) => {
      seen = context?.source ?? '';
      return value;
    });
    return seen === '1';
  } catch {
    return false;
  }
})();

const INTEGER = /^-?\d+$/;

/**
 * Parses JSON text; integers outside ±(2^53 - 1) come back as BigInt, exactly.
 * @param {string} text
 * @returns {any}
 */
export function parseJson(text) {
  if (NATIVE_SOURCE) {
    return JSON.parse(text, (_key, value, context) =>
      typeof value === 'number' && !Number.isSafeInteger(value) && INTEGER.test(context?.source ?? '')
        ? BigInt(context.source)
        : value,
    );
  }
  return parseExact(text);
}

/**
 * The same result as parseJson, by hand, for browsers without the reviver's source text. Strings are
 * decoded by JSON.parse itself; the walk only finds where each value starts and ends.
 * @param {string} text
 * @returns {any}
 */
export function parseExact(text) {
  let at = 0;
  const fail = () => {
    throw new SyntaxError(`invalid JSON at position ${at}`);
  };
  const space = () => {
    while (at < text.length && ' \t\n\r'.includes(text.charAt(at))) at++;
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/y;
  // A string token; JSON.parse then decodes it, and refuses what JSON does not allow (control characters).
  const STRING = /"(?:[^"\\]|\\.)*"/y;
  /** @returns {any} */
  const value = () => {
    space();
    const c = text.charAt(at);
    if (c === '{') {
      at++;
      /** @type {Record<string, any>} */
      const object = {};
      space();
      if (text.charAt(at) === '}') {
        at++;
        return object;
      }
      for (;;) {
        space();
        STRING.lastIndex = at;
        const key = STRING.exec(text);
        if (!key) fail();
        at += key[0].length;
        space();
        if (text.charAt(at) !== ':') fail();
        at++;
        object[JSON.parse(key[0])] = value();
        space();
        const next = text.charAt(at++);
        if (next === '}') return object;
        if (next !== ',') fail();
      }
    }
    if (c === '[') {
      at++;
      const array = [];
      space();
      if (text.charAt(at) === ']') {
        at++;
        return array;
      }
      for (;;) {
        array.push(value());
        space();
        const next = text.charAt(at++);
        if (next === ']') return array;
        if (next !== ',') fail();
      }
    }
    if (c === '"') {
      STRING.lastIndex = at;
      const string = STRING.exec(text);
      if (!string) fail();
      at += string[0].length;
      return JSON.parse(string[0]);
    }
    for (const [word, result] of /** @type {const} */ ([
      ['true', true],
      ['false', false],
      ['null', null],
    ])) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return result;
      }
    }
    NUMBER.lastIndex = at;
    const number = NUMBER.exec(text);
    if (!number) fail();
    at += number[0].length;
    const n = Number(number[0]);
    return INTEGER.test(number[0]) && !Number.isSafeInteger(n) ? BigInt(number[0]) : n;
  };
  const result = value();
  space();
  if (at !== text.length) fail();
  return result;
}

/**
 * JSON text for a request body; a BigInt is written as its plain integer digits.
 * @param {unknown} value
 * @returns {string}
 */
export function stringifyJson(value) {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? 'null' : stringifyJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${members.map(([k, v]) => `${JSON.stringify(k)}:${stringifyJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
