import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TOKEN_FILE } from '../src/http/security.ts';
import { ERRORS } from '../src/problems/catalog.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';
import { mulberry32 } from './helpers/random.ts';
import { type RawExchange, type RawResponse, rawExchange } from './helpers/raw-http.ts';

/**
 * A seeded fuzz test of the whole HTTP surface, from the served /openapi.json: for every operation, a few
 * hundred raw requests over TCP, valid, edge cases and malformed (odd and lowercase methods, broken
 * framing, contradictory Content-Length and Transfer-Encoding, huge headers, bad or missing bodies, wrong
 * content types, bad path and query values, huge numbers, unicode). What it holds the daemon to:
 * - every request is answered, never with a 5xx (but 505 to an HTTP version it does not speak);
 * - every error is an application/problem+json body whose code is in the catalog and docs/ERRORS.md;
 * - every request built to be refused is refused (4xx), and refused requests change nothing: the read
 *   endpoints answer the same before and after them (the dev network is deterministic).
 * FUZZ_SEED=<n> runs another seed; a failure names its seed and case.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20_251_115);
const CASES_PER_OPERATION = 200;
const CONCURRENCY = 12;

class Random {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    assert.ok(item !== undefined, 'pick from an empty list');
    return item;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

// --- the document --------------------------------------------------------------------------------------

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: Schema;
  anyOf?: Schema[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  pattern?: string;
  format?: string;
}
interface Parameter {
  in: 'path' | 'query' | 'header';
  name: string;
  schema: Schema;
  example?: unknown;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema?: Schema; example?: unknown }> };
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

interface Op {
  method: string;
  path: string;
  op: Operation;
  params: Parameter[];
  body: { schema: Schema; example: unknown } | undefined;
  /** A write: it may change state, so its valid variants are sent after the state check. */
  write: boolean;
}

function operations(doc: Document): Op[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => {
      const json = op.requestBody?.content['application/json'];
      return {
        method: method.toUpperCase(),
        path,
        op,
        params: op.parameters ?? [],
        body: json?.schema ? { schema: json.schema, example: json.example ?? {} } : undefined,
        write: method !== 'get' && method !== 'head',
      };
    }),
  );
}

// --- requests ------------------------------------------------------------------------------------------

/** A request before it is put on the wire. */
interface Spec {
  method: string;
  target: string;
  /** 'HTTP/1.1', another version, or '' for none. */
  version: string;
  headers: [string, string][];
  body: Buffer | undefined;
  /** length: Content-Length added; chunked: Transfer-Encoding added and the body chunked; raw: as is. */
  framing: 'length' | 'chunked' | 'raw';
  eol: string;
  /** Raw lines added after the headers. */
  lines?: string[];
}

/** One fuzz case: the bytes, how to send them, and what the answer must be. */
interface Case {
  op: string;
  label: string;
  bytes: Buffer;
  halfClose: boolean;
  head: boolean;
  /** How many answers: 1, or 2 for a pipeline of two requests. */
  answers: number;
  /** Built to be refused: the (last) answer must be a 4xx, and it must change nothing. */
  refused: boolean;
  /** Sent after the state check: a valid or edge variant of a write, which may change state. */
  mutates: boolean;
}

function chunked(body: Buffer, extension = ''): Buffer {
  if (body.length === 0) return Buffer.from(`0${extension}\r\n\r\n`);
  const half = Math.ceil(body.length / 2);
  const parts = [body.subarray(0, half), body.subarray(half)].filter((p) => p.length > 0);
  return Buffer.concat([
    ...parts.flatMap((p) => [
      Buffer.from(`${p.length.toString(16)}${extension}\r\n`),
      p,
      Buffer.from('\r\n'),
    ]),
    Buffer.from('0\r\n\r\n'),
  ]);
}

function serialize(spec: Spec): Buffer {
  const headers = [...spec.headers];
  if (spec.body !== undefined && spec.framing === 'length')
    headers.push(['Content-Length', String(spec.body.length)]);
  if (spec.body !== undefined && spec.framing === 'chunked') headers.push(['Transfer-Encoding', 'chunked']);
  const line =
    spec.version === '' ? `${spec.method} ${spec.target}` : `${spec.method} ${spec.target} ${spec.version}`;
  const fields = [...headers.map(([name, value]) => `${name}: ${value}`), ...(spec.lines ?? [])];
  const head = [line, ...fields].join(spec.eol) + spec.eol + spec.eol;
  const body =
    spec.body === undefined ? Buffer.alloc(0) : spec.framing === 'chunked' ? chunked(spec.body) : spec.body;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

interface World {
  port: number;
  token: string;
  /** Path parameter values that name things that exist. */
  ids: Record<string, number>;
}

/** The valid request of an operation: its example body, its token, its path filled with real ids. */
function baseline(op: Op, world: World): Spec {
  const target = op.path.replace(/\{(\w+)\}/g, (_, name: string) => String(world.ids[name] ?? 1));
  const headers: [string, string][] = [
    ['Host', `127.0.0.1:${world.port}`],
    ['Authorization', `Bearer ${world.token}`],
  ];
  let body: Buffer | undefined;
  if (op.write) {
    headers.push(['Content-Type', 'application/json']);
    body = json(op.body?.example ?? {});
  }
  return { method: op.method, target, version: 'HTTP/1.1', headers, body, framing: 'length', eol: '\r\n' };
}

const withHeader = (spec: Spec, name: string, value: string): Spec => ({
  ...spec,
  headers: [...spec.headers, [name, value]],
});
const withoutHeader = (spec: Spec, name: string): Spec => ({
  ...spec,
  headers: spec.headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase()),
});
const replaceHeader = (spec: Spec, name: string, value: string): Spec =>
  withHeader(withoutHeader(spec, name), name, value);

