import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Static, TSchema } from 'typebox';
import type { Network } from '../../config.ts';
import { hash32Bytes } from '../../internal/formats.ts';
import type { U64 } from '../../internal/u64.ts';
import type { Writes } from '../../operations/writes.ts';
import { type ErrorCode, ProblemError } from '../../problems/catalog.ts';
import { BadgesSchema } from '../../schemas/ops.ts';
import {
  ClaimFundsRequestSchema,
  ClaimResultSchema,
  ModelSubscribeRequestSchema,
  MultiTxResultSchema,
  RegisterRequestSchema,
  RegisterResultSchema,
  SettleEstimateSchema,
  SubmitAttestationsRequestSchema,
  TaskSubscribeRequestSchema,
  TaskUnsubscribeRequestSchema,
  TrySettleRequestSchema,
  TxResultSchema,
  UsageParamsSchema,
  UsageRequestSchema,
  UsageResultSchema,
} from '../../schemas/writes.ts';
import type { Store } from '../../store/store.ts';
import { respond } from '../idempotency.ts';
import { problems, withExample, withParameterExamples } from '../openapi.ts';

/**
 * What every write can answer besides its own refusals: the Idempotency-Key's problems, and the chain's
 * (a refused gas setting, an abort, an unreachable chain, an outcome never known), or no chain at all.
 */
const WRITE_PROBLEMS = [
  'invalid_idempotency_key',
  'gas_rejected',
  'idempotency_key_reused',
  'idempotency_key_in_flight',
  'transaction_failed',
  'no_network',
  'chain_unavailable',
  'store_unavailable',
  'chain_outcome_unknown',
] as const satisfies ErrorCode[];

const IDEMPOTENCY_HEADER = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      description:
        'Optional. The same key and body within 24 hours answer the first result without a second submission.',
    },
  },
} as const;

/** One write: its body and response schemas, and the one call into the operations it makes. */
interface WriteRoute<B extends TSchema, R extends TSchema> {
  method: 'POST' | 'DELETE';
  url: string;
  summary: string;
  body: B;
  /** A body that works as it stands on a fresh dev network with its demo world, in the order below. */
  example: Static<B>;
  response: R;
  /** The refusals of this write, besides WRITE_PROBLEMS. */
  problems: ErrorCode[];
  run: (writes: Writes, body: Static<B>) => Promise<Static<R>>;
}

export interface WriteRoutesOptions {
  network: Network;
  /** The write operations; absent on network none, where every write is a 503. */
  writes: Writes | undefined;
  store: Store;
  /** The operator's nodes as configured (config.nodeSmallIds), told beside the badges. */
  nodeSmallIds: readonly U64[];
}

/**
 * The write API: every route declares its body, makes one call into the operations, and answers through
 * the Idempotency-Key handling and the route's serializer.
 */
