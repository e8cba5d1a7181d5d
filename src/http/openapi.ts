import type { Static, TObject, TSchema } from 'typebox';
import type { Network } from '../config.ts';
import { ERRORS, type ErrorCode } from '../problems/catalog.ts';
import { ProblemSchema } from '../schemas/ops.ts';
import { type RouteScope, requiredScope } from './scopes.ts';
import type { AuthMode } from './security.ts';

/**
 * The OpenAPI document as served: OpenAPI 3.1, from the route schemas, finished for the running daemon
 * (its --auth decides which operations need the token).
 */

/** What the served document depends on besides the routes. */
export interface DocumentOptions {
  auth: AuthMode;
  network: Network;
}

/** The extension that says which token scope an operation needs (scopes.ts). */
const REQUIRED_SCOPE = 'x-required-scope';

/** The name of the API token's security scheme in the document. */
export const TOKEN_SCHEME = 'apiToken';

/**
 * The paths the guard leaves open whatever --auth says (OPEN_PATHS in security.ts; the served-document
 * test checks every operation against the guard's answers).
 */
const OPEN_PATHS = new Set(['/health', '/ready']);

/** Whether the guard (security.ts) asks this request for the token. */
function needsToken(auth: AuthMode, method: string, path: string): boolean {
  if (auth === 'none' || method === 'OPTIONS') return false;
  const scope = requiredScope(method, fastifyUrl(path));
  if (scope === 'admin' || scope === 'token') return true;
  if (OPEN_PATHS.has(path)) return false;
  return auth === 'all' || (method !== 'GET' && method !== 'HEAD');
}

/** `/stacks/{stack_small_id}/usage` → `/stacks/:stack_small_id/usage`, as scopes.ts keys its routes. */
function fastifyUrl(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

const SCOPE_LINES: Record<RouteScope, string> = {
  read: 'Scope: read (or write, admin).',
  usage: 'Scope: usage (or write, admin).',
  write: 'Scope: write (or admin).',
  admin: 'Scope: admin; it always needs a token.',
  token: 'Scope: any valid token.',
};

interface ResponseObject {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: unknown }>;
  [extension: `x-${string}`]: unknown;
}
interface OperationObject {
  description?: string;
  security?: Record<string, string[]>[];
  [REQUIRED_SCOPE]?: RouteScope;
  parameters?: { in: string; name?: string }[];
  [CONDITIONAL]?: boolean;
  requestBody?: unknown;
  responses: Record<string, ResponseObject>;
}
interface OpenApiObject {
  info: { description?: string };
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, unknown>; securitySchemes?: Record<string, unknown> };
}

/** The media type of every error the daemon answers with. */
const PROBLEM_MEDIA_TYPE = 'application/problem+json';

type StatusOf<C extends ErrorCode> = (typeof ERRORS)[C]['status'];

/** A problem response as a route declares it (Fastify and @fastify/swagger read the content form). */
export interface ProblemResponse {
  description: string;
  content: { [PROBLEM_MEDIA_TYPE]: { schema: typeof ProblemSchema } };
}

/**
 * The problems a route answers beyond those every request can get (finishDocument adds those), by
 * status: an application/problem+json body whose `code` is one of the given codes.
 */
export function problems<const C extends ErrorCode>(...codes: C[]): { [S in StatusOf<C>]: ProblemResponse } {
  const responses: Record<number, ProblemResponse> = {};
  for (const status of new Set(codes.map((code) => ERRORS[code].status))) {
    const these = codes.filter((code) => ERRORS[code].status === status);
    const code = { ...ProblemSchema.properties.code, enum: these };
    responses[status] = {
      description: describeCodes(these),
      content: {
        [PROBLEM_MEDIA_TYPE]: {
          schema: {
            ...ProblemSchema,
            properties: { ...ProblemSchema.properties, code },
          } as typeof ProblemSchema,
        },
      },
    };
  }
  return responses as { [S in StatusOf<C>]: ProblemResponse };
}

/** The schema with one example: the body Swagger UI's Try it out starts from. */
export function withExample<T extends TSchema>(schema: T, example: Static<T>): T {
  return { ...schema, examples: [example] };
}

/** Path parameters with an example each (OpenAPI describes parameters one by one). */
export function withParameterExamples<T extends TObject>(schema: T, example: Static<T>): T {
  const values = example as Record<string, unknown>;
  const properties = Object.fromEntries(
    Object.entries(schema.properties).map(([name, property]) => [
      name,
      name in values ? { ...property, examples: [values[name]] } : property,
    ]),
  );
  return { ...schema, properties };
}

