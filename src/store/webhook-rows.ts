import type { U64 } from '../internal/u64.ts';
import type {
  WebhookAttemptRow,
  WebhookDeliveryRow,
  WebhookDeliveryState,
  WebhookEndpointRow,
} from './store.ts';

/** The webhook tables' rows to their types, for both engines (sqlite/webhooks.ts, postgres/webhooks.ts). */
type Row = Record<string, unknown>;

/** An endpoint row (either engine: types as a JSON array text or a text[]). */
export function endpointOf(r: Row): WebhookEndpointRow {
  const types = r.types;
  return {
    id: Number(r.id),
    url: String(r.url),
    types:
      types === null || types === undefined
        ? null
        : Array.isArray(types)
          ? types.map(String)
          : JSON.parse(String(types)),
    description: String(r.description),
    secret: String(r.secret),
    created_at: Number(r.created_at),
    disabled_at: nullableNumber(r.disabled_at),
    disabled_reason:
      r.disabled_reason === null || r.disabled_reason === undefined ? null : String(r.disabled_reason),
    failing_since: nullableNumber(r.failing_since),
  };
}

/** A delivery row; node_small_id decoded by the engine's u64 reader. */
export function deliveryOf(r: Row, decode: (v: unknown) => U64): WebhookDeliveryRow {
  return {
    id: Number(r.id),
    webhook_id: String(r.webhook_id),
    endpoint_id: Number(r.endpoint_id),
    event_id: nullableNumber(r.event_id),
    type: String(r.type),
    at: Number(r.at),
    node_small_id: r.node_small_id === null || r.node_small_id === undefined ? null : decode(r.node_small_id),
    data: String(r.data),
    state: r.state as WebhookDeliveryState,
    attempts: Number(r.attempts),
    step: Number(r.step),
    next_attempt_at: Number(r.next_attempt_at),
    finished_at: nullableNumber(r.finished_at),
  };
}

export function attemptOf(r: Row): WebhookAttemptRow {
  return {
    n: Number(r.n),
    at: Number(r.at),
    status: nullableNumber(r.status),
    error: r.error === null || r.error === undefined ? null : String(r.error),
    duration_ms: Number(r.duration_ms),
  };
}

function nullableNumber(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}
