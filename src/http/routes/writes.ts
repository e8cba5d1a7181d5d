import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Static, TSchema } from 'typebox';
import type { Network } from '../../config.ts';
import { hash32Bytes } from '../../internal/formats.ts';
import type { Writes } from '../../operations/writes.ts';
import { ProblemError } from '../../problems/catalog.ts';
import { BadgesSchema, ProblemSchema } from '../../schemas/ops.ts';
import {
  ClaimFundsRequestSchema,
  ClaimResultSchema,
  ModelSubscribeRequestSchema,
  MultiTxResultSchema,
  RegisterRequestSchema,
  RegisterResultSchema,
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

const problems = {
  400: ProblemSchema,
  404: ProblemSchema,
  409: ProblemSchema,
  422: ProblemSchema,
  503: ProblemSchema,
};

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
  response: R;
  run: (writes: Writes, body: Static<B>) => Promise<Static<R>>;
}

export interface WriteRoutesOptions {
  network: Network;
  /** The write operations; absent on network none, where every write is a 503. */
  writes: Writes | undefined;
  store: Store;
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
        body: route.body,
        response: { 200: route.response, ...problems },
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
    response: RegisterResultSchema,
    run: (w, b) => w.register(b),
  });
  write({
    method: 'POST',
    url: '/nodes/model-subscribe',
    summary: 'Subscribe the node to a model in an echelon',
    body: ModelSubscribeRequestSchema,
    response: TxResultSchema,
    run: (w, b) => w.modelSubscribe(b),
  });
  write({
    method: 'POST',
    url: '/nodes/task-subscribe',
    summary: 'Subscribe the node to a task at a price',
    body: TaskSubscribeRequestSchema,
    response: TxResultSchema,
    run: (w, b) => w.taskSubscribe(b),
  });
  write({
    method: 'POST',
    url: '/nodes/task-update-subscription',
    summary: "Change the node's price for a task",
    body: TaskSubscribeRequestSchema,
    response: TxResultSchema,
    run: (w, b) => w.updateSubscription(b),
  });
  write({
    method: 'DELETE',
    url: '/nodes/task-unsubscribe',
    summary: 'Unsubscribe the node from a task (JSON body)',
    body: TaskUnsubscribeRequestSchema,
    response: TxResultSchema,
    run: (w, b) => w.unsubscribe(b),
  });
  write({
    method: 'POST',
    url: '/nodes/try-settle-stacks',
    summary: 'Try to settle stacks, one transaction per stack, claiming their recorded usage by default',
    body: TrySettleRequestSchema,
    response: MultiTxResultSchema,
    run: (w, b) => w.trySettle(b),
  });
  write({
    method: 'POST',
    url: '/nodes/submit-attestations',
    summary: 'Attest the listed stacks this node was asked to attest',
    body: SubmitAttestationsRequestSchema,
    response: MultiTxResultSchema,
    run: (w, b) => w.submitAttestations(b),
  });
  write({
    method: 'POST',
    url: '/nodes/claim-funds',
    summary: 'Claim the funds of settled stacks (and of confidential-compute stacks directly)',
    body: ClaimFundsRequestSchema,
    response: ClaimResultSchema,
    run: (w, b) => w.claimFunds(b),
  });

  app.post('/stacks/:stack_small_id/usage', {
    schema: {
      tags: ['stacks'],
      summary: "Report work the node's inference server served on a stack (off-chain; no transaction)",
      headers: IDEMPOTENCY_HEADER,
      params: UsageParamsSchema,
      body: UsageRequestSchema,
      response: { 200: UsageResultSchema, ...problems },
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
      response: { 200: BadgesSchema, 503: ProblemSchema },
    },
    preValidation: noNetwork,
    handler: async () => {
      const ops = operations();
      return { signer_address: ops.signerAddress, badges: await ops.badges(true) };
    },
  });
};