/** The mark of a read served from the response cache (response-cache.ts sendCached), on its route schema. */
const CONDITIONAL = 'x-conditional-read';

/** Marks a read route served by sendCached: finishDocument documents its ETag, If-None-Match, 304 and Link. */
export const conditionalRead = { [CONDITIONAL]: true } as const;

/**
 * A conditional read's headers and 304 in its operation: the ETag on 200 and 304, If-None-Match, and the
 * Link to the next page on an operation that takes `limit`.
 */
function addConditional(operation: OperationObject): void {
  delete operation[CONDITIONAL];
  const etag = {
    description:
      "A strong tag of what the answer shows (its topics' versions in this store): send it back in If-None-Match",
    schema: { type: 'string' },
  };
  operation.parameters = [
    ...(operation.parameters ?? []),
    {
      in: 'header',
      name: 'If-None-Match',
      required: false,
      description: 'ETags of answers already held (a list, or `*`): a 304 with no body while one is current',
      schema: { type: 'string' },
    } as { in: string; name: string },
  ];
  const paged = operation.parameters.some((p) => p.in === 'query' && p.name === 'limit');
  const ok = operation.responses['200'];
  if (ok) {
    ok.headers = {
      ...ok.headers,
      ETag: etag,
      ...(paged
        ? {
            Link: {
              description:
                'With `limit`, while rows remain: `<this request with after=LAST>; rel="next"`, the next page',
              schema: { type: 'string' },
            },
          }
        : {}),
    };
  }
  operation.responses['304'] = {
    description: 'Not Modified: an ETag in If-None-Match is current; no body',
    headers: { ETag: etag },
  };
}

/** What any request can be answered before its route runs: the guard's refusals and a daemon bug. */
const EVERY_REQUEST: readonly ErrorCode[] = [
  'bad_request',
  'malformed_http',
  'token_in_query',
  'host_not_allowed',
  'internal_error',
  'overloaded',
  'shutting_down',
];
/** A request that carries a body (POST, DELETE) has it parsed as JSON, whatever its route. */
const WITH_BODY: readonly ErrorCode[] = ['malformed_json', 'payload_too_large', 'unsupported_media_type'];

/**
 * Where the /dev routes are documented when this daemon does not serve them (network sui or none, and
 * docs/openapi.json, which is rendered on none so that it holds for every network).
 */
const DEV_ROUTES_ELSEWHERE =
  "The /dev routes (the dev network's other actors: an admin, peer nodes, users, epochs) exist only on the " +
  'embedded dev network (--network dev) and are not in this document: a daemon started with --network dev ' +
  'serves them, with their schemas, in its /openapi.json and /docs; docs/DEV-NETWORK.md describes them.';

