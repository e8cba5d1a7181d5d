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
  SetGasRequestSchema,
  SetGasResultSchema,
  StackParamsSchema,
  TaskParamsSchema,
} from '../../schemas/dev.ts';
import { problems, withExample, withParameterExamples } from '../openapi.ts';

/**
 * Every dev action is a transaction (a Move abort is a 422) on the dev network's ledger, which answers 503
 * once closed; a peer that does not exist is a 404, and the operator's own node a 400 (it is no peer).
 */
const DEV_PROBLEMS = ['transaction_failed', 'chain_unavailable', 'store_unavailable'] as const;
const PEER_PROBLEMS = [...DEV_PROBLEMS, 'not_found'] as const;

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
      body: withExample(CreateTaskRequestSchema, {
        role: 0,
        model_name: 'Qwen/QwQ-32B',
        security_level: 0,
      }),
      response: { 200: CreateTaskResultSchema, ...problems(...DEV_PROBLEMS) },
    },
    handler: (request) => dev.createTask(request.body),
  });

  app.post('/dev/tasks/:task_small_id/deprecate', {
    schema: {
      tags,
      summary: 'The task badge holder deprecates a task',
      params: withParameterExamples(TaskParamsSchema, { task_small_id: 4 }),
      response: { 200: DevTxResultSchema, ...problems(...DEV_PROBLEMS) },
    },
    handler: (request) => dev.deprecateTask(request.params.task_small_id),
  });

  app.post('/dev/tasks/:task_small_id/remove', {
    schema: {
      tags,
      summary: 'The task badge holder removes a deprecated task',
      params: withParameterExamples(TaskParamsSchema, { task_small_id: 4 }),
      response: { 200: DevTxResultSchema, ...problems(...DEV_PROBLEMS) },
    },
    handler: (request) => dev.removeTask(request.params.task_small_id),
  });

  app.post('/dev/nodes', {
    schema: {
      tags,
      summary: 'A simulated peer node registers and subscribes to tasks',
      body: withExample(CreatePeerRequestSchema, {
        subscriptions: [{ task_small_id: 1, price_per_one_million_compute_units: 900_000 }],
      }),
      response: { 200: CreatePeerResultSchema, ...problems(...DEV_PROBLEMS) },
    },
    handler: (request) => dev.createPeerNode(request.body),
  });

  app.post('/dev/stacks', {
    schema: {
      tags,
      summary: 'A user buys a stack; selected_node_id forces the sampled node',
      body: withExample(BuyStackRequestSchema, {
        task_small_id: 1,
        num_compute_units: 10_000,
        price_per_one_million_compute_units: 2_000_000,
      }),
      response: { 200: BuyStackResultSchema, ...problems(...DEV_PROBLEMS) },
    },
    handler: (request) => dev.buyStack(request.body),
  });

  app.post('/dev/stacks/:stack_small_id/try-settle', {
    schema: {
      tags,
      summary: "The stack's peer node try-settles it",
      params: withParameterExamples(StackParamsSchema, { stack_small_id: 1 }),
      // Optional: POST without a body claims every unit.
      body: Type.Optional(withExample(PeerTrySettleRequestSchema, { num_claimed_compute_units: 800 })),
      response: { 200: PeerTrySettleResultSchema, ...problems(...PEER_PROBLEMS, 'stack_not_found') },
    },
    handler: (request) => dev.peerTrySettle(request.params.stack_small_id, request.body ?? {}),
  });

  app.post('/dev/stacks/:stack_small_id/attest', {
    schema: {
      tags,
      summary: 'A peer node asked to attest the stack attests it, honestly',
      params: withParameterExamples(StackParamsSchema, { stack_small_id: 10 }),
      body: withExample(PeerAttestRequestSchema, { node_small_id: 1 }),
      response: { 200: DevTxResultSchema, ...problems(...PEER_PROBLEMS, 'stack_not_found') },
    },
    handler: (request) => dev.peerAttest(request.params.stack_small_id, request.body.node_small_id),
  });

  app.post('/dev/disputes', {
    schema: {
      tags,
      summary: "A peer node disputes a stack's settlement",
      body: withExample(PeerDisputeRequestSchema, { stack_small_id: 10, node_small_id: 1 }),
      response: { 200: DevTxResultSchema, ...problems(...PEER_PROBLEMS) },
    },
    handler: (request) => dev.peerDispute(request.body.stack_small_id, request.body.node_small_id),
  });

  app.post('/dev/claims', {
    schema: {
      tags,
      summary:
        "A peer node claims its settled stacks (claim_funds): its fee, the buyers' refunds, the attesters' rewards",
      body: withExample(PeerClaimRequestSchema, { node_small_id: 1, stack_small_ids: [1] }),
      response: { 200: DevTxResultSchema, ...problems(...PEER_PROBLEMS) },
    },
    handler: (request) => dev.peerClaim(request.body.node_small_id, request.body.stack_small_ids),
  });

  app.post('/dev/epoch', {
    schema: {
      tags,
      summary: 'Advance the dev network by one epoch',
      response: { 200: EpochResultSchema, ...problems('chain_unavailable', 'store_unavailable') },
    },
    handler: () => dev.advanceEpoch(),
  });

  app.post('/dev/gas', {
    schema: {
      tags,
      summary: "Set the signer's SUI for gas (a faucet, or a drain to try the gas warning)",
      body: withExample(SetGasRequestSchema, { balance_mist: 10_000_000_000 }),
      response: { 200: SetGasResultSchema, ...problems('chain_unavailable', 'store_unavailable') },
    },
    handler: (request) => dev.setGas(request.body),
  });
};
