import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { DevActors } from '../../operations/dev-actors.ts';
import {
  BuyStackRequestSchema,
  BuyStackResultSchema,
  CreatePeerRequestSchema,
  CreatePeerResultSchema,
  CreateTaskRequestSchema,
  CreateTaskResultSchema,
  DevTxResultSchema,
  EpochResultSchema,
  PeerAttestRequestSchema,
  PeerClaimRequestSchema,
  PeerDisputeRequestSchema,
  PeerTrySettleRequestSchema,
  PeerTrySettleResultSchema,
  StackParamsSchema,
  TaskParamsSchema,
} from '../../schemas/dev.ts';
import { ProblemSchema } from '../../schemas/ops.ts';

const problems = { 400: ProblemSchema, 404: ProblemSchema, 409: ProblemSchema, 422: ProblemSchema };

/**
 * The other actors of the embedded dev network, for local use and tests: an admin creating tasks, peer
 * nodes, users buying stacks, epochs. Registered only on the dev network (404 elsewhere).
 */
export const devRoutes: FastifyPluginAsyncTypebox<{ dev: DevActors }> = async (app, { dev }) => {
  const tags = ['dev network'];

  app.post('/dev/tasks', {
    schema: {
      tags,
      summary: 'The admin creates a task',
      body: CreateTaskRequestSchema,
      response: { 200: CreateTaskResultSchema, ...problems },
    },
    handler: (request) => dev.createTask(request.body),
  });

  app.post('/dev/tasks/:task_small_id/deprecate', {
    schema: {
      tags,
      summary: 'The task badge holder deprecates a task',
      params: TaskParamsSchema,
      response: { 200: DevTxResultSchema, ...problems },
    },
    handler: (request) => dev.deprecateTask(request.params.task_small_id),
  });

  app.post('/dev/tasks/:task_small_id/remove', {
    schema: {
      tags,
      summary: 'The task badge holder removes a deprecated task',
      params: TaskParamsSchema,
      response: { 200: DevTxResultSchema, ...problems },
    },
    handler: (request) => dev.removeTask(request.params.task_small_id),
  });

  app.post('/dev/nodes', {
    schema: {
      tags,
      summary: 'A simulated peer node registers and subscribes to tasks',
      body: CreatePeerRequestSchema,
      response: { 200: CreatePeerResultSchema, ...problems },
    },
    handler: (request) => dev.createPeerNode(request.body),
  });

  app.post('/dev/stacks', {
    schema: {
      tags,
      summary: 'A user buys a stack; selected_node_id forces the sampled node',
      body: BuyStackRequestSchema,
      response: { 200: BuyStackResultSchema, ...problems },
    },
    handler: (request) => dev.buyStack(request.body),
  });

  app.post('/dev/stacks/:stack_small_id/try-settle', {
    schema: {
      tags,
      summary: "The stack's peer node try-settles it",
      params: StackParamsSchema,
      // Optional: POST without a body claims every unit.
      body: Type.Optional(PeerTrySettleRequestSchema),
      response: { 200: PeerTrySettleResultSchema, ...problems },
    },
    handler: (request) => dev.peerTrySettle(request.params.stack_small_id, request.body ?? {}),
  });

  app.post('/dev/stacks/:stack_small_id/attest', {
    schema: {
      tags,
      summary: 'A peer node asked to attest the stack attests it, honestly',
      params: StackParamsSchema,
      body: PeerAttestRequestSchema,
      response: { 200: DevTxResultSchema, ...problems },
    },
    handler: (request) => dev.peerAttest(request.params.stack_small_id, request.body.node_small_id),
  });

  app.post('/dev/disputes', {
    schema: {
      tags,
      summary: "A peer node disputes a stack's settlement",
      body: PeerDisputeRequestSchema,
      response: { 200: DevTxResultSchema, ...problems },
    },
    handler: (request) => dev.peerDispute(request.body.stack_small_id, request.body.node_small_id),
  });

  app.post('/dev/claims', {
    schema: {
      tags,
      summary:
        "A peer node claims its settled stacks (claim_funds): its fee, the buyers' refunds, the attesters' rewards",
      body: PeerClaimRequestSchema,
      response: { 200: DevTxResultSchema, ...problems },
    },
    handler: (request) => dev.peerClaim(request.body.node_small_id, request.body.stack_small_ids),
  });

  app.post('/dev/epoch', {
    schema: {
      tags,
      summary: 'Advance the dev network by one epoch',
      response: { 200: EpochResultSchema, ...problems },
    },
    handler: () => dev.advanceEpoch(),
  });
};
