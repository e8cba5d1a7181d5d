import { type Static, Type } from 'typebox';
import { Nullable, Strict, StringEnum } from './common.ts';

/** The API tokens, who the caller is, and the audit trail (issue 51): the admin routes' wire shapes. */

const Scope = StringEnum(['read', 'usage', 'write', 'admin'], {
  description:
    'read: every GET, the event stream, /metrics; usage: only POST /stacks/{id}/usage; write: the writes, the autopilot controls, and what read and usage may; admin: everything (tokens, audit, webhooks, the dev network)',
});

/** A token's name: what the audit trail and the list show. `api-token` is the file token's. */
export const TOKEN_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';

export const TokenCreateSchema = Type.Object(
  {
    name: Type.String({ pattern: TOKEN_NAME_PATTERN, description: 'A name of your choice, e.g. grafana' }),
    scope: Scope,
    expires_in: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: 10 * 366 * 24 * 3600,
        description: 'Seconds until it expires; without it, it lasts until revoked',
      }),
    ),
  },
  Strict,
);

export const TokenSchema = Type.Object({
  name: Type.String(),
  scope: Scope,
  state: StringEnum(['active', 'expired', 'revoked']),
  created_at: Type.String({ description: 'ISO 8601' }),
  expires_at: Nullable(Type.String(), 'ISO 8601; null: until revoked'),
  last_used_at: Nullable(Type.String(), 'ISO 8601, to the minute; null: never used'),
  revoked_at: Nullable(Type.String(), 'ISO 8601'),
});

export const TokenCreatedSchema = Type.Object({
  ...TokenSchema.properties,
  token: Type.String({ description: 'The token: shown this once, never again (the daemon keeps its hash)' }),
});

export const TokenListSchema = Type.Object({ tokens: Type.Array(TokenSchema) });

export const TokenNameParamsSchema = Type.Object(
  { name: Type.String({ pattern: TOKEN_NAME_PATTERN }) },
  Strict,
);

export const WhoamiSchema = Type.Object({
  name: Nullable(
    Type.String(),
    "The token's name (api-token: the data directory's file token); null under --auth none",
  ),
  scope: Scope,
  auth: StringEnum(['writes', 'all', 'none'], { description: "The daemon's --auth" }),
});

export const AuditQuerySchema = Type.Object(
  {
    token_name: Type.Optional(
      Type.String({
        maxLength: 64,
        description: "A token's name (a parameter named token is refused: it looks like a token in the URL)",
      }),
    ),
    route: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'A route as this document writes it, e.g. /nodes/claim-funds',
      }),
    ),
    method: Type.Optional(StringEnum(['GET', 'POST', 'DELETE'])),
    outcome: Type.Optional(
      StringEnum(['ok', 'denied', 'failed'], {
        description: 'ok: answered below 400; denied: 401 or 403; failed: any other error',
      }),
    ),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601: at or after' })),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601: before' })),
    before: Type.Optional(Type.Integer({ minimum: 1, description: 'Entries older than this id (paging)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: '100 unless set' })),
  },
  Strict,
);

export const AuditEntrySchema = Type.Object({
  id: Type.Integer(),
  at: Type.String({ description: 'ISO 8601' }),
  token: Nullable(Type.String(), "The token's name (never the token); null: none was sent, or it was wrong"),
  method: Type.String(),
  route: Type.String({ description: 'The route, or the path when no route has it' }),
  request_id: Type.String(),
  status: Type.Integer(),
  problem_code: Nullable(Type.String()),
  tx_digest: Nullable(Type.String()),
  gas_used: Nullable(Type.String({ description: 'MIST: computation + storage - rebate' })),
  idempotent_replay: Type.Boolean({ description: 'An Idempotency-Key replayed an earlier answer' }),
});

export const AuditPageSchema = Type.Object({
  entries: Type.Array(AuditEntrySchema, { description: 'Newest first' }),
  next_before: Nullable(Type.Integer(), 'Pass as before= for the next (older) page; null: no more'),
});

export type TokenCreate = Static<typeof TokenCreateSchema>;
export type TokenView = Static<typeof TokenSchema>;
export type AuditQueryParams = Static<typeof AuditQuerySchema>;
export type AuditEntryView = Static<typeof AuditEntrySchema>;
export type TokenCreatedView = Static<typeof TokenCreatedSchema>;
export type AuditPageView = Static<typeof AuditPageSchema>;
