import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  LogController,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import type { Chain } from './chain/chain.ts';
import type { Config } from './config.ts';
import { AuditTrail, answerFacts, openApiRoute } from './http/audit.ts';
import {
  createClientErrorHandler,
  createConnectHandler,
  createHeadCheck,
  MethodTable,
  methodProblem,
  requestIdOf,
} from './http/client-errors.ts';
import { installErrorHandler, sendProblem } from './http/errors.ts';
import { installJsonBody, u64Keyword } from './http/json-body.ts';
import { installLingeringClose } from './http/linger.ts';
import { finishDocument } from './http/openapi.ts';
import { ReadTurns } from './http/read-turns.ts';
import { ResponseCache } from './http/response-cache.ts';
import { accessRoutes } from './http/routes/access.ts';
import { autopilotRoutes } from './http/routes/autopilot.ts';
import { consoleRoutes, isConsolePath } from './http/routes/console.ts';
import { devRoutes } from './http/routes/dev.ts';
import { eventRoutes } from './http/routes/events.ts';
import { metaRoutes } from './http/routes/meta.ts';
import { opsRoutes } from './http/routes/ops.ts';
import { readRoutes } from './http/routes/reads.ts';
import { webhookRoutes } from './http/routes/webhooks.ts';
import { writeRoutes } from './http/routes/writes.ts';
import { declaredScope, requiredScope } from './http/scopes.ts';
import { createGuard, identityOf, loggableUrl, type SecurityOptions } from './http/security.ts';
import { installStrictParams } from './http/strict-params.ts';
import type { LiveIndexer } from './indexer/run.ts';
import { createMetrics, type Metrics } from './internal/metrics.ts';
import { VERSION } from './internal/version.ts';
import type { Autopilot } from './operations/autopilot.ts';
import type { DevActors } from './operations/dev-actors.ts';
import { earningsMetrics } from './operations/earnings.ts';
import type { EventHub } from './operations/event-stream.ts';
import { ownNodes as ownNodesOf } from './operations/own-nodes.ts';
import type { Webhooks } from './operations/webhooks.ts';
import type { Writes } from './operations/writes.ts';
import type { Store } from './store/store.ts';
import type { UsageMirror } from './usage/mirror.ts';

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface AppDeps {
  config: Pick<Config, 'network' | 'cacheMb' | 'corsOrigins' | 'readyMaxLag' | 'nodeSmallIds'>;
  store: Store;
  logger: FastifyBaseLogger;
  /** Token, host check and load shedding (see src/http/security.ts). */
  security: SecurityOptions;
  metrics?: Metrics | undefined;
  indexer?: LiveIndexer | undefined;
  chain?: Chain | undefined;
  /** The write operations; absent on network none. */
  writes?: Writes | undefined;
  /** The dev network's other actors; only on network dev. */
  dev?: DevActors | undefined;
  /** The autopilot; absent on network none. */
  autopilot?: Autopilot | undefined;
  /** The live node events (GET /events); absent, the route is not served. */
  events?: EventHub | undefined;
  /** The usage source (--usage-source); absent without one. */
  usageSource?: UsageMirror | undefined;
  /** The webhook endpoints (docs/WEBHOOKS.md); absent, the /webhooks routes are not served. */
  webhooks?: Webhooks | undefined;
  /** The reads' turns (src/http/read-turns.ts); tests pass their own to watch them. */
  turns?: ReadTurns | undefined;
  /** How long a request may take to arrive whole (REQUEST_TIMEOUT_MS); tests shorten it. */
  requestTimeoutMs?: number | undefined;
  /** Days the audit trail keeps its entries (--audit-retention-days); 90 unless set. */
  auditRetentionDays?: number | undefined;
}

