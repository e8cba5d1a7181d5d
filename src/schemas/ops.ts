import { type Static, Type } from 'typebox';
import { ERRORS } from '../problems/catalog.ts';
import { Nullable, U64 } from './common.ts';
import { AbortSchema, GasUsedSchema, NotClaimableSchema, StackResultSchema } from './writes.ts';

/** The operator's view of the daemon itself: liveness, readiness, status, and the problem body. */

export const HealthSchema = Type.Object({ status: Type.Literal('ok') });

export const ReadySchema = Type.Object({
  status: Type.Literal('ready'),
  indexer_lag_seconds: Nullable(Type.Number(), 'Seconds since the indexer was last at the chain head'),
});

const BadgeSchema = Type.Object({ badge_id: Type.String(), node_small_id: U64() });

const NodeSmallIdsSchema = Type.Array(U64(), {
  description:
    "The operator's nodes as configured (--node-small-ids, or node_small_ids of atoma-node's config.toml), in " +
    "order: the first is the default node of the CLI and the console, before the signer's first badge. Empty when none is configured",
});

const IndexerEventsSchema = Type.Object({
  applied: Type.Integer(),
  duplicate: Type.Integer(),
  ignored: Type.Integer(),
  unknown: Type.Integer(),
  malformed: Type.Integer(),
  orphaned: Type.Integer(),
});

export const StatusSchema = Type.Object({
  version: Type.String(),
  network: Type.String({ description: 'dev, sui or none' }),
  epoch: Nullable(U64(), 'The current epoch as indexed (null before the event source said)'),
  uptime_seconds: Type.Integer(),
  signer_address: Nullable(Type.String()),
  badges: Nullable(Type.Array(BadgeSchema), "The signer's NodeBadges; null when the chain cannot be asked"),
  node_small_ids: NodeSmallIdsSchema,
  store: Type.Object({ engine: Type.String(), location: Type.String() }),
  indexer: Nullable(
    Type.Object({
      source: Type.String(),
      leader: Type.Boolean({ description: 'This daemon holds the indexer lease (it applies the events)' }),
      cursor: Nullable(Type.String()),
      events: Nullable(IndexerEventsSchema),
      lag_seconds: Nullable(Type.Number()),
      lag_events: Nullable(Type.Integer()),
      lag_events_capped: Nullable(Type.Boolean()),
      last_error: Nullable(Type.Object({ message: Type.String(), at: Type.String() })),
    }),
  ),
  balances: Nullable(
    Type.Record(Type.String(), U64(), {
      description: "The signer's balances by coin, smallest unit",
    }),
  ),
  usage_source: Nullable(
    Type.Object({
      kind: Type.Literal('atoma-state'),
      location: Type.String({ description: 'The database it reads, without its password' }),
      state: Type.String({
        description:
          'starting; connected; lost (it cannot be read: error says why; the last usage stays); standby (another daemon sharing the store polls it); stopped',
      }),
      error: Nullable(Type.String(), 'Why it is lost (the last reason, while it is)'),
      last_poll_at: Nullable(Type.String(), 'When it last answered a poll'),
      behind_seconds: Nullable(Type.Number(), 'Seconds since then: how far behind the mirrored usage may be'),
      stacks_followed: Type.Integer({ description: "The operator's open stacks whose usage it mirrors" }),
      stacks_locked_by_node: Type.Integer({
        description: 'Of those, the ones atoma-node locked to claim itself (the autopilot leaves them)',
      }),
    }),
    "Where stacks' usage comes from besides POST /stacks/{id}/usage; null: nowhere else",
  ),
  autopilot: Nullable(
    Type.Object({
      mode: Type.String({ description: 'off, dry-run or on' }),
      halted: Nullable(Type.String(), 'Why it stopped acting (repeated contract aborts); null while it acts'),
      last_pass_at: Nullable(Type.String()),
    }),
  ),
});

export const BadgesSchema = Type.Object({
  signer_address: Type.String(),
  badges: Type.Array(BadgeSchema),
  node_small_ids: NodeSmallIdsSchema,
});

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'urn:node-daemon:problem:<code>' }),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String({ enum: Object.keys(ERRORS), description: 'Stable machine-readable error code' }),
    detail: Type.String({ description: 'What went wrong and what to change' }),
    instance: Type.String({ description: 'The request path' }),
    parameter: Type.Optional(Type.String({ description: 'The offending parameter or field' })),
    request_id: Type.String(),
    // Extension members, present where they apply (docs/ERRORS.md).
    tx_digest: Type.Optional(
      Type.String({ description: 'The transaction that failed, or whose outcome is unknown' }),
    ),
    tx_digests: Type.Optional(
      Type.Array(Type.String(), { description: 'Every transaction a multi-stack write sent' }),
    ),
    abort: Type.Optional(AbortSchema),
    gas_used: Type.Optional(GasUsedSchema),
    results: Type.Optional(
      Type.Array(StackResultSchema, { description: "A multi-stack write: each listed stack's outcome" }),
    ),
    not_claimable: Type.Optional(
      Type.Array(NotClaimableSchema, { description: 'Why each stack cannot be claimed now' }),
    ),
  },
  { description: 'RFC 9457 problem details (application/problem+json)' },
);

export type Status = Static<typeof StatusSchema>;
export type Badges = Static<typeof BadgesSchema>;