/** Finishes the document @fastify/swagger built from the routes (in place), for this daemon. */
export function finishDocument(document: object, options: DocumentOptions): void {
  const spec = document as OpenApiObject;
  spec.info.description = [
    spec.info.description,
    'Each operation lists, under each error status, the problem `code`s it can answer (also in `x-problem-codes`); ' +
      'docs/ERRORS.md says what each means and what to do. Any path answers 404 `not_found` when no endpoint has it, ' +
      'and 405 `method_not_allowed`, with `Allow`, to a method it does not take. ' +
      'A request that is not valid HTTP/1.1 reaches no operation, and is answered with a problem all the same, ' +
      'its connection then closed: 400 `malformed_http`, 408 `request_timeout` (not whole within 30 s), ' +
      '417 `expectation_failed`, 431 `headers_too_large` or 505 `http_version_not_supported`.',
    options.network === 'dev' ? undefined : DEV_ROUTES_ELSEWHERE,
  ]
    .filter(Boolean)
    .join('\n\n');
  const devTag = spec.tags?.find((tag) => tag.name === 'dev network');
  if (devTag) {
    devTag.description =
      options.network === 'dev'
        ? 'Only on the embedded dev network (404 on any other): its other actors, for local use and tests'
        : DEV_ROUTES_ELSEWHERE;
  }
  spec.components = {
    ...spec.components,
    schemas: { ...spec.components?.schemas, Problem: structuredClone(ProblemSchema) },
  };
  if (options.auth !== 'none') {
    spec.components.securitySchemes = {
      [TOKEN_SCHEME]: {
        type: 'http',
        scheme: 'bearer',
        description:
          'The API token, sent as `Authorization: Bearer <token>`: the content of `<data dir>/api-token` ' +
          '(an admin token, created on first start; `node-daemon token rotate` replaces it), or a named token ' +
          'of `node-daemon token create` with a scope: read, usage, write or admin. Each operation says the ' +
          'scope it needs in `x-required-scope`; admin operations always need a token. ' +
          (options.auth === 'all'
            ? 'This daemon runs with --auth all: every request but /health and /ready needs it.'
            : 'This daemon runs with --auth writes: every write (POST, DELETE) needs it.'),
      },
    };
  }
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (operation[CONDITIONAL] === true) addConditional(operation);
      const codes = new Set<ErrorCode>([...routeProblems(operation, `${method} ${path}`), ...EVERY_REQUEST]);
      // A bad path or query parameter, or a query parameter the operation does not declare (every
      // operation refuses those, those that declare none included).
      codes.add('invalid_parameter');
      if (operation.requestBody) codes.add('invalid_body');
      if (method !== 'get' && method !== 'head') for (const code of WITH_BODY) codes.add(code);
      const scope = requiredScope(method.toUpperCase(), fastifyUrl(path));
      operation[REQUIRED_SCOPE] = scope;
      operation.description = [operation.description, SCOPE_LINES[scope]].filter(Boolean).join('\n\n');
      if (needsToken(options.auth, method.toUpperCase(), path)) {
        operation.security = [{ [TOKEN_SCHEME]: [] }];
        codes.add('unauthorized').add('forbidden').add('insufficient_scope');
      }
      addProblems(operation, codes);
    }
  }
  toOpenApi31(spec);
}

/** The codes a route declared with problems(), taken out of its responses (addProblems writes them again). */
function routeProblems(operation: OperationObject, name: string): ErrorCode[] {
  const codes: ErrorCode[] = [];
  for (const [status, response] of Object.entries(operation.responses)) {
    if (Number(status) < 400) continue;
    const schema = response.content?.[PROBLEM_MEDIA_TYPE]?.schema as
      | { properties?: { code?: { enum?: ErrorCode[] } } }
      | undefined;
    const declared = schema?.properties?.code?.enum;
    if (!declared) throw new Error(`${name} declares ${status} without its problem codes; use problems()`);
    codes.push(...declared);
    delete operation.responses[status];
  }
  return codes;
}

const CATALOG_ORDER = Object.keys(ERRORS) as ErrorCode[];

/** Writes the problem responses of these codes, one per status, with the one Problem schema. */
function addProblems(operation: OperationObject, codes: Set<ErrorCode>): void {
  const sorted = CATALOG_ORDER.filter((code) => codes.has(code));
  for (const status of new Set(sorted.map((code) => ERRORS[code].status))) {
    const these = sorted.filter((code) => ERRORS[code].status === status);
    operation.responses[String(status)] = {
      description: describeCodes(these),
      ...(HEADERS[status] ? { headers: HEADERS[status] } : {}),
      content: { [PROBLEM_MEDIA_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } },
      'x-problem-codes': these,
    };
  }
}

const HEADERS: Record<number, Record<string, unknown>> = {
  401: { 'WWW-Authenticate': { description: '`Bearer`', schema: { type: 'string' } } },
  503: {
    'Retry-After': {
      description: 'Seconds after which to retry (not with `no_network`, which lasts until a restart)',
      schema: { type: 'integer' },
    },
  },
};

function describeCodes(codes: readonly ErrorCode[]): string {
  return codes.map((code) => `\`${code}\`: ${ERRORS[code].title}`).join('; ');
}

/** Rewrites `nullable: true` (see schemas/common.ts Nullable) into OpenAPI 3.1's `type: [T, "null"]`, in place. */
export function toOpenApi31(node: unknown): void {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const item of node) toOpenApi31(item);
    return;
  }
  const record = node as Record<string, unknown>;
  if (record.u64 === true) {
    delete record.u64;
    Object.assign(record, { type: 'integer', minimum: 0, format: 'uint64' });
  }
  if (record.nullable === true && typeof record.type === 'string') {
    record.type = [record.type, 'null'];
    delete record.nullable;
  }
  for (const value of Object.values(record)) toOpenApi31(value);
}
