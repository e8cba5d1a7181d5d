import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { HealthSchema } from '../../schemas/ops.ts';

/** Liveness and the OpenAPI document. */
export const metaRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/health', {
    schema: { tags: ['meta'], summary: 'The process is alive', response: { 200: HealthSchema } },
    handler: async () => ({ status: 'ok' as const }),
  });

  app.get('/openapi.json', {
    schema: {
      hide: true,
      response: { 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3.1' }) },
    },
    handler: async () => app.swagger(),
  });
};
