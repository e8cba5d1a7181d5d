import type { Network } from '../config.ts';
import { ERRORS, type ErrorCode } from '../problems/catalog.ts';
import { ProblemSchema } from '../schemas/ops.ts';
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

/** The name of the API token's security scheme in the document. */
export const TOKEN_SCHEME = 'apiToken';

/**
 * The paths the guard leaves open whatever --auth says (OPEN_PATHS in security.ts; the served-document
 * test checks every operation against the guard's answers).
 */
const OPEN_PATHS = new Set(['/health', '/ready']);

/** Whether the guard (security.ts) asks this request for the token. */
function needsToken(auth: AuthMode, method: string, path: string): boolean {
  if (auth === 'none' || OPEN_PATHS.has(path) || method === 'OPTIONS') return false;
  return auth === 'all' || (method !== 'GET' && method !== 'HEAD');
}

interface ResponseObject {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: unknown }>;
  [extension: `x-${string}`]: unknown;
}
interface OperationObject {
  security?: Record<string, string[]>[];
  responses: Record<string, ResponseObject>;
}
interface OpenApiObject {
  paths: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, unknown>; securitySchemes?: Record<string, unknown> };
}

/** Finishes the document @fastify/swagger built from the routes (in place), for this daemon. */
export function finishDocument(document: object, options: DocumentOptions): void {
  toOpenApi31(document);
  const spec = document as OpenApiObject;
  spec.components = {
    ...spec.components,
    schemas: { ...spec.components?.schemas, Problem: structuredClone(ProblemSchema) },
  };
  if (options.auth !== 'none') {
    spec.components = {
      ...spec.components,
      securitySchemes: {
        [TOKEN_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          description:
            'The API token: `Authorization: Bearer <the content of <data dir>/api-token>` (created on first start; ' +
            '`node-daemon token rotate` replaces it). ' +
            (options.auth === 'all'
              ? 'This daemon runs with --auth all: every request but /health and /ready needs it.'
              : 'This daemon runs with --auth writes: every write (POST, DELETE) needs it.'),
        },
      },
    };
  }
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!needsToken(options.auth, method.toUpperCase(), path)) continue;
      operation.security = [{ [TOKEN_SCHEME]: [] }];
      addProblems(operation, ['unauthorized', 'forbidden']);
    }
  }
}

const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** Adds problems (by catalog code) to an operation's responses, each under its status. */
function addProblems(operation: OperationObject, codes: readonly ErrorCode[]): void {
  for (const code of codes) {
    const status = String(ERRORS[code].status);
    const response = operation.responses[status];
    const known = (response?.['x-problem-codes'] as ErrorCode[] | undefined) ?? [];
    if (known.includes(code)) continue;
    const all = [...known, code];
    operation.responses[status] = {
      ...response,
      description: all.map((c) => `\`${c}\`: ${ERRORS[c].title}`).join('; '),
      content: { [PROBLEM_MEDIA_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } },
      'x-problem-codes': all,
    };
    if (code === 'unauthorized') {
      operation.responses[status]!.headers = {
        'WWW-Authenticate': { description: 'Bearer', schema: { type: 'string' } },
      };
    }
  }
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
