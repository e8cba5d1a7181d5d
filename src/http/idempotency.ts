import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isIdempotencyKey } from '../internal/formats.ts';
import { stringifyJson } from '../internal/json.ts';
import { ERRORS, ProblemError, refuse } from '../problems/catalog.ts';
import type { IdempotencyStore } from '../store/store.ts';
import { problemBody, problemHeaders } from './errors.ts';
import { serialized } from './serialized.ts';

const IN_FLIGHT_WAIT_MS = 30_000;

/** Sorts object keys so that two bodies with the same content hash alike. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

function send(reply: FastifyReply, status: number, text: string, headers: Record<string, string> = {}): void {
  reply
    .code(status)
    .headers(headers)
    .type(status >= 400 ? 'application/problem+json' : 'application/json; charset=utf-8')
    .send(text);
}

/**
 * Answers a write, honouring an Idempotency-Key header: the same key with the same body within 24 hours
 * answers the first result without a second submission; the same key with another body is a 409. A
 * refusal (nothing submitted) frees the key again. An outcome that was never recorded (the daemon died
 * mid-submission) keeps the key blocked, so a retry cannot submit twice.
 */
export async function respond(
  request: FastifyRequest,
  reply: FastifyReply,
  store: IdempotencyStore,
  run: () => Promise<unknown>,
): Promise<void> {
  const header = request.headers['idempotency-key'];
  if (header === undefined) {
    send(reply, 200, serialized(reply, await run()));
    return;
  }
  const key = Array.isArray(header) ? '' : header;
  if (!isIdempotencyKey(key)) {
    throw refuse(
      'invalid_idempotency_key',
      'Idempotency-Key must be 1 to 255 printable ASCII characters, sent once',
      {
        parameter: 'Idempotency-Key',
      },
    );
  }
  const requestHash = createHash('sha256')
    .update(
      `${request.method} ${request.routeOptions.url}\n${stringifyJson(canonical(request.body ?? null))}`,
    )
    .digest('hex');
  const deadline = Date.now() + IN_FLIGHT_WAIT_MS;
  for (;;) {
    const reserved = await store.reserveIdempotencyKey(key, requestHash, Date.now());
    if (reserved === 'reserved') break;
    if (reserved.request_hash !== requestHash) {
      throw refuse(
        'idempotency_key_reused',
        'this Idempotency-Key was used with a different request in the last 24 hours; use a new key for a new request',
        { parameter: 'Idempotency-Key' },
      );
    }
    if (reserved.status !== 0 && reserved.response !== null) {
      send(reply, reserved.status, reserved.response, { 'idempotent-replayed': 'true' });
      return;
    }
    if (Date.now() > deadline) {
      throw refuse(
        'idempotency_key_in_flight',
        'a request with this Idempotency-Key is still in progress, or its outcome was not recorded; check the chain state before retrying with a new key',
        { parameter: 'Idempotency-Key' },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  let text: string;
  let status = 200;
  let headers: Record<string, string> = {};
  try {
    // The route's serializer: the recorded text is exactly what the first answer sent.
    text = serialized(reply, await run());
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    if (error.refusal) {
      await store.releaseIdempotencyKey(key);
      throw error;
    }
    // Sent, but with no known outcome: the key stays reserved, so a retry cannot submit twice.
    if (error.code === 'chain_outcome_unknown') throw error;
    status = ERRORS[error.code].status;
    headers = problemHeaders(error);
    text = stringifyJson(
      problemBody(request, error.code, error.message, {
        parameter: error.parameter,
        extensions: error.extensions,
      }),
    );
  }
  await store.completeIdempotencyKey(key, status, text);
  send(reply, status, text, headers);
}
