import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Network } from '../../config.ts';
import type { Autopilot } from '../../operations/autopilot.ts';
import { ProblemError } from '../../problems/catalog.ts';
import { AutopilotSchema, RunResultSchema } from '../../schemas/autopilot.ts';
import { problems } from '../openapi.ts';

/** Without a chain there is no autopilot; its plan asks the chain and the store. */
const autopilotProblems = problems('no_network', 'chain_unavailable', 'store_unavailable');

/**
 * The autopilot's page: what it would do now and what it did (GET), one pass on demand and the resume
 * after a halt (POST, with the token like every write).
 */
export const autopilotRoutes: FastifyPluginAsyncTypebox<{
  autopilot: Autopilot | undefined;
  network: Network;
}> = async (app, { autopilot, network }) => {
  const running = (): Autopilot => {
    if (autopilot) return autopilot;
    throw new ProblemError(
      'no_network',
      `this daemon runs with network "${network}" and serves reads only: there is no autopilot; restart it with a chain network`,
    );
  };
  const tags = ['autopilot'];

  app.get('/autopilot', {
    schema: {
      tags,
      summary: 'The autopilot: mode, policy, last and next pass, what it would do now, what it did',
      response: { 200: AutopilotSchema, ...autopilotProblems },
    },
    handler: () => running().status(),
  });

  app.post('/autopilot/run', {
    schema: {
      tags,
      summary: 'Run one autopilot pass now: it acts in mode on, and only plans in dry-run and off',
      response: { 200: RunResultSchema, ...autopilotProblems },
    },
    handler: () => running().run(),
  });

  app.post('/autopilot/resume', {
    schema: {
      tags,
      summary: 'Let a halted autopilot act again (it halts after repeated contract aborts)',
      response: { 200: AutopilotSchema, ...autopilotProblems },
    },
    handler: async () => {
      const pilot = running();
      pilot.resume();
      return pilot.status();
    },
  });
};
