import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Webhooks } from '../../operations/webhooks.ts';
import {
  CreatedWebhookSchema,
  CreateWebhookSchema,
  WebhookDeliveriesQuerySchema,
  WebhookDeliveriesSchema,
  WebhookDeliveryParamsSchema,
  WebhookDeliverySchema,
  WebhookEndpointSchema,
  WebhookIdParamsSchema,
  WebhookListSchema,
} from '../../schemas/webhooks.ts';
import { problems, withExample, withParameterExamples } from '../openapi.ts';

/**
 * Every webhook route needs an admin token, its reads too (they show where the node's events go), under
 * --auth writes as under --auth all: src/http/scopes.ts declares /webhooks an admin area.
 */
const tags = ['webhooks'];
const ID = withParameterExamples(WebhookIdParamsSchema, { id: '1' });
const notFound = problems('webhook_not_found', 'store_unavailable');

/** The operator's webhook endpoints and their deliveries (docs/WEBHOOKS.md). */
export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: Webhooks }> = async (app, { webhooks }) => {
  app.post('/webhooks', {
    schema: {
      tags,
      summary:
        'Add an endpoint: every node event of its types is POSTed to it, signed (the secret is shown once)',
      body: withExample(CreateWebhookSchema, {
        url: 'http://localhost:8787/atoma-hook',
        types: ['dispute_opened', 'signer_gas_low', 'autopilot_halted'],
        description: 'my phone',
      }),
      response: { 201: CreatedWebhookSchema, ...problems('store_unavailable') },
    },
    handler: async (request, reply) => reply.code(201).send(await webhooks.create(request.body)),
  });

  app.get('/webhooks', {
    schema: {
      tags,
      summary: 'The endpoints, with their state (never their secrets)',
      response: { 200: WebhookListSchema, ...problems('store_unavailable') },
    },
    handler: () => webhooks.list(),
  });

  app.get('/webhooks/:id', {
    schema: {
      tags,
      summary: 'One endpoint',
      params: ID,
      response: { 200: WebhookEndpointSchema, ...notFound },
    },
    handler: (request) => webhooks.get(Number(request.params.id)),
  });

  app.delete('/webhooks/:id', {
    schema: {
      tags,
      summary: 'Remove an endpoint, with its deliveries',
      params: ID,
      response: { 200: WebhookEndpointSchema, ...notFound },
    },
    handler: (request) => webhooks.remove(Number(request.params.id)),
  });

  app.get('/webhooks/:id/deliveries', {
    schema: {
      tags,
      summary:
        "The endpoint's deliveries, newest first, each with its attempts' time, status or error, duration",
      params: ID,
      querystring: WebhookDeliveriesQuerySchema,
      response: { 200: WebhookDeliveriesSchema, ...notFound },
    },
    handler: (request) => {
      const limit = Math.min(500, Math.max(1, Number(request.query.limit ?? 50)));
      const before = request.query.before === undefined ? null : Number(request.query.before);
      return webhooks.deliveries(Number(request.params.id), { before, limit });
    },
  });

  app.post('/webhooks/:id/test', {
    schema: {
      tags,
      summary: 'Send a webhook.test event to this endpoint only',
      params: ID,
      response: { 202: WebhookDeliverySchema, ...notFound },
    },
    handler: async (request, reply) => reply.code(202).send(await webhooks.test(Number(request.params.id))),
  });

  app.post('/webhooks/:id/enable', {
    schema: {
      tags,
      summary: 'Enable a disabled endpoint: its pending deliveries go again',
      params: ID,
      response: { 200: WebhookEndpointSchema, ...notFound },
    },
    handler: (request) => webhooks.enable(Number(request.params.id)),
  });

  app.post('/webhooks/:id/deliveries/:delivery_id/retry', {
    schema: {
      tags,
      summary: 'Replay a failed (or delivered) delivery now, with the same webhook-id',
      params: withParameterExamples(WebhookDeliveryParamsSchema, { id: '1', delivery_id: '1' }),
      response: {
        202: WebhookDeliverySchema,
        ...problems(
          'webhook_not_found',
          'webhook_delivery_not_found',
          'webhook_delivery_pending',
          'store_unavailable',
        ),
      },
    },
    handler: async (request, reply) =>
      reply
        .code(202)
        .send(await webhooks.retry(Number(request.params.id), Number(request.params.delivery_id))),
  });
};
