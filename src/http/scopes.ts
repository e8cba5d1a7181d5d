/**
 * The scopes of the API tokens, and the one table that says which scope each route needs (issue 51):
 * read (every GET, the event stream, /metrics), usage (only the usage reports: the inference server's
 * token), write (the node's writes, the autopilot's controls, and what read and usage may do), admin
 * (everything: tokens, the audit trail, webhooks, the dev network's actors). A route missing here is
 * treated as admin (closed), and test/scopes.test.ts, generated from the app's routes, fails on it.
 */

export const SCOPES = ['read', 'usage', 'write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];
/** What a route needs: a scope, or `token`: any valid token (GET /whoami). */
export type RouteScope = Scope | 'token';

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Whether a token of scope `held` may make a request that needs `needed`. */
export function grants(held: Scope, needed: RouteScope): boolean {
  if (held === 'admin' || needed === 'token') return true;
  if (held === 'write') return needed !== 'admin';
  return held === needed;
}

/** Routes by method, then url as Fastify declares it (a GET route also answers HEAD, with its scope). */
const ROUTES: Record<string, Record<string, RouteScope>> = {
  // Reads; who the caller is (any valid token); the tokens and the audit trail (admin).
  GET: {
    '/': 'read',
    '/console/*': 'read',
    '/*': 'read',
    '/docs': 'read',
    '/docs/*': 'read',
    '/docs/json': 'read',
    '/docs/yaml': 'read',
    '/docs/static/*': 'read',
    '/docs/static/index.html': 'read',
    '/docs/static/swagger-initializer.js': 'read',
    '/openapi.json': 'read',
    '/health': 'read',
    '/ready': 'read',
    '/status': 'read',
    '/metrics': 'read',
    '/events': 'read',
    '/tasks': 'read',
    '/network/nodes/:node_id': 'read',
    '/subscriptions/nodes/:node_id': 'read',
    '/stacks/nodes/:node_id': 'read',
    '/stacks/stacks/nodes/:node_id': 'read',
    '/claimed-stacks/nodes/:node_id': 'read',
    '/claimed-stacks/claimed_stacks/nodes/:node_id': 'read',
    '/attestation_disputes/against/nodes/:node_id': 'read',
    '/attestation_disputes/own/nodes/:node_id': 'read',
    '/earnings/nodes/:node_id': 'read',
    '/nodes/badges': 'read',
    '/autopilot': 'read',
    '/whoami': 'token',
    '/tokens': 'admin',
    '/audit': 'admin',
  },
  // The inference server's usage reports; the node's writes and the autopilot's controls; tokens (admin).
  POST: {
    '/stacks/:stack_small_id/usage': 'usage',
    '/nodes/register': 'write',
    '/nodes/model-subscribe': 'write',
    '/nodes/task-subscribe': 'write',
    '/nodes/task-update-subscription': 'write',
    '/nodes/try-settle-stacks': 'write',
    '/nodes/try-settle-stacks/estimate': 'write',
    '/nodes/submit-attestations': 'write',
    '/nodes/claim-funds': 'write',
    '/autopilot/run': 'write',
    '/autopilot/resume': 'write',
    '/tokens': 'admin',
  },
  // A write, and a token's revocation (admin).
  DELETE: {
    '/nodes/task-unsubscribe': 'write',
    '/tokens/:name': 'admin',
  },
};

/** Whole areas that are admin, whatever their routes: the dev network's actors, the webhooks. */
const ADMIN_PREFIXES = ['/dev/', '/webhooks'];

/** The scope a route declares, or undefined when it declares none (then it is refused as admin). */
export function declaredScope(method: string, url: string): RouteScope | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  const listed = ROUTES[m]?.[url];
  if (listed !== undefined) return listed;
  if (ADMIN_PREFIXES.some((prefix) => url.startsWith(prefix))) return 'admin';
  return undefined;
}

/** The scope a request on a route needs: the declared one, else admin (a route nobody declared is closed). */
export function requiredScope(method: string, url: string): RouteScope {
  return declaredScope(method, url) ?? 'admin';
}

/** The scopes that grant `needed`, for a problem's detail: `write or admin`. */
export function scopesGranting(needed: RouteScope): string {
  const all = SCOPES.filter((scope) => grants(scope, needed));
  return all.length === 1 ? all[0]! : `${all.slice(0, -1).join(', ')} or ${all.at(-1)}`;
}
