import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { App } from '../../app.ts';
import type { Network } from '../../config.ts';
import { stringifyJson } from '../../internal/json.ts';
import type { Writes } from '../../operations/writes.ts';
import { ProblemError } from '../../problems/catalog.ts';
import type { Store } from '../../store/store.ts';
import { respond } from '../idempotency.ts';
import {
  BadgesSchema,
  ClaimFundsRequestSchema,
  ClaimResultSchema,
  ModelSubscribeRequestSchema,
  MultiTxResultSchema,
  ProblemSchema,
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
} from '../schemas.ts';

// biome-ignore lint/suspicious/noExplicitAny: each route's body type comes from its own schema.
type Body = any;

interface WriteRoute {
  method: 'POST' | 'DELETE';
  url: string;
  summary: string;
  body: TSchema;
  response: TSchema;
  run: (writes: Writes, body: Body) => Promise<unknown>;
}

const WRITES: WriteRoute[] = [
  {
    method: 'POST',
    url: '/nodes/register',
    summary: 'Register a new node: mints a NodeBadge to the signer',
    body: RegisterRequestSchema,
    response: RegisterResultSchema,
    run: (w, b) => w.register(b),
  },
  {
    method: 'POST',
    url: '/nodes/model-subscribe',
    summary: 'Subscribe the node to a model in an echelon',
    body: ModelSubscribeRequestSchema,
    response: TxResultSchema,
    run: (w, b) => w.modelSubscribe(b),
  },
  {
    method: 'POST',
    url: '/nodes/task-subscribe',
    summary: 'Subscribe the node to a task at a price',
    body: TaskSubscribeRequestSchema,
    response: TxResultSchema,
    run: (w, b) => w.taskSubscribe(b),
  },
  {
    method: 'POST',
    url: '/nodes/task-update-subscription',
    summary: "Change the node's price for a task",
    body: TaskSubscribeRequestSchema,
    response: TxResultSchema,
    run: (w, b) => w.updateSubscription(b),
  },
  {
    method: 'DELETE',
    url: '/nodes/task-unsubscribe',
    summary: 'Unsubscribe the node from a task (JSON body)',
    body: TaskUnsubscribeRequestSchema,
    response: TxResultSchema,
    run: (w, b) => w.unsubscribe(b),
  },
  {
    method: 'POST',
    url: '/nodes/try-settle-stacks',
    summary: 'Try to settle stacks, one transaction per stack, claiming their recorded usage by default',
    body: TrySettleRequestSchema,
    response: MultiTxResultSchema,
    run: (w, b) => w.trySettle(b),
  },
  {
    method: 'POST',
    url: '/nodes/submit-attestations',
    summary: 'Attest the listed stacks this node was asked to attest',
    body: SubmitAttestationsRequestSchema,
    response: MultiTxResultSchema,
    run: (w, b) => w.submitAttestations(b),
  },
  {
    method: 'POST',
    url: '/nodes/claim-funds',
    summary: 'Claim the funds of settled stacks (and of confidential-compute stacks directly)',
    body: ClaimFundsRequestSchema,
    response: ClaimResultSchema,
    run: (w, b) => w.claimFunds(b),
  },
];

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

/**
 * The write API: every route declares its body, makes one call into the operations, and answers through
 * the Idempotency-Key handling. With network `none` there is nothing to sign with: every write is a 503.
 */
export function writeRoutes(
  app: App,
  deps: { network: Network; writes: Writes | undefined; store: Store },
): void {
  const { writes, store } = deps;
  const noNetwork = async () => {
    if (writes === undefined) {
      throw new ProblemError(
        'no_network',
        `this daemon runs with network "${deps.network}" and serves reads only; restart it with --network dev (or a chain network) to sign transactions`,
      );
    }
  };
  for (const route of WRITES) {
    app.route({
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
      handler: (request, reply) => respond(request, reply, store, () => route.run(writes!, request.body)),
    });
  }

  app.post('/stacks/:stack_small_id/usage', {
    schema: {
      tags: ['stacks'],
      summary: "Report work the node's inference server served on a stack (off-chain; no transaction)",
      params: UsageParamsSchema,
      body: UsageRequestSchema,
      response: { 200: UsageResultSchema, ...problems },
    },
    preValidation: noNetwork,
    handler: (
      request: FastifyRequest<{
        Params: { stack_small_id: number };
        Body: { compute_units: number | bigint; request_hash?: string };
      }>,
      reply,
    ) =>
      respond(request, reply, store, () => {
        const { compute_units, request_hash } = request.body;
        const hash =
          request_hash === undefined
            ? undefined
            : Uint8Array.from(Buffer.from(request_hash.replace(/^0x/, ''), 'hex'));
        return writes!.recordUsage(request.params.stack_small_id, compute_units, hash);
      }),
  });

  app.get('/nodes/badges', {
    schema: {
      tags: ['writes'],
      summary: "The NodeBadges the daemon's signer owns, with their small ids",
      response: { 200: BadgesSchema, 503: ProblemSchema },
    },
    preValidation: noNetwork,
    handler: async (_request, reply) => {
      const badges = await writes!.badges(true);
      const body = stringifyJson({ signer_address: writes!.signerAddress, badges });
      reply.type('application/json; charset=utf-8').send(body as never);
    },
  });
}