// --- mutations -----------------------------------------------------------------------------------------

/** What a mutation makes of a request: a spec, or raw bytes; refused when the daemon must say no. */
interface Variant {
  label: string;
  spec?: Spec;
  bytes?: Buffer;
  refused: boolean;
  halfClose?: boolean;
  answers?: number;
}

type Mutation = (r: Random, spec: Spec, op: Op, world: World) => Variant | undefined;

const ODD_METHODS = ['FOO', 'PROPFIND', 'TRACE', 'MKCOL', 'PURGE', 'LINK', 'M-SEARCH', 'QUERY', 'BREW', 'X'];
const ALL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const UNICODE = ['☃', 'é', '日本語', '😀', '\u202e', '\u0000', 'Ω≈ç√'];

/** The path's methods, from the document (HEAD with GET). */
function methodsOf(doc: Document, path: string): string[] {
  const methods = Object.keys(doc.paths[path] ?? {}).map((m) => m.toUpperCase());
  return methods.includes('GET') ? [...methods, 'HEAD'] : methods;
}

function methodMutations(doc: Document): Mutation[] {
  return [
    (_r, spec) => ({
      label: 'lowercase method',
      spec: { ...spec, method: spec.method.toLowerCase() },
      refused: true,
    }),
    (r, spec) => {
      const method = r.pick(ODD_METHODS);
      return { label: `method ${method}`, spec: { ...spec, method }, refused: true };
    },
    (r, spec, op) => {
      const others = ALL_METHODS.filter((m) => !methodsOf(doc, op.path).includes(m));
      if (others.length === 0) return undefined;
      const method = r.pick(others);
      return { label: `method ${method} the path does not take`, spec: { ...spec, method }, refused: true };
    },
    (r, spec) => {
      const target = r.chance(0.5) ? spec.target : `example.com:${r.pick([443, 80, 22])}`;
      return { label: `CONNECT ${target}`, spec: { ...spec, method: 'CONNECT', target }, refused: true };
    },
    (r, spec) => {
      const method = r.pick(['G\x01T', 'GÉT', 'GET\t', '(GET)', '', 'GE T']);
      return {
        label: `malformed method ${JSON.stringify(method)}`,
        spec: { ...spec, method },
        refused: true,
        halfClose: true,
      };
    },
  ];
}

const versionMutations: Mutation[] = [
  (r, spec) => {
    const version = r.pick(['HTTP/3.0', 'HTTP/2.1', 'HTTP/9.9', 'HTTP/0.8']);
    return { label: `version ${version}`, spec: { ...spec, version }, refused: true };
  },
  (r, spec) => {
    const version = r.pick(['HTTP/1.2', 'HTTP/1.x', 'http/1.1', 'HTTP/1.1 x', 'HTTP/11', 'HTTP/1.1/']);
    return {
      label: `malformed version ${version}`,
      spec: { ...spec, version },
      refused: true,
      halfClose: true,
    };
  },
];

/** Bad values for a numeric path or query parameter (none of them a valid number for it). */
function badNumbers(schema: Schema): string[] {
  const values = [
    '',
    '-1',
    '+1',
    '%201',
    '0x10',
    '1.5',
    'abc',
    'NaN',
    'Infinity',
    '1e3',
    '18446744073709551616',
  ];
  values.push('9'.repeat(30), '%F0%9F%98%80', '%00', '%EF%BC%91', '1%2F2', '1,2', '[1]');
  if (schema.maximum !== undefined) values.push(String(BigInt(Math.trunc(schema.maximum)) + 1n));
  if (schema.type === 'number') values.push('-0.5', '1.01', '1e999', '½');
  return values;
}

