import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { U64 } from '../../internal/u64.ts';
import { nodeEarnings } from '../../operations/earnings.ts';
import { refuse } from '../../problems/catalog.ts';
import { EarningsSchema } from '../../schemas/earnings.ts';
import {
  NodeIdParamsSchema,
  NodeSchema,
  NodeSubscriptionSchema,
  PageQuerySchema,
  type StackAttestationDispute,
  StackAttestationDisputeSchema,
  StackSchema,
  StackSettlementTicketSchema,
  StacksQuerySchema,
  TaskSchema,
} from '../../schemas/model.ts';
import { type Page, type Store, topics } from '../../store/store.ts';
import { conditionalRead, problems } from '../openapi.ts';
import type { ReadTurns } from '../read-turns.ts';
import { type ResponseCache, sendCached } from '../response-cache.ts';
import { serialized } from '../serialized.ts';

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

/** The paging a list request asks for: none, or the rows after `after`, at most `limit`. */
interface PageQuery {
  limit?: number;
  after?: U64;
}

/** The rows of a list a request answers, and whether more remain after them (the Link to the next page). */
interface Paged<Row> {
  rows: Row[];
  more: boolean;
}

/** The store's page for a request: one row past the limit, so that the answer can tell whether more remain. */
const probe = (query: PageQuery): Page =>
  query.limit === undefined ? query : { ...query, limit: query.limit + 1 };

/** A request's page of a store list: without a limit, every row; with one, `limit` rows. */
async function pageOf<Row>(query: PageQuery, list: (page: Page) => Promise<Row[]>): Promise<Paged<Row>> {
  const rows = await list(probe(query));
  if (query.limit === undefined || rows.length <= query.limit) return { rows, more: false };
  return { rows: rows.slice(0, query.limit), more: true };
}

/** A list a route answers: its cache key and topics, the request's page of it, and a row's id for the Link. */
interface List<Row> {
  key: string;
  depends: readonly string[];
  load: (query: PageQuery) => Promise<Paged<Row>>;
  id: (row: Row) => U64;
}

/** The part of the cache key a page adds. */
const pageKey = (query: PageQuery) => `${query.after ?? ''}:${query.limit ?? ''}`;

/**
 * Disputes against a node come by stack, then attester: a page ends with a whole stack, so that the next
 * one, after that stack, misses none of its disputes. A single stack with more disputes than the limit
 * comes whole in its page.
 */
async function disputesPage(
  store: Store,
  node: U64,
  query: PageQuery,
): Promise<Paged<StackAttestationDispute>> {
  const rows = await store.listDisputesAgainst(node, probe(query));
  if (query.limit === undefined || rows.length <= query.limit) return { rows, more: false };
  const page = rows.slice(0, query.limit);
  const split = rows[query.limit]!.stack_small_id;
  if (page.at(-1)!.stack_small_id !== split) return { rows: page, more: true };
  const whole = page.filter((d) => d.stack_small_id !== split);
  if (whole.length > 0) return { rows: whole, more: true };
  // One stack fills the page: all of its disputes, however many.
  const from = query.after === undefined ? {} : { after: query.after };
  const stack = (await store.listDisputesAgainst(node, from)).filter((d) => d.stack_small_id === split);
  const after = await store.listDisputesAgainst(node, { after: split, limit: 1 });
  return { rows: stack, more: after.length > 0 };
}

