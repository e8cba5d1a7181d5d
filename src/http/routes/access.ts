import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { refuse } from '../../problems/catalog.ts';
import {
  AuditPageSchema,
  AuditQuerySchema,
  TokenCreatedSchema,
  TokenCreateSchema,
  TokenListSchema,
  TokenNameParamsSchema,
  type TokenView,
  WhoamiSchema,
} from '../../schemas/access.ts';
import type { ApiTokenRow, AuditStore, TokenStore } from '../../store/store.ts';
import { problems, withExample, withParameterExamples } from '../openapi.ts';
import type { Scope } from '../scopes.ts';
import { type AuthMode, identityOf, newNamedToken, TOKEN_FILE, tokenHash } from '../security.ts';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function tokenView(row: ApiTokenRow, now: number): TokenView {
  return {
    name: row.name,
    scope: row.scope as Scope,
    state:
      row.revoked_at !== null
        ? 'revoked'
        : row.expires_at !== null && row.expires_at <= now
          ? 'expired'
          : 'active',
    created_at: iso(row.created_at)!,
    expires_at: iso(row.expires_at),
    last_used_at: iso(row.last_used_at),
    revoked_at: iso(row.revoked_at),
  };
}

const DEFAULT_AUDIT_PAGE = 100;

/**
 * The named API tokens (admin: create, list, revoke), who the caller is (any valid token), and the audit
 * trail (admin). Scopes and the guard are security.ts and scopes.ts; the audit is written by audit.ts.
 */
export const accessRoutes: FastifyPluginAsyncTypebox<{
  store: TokenStore & AuditStore;
  auth: AuthMode;
}> = async (app, { store, auth }) => {
  const tags = ['access'];

  app.post('/tokens', {
    schema: {
      tags,
      summary: 'Create a named token with a scope; the answer shows the token once',
      body: withExample(TokenCreateSchema, { name: 'grafana', scope: 'read', expires_in: 30 * 24 * 3600 }),
      response: { 200: TokenCreatedSchema, ...problems('token_exists', 'store_unavailable') },
    },
    handler: async (request) => {
      const { name, scope, expires_in } = request.body;
      if (name === TOKEN_FILE) {
        throw refuse(
          'token_exists',
          `${TOKEN_FILE} is the data directory's file token; choose another name`,
          {
            parameter: 'name',
          },
        );
      }
      const token = newNamedToken();
      const now = Date.now();
      const expiresAt = expires_in === undefined ? null : now + expires_in * 1000;
      const outcome = await store.createToken({
        name,
        scope,
        hash: tokenHash(token),
        createdAt: now,
        expiresAt,
      });
      if (outcome === 'exists') {
        throw refuse(
          'token_exists',
          `a token named ${name} exists already; choose another name, or revoke it first (node-daemon token revoke ${name})`,
          { parameter: 'name' },
        );
      }
      const row = {
        name,
        scope,
        created_at: now,
        expires_at: expiresAt,
        last_used_at: null,
        revoked_at: null,
      };
      return { ...tokenView(row, now), token };
    },
  });

  app.get('/tokens', {
    schema: {
      tags,
      summary: 'The named tokens: name, scope, created, expires, last used (never a token)',
      response: { 200: TokenListSchema, ...problems('store_unavailable') },
    },
    handler: async () => {
      const now = Date.now();
      return { tokens: (await store.listTokens()).map((row) => tokenView(row, now)) };
    },
  });

  app.delete('/tokens/:name', {
    schema: {
      tags,
      summary: 'Revoke a named token: refused at once, by every daemon on the store',
      params: withParameterExamples(TokenNameParamsSchema, { name: 'grafana' }),
      response: { 200: TokenListSchema, ...problems('token_not_found', 'store_unavailable') },
    },
    handler: async (request) => {
      const { name } = request.params;
      if (!(await store.revokeToken(name, Date.now()))) {
        throw refuse(
          'token_not_found',
          name === TOKEN_FILE
            ? `${TOKEN_FILE} is the file token: replace it with node-daemon token rotate`
            : `there is no live token named ${name}; see node-daemon token list`,
          { parameter: 'name' },
        );
      }
      const now = Date.now();
      return { tokens: (await store.listTokens()).map((row) => tokenView(row, now)) };
    },
  });

  app.get('/whoami', {
    schema: {
      tags,
      summary: "The caller's token: its name and scope (the console asks it to show what the scope allows)",
      response: { 200: WhoamiSchema },
    },
    handler: async (request) => {
      const identity = identityOf(request);
      return identity === undefined
        ? { name: null, scope: 'admin' as const, auth }
        : { name: identity.name, scope: identity.scope, auth };
    },
  });

  app.get('/audit', {
    schema: {
      tags,
      summary: 'The audit trail: every write and admin request, refused ones too, newest first',
      querystring: AuditQuerySchema,
      response: { 200: AuditPageSchema, ...problems('store_unavailable') },
    },
    handler: async (request) => {
      const q = request.query;
      const limit = q.limit ?? DEFAULT_AUDIT_PAGE;
      const rows = await store.listAudit({
        token: q.token_name,
        route: q.route,
        method: q.method,
        outcome: q.outcome,
        since: q.since === undefined ? undefined : Date.parse(q.since),
        until: q.until === undefined ? undefined : Date.parse(q.until),
        before: q.before,
        limit,
      });
      return {
        entries: rows.map((row) => ({
          id: row.id,
          at: new Date(row.at).toISOString(),
          token: row.token_name,
          method: row.method,
          route: row.route,
          request_id: row.request_id,
          status: row.status,
          problem_code: row.problem_code,
          tx_digest: row.tx_digest,
          gas_used: row.gas_used,
          idempotent_replay: row.idempotent_replay,
        })),
        next_before: rows.length === limit ? rows.at(-1)!.id : null,
      };
    },
  });
};