/** `paths`: the document's paths, so that an emptied last parameter that names a route of its own is not sent as a refusal. */
function targetMutations(paths: ReadonlySet<string>): Mutation[] {
  return [
    (r, spec) => {
      const at = 1 + r.int(spec.target.length);
      const target = `${spec.target.slice(0, at)}${r.pick(['%zz', '%', '%E0%A4%A', '%c3%28'])}${spec.target.slice(at)}`;
      return { label: `broken percent-encoding ${target}`, spec: { ...spec, target }, refused: true };
    },
    (r, spec) => {
      const target = `${spec.target}${r.pick(UNICODE)}`;
      return {
        label: 'raw unicode in the path',
        spec: { ...spec, target: Buffer.from(target).toString('latin1') },
        refused: true,
        halfClose: true,
      };
    },
    (r, spec, op) => {
      const param = op.params.find((p) => p.in === 'path');
      if (!param) return undefined;
      const value = r.pick(badNumbers(param.schema));
      // `/webhooks/` is `GET /webhooks` (a trailing slash is ignored), not a webhook with an empty id.
      if (value === '' && paths.has(op.path.replace(new RegExp(`/\\{${param.name}\\}$`), '')))
        return undefined;
      const target = op.path.replace(/\{(\w+)\}/g, (_, name: string) =>
        name === param.name ? value : String(1),
      );
      return { label: `path ${param.name}=${value.slice(0, 40)}`, spec: { ...spec, target }, refused: true };
    },
    (r, spec) => {
      const target = r.pick([
        `${spec.target}/x`,
        `/${spec.target}`,
        `${spec.target}/..%2F..`,
        '/nope',
        `/${'a'.repeat(300)}`,
      ]);
      return { label: `no such path ${target.slice(0, 60)}`, spec: { ...spec, target }, refused: true };
    },
    (_r, spec) => ({ label: 'asterisk target', spec: { ...spec, target: '*' }, refused: true }),
    (r, spec) => {
      const host = r.pick(['evil.example', 'attacker.localhost:80', '', '[::2]']);
      return {
        label: `absolute-form target on ${host}`,
        spec: { ...spec, target: `http://${host}${spec.target}` },
        refused: true,
      };
    },
    (r, spec, op) => {
      const queries = op.params.filter((p) => p.in === 'query');
      if (queries.length === 0) return undefined;
      const param = r.pick(queries);
      const numeric = param.schema.type === 'integer' || param.schema.type === 'number';
      let value: string;
      if (numeric) {
        value = r.pick([...badNumbers(param.schema), `1&${param.name}=2`]);
        if (param.schema.minimum !== undefined && param.schema.minimum > 0) value = r.pick([value, '0']);
      } else if (param.schema.pattern) {
        value = r.pick(['x', '-1', '9'.repeat(16), '%F0%9F%98%80', '']);
      } else {
        return {
          label: `query ${param.name} twice`,
          spec: { ...spec, target: `${spec.target}?${param.name}=1&${param.name}=2` },
          refused: true,
        };
      }
      return {
        label: `query ${param.name}=${value.slice(0, 40)}`,
        spec: { ...spec, target: `${spec.target}?${param.name}=${value}` },
        refused: true,
      };
    },
    (r, spec) => {
      // Every route refuses a query parameter it does not declare, routes that declare none included.
      const name = r.pick(['zz', 'limit2', '%E2%98%83', 'a[b]']);
      return {
        label: `unknown query parameter ${name}`,
        spec: { ...spec, target: `${spec.target}?${name}=1` },
        refused: true,
      };
    },
    (r, spec) => {
      const name = r.pick(['token', 'access_token', 'api_token', 'apikey']);
      const value = r.pick(['abc', 'x'.repeat(43), '%00']);
      return {
        label: `${name} in the query`,
        spec: { ...spec, target: `${spec.target}?${name}=${value}` },
        refused: true,
      };
    },
    (_r, spec) => ({
      label: 'a 20 KiB URL',
      spec: { ...spec, target: `${spec.target}?q=${'a'.repeat(20_000)}` },
      refused: true,
    }),
  ];
}

const headerMutations: Mutation[] = [
  (_r, spec) => ({ label: 'no Host', spec: withoutHeader(spec, 'host'), refused: true }),
  (_r, spec) => ({ label: 'two Hosts', spec: withHeader(spec, 'Host', 'localhost'), refused: true }),
  (r, spec) => {
    const host = r.pick(['evil.example', 'attacker.localhost', '127.0.0.1.nip.io', '[::2]']);
    return { label: `Host ${host}`, spec: replaceHeader(spec, 'host', host), refused: true };
  },
  (r, spec) => {
    const size = r.pick([17_000, 40_000]);
    return {
      label: `a ${size}-byte header`,
      spec: withHeader(spec, 'X-Big', 'a'.repeat(size)),
      refused: true,
    };
  },
  (_r, spec) => {
    const many = Array.from({ length: 700 }, (_, i): [string, string] => [`X-H${i}`, 'v'.repeat(20)]);
    return { label: '700 headers', spec: { ...spec, headers: [...spec.headers, ...many] }, refused: true };
  },
  (r, spec) => {
    const [name, value] = r.pick<[string, string]>([
      ['X-A', 'a\x00b'],
      ['X-A', 'a\x07b'],
      ['X A', 'b'],
      ['X-A ', 'b'],
      ['X-A', 'a\r\n folded'],
      ['(X)', 'b'],
      ['X-Ü', 'b'],
      ['', 'b'],
    ]);
    return {
      label: `malformed header ${JSON.stringify(`${name}: ${value}`)}`,
      spec: withHeader(spec, name, value),
      refused: true,
    };
  },
  (_r, spec) => ({
    label: 'a header line without a colon',
    spec: { ...spec, lines: ['no-colon-here'] },
    refused: true,
  }),
  (_r, spec) => ({
    label: 'bare LF line ends',
    spec: { ...spec, eol: '\n' },
    refused: true,
    halfClose: true,
  }),
  (r, spec) => {
    const expect = r.pick(['200-ok', 'foo', '101-switch', 'nothing']);
    return { label: `Expect: ${expect}`, spec: withHeader(spec, 'Expect', expect), refused: true };
  },
];

