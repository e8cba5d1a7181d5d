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

/** Routes by `METHOD url` as Fastify declares them (a GET route also answers HEAD, with its scope). */
const ROUTES: Record<string, RouteScope> = {
  // Reads.
  'GET /': 'read',
  'GET /console/*': 'read',
  'GET /*': 'read',
  'GET /docs': 'read',
  'GET /docs/*': 'read',
  'GET /docs/json': 'read',
  'GET /docs/yaml': 'read',
  'GET /docs/static/*': 'read',
  'GET /docs/static/index.html': 'read',
  'GET /docs/static/swagger-initializer.js': 'read',
  'GET /openapi.json': 'read',
  'GET /health': 'read',
  'GET /ready': 'read',
  'GET /status': 'read',
  'GET /metrics': 'read',
  'GET /events': 'read',
  'GET /tasks': 'read',
  'GET /network/nodes/:node_id': 'read',
  'GET /subscriptions/nodes/:node_id': 'read',
  'GET /stacks/nodes/:node_id': 'read',
  'GET /stacks/stacks/nodes/:node_id': 'read',
  'GET /claimed-stacks/nodes/:node_id': 'read',
  'GET /claimed-stacks/claimed_stacks/nodes/:node_id': 'read',
  'GET /attestation_disputes/against/nodes/:node_id': 'read',
  'GET /attestation_disputes/own/nodes/:node_id': 'read',
  'GET /earnings/nodes/:node_id': 'read',
  'GET /nodes/badges': 'read',
  'GET /autopilot': 'read',
  // The inference server's usage reports.
  'POST /stacks/:stack_small_id/usage': 'usage',
  // The node's writes and the autopilot's controls.
  'POST /nodes/register': 'write',
  'POST /nodes/model-subscribe': 'write',
  'POST /nodes/task-subscribe': 'write',
  'POST /nodes/task-update-subscription': 'write',
  'DELETE /nodes/task-unsubscribe': 'write',
  'POST /nodes/try-settle-stacks': 'write',
  'POST /nodes/try-settle-stacks/estimate': 'write',
  'POST /nodes/submit-attestations': 'write',
  'POST /nodes/claim-funds': 'write',
  'POST /autopilot/run': 'write',
  'POST /autopilot/resume': 'write',
  // Who the caller is: any valid token.
  'GET /whoami': 'token',
  // The tokens and the audit trail.
  'POST /tokens': 'admin',
  'GET /tokens': 'admin',
  'DELETE /tokens/:name': 'admin',
  'GET /audit': 'admin',
};

/** Whole areas that are admin, whatever their routes: the dev network's actors, the webhooks. */
const ADMIN_PREFIXES = ['/dev/', '/webhooks'];

/** The scope a route declares, or undefined when it declares none (then it is refused as admin). */
export function declaredScope(method: string, url: string): RouteScope | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  const listed = ROUTES[`${m} ${url}`];
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
  return SCOPES.filter((scope) => grants(scope, needed)).join(' or ');
}
