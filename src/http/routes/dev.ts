import { Type } from 'typebox';
import type { App } from '../../app.ts';
import { stringifyJson } from '../../internal/json.ts';
import type { DevActors } from '../../operations/dev-actors.ts';
import { MAX_SAFE, ProblemSchema } from '../schemas.ts';

const SmallId = (description: string) => Type.Integer({ minimum: 0, maximum: MAX_SAFE, description });
const U64In = (description: string) =>
  Type.Unsafe<number | bigint>({ u64: true, description: `${description} (u64)` });
const Strict = { additionalProperties: false } as const;
const problems = { 400: ProblemSchema, 404: ProblemSchema, 409: ProblemSchema, 422: ProblemSchema };

const TaskParams = Type.Object({ task_small_id: SmallId('Task small id') }, Strict);
const StackParams = Type.Object({ stack_small_id: SmallId('Stack small id') }, Strict);

/**
 * The other actors of the embedded dev network, for local use and tests: an admin creating tasks, peer
 * nodes, users buying stacks, epochs. Registered only on the dev network (404 elsewhere).
 */
export function devRoutes(app: App, dev: DevActors): void {
  const json = (body: unknown) => stringifyJson(body) as never;
  const tags = ['dev network'];

  app.post('/dev/tasks', {
    schema: {
      tags,
      summary: 'The admin creates a task',
      body: Type.Object(
        {
          role: Type.Integer({ minimum: 0, maximum: 65535, description: '0..7 are valid roles' }),
          model_name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
          security_level: Type.Integer({ minimum: 0, maximum: 65535, description: '0, 1 or 2 are valid' }),
          minimum_reputation_score: Type.Optional(
            Type.Union([Type.Integer({ minimum: 0, maximum: 255 }), Type.Null()]),
          ),
          is_public: Type.Optional(Type.Boolean()),
        },
        Strict,
      ),
      response: problems,
    },
    handler: async (request, reply) =>
      reply.type('application/json').send(json(await dev.createTask(request.body))),
  });

  app.post('/dev/tasks/:task_small_id/deprecate', {
    schema: {
      tags,
      summary: 'The task badge holder deprecates a task',
      params: TaskParams,
      response: problems,
    },
    handler: async (request, reply) =>
      reply.type('application/json').send(json(await dev.deprecateTask(request.params.task_small_id))),
  });

  app.post('/dev/tasks/:task_small_id/remove', {
    schema: {
      tags,
      summary: 'The task badge holder removes a deprecated task',
      params: TaskParams,
      response: problems,
    },
    handler: async (request, reply) =>
      reply.type('application/json').send(json(await dev.removeTask(request.params.task_small_id))),
  });

  app.post('/dev/nodes', {
    schema: {
      tags,
      summary: 'A simulated peer node registers and subscribes to tasks',
      body: Type.Object(
        {
          subscriptions: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  task_small_id: SmallId('Task small id'),
                  price_per_one_million_compute_units: U64In('Asking price'),
                },
                Strict,
              ),
            ),
          ),
        },
        Strict,
      ),
      response: problems,
    },
    handler: async (request, reply) =>
      reply.type('application/json').send(json(await dev.createPeerNode(request.body))),
  });

  app.post('/dev/stacks', {
    schema: {
      tags,
      summary: 'A user buys a stack; selected_node_id forces the sampled node',
      body: Type.Object(
        {
          task_small_id: SmallId('Task small id'),
          num_compute_units: U64In('Compute units'),
          price_per_one_million_compute_units: U64In("The buyer's price cap"),
          selected_node_id: Type.Optional(SmallId('Force this node (it must be eligible)')),
        },
        Strict,
      ),
      response: problems,
    },
    handler: async (request, reply) =>
      reply.type('application/json').send(json(await dev.buyStack(request.body))),
  });

  app.post('/dev/stacks/:stack_small_id/try-settle', {
    schema: {
      tags,
      summary: "The stack's peer node try-settles it",
      params: StackParams,
      body: Type.Optional(
        Type.Object(
          { num_claimed_compute_units: Type.Optional(U64In('Claimed units; default: all')) },
          Strict,
        ),
      ),
      response: problems,
    },
    handler: async (request, reply) =>
      reply
        .type('application/json')
        .send(json(await dev.peerTrySettle(request.params.stack_small_id, request.body ?? {}))),
  });

  app.post('/dev/stacks/:stack_small_id/attest', {
    schema: {
      tags,
      summary: 'A peer node asked to attest the stack attests it, honestly',
      params: StackParams,
      body: Type.Object({ node_small_id: SmallId('The attesting peer node') }, Strict),
      response: problems,
    },
    handler: async (request, reply) =>
      reply
        .type('application/json')
        .send(json(await dev.peerAttest(request.params.stack_small_id, request.body.node_small_id))),
  });

  app.post('/dev/disputes', {
    schema: {
      tags,
      summary: "A peer node disputes a stack's settlement",
      body: Type.Object(
        { stack_small_id: SmallId('Stack small id'), node_small_id: SmallId('The disputing node') },
        Strict,
      ),
      response: problems,
    },
    handler: async (request, reply) =>
      reply
        .type('application/json')
        .send(json(await dev.peerDispute(request.body.stack_small_id, request.body.node_small_id))),
  });

  app.post('/dev/epoch', {
    schema: { tags, summary: 'Advance the dev network by one epoch', response: problems },
    handler: async (_request, reply) => reply.type('application/json').send(json(await dev.advanceEpoch())),
  });
}