/** Refusals by the guard: no token or a wrong one, on a write. */
const authMutations: Mutation[] = [
  (_r, spec, op) =>
    op.write ? { label: 'no token', spec: withoutHeader(spec, 'authorization'), refused: true } : undefined,
  (r, spec, op) => {
    if (!op.write) return undefined;
    const value = r.pick([
      'Bearer wrong',
      'Basic dXNlcjpwYXNz',
      'Bearer',
      'Bearer a b',
      `bearer ${'x'.repeat(2000)}`,
      'Bearer ☃',
    ]);
    return {
      label: `Authorization ${value.slice(0, 30)}`,
      spec: replaceHeader(spec, 'authorization', Buffer.from(value).toString('latin1')),
      refused: true,
    };
  },
  (r, spec, op) => {
    if (!op.params.some((p) => p.in === 'header' && p.name === 'idempotency-key')) return undefined;
    const key = r.pick(['k'.repeat(256), 'é', '']);
    const twice = r.chance(0.3);
    const next = twice
      ? withHeader(withHeader(spec, 'Idempotency-Key', 'a'), 'Idempotency-Key', 'b')
      : withHeader(spec, 'Idempotency-Key', Buffer.from(key).toString('latin1'));
    if (!twice && key === '') return undefined;
    return {
      label: twice ? 'two Idempotency-Keys' : `Idempotency-Key ${key.slice(0, 10)}`,
      spec: next,
      refused: true,
    };
  },
];

/** Broken framing of a request with a body. */
const framingMutations: Mutation[] = [
  (_r, spec) => ({
    label: 'Content-Length and Transfer-Encoding',
    spec: { ...withHeader(spec, 'Content-Length', String(spec.body?.length ?? 0)), framing: 'chunked' },
    refused: true,
  }),
  (r, spec) => {
    const length = spec.body?.length ?? 0;
    const second = r.pick([length, length + 1, 0]);
    return {
      label: `two Content-Lengths ${length} and ${second}`,
      spec: { ...withHeader(spec, 'Content-Length', String(second)), framing: 'length' },
      refused: true,
    };
  },
  (r, spec) => {
    const value = r.pick([
      'abc',
      '-1',
      '+2',
      '0x2',
      '2 2',
      '',
      '18446744073709551616',
      '2.0',
      '99999999999999999999999',
    ]);
    return {
      label: `Content-Length ${value}`,
      spec: { ...withHeader(spec, 'Content-Length', value), framing: 'raw' },
      refused: true,
      halfClose: true,
    };
  },
  (r, spec) => {
    const value = r.pick([
      'gzip',
      'chunked, gzip',
      'identity',
      'chunked, chunked',
      'xchunked',
      'chunked;q=1',
    ]);
    return {
      label: `Transfer-Encoding ${value}`,
      spec: { ...withHeader(spec, 'Transfer-Encoding', value), framing: 'raw' },
      refused: true,
      halfClose: true,
    };
  },
  (r, spec) => {
    const body = spec.body ?? Buffer.alloc(0);
    const broken = r.pick([
      Buffer.concat([Buffer.from('zz\r\n'), body, Buffer.from('\r\n0\r\n\r\n')]),
      Buffer.concat([
        Buffer.from(`${(body.length + 5).toString(16)}\r\n`),
        body,
        Buffer.from('\r\n0\r\n\r\n'),
      ]),
      Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('XX0\r\n\r\n')]),
      Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body]),
      Buffer.from(`-1\r\n${body}\r\n0\r\n\r\n`),
    ]);
    return {
      label: 'a broken chunked body',
      spec: { ...withHeader(spec, 'Transfer-Encoding', 'chunked'), body: broken, framing: 'raw' },
      refused: true,
      halfClose: true,
    };
  },
  (r, spec) => {
    const body = spec.body ?? Buffer.alloc(0);
    const extra = 1 + r.int(50);
    return {
      label: `a body ${extra} bytes short of its Content-Length, cut short`,
      spec: { ...withHeader(spec, 'Content-Length', String(body.length + extra)), framing: 'raw' },
      refused: true,
      halfClose: true,
    };
  },
  (r, spec) => {
    const body = spec.body ?? Buffer.alloc(0);
    if (body.length < 2) return undefined;
    const cut = 1 + r.int(body.length - 1);
    return {
      label: `Content-Length ${cut} of ${body.length}`,
      spec: { ...withHeader(spec, 'Content-Length', String(cut)), framing: 'raw' },
      refused: true,
    };
  },
  (_r, spec) => ({
    label: 'a body without Content-Length or Transfer-Encoding',
    spec: { ...spec, framing: 'raw' },
    refused: true,
  }),
  (_r, spec) => ({
    label: 'a declared 2 MB body',
    spec: { ...withHeader(spec, 'Content-Length', '2000000'), body: Buffer.from('{"a":'), framing: 'raw' },
    refused: true,
    halfClose: true,
  }),
];

