import { type Static, Type } from 'typebox';
import { NODE_EVENT_TYPES } from '../internal/node-event-types.ts';
import { Nullable, Strict } from './common.ts';

/** The webhook routes' bodies and replies (docs/WEBHOOKS.md). */

export const CreateWebhookSchema = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'Where to POST the events: an http:// or https:// URL',
      examples: ['https://example.com/atoma-hook'],
    }),
    types: Type.Optional(
      Type.Array(Type.String(), {
        minItems: 1,
        maxItems: 64,
        description: `The event types to send (${NODE_EVENT_TYPES.join(', ')}); leave it out for every type`,
        examples: [['dispute_opened', 'signer_gas_low', 'autopilot_halted']],
      }),
    ),
    description: Type.Optional(Type.String({ maxLength: 200, description: "The operator's note" })),
  },
  Strict,
);
export type CreateWebhook = Static<typeof CreateWebhookSchema>;

const Time = (description: string) => Type.String({ format: 'date-time', description });

export const WebhookEndpointSchema = Type.Object(
  {
    id: Type.Integer({ description: 'The endpoint id' }),
    url: Type.String(),
    types: Nullable(Type.Array(Type.String()), 'The event types it receives; null: every type'),
    description: Type.String(),
    state: Type.Union([Type.Literal('enabled'), Type.Literal('failing'), Type.Literal('disabled')], {
      description: 'enabled; failing: its last attempt failed, retries go on; disabled: nothing is sent',
    }),
    created_at: Time('When it was added'),
    disabled_at: Nullable(Time('When it was disabled')),
    disabled_reason: Nullable(Type.String()),
    failing_since: Nullable(Time('When its deliveries started failing')),
  },
  Strict,
);
export type WebhookEndpoint = Static<typeof WebhookEndpointSchema>;

export const CreatedWebhookSchema = Type.Intersect([
  WebhookEndpointSchema,
  Type.Object({
    secret: Type.String({
      description:
        'The signing secret (`whsec_` + base64), shown only in this answer: keep it in the receiver',
    }),
  }),
]);
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;

export const WebhookListSchema = Type.Object({ endpoints: Type.Array(WebhookEndpointSchema) }, Strict);

export const WebhookAttemptSchema = Type.Object(
  {
    at: Time('When the attempt started'),
    status: Nullable(Type.Integer(), "The receiver's HTTP status; null when it did not answer"),
    error: Nullable(Type.String(), 'Why there was no answer (refused, timed out, ...)'),
    duration_ms: Type.Integer(),
  },
  Strict,
);

export const WebhookDeliverySchema = Type.Object(
  {
    id: Type.Integer({ description: 'The delivery id (for a replay)' }),
    webhook_id: Type.String({ description: 'The webhook-id header: the same on every attempt' }),
    event_id: Nullable(Type.Integer(), 'The node event it carries (GET /events); null for a test'),
    type: Type.String(),
    state: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
    event_at: Time('When the event happened'),
    next_attempt_at: Nullable(Time('When the next attempt is due (pending only)')),
    finished_at: Nullable(Time('When it was delivered or given up')),
    attempts: Type.Array(WebhookAttemptSchema),
  },
  Strict,
);
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>;

export const WebhookDeliveriesSchema = Type.Object(
  {
    deliveries: Type.Array(WebhookDeliverySchema, { description: 'Newest first' }),
    next_before: Nullable(Type.Integer(), 'Pass as `before` for the next (older) page; null: no more'),
  },
  Strict,
);
export type WebhookDeliveries = Static<typeof WebhookDeliveriesSchema>;

export const WebhookIdParamsSchema = Type.Object({ id: Type.String({ pattern: '^[0-9]{1,15}$' }) }, Strict);
export const WebhookDeliveryParamsSchema = Type.Object(
  { id: Type.String({ pattern: '^[0-9]{1,15}$' }), delivery_id: Type.String({ pattern: '^[0-9]{1,15}$' }) },
  Strict,
);
export const WebhookDeliveriesQuerySchema = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$', description: '1 to 500; default 50' })),
    before: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,15}$', description: 'Deliveries older than this id' }),
    ),
  },
  Strict,
);
