import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Chain } from '../../chain/chain.ts';
import type { LiveIndexer } from '../../indexer/run.ts';
import type { Metrics } from '../../internal/metrics.ts';
import type { U64 } from '../../internal/u64.ts';
import { VERSION } from '../../internal/version.ts';
import type { Autopilot } from '../../operations/autopilot.ts';
import { indexerReadiness } from '../../operations/readiness.ts';
import type { Writes } from '../../operations/writes.ts';
import { ProblemError } from '../../problems/catalog.ts';
import { ReadySchema, type Status, StatusSchema } from '../../schemas/ops.ts';
import type { Store } from '../../store/store.ts';
import type { UsageMirror, UsageSourceStatus } from '../../usage/mirror.ts';
import { problems } from '../openapi.ts';

export interface OpsDeps {
  network: string;
  store: Store;
  metrics: Metrics;
  indexer: LiveIndexer | undefined;
  chain: Chain | undefined;
  writes: Writes | undefined;
  /** /ready says 503 while the indexer lags the chain head by more than this many seconds. */
  readyMaxLag: number;
  /** The operator's nodes as configured (config.nodeSmallIds). */
  nodeSmallIds: readonly U64[];
  startedAt: number;
  autopilot: Autopilot | undefined;
  /** The usage source (--usage-source), when one is configured. */
  usageSource?: Pick<UsageMirror, 'status'> | undefined;
  /** Brings the gauges computed from the store (earnings, stacks by state) up to date for a scrape. */
  beforeScrape: (() => Promise<void>) | undefined;
}

/** The usage source as /status shows it: its times as ISO text. */
function usageSource(status: UsageSourceStatus | undefined): Status['usage_source'] {
  if (status === undefined) return null;
  const { last_poll_at, ...rest } = status;
  return { ...rest, last_poll_at: last_poll_at === null ? null : new Date(last_poll_at).toISOString() };
}

/** Readiness, status and metrics: what an operator (or a supervisor) asks of a daemon that runs for months. */
export const opsRoutes: FastifyPluginAsyncTypebox<OpsDeps> = async (app, deps) => {
  const { store, indexer, metrics } = deps;

  /** What /ready answers (and node_daemon_ready says): the store answers, and the indexer is near the head. */
  const ready = async (): Promise<
    { ready: true; lag_seconds: number | null } | { ready: false; detail: string; retryAfterSeconds: number }
  > => {
    try {
      await store.dataVersion();
    } catch (error) {
      return {
        ready: false,
        detail: `the store does not answer: ${(error as Error).message}`,
        retryAfterSeconds: 5,
      };
    }
    return indexerReadiness(indexer, deps.chain, deps.readyMaxLag);
  };

  app.get('/ready', {
    schema: {
      tags: ['meta'],
      summary:
        'Ready when the store answers and the indexer is within --ready-max-lag seconds of the chain head',
      response: { 200: ReadySchema, ...problems('not_ready') },
    },
    handler: async () => {
      const readiness = await ready();
      if (!readiness.ready) {
        throw new ProblemError('not_ready', readiness.detail, {
          retryAfterSeconds: readiness.retryAfterSeconds,
        });
      }
      return { status: 'ready' as const, indexer_lag_seconds: readiness.lag_seconds };
    },
  });

  app.get('/status', {
    schema: {
      tags: ['meta'],
      summary: 'Version, network, signer, badges, store, indexer position and lag, balances, uptime',
      response: { 200: StatusSchema, ...problems('store_unavailable') },
    },
    handler: async (): Promise<Status> => {
      const cursor = indexer ? await store.getCursor(indexer.sourceId) : undefined;
      const pending = indexer ? await indexer.pendingEvents().catch(() => undefined) : undefined;
      const { autopilot } = deps;
      return {
        version: VERSION,
        network: deps.network,
        epoch: (await store.getChainState()).epoch,
        uptime_seconds: Math.round((Date.now() - deps.startedAt) / 1000),
        signer_address: deps.chain?.signerAddress ?? null,
        badges: deps.writes ? await deps.writes.badges(true).catch(() => null) : null,
        node_small_ids: [...deps.nodeSmallIds],
        store: { engine: store.engine, location: store.location },
        indexer: indexer
          ? {
              source: indexer.sourceId,
              leader: indexer.isLeader,
              cursor: cursor?.cursor ?? null,
              events: cursor
                ? {
                    applied: cursor.applied,
                    duplicate: cursor.duplicate,
                    ignored: cursor.ignored,
                    unknown: cursor.unknown,
                    malformed: cursor.malformed,
                    orphaned: cursor.orphaned,
                  }
                : null,
              lag_seconds: indexer.lagSeconds() ?? null,
              lag_events: pending?.count ?? null,
              lag_events_capped: pending?.capped ?? null,
              last_error: indexer.lastError ?? null,
            }
          : null,
        balances: deps.chain?.balances ? await deps.chain.balances().catch(() => null) : null,
        usage_source: usageSource(deps.usageSource?.status()),
        autopilot: autopilot
          ? {
              mode: autopilot.mode,
              halted: autopilot.halted ?? null,
              last_pass_at: autopilot.lastPassAt ?? null,
            }
          : null,
      };
    },
  });

  app.get('/metrics', {
    schema: {
      tags: ['meta'],
      summary: 'Prometheus metrics (text exposition format)',
      response: {
        200: {
          description: 'Prometheus text exposition format 0.0.4',
          content: { 'text/plain': { schema: Type.String() } },
        },
        ...problems('store_unavailable'),
      },
    },
    handler: async (_request, reply) => {
      const lag = indexer?.lagSeconds();
      if (lag !== undefined) metrics.indexerLag.set(lag);
      metrics.ready.set((await ready()).ready ? 1 : 0);
      await deps.beforeScrape?.();
      reply.type(metrics.registry.contentType);
      return metrics.registry.metrics();
    },
  });
};