const contentMutations: Mutation[] = [
  (_r, spec) => ({ label: 'no Content-Type', spec: withoutHeader(spec, 'content-type'), refused: true }),
  (r, spec) => {
    const type = r.pick([
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      'application/json-patch+json',
      ';;;',
      'json',
      'application/xml',
    ]);
    return { label: `Content-Type ${type}`, spec: replaceHeader(spec, 'content-type', type), refused: true };
  },
  (r, spec) => {
    const encoding = r.pick(['gzip', 'br', 'deflate', 'x-unknown']);
    return {
      label: `Content-Encoding ${encoding}`,
      spec: withHeader(spec, 'Content-Encoding', encoding),
      refused: true,
    };
  },
];

/** Bodies that are no JSON at all. */
const syntaxMutations: Mutation[] = [
  (r, spec) => {
    const text = spec.body?.toString() ?? '{}';
    const body = r.pick([
      text.slice(0, Math.max(1, text.length - 1)),
      `${text},`,
      `{'a':1}`,
      `{"a":}`,
      `${text}${text}`,
      '\ufeff{}',
      '{/* c */}',
      'NaN',
      '{"a":1,}',
      ' ',
      '',
      '['.repeat(3000),
    ]);
    return {
      label: `body ${JSON.stringify(body.slice(0, 30))}`,
      spec: { ...spec, body: Buffer.from(body) },
      refused: true,
    };
  },
  (_r, spec) => ({
    label: 'a body of invalid UTF-8',
    spec: { ...spec, body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) },
    refused: true,
  }),
];

/** A JSON value of a type the schema does not accept. */
function wrongType(r: Random, schema: Schema): unknown {
  const types = new Set([schema.type, ...(schema.anyOf ?? []).map((s) => s.type)].flat().filter(Boolean));
  const candidates: [string, unknown][] = [
    ['string', r.pick(['7', 'fuzz ☃', ''])],
    ['number', 1.5],
    ['boolean', true],
    ['null', null],
    ['array', []],
    ['object', { '☃': 1 }],
  ];
  if (!types.has('integer') && !types.has('number')) candidates.push(['integer', 7]);
  return r.pick(
    candidates.filter(([type]) => !types.has(type) && !(type === 'number' && types.has('number'))),
  )[1];
}

/** Values a schema refuses: its wrong types, and values beyond its bounds. */
function badValue(r: Random, schema: Schema): unknown {
  const options: (() => unknown)[] = [() => wrongType(r, schema)];
  if (schema.type === 'integer' || schema.type === 'number') {
    options.push(() => -1);
    if (schema.maximum !== undefined) options.push(() => BigInt(Math.trunc(schema.maximum as number)) + 1n);
    if (schema.format === 'uint64') options.push(() => 18446744073709551616n);
    options.push(() => BigInt(`1${'0'.repeat(400)}`));
    if (schema.type === 'integer') options.push(() => 2.5);
  }
  if (schema.type === 'string') {
    if (schema.pattern)
      options.push(() => r.pick(['zz', '0x', `0x${'g'.repeat(64)}`, '０x1', `0x${'a'.repeat(65)}`]));
    if ((schema.minLength ?? 0) > 0) options.push(() => '');
    if (schema.maxLength !== undefined) options.push(() => 'é'.repeat((schema.maxLength as number) + 1));
  }
  if (schema.type === 'array') {
    if ((schema.minItems ?? 0) > 0) options.push(() => []);
    if (schema.maxItems !== undefined)
      options.push(() => Array.from({ length: (schema.maxItems as number) + 1 }, (_, i) => i));
    if (schema.uniqueItems) options.push(() => [1, 1]);
    if (schema.items) options.push(() => [badValue(r, schema.items as Schema)]);
  }
  return r.pick(options)();
}

/** JSON with bigints written as their digits. */
function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(
    /"@@(\d+)@@"/g,
    '$1',
  );
}

const bodyMutations: Mutation[] = [
  (r, spec, op) => {
    if (!op.body) return undefined;
    const value = r.pick(['[]', '"x"', '1', 'null', 'true', '18446744073709551616']);
    return { label: `body ${value}`, spec: { ...spec, body: Buffer.from(value) }, refused: true };
  },
  (r, spec, op) => {
    const properties = Object.entries(op.body?.schema.properties ?? {});
    if (properties.length === 0 || !op.body) return undefined;
    const [name, schema] = r.pick(properties);
    const value = badValue(r, schema);
    const body = { ...(op.body.example as object), [name]: value };
    return {
      label: `body ${name}=${toJson(value).slice(0, 40)}`,
      spec: { ...spec, body: Buffer.from(toJson(body)) },
      refused: true,
    };
  },
  (r, spec, op) => {
    const required = op.body?.schema.required ?? [];
    if (required.length === 0 || !op.body) return undefined;
    const name = r.pick(required);
    const body = { ...(op.body.example as Record<string, unknown>) };
    delete body[name];
    return { label: `body without ${name}`, spec: { ...spec, body: json(body) }, refused: true };
  },
  (r, spec, op) => {
    if (op.body?.schema.additionalProperties !== false) return undefined;
    const name = r.pick(['☃', 'extra', '__proto__', 'constructor', 'NODE_BADGE_ID', ' ']);
    const body = `{${JSON.stringify(name)}:1,${JSON.stringify(op.body.example).slice(1)}`.replace(',}', '}');
    return {
      label: `body with unknown field ${name}`,
      spec: { ...spec, body: Buffer.from(body) },
      refused: true,
    };
  },
];

