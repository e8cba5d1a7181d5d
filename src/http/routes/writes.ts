import type { TSchema } from 'typebox';
import type { App } from '../../app.ts';
import type { Network } from '../../config.ts';
import { ProblemError } from '../errors.ts';
import {
  ClaimFundsRequestSchema,
  ModelSubscribeRequestSchema,
  ProblemSchema,
  RegisterRequestSchema,
  SubmitAttestationsRequestSchema,
  TaskSubscribeRequestSchema,
  TaskUnsubscribeRequestSchema,
  TrySettleRequestSchema,
  TxDigestSchema,
  TxDigestsSchema,
} from '../schemas.ts';

interface WriteRoute {
  method: 'POST' | 'DELETE';
  url: string;
  summary: string;
  body: TSchema;
  response: TSchema;
}

const WRITES: WriteRoute[] = [
  {
    method: 'POST',
    url: '/nodes/register',
    summary: 'Register a new node (mints a NodeBadge to the signer)',
    body: RegisterRequestSchema,
    response: TxDigestSchema,
  },
  {
    method: 'POST',
    url: '/nodes/model-subscribe',
    summary: 'Subscribe the node to a model in an echelon',
    body: ModelSubscribeRequestSchema,
    response: TxDigestSchema,
  },
  {
    method: 'POST',
    url: '/nodes/task-subscribe',
    summary: 'Subscribe the node to a task at a price',
    body: TaskSubscribeRequestSchema,
    response: TxDigestSchema,
  },
  {
    method: 'POST',
    url: '/nodes/task-update-subscription',
    summary: "Change the node's price for a task",
    body: TaskSubscribeRequestSchema,
    response: TxDigestSchema,
  },
  {
    method: 'DELETE',
    url: '/nodes/task-unsubscribe',
    summary: 'Unsubscribe the node from a task (JSON body)',
    body: TaskUnsubscribeRequestSchema,
    response: TxDigestSchema,
  },
  {
    method: 'POST',
    url: '/nodes/try-settle-stacks',
    summary: 'Try to settle stacks: one transaction per stack',
    body: TrySettleRequestSchema,
    response: TxDigestsSchema,
  },
  {
    method: 'POST',
    url: '/nodes/submit-attestations',
    summary: 'Attest stacks this node was asked to attest',
    body: SubmitAttestationsRequestSchema,
    response: TxDigestsSchema,
  },
  {
    method: 'POST',
    url: '/nodes/claim-funds',
    summary: 'Claim the funds of settled stacks',
    body: ClaimFundsRequestSchema,
    response: TxDigestSchema,
  },
];

/**
 * The write API. Each write signs a chain transaction; with network `none` there is nothing to sign with,
 * so every write answers 503 before its body is even looked at.
 */
export function writeRoutes(app: App, { network }: { network: Network }): void {
  for (const route of WRITES) {
    app.route({
      method: route.method,
      url: route.url,
      schema: {
        tags: ['writes'],
        summary: route.summary,
        body: route.body,
        response: { 200: route.response, 400: ProblemSchema, 503: ProblemSchema },
      },
      preValidation: async () => {
        if (network === 'none') {
          throw new ProblemError(
            'no_network',
            'this daemon runs with network "none" and serves reads only; restart it with --network set to a chain network to sign transactions',
          );
        }
      },
      handler: async () => {
        throw new ProblemError('no_network', `writes are not available on network "${network}"`);
      },
    });
  }
}