export const writeRoutes: FastifyPluginAsyncTypebox<WriteRoutesOptions> = async (app, options) => {
  const { writes, store } = options;
  /** A daemon that serves reads only answers every write with 503, before looking at the request. */
  const noNetwork = async () => {
    if (writes === undefined) {
      throw new ProblemError(
        'no_network',
        `this daemon runs with network "${options.network}" and serves reads only; restart it with --network dev (or a chain network) to sign transactions`,
      );
    }
  };
  const operations = (): Writes => writes!;
  const write = <B extends TSchema, R extends TSchema>(route: WriteRoute<B, R>) => {
    (app as FastifyInstance).route<{ Body: Static<B> }>({
      method: route.method,
      url: route.url,
      schema: {
        tags: ['writes'],
        summary: route.summary,
        headers: IDEMPOTENCY_HEADER,
        body: withExample(route.body, route.example),
        response: { 200: route.response, ...problems(...WRITE_PROBLEMS, ...route.problems) },
      },
      preValidation: noNetwork,
      handler: (request, reply) => {
        const ops = operations();
        // Fastify types a generic body as `unknown | B`; the schema has validated it as B.
        return respond(request, reply, store, () => route.run(ops, request.body as Static<B>));
      },
    });
  };

  write({
    method: 'POST',
    url: '/nodes/register',
    summary: 'Register a new node: mints a NodeBadge to the signer',
    body: RegisterRequestSchema,
    // The daemon chooses the gas: a made-up coin or budget would be refused.
    example: {},
    response: RegisterResultSchema,
    problems: [],
    run: (w, b) => w.register(b),
  });
  write({
    method: 'POST',
    url: '/nodes/model-subscribe',
    summary: 'Subscribe the node to a model in an echelon',
    body: ModelSubscribeRequestSchema,
    example: { model_name: 'meta-llama/Llama-3.3-70B-Instruct', echelon_id: 1 },
    response: TxResultSchema,
    problems: ['badge_not_found', 'no_badge'],
    run: (w, b) => w.modelSubscribe(b),
  });
  write({
    method: 'POST',
    url: '/nodes/task-subscribe',
    summary: 'Subscribe the node to a task at a price',
    body: TaskSubscribeRequestSchema,
    example: { task_small_id: 1, price_per_one_million_compute_units: 1_000_000 },
    response: TxResultSchema,
    problems: [
      'badge_not_found',
      'task_not_found',
      'no_badge',
      'task_inactive',
      'requirements_not_met',
      'already_subscribed',
    ],
    run: (w, b) => w.taskSubscribe(b),
  });
  write({
    method: 'POST',
    url: '/nodes/task-update-subscription',
    summary: "Change the node's price for a task",
    body: TaskSubscribeRequestSchema,
    example: { task_small_id: 1, price_per_one_million_compute_units: 1_200_000 },
    response: TxResultSchema,
    problems: ['badge_not_found', 'task_not_found', 'no_badge', 'task_inactive', 'not_subscribed'],
    run: (w, b) => w.updateSubscription(b),
  });
  write({
    method: 'DELETE',
    url: '/nodes/task-unsubscribe',
    summary: 'Unsubscribe the node from a task (JSON body)',
    body: TaskUnsubscribeRequestSchema,
    example: { task_small_id: 1 },
    response: TxResultSchema,
    problems: ['badge_not_found', 'task_not_found', 'no_badge', 'task_inactive', 'not_subscribed'],
    run: (w, b) => w.unsubscribe(b),
  });
  write({
    method: 'POST',
    url: '/nodes/try-settle-stacks',
    summary: 'Try to settle stacks, one transaction per stack, claiming their recorded usage by default',
    body: TrySettleRequestSchema,
    example: { stack_small_ids: [10] },
    response: MultiTxResultSchema,
    problems: [
      'badge_not_found',
      'stack_not_found',
      'no_badge',
      'stack_not_ours',
      'already_settled',
      'no_usage',
      'nothing_to_settle',
    ],
    run: (w, b) => w.trySettle(b),
  });
  write({
    method: 'POST',
    url: '/nodes/submit-attestations',
    summary: 'Attest the listed stacks this node was asked to attest',
    body: SubmitAttestationsRequestSchema,
    example: { stack_small_ids: [3] },
    response: MultiTxResultSchema,
    problems: ['badge_not_found', 'no_badge', 'nothing_to_attest'],
    run: (w, b) => w.submitAttestations(b),
  });
  write({
    method: 'POST',
    url: '/nodes/claim-funds',
    summary: 'Claim the funds of settled stacks (and of confidential-compute stacks directly)',
    body: ClaimFundsRequestSchema,
    example: { stack_small_ids: [10] },
    response: ClaimResultSchema,
    problems: [
      'badge_not_found',
      'stack_not_found',
      'no_badge',
      'stack_not_ours',
      'no_usage',
      'nothing_to_claim',
    ],
    run: (w, b) => w.claimFunds(b),
  });

  // Signs and sends nothing: no Idempotency-Key; a POST (the same body as the write), so it needs the token
  // as writes do, and a client asks it just before the write it estimates.
  app.post('/nodes/try-settle-stacks/estimate', {
    schema: {
      tags: ['writes'],
      summary: 'What settling stacks would claim, pay and cost in gas, simulated: nothing is signed or sent',
      body: withExample(TrySettleRequestSchema, { stack_small_ids: [10] }),
      response: {
        200: SettleEstimateSchema,
        ...problems('badge_not_found', 'no_badge', 'no_network', 'chain_unavailable', 'store_unavailable'),
      },
    },
    preValidation: noNetwork,
    handler: (request) => operations().estimateSettle(request.body),
  });

  app.post('/stacks/:stack_small_id/usage', {
    schema: {
      tags: ['stacks'],
      summary: "Report work the node's inference server served on a stack (off-chain; no transaction)",
      headers: IDEMPOTENCY_HEADER,
      params: withParameterExamples(UsageParamsSchema, { stack_small_id: 10 }),
      body: withExample(UsageRequestSchema, { compute_units: 500 }),
      response: {
        200: UsageResultSchema,
        ...problems(
          'invalid_idempotency_key',
          'stack_not_found',
          'stack_not_ours',
          'over_capacity',
          'idempotency_key_reused',
          'idempotency_key_in_flight',
          'no_network',
          'chain_unavailable',
          'store_unavailable',
        ),
      },
    },
    preValidation: noNetwork,
    handler: (request, reply) => {
      const ops = operations();
      const { compute_units, request_hash } = request.body;
      const hash = request_hash === undefined ? undefined : hash32Bytes(request_hash);
      return respond(request, reply, store, () =>
        ops.recordUsage(request.params.stack_small_id, compute_units, hash),
      );
    },
  });

  app.get('/nodes/badges', {
    schema: {
      tags: ['writes'],
      summary: "The NodeBadges the daemon's signer owns, with their small ids",
      response: { 200: BadgesSchema, ...problems('no_network', 'chain_unavailable') },
    },
    preValidation: noNetwork,
    handler: async () => {
      const ops = operations();
      return {
        signer_address: ops.signerAddress,
        badges: await ops.badges(true),
        node_small_ids: [...options.nodeSmallIds],
      };
    },
  });
};