/** Garbage on the connection, and a valid request followed by a malformed one. */
const garbageMutations: Mutation[] = [
  (r) => {
    const bytes = Buffer.from(Array.from({ length: 1 + r.int(200) }, () => r.int(256)));
    // Leading CR and LF are skipped by the parser; what follows must still be garbage.
    bytes[0] = 0x7f;
    return { label: 'random bytes', bytes, refused: true, halfClose: true };
  },
  (r) => ({
    label: 'a TLS handshake or HTTP/2 preface',
    bytes: r.pick([
      Buffer.from('16030100a5010000a10303', 'hex'),
      Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
    ]),
    refused: true,
    halfClose: true,
  }),
  (r, spec, op, world) => {
    // Not after an event stream: it never ends, so nothing pipelined behind it is answered.
    if (op.write || op.path === '/events') return undefined;
    const good = serialize(baseline(op, world));
    const bad = serialize({ ...spec, method: r.pick(['get', 'FOO', 'GET\x01']) });
    return {
      label: 'a valid request, then a malformed one',
      bytes: Buffer.concat([good, bad]),
      refused: true,
      answers: 2,
      halfClose: true,
    };
  },
];

/** Valid requests and the edge cases of valid ones: answered as usual (a write may then change state). */
const edgeMutations: Mutation[] = [
  (_r, spec) => ({ label: 'valid', spec, refused: false }),
  (_r, spec) => ({ label: 'HTTP/1.0', spec: { ...spec, version: 'HTTP/1.0' }, refused: false }),
  (_r, spec) =>
    spec.body ? { label: 'chunked', spec: { ...spec, framing: 'chunked' }, refused: false } : undefined,
  (_r, spec) => ({
    label: 'Expect: 100-continue',
    spec: withHeader(spec, 'Expect', '100-continue'),
    refused: false,
  }),
  (_r, spec, _op, world) => ({
    label: 'absolute-form target',
    spec: { ...spec, target: `http://127.0.0.1:${world.port}${spec.target}` },
    refused: false,
  }),
  (_r, spec) => ({
    label: 'lowercase and padded headers',
    spec: { ...spec, headers: spec.headers.map(([n, v]) => [n.toLowerCase(), `  ${v}  `]) },
    refused: false,
  }),
  (_r, spec, op) =>
    op.method === 'GET' ? { label: 'HEAD', spec: { ...spec, method: 'HEAD' }, refused: false } : undefined,
  (_r, spec) => ({
    label: 'trailing slash',
    spec: { ...spec, target: spec.target.replace(/\/?$/, '/') },
    refused: false,
  }),
  (_r, spec) => ({
    label: 'Connection: close',
    spec: withHeader(spec, 'Connection', 'close'),
    refused: false,
  }),
  (r, spec) => ({
    label: 'an odd X-Request-Id',
    spec: withHeader(
      spec,
      'X-Request-Id',
      Buffer.from(r.pick(['☃', 'a'.repeat(65), 'ok-1', '../x'])).toString('latin1'),
    ),
    refused: false,
  }),
  (_r, spec) =>
    spec.body
      ? {
          label: 'charset and spaces',
          spec: {
            ...replaceHeader(spec, 'content-type', 'Application/JSON ; charset=utf-8'),
            body: Buffer.from(` \n${spec.body.toString()}\t `),
          },
          refused: false,
        }
      : undefined,
  (r, spec, op) => {
    const strings = Object.entries(op.body?.schema.properties ?? {}).filter(
      ([, s]) => (s.type === 'string' && !s.pattern) || s.anyOf?.some((a) => a.type === 'string'),
    );
    if (strings.length === 0 || !op.body) return undefined;
    const [name] = r.pick(strings);
    return {
      label: `unicode ${name}`,
      spec: { ...spec, body: json({ ...(op.body.example as object), [name]: r.pick(UNICODE).repeat(3) }) },
      refused: false,
    };
  },
  (_r, spec) => ({
    label: 'leading empty lines',
    spec,
    bytes: Buffer.concat([Buffer.from('\r\n\r\n'), serialize(spec)]),
    refused: false,
  }),
];

