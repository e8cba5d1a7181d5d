import type { App } from '../../app.ts';
import { HealthSchema } from '../schemas.ts';

/** Liveness and the OpenAPI document. */
export function metaRoutes(app: App): void {
  app.get('/health', {
    schema: { tags: ['meta'], summary: 'The process is alive', response: { 200: HealthSchema } },
    handler: async () => ({ status: 'ok' as const }),
  });

  app.get('/openapi.json', {
    schema: { hide: true },
    handler: async () => app.swagger(),
  });
}