/** The read API: every list comes from the store, sorted by its small id, wire-compatible with upstream. */
export const readRoutes: FastifyPluginAsyncTypebox<{
  store: Store;
  cache: ResponseCache;
  turns?: ReadTurns | undefined;
}> = async (app, { store, cache, turns }) => {
  const deps = { store, cache, turns };

  /**
   * A list's answer: the request's page, serialized, cached under the list's key and the page until one
   * of its topics moves; when more rows remain, the last one's id for the Link.
   */
  const sendList = <Row>(request: FastifyRequest, reply: FastifyReply, query: PageQuery, list: List<Row>) =>
    sendCached(request, reply, deps, `${list.key}:${pageKey(query)}`, list.depends, async () => {
      const { rows, more } = await list.load(query);
      const body = serialized(reply, rows);
      return more ? { body, next: list.id(rows.at(-1)!) } : { body };
    });

  /**
   * A paged list of a node's rows (`item` each), cached under `name` and the node until its `topic` moves.
   * Served at each of `urls`: the first is its own path; any other is the path upstream's openapi.yml
   * gives it, deprecated, with the same schema and handler (so the same answers, from the same cache
   * entries).
   */
  const nodeList = <Row>(list: {
    urls: readonly [string, ...string[]];
    tags: string[];
    summary: string;
    item: TSchema;
    name: string;
    topic: (node: U64) => string;
    load: (node: U64, query: PageQuery) => Promise<Paged<Row>>;
    id: (row: Row) => U64;
  }) => {
    const canonical = list.urls[0].replace(/:(\w+)/g, '{$1}');
    for (const url of list.urls) {
      app.get(url, {
        schema: {
          ...upstreamAlias(url, canonical),
          ...conditionalRead,
          tags: list.tags,
          summary: list.summary,
          params: NodeIdParamsSchema,
          querystring: PageQuerySchema,
          response: { 200: Type.Array(list.item), ...readProblems },
        },
        handler: (request, reply) => {
          const node = request.params.node_id;
          return sendList(request, reply, request.query, {
            key: `${list.name}:${node}`,
            depends: [list.topic(node)],
            load: (query) => list.load(node, query),
            id: list.id,
          });
        },
      });
    }
  };

  // Every route also answers with a trailing slash (/tasks/ as upstream's spec has it).
  app.get('/tasks', {
    schema: {
      ...conditionalRead,
      tags: ['tasks'],
      summary: 'Every task the network has registered, deprecated and removed ones included',
      querystring: PageQuerySchema,
      response: { 200: Type.Array(TaskSchema), ...readProblems },
    },
    handler: (request, reply) =>
      sendList(request, reply, request.query, {
        key: 'tasks',
        depends: [topics.tasks],
        load: (query) => pageOf(query, (page) => store.listTasks(page)),
        id: (t) => t.task_small_id,
      }),
  });

  // Addition: whether a node exists, which the lists below cannot say (they answer [] for any id). Not
  // /nodes/{node_id}: GET /nodes/register and the other writes' paths would answer 400 instead of 405.
  app.get('/network/nodes/:node_id', {
    schema: {
      tags: ['nodes'],
      summary: 'A node of the network, by its small id: its NodeBadge and the address that registered it',
      params: NodeIdParamsSchema,
      response: { 200: NodeSchema, ...problems('node_not_found', 'store_unavailable') },
    },
    handler: async (request) => {
      const id = request.params.node_id;
      const node = await store.getNode(id);
      if (node === undefined) {
        throw refuse('node_not_found', `no node ${id} is known to this daemon`, { parameter: 'node_id' });
      }
      return node;
    },
  });

  nodeList({
    urls: ['/subscriptions/nodes/:node_id'],
    tags: ['subscriptions'],
    summary: "The node's task subscriptions, by task small id",
    item: NodeSubscriptionSchema,
    name: 'subscriptions',
    topic: topics.subscriptions,
    load: (node, query) => pageOf(query, (page) => store.listSubscriptions(node, page)),
    id: (s) => s.task_small_id,
  });

  // Also served, deprecated, at the path upstream's openapi.yml gives it, with the same schema and
  // handler (so the same answers, from the same cache entries).
  for (const url of ['/stacks/nodes/:node_id', '/stacks/stacks/nodes/:node_id']) {
    app.get(url, {
      schema: {
        ...upstreamAlias(url, '/stacks/nodes/{node_id}'),
        ...conditionalRead,
        tags: ['stacks'],
        summary: 'Stacks assigned to the node, optionally only those filled to at least a fraction',
        params: NodeIdParamsSchema,
        querystring: StacksQuerySchema,
        response: { 200: Type.Array(StackSchema), ...readProblems },
      },
      handler: async (request, reply) => {
        const node = request.params.node_id;
        const { min_fill_fraction: fraction, ...query } = request.query;
        const key = `stacks:${node}:${fraction ?? ''}:${pageKey(query)}`;
        // The store writes the list's JSON itself, reading only the columns that change once it has
        // listed a stack (KeptStacks): no object per stack, no serializer pass.
        return sendCached(request, reply, deps, key, [topics.stacks(node)], async ([version]) => {
          const rows = await store.listStacksJson(node, fraction, query, version);
          return rows.more && rows.last !== null ? { body: rows.body, next: rows.last } : { body: rows.body };
        });
      },
    });
  }

  nodeList({
    urls: ['/claimed-stacks/nodes/:node_id', '/claimed-stacks/claimed_stacks/nodes/:node_id'],
    tags: ['stacks'],
    summary: 'Stacks the node has claimed, through settlement tickets or the confidential-compute path',
    item: StackSettlementTicketSchema,
    name: 'claimed',
    topic: topics.tickets,
    load: (node, query) => pageOf(query, (page) => store.listClaimedStacks(node, page)),
    id: (t) => t.stack_small_id,
  });

  nodeList({
    urls: ['/attestation_disputes/against/nodes/:node_id'],
    tags: ['disputes'],
    summary: "Disputes raised against the node's settlements (it is the original node)",
    item: StackAttestationDisputeSchema,
    name: 'against',
    topic: topics.disputes,
    load: (node, query) => disputesPage(store, node, query),
    id: (d) => d.stack_small_id,
  });

  nodeList({
    urls: ['/attestation_disputes/own/nodes/:node_id'],
    tags: ['disputes'],
    summary: 'Disputes the node raised as an attester',
    item: StackAttestationDisputeSchema,
    name: 'own',
    topic: topics.disputes,
    load: (node, query) => pageOf(query, (page) => store.listDisputesOwn(node, page)),
    id: (d) => d.stack_small_id,
  });

  app.get('/earnings/nodes/:node_id', {
    schema: {
      ...conditionalRead,
      tags: ['earnings'],
      summary:
        'What the node earned and can claim: claimed, claimable, settling, disputed and unsettled fees, attester rewards, refunds, by epoch',
      params: NodeIdParamsSchema,
      response: { 200: EarningsSchema, ...readProblems },
    },
    handler: async (request, reply) => {
      const node = request.params.node_id;
      const depends = [topics.stacks(node), topics.tickets(node), topics.rewards(node), topics.chain];
      return sendCached(request, reply, deps, `earnings:${node}`, depends, async () => ({
        body: serialized(reply, await nodeEarnings(store, node)),
      }));
    },
  });
};