/** The longest path parameter the router takes (find-my-way's default); a longer one is invalid_parameter. */
const MAX_PARAM_LENGTH = 100;
/** Largest request body any endpoint accepts. */
export const BODY_LIMIT = 1024 * 1024;
/** A request must arrive whole within this time. */
export const REQUEST_TIMEOUT_MS = 30_000;
/** An idle keep-alive connection is closed after this time. */
export const KEEP_ALIVE_TIMEOUT_MS = 10_000;

/**
 * How often Node looks for requests past their time (its default, 30 s, let one take up to 90 s): often
 * enough that a request is refused within a second of its limit.
 */
function timeoutCheckInterval(requestTimeoutMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(requestTimeoutMs / 20)));
}

const FACTS = Symbol('audit facts');
type AuditedRequest = FastifyRequest & { [FACTS]?: ReturnType<typeof answerFacts> };

/**
 * Whether a request goes into the audit trail: every write and every admin request (GET /tokens, /audit),
 * refused or not, but a usage report only when refused: accepted ones are the usage itself, recorded in
 * the store, and at the inference server's rate they would be nearly all of the trail (DECISIONS.md).
 */
function audited(request: FastifyRequest, status: number): boolean {
  const route = request.routeOptions.url;
  const read = request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS';
  if (route === undefined) return !read;
  const scope = requiredScope(request.method, route);
  if (scope === 'usage') return status >= 400;
  return !read || scope === 'admin';
}

/** A route of the app as Fastify declares it. */
export interface AppRoute {
  method: string;
  url: string;
}
const ROUTES = new WeakMap<object, AppRoute[]>();

/** Every route the app serves (each method apart, HEAD included): the scope table's test walks them. */
export function appRoutes(app: App): readonly AppRoute[] {
  return ROUTES.get(app) ?? [];
}

