import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { stringifyJson } from '../internal/json.ts';
import { problemFromError } from '../operations/from-error.ts';
import {
  ERRORS,
  type ErrorCode,
  PROBLEM_TYPE_PREFIX,
  ProblemError,
  type ProblemOptions,
} from '../problems/catalog.ts';

/**
 * Problems on the wire: RFC 9457 problem details (application/problem+json) for every error the API
 * answers with, from the catalog (src/problems/catalog.ts), and the one error handler.
 */

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

/** How a problem is sent: the catalog's options, and headers of its own (Allow, WWW-Authenticate). */
export interface SendOptions extends ProblemOptions {
  headers?: Record<string, string>;
}

/** The problem body for a request. */
export function problemBody(
  request: FastifyRequest,
  code: ErrorCode,
  detail: string,
  options: ProblemOptions = {},
): Problem {
  const instance = request.url.split('?')[0] ?? request.url;
  return problemDocument(code, detail, { instance, requestId: String(request.id) }, options);
}

/** The problem body from what is known of a request: its path and id (see client-errors.ts). */
export function problemDocument(
  code: ErrorCode,
  detail: string,
  request: { instance: string; requestId: string },
  options: ProblemOptions = {},
): Problem {
  const { status, title } = ERRORS[code];
  return {
    type: `${PROBLEM_TYPE_PREFIX}${code}`,
    title,
    status,
    code,
    detail,
    instance: request.instance,
    ...(options.parameter === undefined ? {} : { parameter: options.parameter }),
    request_id: request.requestId,
    ...options.extensions,
  };
}

/** The headers a problem is sent with: its own, and Retry-After when it says when to retry. */
export function problemHeaders(options: SendOptions): Record<string, string> {
  const headers = { ...options.headers };
  if (options.retryAfterSeconds !== undefined) headers['retry-after'] = String(options.retryAfterSeconds);
  return headers;
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string,
  options: SendOptions = {},
): FastifyReply {
  return reply
    .code(ERRORS[code].status)
    .headers(problemHeaders(options))
    .type('application/problem+json')
    .send(stringifyJson(problemBody(request, code, detail, options)));
}

/** Sends a ProblemError as its problem. */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: ProblemError): FastifyReply {
  return sendProblem(request, reply, error.code, error.message, error);
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
      return new ProblemError('malformed_http', 'the Content-Length header does not match the body', {
        parameter: 'content-length',
      });
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
    const problem = error.validation
      ? validationProblem(error)
      : (problemFromError(error) ?? frameworkProblem(error));
    if (!problem) {
      request.log.error({ err: error }, 'unhandled error');
      return sendProblem(
        request,
        reply,
        'internal_error',
        'the daemon failed to answer; see its log for this request id',
      );
    }
    return sendError(request, reply, problem);
  });
}
