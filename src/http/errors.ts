import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { stringifyJson } from '../internal/json.ts';
import { StoreError } from '../store/errors.ts';

/**
 * The error catalog: every problem the API can answer with. Each code is stable (clients may branch on
 * it), with its HTTP status and title. docs/ERRORS.md documents each one; a test keeps the two in sync.
 */
export const ERRORS = {
  invalid_parameter: { status: 400, title: 'Invalid parameter' },
  invalid_body: { status: 400, title: 'Invalid request body' },
  malformed_json: { status: 400, title: 'Malformed JSON' },
  bad_request: { status: 400, title: 'Bad request' },
  token_in_query: { status: 400, title: 'Token in the URL' },
  invalid_idempotency_key: { status: 400, title: 'Invalid Idempotency-Key' },
  gas_rejected: { status: 400, title: 'Gas settings rejected' },
  unauthorized: { status: 401, title: 'Token required' },
  forbidden: { status: 403, title: 'Wrong token' },
  host_not_allowed: { status: 403, title: 'Host not allowed' },
  not_found: { status: 404, title: 'Not found' },
  badge_not_found: { status: 404, title: 'Badge not found' },
  task_not_found: { status: 404, title: 'Task not found' },
  stack_not_found: { status: 404, title: 'Stack not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  no_badge: { status: 409, title: 'No node badge' },
  task_inactive: { status: 409, title: 'Task not active' },
  requirements_not_met: { status: 409, title: 'Task requirements not met' },
  already_subscribed: { status: 409, title: 'Already subscribed' },
  not_subscribed: { status: 409, title: 'Not subscribed' },
  stack_not_ours: { status: 409, title: 'Stack of another node' },
  already_settled: { status: 409, title: 'Stack already settled' },
  over_capacity: { status: 409, title: 'Beyond stack capacity' },
  nothing_to_attest: { status: 409, title: 'Nothing to attest' },
  nothing_to_claim: { status: 409, title: 'Nothing to claim' },
  idempotency_key_reused: { status: 409, title: 'Idempotency-Key reused' },
  idempotency_key_in_flight: { status: 409, title: 'Idempotency-Key in flight' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  transaction_failed: { status: 422, title: 'Transaction failed' },
  internal_error: { status: 500, title: 'Internal error' },
  no_network: { status: 503, title: 'No network configured' },
  chain_unavailable: { status: 503, title: 'Chain unavailable' },
  chain_outcome_unknown: { status: 504, title: 'Transaction outcome unknown' },
  not_ready: { status: 503, title: 'Not ready' },
  overloaded: { status: 503, title: 'Overloaded' },
  store_unavailable: { status: 503, title: 'Store unavailable' },
  shutting_down: { status: 503, title: 'Shutting down' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

export const PROBLEM_TYPE_PREFIX = 'urn:node-daemon:problem:';

/** An RFC 9457 problem details body, plus the stable code, the offending parameter and the request id. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail: string;
  instance: string;
  parameter?: string;
  request_id: string;
  /** Extension members, e.g. the Move abort and digest of a failed transaction. */
  [extension: string]: unknown;
}

/** Thrown anywhere below a route to answer with a problem. */
export interface ProblemOptions {
  parameter?: string | undefined;
  headers?: Record<string, string>;
  /** Extra members of the problem body (RFC 9457 extensions). */
  extensions?: Record<string, unknown>;
  /** Nothing was submitted to the chain: the request may be retried as is once the cause is fixed. */
  refusal?: boolean;
}

export class ProblemError extends Error {
  readonly code: ErrorCode;
  readonly parameter: string | undefined;
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;
  readonly refusal: boolean;
  constructor(code: ErrorCode, detail: string, options: ProblemOptions = {}) {
    super(detail);
    this.name = 'ProblemError';
    this.code = code;
    this.parameter = options.parameter;
    this.headers = options.headers ?? {};
    this.extensions = options.extensions ?? {};
    this.refusal = options.refusal ?? false;
  }
}

/** A refusal: checked before anything was signed, so nothing reached the chain. */
export function refuse(
  code: ErrorCode,
  detail: string,
  options: Omit<ProblemOptions, 'refusal'> = {},
): ProblemError {
  return new ProblemError(code, detail, { ...options, refusal: true });
}

/** The problem body for a request; `stringifyJson` prints bigint values as exact JSON digits. */
export function problemBody(
  request: FastifyRequest,
  code: ErrorCode,
  detail: string,
  options: ProblemOptions = {},
): Problem {
  const { status, title } = ERRORS[code];
  return {
    type: `${PROBLEM_TYPE_PREFIX}${code}`,
    title,
    status,
    code,
    detail,
    instance: request.url.split('?')[0] ?? request.url,
    ...(options.parameter === undefined ? {} : { parameter: options.parameter }),
    request_id: String(request.id),
    ...options.extensions,
  };
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string,
  options: ProblemOptions = {},
): FastifyReply {
  return reply
    .code(ERRORS[code].status)
    .headers(options.headers ?? {})
    .type('application/problem+json')
    .send(stringifyJson(problemBody(request, code, detail, options)));
}

const LOCATIONS: Record<string, string> = {
  params: 'path parameter',
  querystring: 'query parameter',
  body: 'body field',
  headers: 'header',
};

/** Turns the first Ajv error of a failed schema validation into a problem that names the field. */
function validationProblem(error: FastifyError): ProblemError {
  const first = error.validation?.[0];
  const context = error.validationContext ?? 'body';
  const location = LOCATIONS[context] ?? context;
  const code: ErrorCode = context === 'body' ? 'invalid_body' : 'invalid_parameter';
  if (!first) return new ProblemError(code, error.message);
  const params = first.params as Record<string, unknown>;
  const path = first.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (first.keyword === 'required') {
    const field = [path, String(params.missingProperty)].filter(Boolean).join('.');
    return new ProblemError(code, `${location} ${field} is required`, { parameter: field });
  }
  if (first.keyword === 'additionalProperties') {
    const field = [path, String(params.additionalProperty)].filter(Boolean).join('.');
    return new ProblemError(
      code,
      `${location} ${field} is not accepted here; remove it (check its spelling)`,
      {
        parameter: field,
      },
    );
  }
  const field = path === '' ? context : path;
  const where = path === '' ? 'the request body' : `${location} ${field}`;
  return new ProblemError(code, `${where} ${first.message ?? 'is invalid'}`, { parameter: field });
}

/** Fastify's own errors, by their code: what went wrong on the wire, and what to change. */
function frameworkProblem(error: FastifyError): ProblemError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ProblemError('malformed_json', `the body is not valid JSON: ${error.message}`);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ProblemError('malformed_json', 'the body is empty; send a JSON object (at least {})');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ProblemError(
        'unsupported_media_type',
        'send the body as JSON with Content-Type: application/json',
      );
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ProblemError(
        'payload_too_large',
        `the body is larger than this endpoint accepts; ${error.message}`,
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ProblemError('bad_request', 'the Content-Length header does not match the body');
    default:
      if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
        return new ProblemError(error.statusCode === 404 ? 'not_found' : 'bad_request', error.message);
      }
      return undefined;
  }
}

/** The one error handler: catalog errors as they are, everything unknown as a logged 500 with no details. */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    let problem: ProblemError | undefined;
    if (error instanceof ProblemError) problem = error;
    else if (error.validation) problem = validationProblem(error);
    else if (error instanceof StoreError && error.retryable) {
      problem = new ProblemError('store_unavailable', 'the store is busy; retry shortly', {
        headers: { 'retry-after': '1' },
      });
    } else problem = frameworkProblem(error);
    if (!problem) {
      request.log.error({ err: error }, 'unhandled error');
      return sendProblem(
        request,
        reply,
        'internal_error',
        'the daemon failed to answer; see its log for this request id',
      );
    }
    return sendProblem(request, reply, problem.code, problem.message, {
      parameter: problem.parameter,
      headers: problem.headers,
      extensions: problem.extensions,
    });
  });
}
