import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { nodeEarnings } from '../../operations/earnings.ts';
import { EarningsSchema } from '../../schemas/earnings.ts';
import {
  NodeIdParamsSchema,
  NodeSubscriptionSchema,
  StackAttestationDisputeSchema,
  StackSchema,
  StackSettlementTicketSchema,
  StacksQuerySchema,
  TaskSchema,
} from '../../schemas/model.ts';
import type { Store } from '../../store/store.ts';
import { problems } from '../openapi.ts';
import { type ResponseCache, sendCached } from '../response-cache.ts';

/** A read answers from the store; a store locked past its timeout is a 503 (bad parameters are added for all). */
const readProblems = problems('store_unavailable');

/**
 * The OpenAPI marks of a route served at `url`: none at its own path; at the path upstream's openapi.yml
 * gives it (a nesting mistake there, which its router never served), deprecated, pointing to ours.
 */
function upstreamAlias(url: string, canonical: string) {
  if (url.replace(/:(\w+)/g, '{$1}') === canonical) return {};
  return {
    deprecated: true,
    description:
      `Deprecated: the same as GET ${canonical}, at the path upstream's openapi.yml documents for it, so that ` +
      'clients generated from that file work. Use the other path.',
  };
}

/** The read API: every list comes from the store, sorted by its small id, wire-compatible with upstream. */
export const readRoutes: FastifyPluginAsyncTypebox<{ store: Store; cache: ResponseCache }> = async (
  app,
  { store, cache },
) => {
  const version = () => store.dataVersion();

  // Every route also answers with a trailing slash (/tasks/ as upstream's spec has it).
  app.get('/tasks', {
    schema: {
      tags: ['tasks'],
      summary: 'Every task the network has registered, deprecated and removed ones included',
      response: { 200: Type.Array(TaskSchema), ...readProblems },
    },
    handler: async (_request, reply) => sendCached(reply, cache, version, 'tasks', () => store.listTasks()),
  });

  app.get('/subscriptions/nodes/:node_id', {
    schema: {
      tags: ['subscriptions'],
      summary: "The node's task subscriptions, by task small id",
      params: NodeIdParamsSchema,
      response: { 200: Type.Array(NodeSubscriptionSchema), ...readProblems },
    },
    handler: async (request, reply) => {
      const node = request.params.node_id;
      return sendCached(reply, cache, version, `subscriptions:${node}`, () => store.listSubscriptions(node));
    },
  });

  // Each of these two is also served, deprecated, at the path upstream's openapi.yml gives it, with the
  // same schema and handler (so the same answers, from the same cache entries).
  for (const url of ['/stacks/nodes/:node_id', '/stacks/stacks/nodes/:node_id']) {
    app.get(url, {
      schema: {
        ...upstreamAlias(url, '/stacks/nodes/{node_id}'),
        tags: ['stacks'],
        summary: 'Stacks assigned to the node, optionally only those filled to at least a fraction',
        params: NodeIdParamsSchema,
        querystring: StacksQuerySchema,
        response: { 200: Type.Array(StackSchema), ...readProblems },
      },
      handler: async (request, reply) => {
        const node = request.params.node_id;
        const fraction = request.query.min_fill_fraction;
        return sendCached(reply, cache, version, `stacks:${node}:${fraction ?? ''}`, () =>
          store.listStacks(node, fraction),
        );
      },
    });
  }

  for (const url of ['/claimed-stacks/nodes/:node_id', '/claimed-stacks/claimed_stacks/nodes/:node_id']) {
    app.get(url, {
      schema: {
        ...upstreamAlias(url, '/claimed-stacks/nodes/{node_id}'),
        tags: ['stacks'],
        summary: 'Stacks the node has claimed, through settlement tickets or the confidential-compute path',
        params: NodeIdParamsSchema,
        response: { 200: Type.Array(StackSettlementTicketSchema), ...readProblems },
      },
      handler: async (request, reply) => {
        const node = request.params.node_id;
        return sendCached(reply, cache, version, `claimed:${node}`, () => store.listClaimedStacks(node));
      },
    });
  }

  app.get('/attestation_disputes/against/nodes/:node_id', {
    schema: {
      tags: ['disputes'],
      summary: "Disputes raised against the node's settlements (it is the original node)",
      params: NodeIdParamsSchema,
      response: { 200: Type.Array(StackAttestationDisputeSchema), ...readProblems },
    },
    handler: async (request, reply) => {
      const node = request.params.node_id;
      return sendCached(reply, cache, version, `against:${node}`, () => store.listDisputesAgainst(node));
    },
  });

  app.get('/attestation_disputes/own/nodes/:node_id', {
    schema: {
      tags: ['disputes'],
      summary: 'Disputes the node raised as an attester',
      params: NodeIdParamsSchema,
      response: { 200: Type.Array(StackAttestationDisputeSchema), ...readProblems },
    },
    handler: async (request, reply) => {
      const node = request.params.node_id;
      return sendCached(reply, cache, version, `own:${node}`, () => store.listDisputesOwn(node));
    },
  });

  app.get('/earnings/nodes/:node_id', {
    schema: {
      tags: ['earnings'],
      summary:
        'What the node earned and can claim: claimed, claimable, settling, disputed and unsettled fees, attester rewards, refunds, by epoch',
      params: NodeIdParamsSchema,
      response: { 200: EarningsSchema, ...readProblems },
    },
    handler: async (request, reply) => {
      const node = request.params.node_id;
      return sendCached(reply, cache, version, `earnings:${node}`, () => nodeEarnings(store, node));
    },
  });
};