function buildCases(doc: Document, world: World, seed: number): Case[] {
  const r = new Random(seed);
  const families: { weight: number; mutations: Mutation[]; writesOnly?: boolean }[] = [
    { weight: 3, mutations: methodMutations(doc) },
    { weight: 1, mutations: versionMutations },
    { weight: 4, mutations: targetMutations(new Set(Object.keys(doc.paths))) },
    { weight: 3, mutations: headerMutations },
    { weight: 2, mutations: authMutations, writesOnly: true },
    { weight: 4, mutations: framingMutations, writesOnly: true },
    { weight: 2, mutations: contentMutations, writesOnly: true },
    { weight: 2, mutations: syntaxMutations, writesOnly: true },
    { weight: 4, mutations: bodyMutations, writesOnly: true },
    { weight: 1, mutations: garbageMutations },
    { weight: 2, mutations: edgeMutations },
  ];
  const cases: Case[] = [];
  for (const op of operations(doc)) {
    const name = `${op.method} ${op.path}`;
    const usable = families.filter((f) => op.write || !f.writesOnly);
    const total = usable.reduce((sum, f) => sum + f.weight, 0);
    let made = 0;
    for (let attempt = 0; made < CASES_PER_OPERATION && attempt < CASES_PER_OPERATION * 20; attempt++) {
      const roll = r.next() * total;
      let sum = 0;
      const family = usable.find((f) => {
        sum += f.weight;
        return roll < sum;
      });
      if (!family) break;
      const variant = r.pick(family.mutations)(r, baseline(op, world), op, world);
      if (!variant) continue;
      const spec = variant.spec;
      const bytes = variant.bytes ?? (spec ? serialize(spec) : undefined);
      if (!bytes) continue;
      made += 1;
      cases.push({
        op: name,
        label: variant.label,
        bytes,
        halfClose: variant.halfClose ?? false,
        head: spec?.method === 'HEAD' && !variant.bytes,
        answers: variant.answers ?? 1,
        refused: variant.refused,
        mutates: op.write && !variant.refused,
      });
    }
  }
  return cases;
}

// --- running and checking -----------------------------------------------------------------------------

const DOCUMENTED = new Set(
  [
    ...readFileSync(new URL('../docs/ERRORS.md', import.meta.url), 'utf8').matchAll(
      /^\| `([a-z_]+)` \| \d{3} \|/gm,
    ),
  ].map((m) => m[1]),
);

/** What is wrong with an answer, if anything. */
function checkAnswer(response: RawResponse, head: boolean): string | undefined {
  const { status } = response;
  if (status < 400) return undefined;
  if (!/^application\/problem\+json/.test(response.headers['content-type'] ?? '')) {
    return `${status} without problem+json: ${response.headers['content-type']} ${response.body.toString().slice(0, 100)}`;
  }
  // A HEAD answer says what its GET would send, without the body.
  if (head) return undefined;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(response.body.toString()) as Record<string, unknown>;
  } catch {
    return `${status} with a body that is not JSON`;
  }
  const code = String(body.code);
  if (!(code in ERRORS) || !DOCUMENTED.has(code))
    return `code ${code} is not in the catalog and docs/ERRORS.md`;
  if (ERRORS[code as keyof typeof ERRORS].status !== status || body.status !== status)
    return `${code} answered with ${status}`;
  if (body.type !== `urn:node-daemon:problem:${code}` || typeof body.detail !== 'string')
    return `${code}: not a whole problem`;
  if (body.request_id !== response.headers['x-request-id'])
    return `${code}: request_id is not the X-Request-Id header`;
  if (status >= 500 && code !== 'http_version_not_supported') return `a ${status} ${code}: ${body.detail}`;
  return undefined;
}

function checkExchange(c: Case, exchange: RawExchange): string | undefined {
  if (exchange.responses.length < c.answers) {
    return `${exchange.responses.length} answers of ${c.answers} (closed: ${exchange.closed}, ${exchange.error ?? 'no error'})`;
  }
  for (const response of exchange.responses) {
    const wrong = checkAnswer(response, c.head);
    if (wrong) return wrong;
  }
  const last = exchange.responses[c.answers - 1];
  if (c.refused && last && last.status < 400) return `built to be refused, answered ${last.status}`;
  return undefined;
}

interface Failure {
  label: string;
  wrong: string;
  example: string;
}

/** Failures grouped by what went wrong, with one example each, so that a report stays readable. */
function summarize(failures: Failure[]): string[] {
  const groups = new Map<string, { count: number; example: string }>();
  for (const f of failures) {
    const key = `${f.label.replace(/\d+/g, 'N')}: ${f.wrong.replace(/\d+/g, 'N')}`;
    const group = groups.get(key) ?? { count: 0, example: f.example };
    group.count += 1;
    groups.set(key, group);
  }
  return [...groups].map(([key, { count, example }]) => `${count}x ${key}\n    e.g. ${example}`);
}

/** Every answer's status and problem code, counted: what the cases reached. */
const reached = new Map<string, number>();

