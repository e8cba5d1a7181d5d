/**
 * The error catalog: every problem the daemon can answer with, whichever layer finds it. Each code is stable
 * (clients may branch on it), with the HTTP status and title it is served with. docs/ERRORS.md documents
 * each one; a test keeps the two in sync. Nothing here knows about HTTP beyond the status number, and it
 * imports nothing, so every layer may use it (the chain's and the store's errors are mapped to it in
 * operations/from-error.ts).
 */
export const ERRORS = {
  invalid_parameter: { status: 400, title: 'Invalid parameter' },
  invalid_body: { status: 400, title: 'Invalid request body' },
  malformed_json: { status: 400, title: 'Malformed JSON' },
  bad_request: { status: 400, title: 'Bad request' },
  malformed_http: { status: 400, title: 'Malformed HTTP request' },
  token_in_query: { status: 400, title: 'Token in the URL' },
  invalid_idempotency_key: { status: 400, title: 'Invalid Idempotency-Key' },
  gas_rejected: { status: 400, title: 'Gas settings rejected' },
  attester_slots_unsupported: { status: 400, title: 'Attester slot beyond a leaf index' },
  unauthorized: { status: 401, title: 'Token required' },
  forbidden: { status: 403, title: 'Wrong token' },
  host_not_allowed: { status: 403, title: 'Host not allowed' },
  insufficient_scope: { status: 403, title: 'Token scope insufficient' },
  not_found: { status: 404, title: 'Not found' },
  badge_not_found: { status: 404, title: 'Badge not found' },
  token_not_found: { status: 404, title: 'Token not found' },
  task_not_found: { status: 404, title: 'Task not found' },
  node_not_found: { status: 404, title: 'Node not found' },
  stack_not_found: { status: 404, title: 'Stack not found' },
  webhook_not_found: { status: 404, title: 'Webhook endpoint not found' },
  webhook_delivery_not_found: { status: 404, title: 'Webhook delivery not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'Request timeout' },
  no_badge: { status: 409, title: 'No node badge' },
  task_inactive: { status: 409, title: 'Task not active' },
  requirements_not_met: { status: 409, title: 'Task requirements not met' },
  already_subscribed: { status: 409, title: 'Already subscribed' },
  not_subscribed: { status: 409, title: 'Not subscribed' },
  stack_not_ours: { status: 409, title: 'Stack of another node' },
  already_settled: { status: 409, title: 'Stack already settled' },
  over_capacity: { status: 409, title: 'Beyond stack capacity' },
  usage_from_source: { status: 409, title: 'Usage comes from the usage source' },
  no_usage: { status: 409, title: 'No usage recorded' },
  nothing_to_settle: { status: 409, title: 'Nothing to settle' },
  nothing_to_attest: { status: 409, title: 'Nothing to attest' },
  nothing_to_claim: { status: 409, title: 'Nothing to claim' },
  idempotency_key_reused: { status: 409, title: 'Idempotency-Key reused' },
  webhook_delivery_pending: { status: 409, title: 'Webhook delivery still pending' },
  idempotency_key_in_flight: { status: 409, title: 'Idempotency-Key in flight' },
  token_exists: { status: 409, title: 'Token name taken' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  expectation_failed: { status: 417, title: 'Expectation failed' },
  transaction_failed: { status: 422, title: 'Transaction failed' },
  headers_too_large: { status: 431, title: 'Request headers too large' },
  internal_error: { status: 500, title: 'Internal error' },
  no_network: { status: 503, title: 'No network configured' },
  chain_unavailable: { status: 503, title: 'Chain unavailable' },
  chain_outcome_unknown: { status: 504, title: 'Transaction outcome unknown' },
  not_ready: { status: 503, title: 'Not ready' },
  overloaded: { status: 503, title: 'Overloaded' },
  store_unavailable: { status: 503, title: 'Store unavailable' },
  shutting_down: { status: 503, title: 'Shutting down' },
  http_version_not_supported: { status: 505, title: 'HTTP version not supported' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

/** The RFC 9457 `type` of every problem is this prefix and its code (the client recognizes the daemon by it). */
export const PROBLEM_TYPE_PREFIX = 'urn:node-daemon:problem:';

export interface ProblemOptions {
  /** The offending parameter, query parameter, body field or header. */
  parameter?: string | undefined;
  /** Extra members of the problem (RFC 9457 extensions), e.g. a failed transaction's abort and digest. */
  extensions?: Record<string, unknown>;
  /** When the same request may succeed again (the chain or the store was busy or unreachable). */
  retryAfterSeconds?: number | undefined;
  /** Nothing was submitted to the chain: the request may be retried as is once the cause is fixed. */
  refusal?: boolean;
  /** The error of a layer below that this problem tells (kept for the log, never sent). */
  cause?: unknown;
}

/**
 * A problem with a stable code from the catalog: thrown by the operations (refusals, failed
 * transactions) and by the HTTP layer (bad input). The HTTP layer renders it as RFC 9457 problem details;
 * the CLI prints its detail.
 */
export class ProblemError extends Error {
  readonly code: ErrorCode;
  readonly parameter: string | undefined;
  readonly extensions: Record<string, unknown>;
  readonly retryAfterSeconds: number | undefined;
  readonly refusal: boolean;
  constructor(code: ErrorCode, detail: string, options: ProblemOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ProblemError';
    this.code = code;
    this.parameter = options.parameter;
    this.extensions = options.extensions ?? {};
    this.retryAfterSeconds = options.retryAfterSeconds;
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