/** Builds the HTTP application; it never listens by itself. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config, store, logger, writes, dev } = deps;
  const metrics = deps.metrics ?? createMetrics();
  const requestTimeoutMs = deps.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  // A mirror of the route table, to tell 405 (the path exists for other methods) from 404.
  const methods = new MethodTable();
  const rawAnswers = { table: methods, logger, metrics, requestTimeoutMs };
  const app = Fastify({
    // An incoming X-Request-Id is kept when it is sane, so a caller can follow its request in the logs.
    requestIdHeader: false,
    genReqId: (request) => requestIdOf(request.headers),
    // The whole request, head included, within requestTimeoutMs; checked often enough to hold to it.
    requestTimeout: requestTimeoutMs,
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: timeoutCheckInterval(requestTimeoutMs),
      // A missing Host is refused in onRequest below, with a problem rather than Node's empty 400.
      requireHostHeader: false,
    },
    // What Node's parser refuses, and late requests, get problems too (src/http/client-errors.ts).
    clientErrorHandler: createClientErrorHandler(rawAnswers),
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    loggerInstance: logger,
    // One debug line per request (the onResponse hook below) instead of Fastify's two info lines.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // Requests that arrive while the daemon drains get our problem body (the hook below), not Fastify's.
    return503OnClosing: false,
    // Parameters are parsed strictly by strict-params.ts; bodies keep their JSON types; unknown fields fail.
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false },
      plugins: [(ajv) => ajv.addKeyword(u64Keyword)],
    },
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      // The router refuses a path parameter past its length (maxParamLength, 100) without naming it.
      const long =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? methods.longParameter(request.method, request.url, MAX_PARAM_LENGTH)
          : undefined;
      if (long) {
        sendProblem(
          request,
          reply,
          'invalid_parameter',
          `path parameter ${long.name} is ${long.length} characters long; give at most ${MAX_PARAM_LENGTH}`,
          { parameter: long.name },
        );
        return;
      }
      sendProblem(request, reply, 'bad_request', `the request could not be routed: ${error.message}`);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const routes: AppRoute[] = [];
  ROUTES.set(app, routes);
  app.addHook('onRoute', (route) => {
    methods.add(route.method, route.url);
    for (const method of [route.method].flat()) {
      routes.push({ method, url: route.url });
      // The scope table is the one place a route's scope is said (src/http/scopes.ts); without one it is admin.
      if (method !== 'OPTIONS' && declaredScope(method, route.url) === undefined) {
        logger.warn(
          { method, url: route.url },
          'a route without a declared scope is admin only (src/http/scopes.ts)',
        );
      }
    }
  });
  app.setNotFoundHandler((request, reply) => {
    const { code, detail, options } = methodProblem(methods, request.method, request.url);
    return sendProblem(request, reply, code, detail, options);
  });
  // Without a listener Node closes a CONNECT's connection unanswered.
  app.server.on('connect', createConnectHandler(rawAnswers));
  const headProblem = createHeadCheck(app.server);
  // One onRequest and one onResponse hook, synchronous: they run on every request.
  // The console's page and files are public code: under --auth all it loads, then asks for the token.
  const guard = createGuard({ ...deps.security, isPublic: isConsolePath }, metrics, store);
  // Every write and admin request, refused ones too, is recorded (src/http/audit.ts).
  const audit = new AuditTrail(store, logger, deps.auditRetentionDays);
  audit.start();
  app.addHook('onClose', () => audit.close());
  // Read turns are short while writes arrive (read-turns.ts): the hook below tells them.
  const turns = deps.turns ?? new ReadTurns();
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (request.method !== 'GET' && request.method !== 'HEAD') turns.writeArrived();
    if (closing) {
      reply.header('connection', 'close');
      sendProblem(request, reply, 'shutting_down', 'the daemon is shutting down; retry once it is back', {
        headers: { 'retry-after': '5' },
      });
      return;
    }
    const malformed = headProblem(request.raw);
    if (malformed) {
      reply.header('connection', 'close');
      sendProblem(request, reply, malformed.code, malformed.detail, malformed.options);
      return;
    }
    const checked = guard.check(request, reply);
    if (checked === true) return;
    // While requests are served, an indexer that catches up does so in short transactions (indexer/run.ts);
    // refused ones (no token, shed, malformed) do not slow it.
    if (checked === false) {
      deps.indexer?.requestArrived();
      done();
      return;
    }
    // A named token: its lookup in the store decides.
    checked.then(
      (answered) => {
        if (answered) return;
        deps.indexer?.requestArrived();
        done();
      },
      (error: Error) => done(error),
    );
  });
  // What the audit keeps of an answer (its problem's code, the transaction), read as it is sent.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (audited(request, reply.statusCode)) {
      (request as AuditedRequest)[FACTS] = answerFacts(payload, reply.getHeader('content-type'));
    }
    done(null, payload);
  });
  const requestCounters = new Map<string, { inc(): void }>();
  const durations = new Map<string, { observe(seconds: number): void }>();
  app.addHook('onResponse', (request, reply, done) => {
    guard.release(request);
    if (audited(request, reply.statusCode)) {
      const route = request.routeOptions.url;
      const facts = (request as AuditedRequest)[FACTS];
      audit.record({
        at: Date.now(),
        token_name: identityOf(request)?.name ?? null,
        method: request.method,
        route:
          route === undefined ? loggableUrl(request.url).split('?')[0]!.slice(0, 200) : openApiRoute(route),
        request_id: String(request.id),
        status: reply.statusCode,
        problem_code: facts?.problem_code ?? null,
        tx_digest: facts?.tx_digest ?? null,
        gas_used: facts?.gas_used ?? null,
        idempotent_replay: reply.getHeader('idempotent-replayed') === 'true',
      });
    }
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${route}`;
    let counter = requestCounters.get(`${key} ${reply.statusCode}`);
    if (!counter) {
      counter = metrics.httpRequests.labels({ route, method: request.method, status: reply.statusCode });
      requestCounters.set(`${key} ${reply.statusCode}`, counter);
    }
    counter.inc();
    let duration = durations.get(key);
    if (!duration) {
      duration = metrics.httpDuration.labels({ route, method: request.method });
      durations.set(key, duration);
    }
    duration.observe(reply.elapsedTime / 1000);
    if (request.log.level === 'debug' || request.log.level === 'trace') {
      request.log.debug(
        {
          method: request.method,
          url: loggableUrl(request.url),
          status: reply.statusCode,
          ms: reply.elapsedTime,
        },
        'request completed',
      );
    }
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    guard.release(request);
    done();
  });

  // Bodies are JSON only (anything else is a 415), with exact integers.
  installJsonBody(app);
  installErrorHandler(app);
  installLingeringClose(app);
  installStrictParams(app);
  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...config.corsOrigins],
      methods: ['GET', 'HEAD', 'POST', 'DELETE'],
      allowedHeaders: ['authorization', 'content-type', 'idempotency-key', 'x-request-id'],
      exposedHeaders: ['x-request-id', 'retry-after', 'idempotent-replayed'],
    });
  }

  await app.register(swagger, {
    transformObject: (document) => {
      const spec = 'openapiObject' in document ? document.openapiObject : document.swaggerObject;
      finishDocument(spec, { auth: deps.security.auth, network: config.network });
      return spec;
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'node-daemon',
        version: VERSION,
        description:
          "The Atoma node operator's local daemon: tasks, subscriptions, stacks, settlement, attestations and funds. " +
          'Errors are RFC 9457 problem details (application/problem+json) with a stable `code`.',
      },
      tags: [
        { name: 'tasks' },
        { name: 'subscriptions' },
        { name: 'stacks' },
        { name: 'disputes' },
        { name: 'earnings', description: "The node's money: what it earned and can claim" },
        { name: 'autopilot', description: 'Settles, attests and claims when it is worth it' },
        { name: 'events', description: 'What happens to the node, live (Server-Sent Events)' },
        { name: 'webhooks', description: "The node's events POSTed, signed, to the operator's endpoints" },
        { name: 'writes' },
        { name: 'dev network', description: 'Only on the embedded dev network' },
        { name: 'access', description: 'Scoped API tokens, who the caller is, and the audit trail' },
        { name: 'meta' },
      ],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });

  const ownNodes = (tolerant: boolean) => ownNodesOf(config.nodeSmallIds, writes, tolerant);

  await app.register(metaRoutes);
  await app.register(opsRoutes, {
    network: config.network,
    store,
    metrics,
    indexer: deps.indexer,
    chain: deps.chain,
    writes,
    readyMaxLag: config.readyMaxLag,
    nodeSmallIds: config.nodeSmallIds,
    startedAt: Date.now(),
    autopilot: deps.autopilot,
    usageSource: deps.usageSource,
    // A scrape answers while the chain cannot be asked: the configured nodes and the badges last known.
    beforeScrape: writes && earningsMetrics(metrics, store, () => ownNodes(true)),
  });
  const cache = new ResponseCache(config.cacheMb * 1024 * 1024, (outcome) =>
    metrics.httpCacheLookups.inc({ outcome }),
  );
  await app.register(readRoutes, { store, cache, turns });
  await app.register(writeRoutes, {
    network: config.network,
    writes,
    store,
    nodeSmallIds: config.nodeSmallIds,
  });
  await app.register(autopilotRoutes, { autopilot: deps.autopilot, network: config.network });
  await app.register(accessRoutes, { store, auth: deps.security.auth });
  if (deps.events) {
    await app.register(eventRoutes, {
      hub: deps.events,
      ownNodes: async () =>
        writes || config.nodeSmallIds.length > 0 ? ownNodes(config.nodeSmallIds.length > 0) : null,
      release: (request) => guard.release(request),
    });
  }
  if (deps.webhooks) await app.register(webhookRoutes, { webhooks: deps.webhooks });
  if (dev) await app.register(devRoutes, { dev });
  await app.register(consoleRoutes);
  return app;
}