async function runAll(port: number, cases: Case[]): Promise<Failure[]> {
  const failures: Failure[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++] as Case;
      const exchange = await rawExchange(port, c.bytes, {
        halfClose: c.halfClose,
        head: c.head,
        responses: c.answers,
        timeoutMs: 5000,
      });
      for (const response of exchange.responses) {
        const code =
          response.status >= 400 ? /"code":"(\w+)"/.exec(response.body.toString())?.[1] : undefined;
        const key = `${response.status}${code ? ` ${code}` : ''}`;
        reached.set(key, (reached.get(key) ?? 0) + 1);
      }
      const wrong = checkExchange(c, exchange);
      if (wrong) {
        const sent = JSON.stringify(c.bytes.toString('latin1').slice(0, 300));
        failures.push({ label: c.label, wrong, example: `seed ${SEED}, ${c.op}: sent ${sent}` });
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return failures;
}

/** What the read endpoints answer, for the node ids that exist and one that does not. */
async function snapshot(d: DevDaemon, doc: Document): Promise<Record<string, string>> {
  // The audit trail records every refusal by design: it is what changes, not what must not.
  const volatile = new Set(['/status', '/metrics', '/health', '/ready', '/events', '/audit']);
  const reads: Record<string, string> = {};
  for (const op of operations(doc)) {
    if (op.write || volatile.has(op.path)) continue;
    const ids = op.path.includes('{') ? [1, 2, 3, 4, 5, 99] : [0];
    for (const id of ids) {
      const url = op.path.replace(/\{\w+\}/g, String(id));
      const res = await d.get(url);
      // A problem (GET /network/nodes/99) carries the request's own id: not part of what a read shows.
      reads[url] = `${res.statusCode} ${res.body.replace(/"request_id":"[^"]*"/, '"request_id":"-"')}`;
    }
  }
  const status = (await d.get('/status')).json() as {
    indexer: { cursor: unknown; events: unknown };
    badges: unknown;
  };
  reads['/status'] = JSON.stringify([status.indexer.cursor, status.indexer.events, status.badges]);
  return reads;
}

describe('HTTP fuzz (seeded, from the served OpenAPI document)', () => {
  it('answers every request without a 5xx, with a documented problem for each error, and refusals change nothing', async (t) => {
    const started = performance.now();
    const d = await devDaemon({ demo: true });
    try {
      // A world with a node, a subscription and stacks, so that the reads have something to show.
      assert.equal((await d.post('/nodes/register', {})).statusCode, 200);
      const subscribe = await d.post('/nodes/task-subscribe', {
        task_small_id: 1,
        price_per_one_million_compute_units: 1_000_000,
      });
      assert.equal(subscribe.statusCode, 200, subscribe.body);
      const stacks = (await d.get('/stacks/nodes/4')).json() as { stack_small_id: number }[];
      const url = new URL(await d.app.listen({ host: '127.0.0.1', port: 0 }));
      const world: World = {
        port: Number(url.port),
        token: readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim(),
        ids: { node_id: 4, stack_small_id: stacks[0]?.stack_small_id ?? 1, task_small_id: 1 },
      };
      const doc = (await d.get('/openapi.json')).json() as Document;
      const cases = buildCases(doc, world, SEED);
      const operationCount = operations(doc).length;
      assert.ok(cases.length >= operationCount * CASES_PER_OPERATION * 0.95, `${cases.length} cases`);

      const before = await snapshot(d, doc);
      const failures = await runAll(
        world.port,
        cases.filter((c) => !c.mutates),
      );
      const afterRefusals = await snapshot(d, doc);
      // Valid writes go last: they may change what the reads show.
      failures.push(
        ...(await runAll(
          world.port,
          cases.filter((c) => c.mutates),
        )),
      );
      assert.deepEqual(summarize(failures), [], `${failures.length} failures`);
      assert.deepEqual(afterRefusals, before, 'the refused requests changed what the reads show');
      assert.equal((await d.get('/health')).statusCode, 200);
      const metrics = (await d.get('/metrics')).body;
      assert.doesNotMatch(metrics, /http_requests_total\{[^}]*status="50[0-4]"\}/);
      // The cases reach every refusal they are built for: a generator that stopped would show here.
      const codes = new Set([...reached.keys()].map((key) => key.split(' ')[1]));
      for (const code of [
        'malformed_http',
        'bad_request',
        'invalid_parameter',
        'invalid_body',
        'malformed_json',
        'token_in_query',
        'invalid_idempotency_key',
        'unauthorized',
        'forbidden',
        'host_not_allowed',
        'not_found',
        'method_not_allowed',
        'payload_too_large',
        'unsupported_media_type',
        'expectation_failed',
        'headers_too_large',
        'http_version_not_supported',
      ]) {
        assert.ok(codes.has(code), `no case reached ${code}`);
      }
      t.diagnostic(
        [...reached]
          .sort()
          .map(([key, n]) => `${key}: ${n}`)
          .join(', '),
      );
      t.diagnostic(
        `seed ${SEED}: ${cases.length} cases over ${operationCount} operations ` +
          `(${cases.filter((c) => c.refused).length} built to be refused) in ${Math.round(performance.now() - started)} ms`,
      );
    } finally {
      await d.close();
    }
  });
});
