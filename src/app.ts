import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  LogController,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import type { Chain } from './chain/chain.ts';
import type { Config } from './config.ts';
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
import { finishDocument } from './http/openapi.ts';
import { ReadTurns } from './http/read-turns.ts';
import { ResponseCache } from './http/response-cache.ts';
import { autopilotRoutes } from './http/routes/autopilot.ts';
import { consoleRoutes, isConsolePath } from './http/routes/console.ts';
import { devRoutes } from './http/routes/dev.ts';
import { eventRoutes } from './http/routes/events.ts';
import { metaRoutes } from './http/routes/meta.ts';
import { opsRoutes } from './http/routes/ops.ts';
import { readRoutes } from './http/routes/reads.ts';
import { webhookRoutes } from './http/routes/webhooks.ts';
import { writeRoutes } from './http/routes/writes.ts';
import { createGuard, loggableUrl, type SecurityOptions } from './http/security.ts';
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
}

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
    routerOptions: { ignoreTrailingSlash: true },
    // Requests that arrive while the daemon drains get our problem body (the hook below), not Fastify's.
    return503OnClosing: false,
    // Parameters are parsed strictly by strict-params.ts; bodies keep their JSON types; unknown fields fail.
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false },
      plugins: [(ajv) => ajv.addKeyword(u64Keyword)],
    },
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      sendProblem(request, reply, 'bad_request', `the request could not be routed: ${error.message}`);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.addHook('onRoute', (route) => methods.add(route.method, route.url));
  // The routes whose config says they always need the token (security.ts), as OpenAPI names them.
  const alwaysToken = new Set<string>();
  app.addHook('onRoute', (route) => {
    if ((route.config as { token?: string } | undefined)?.token !== 'always') return;
    const path = route.url.replace(/:([A-Za-z_]+)/g, '{$1}');
    for (const method of [route.method].flat()) alwaysToken.add(`${method} ${path}`);
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
  const guard = createGuard({ ...deps.security, isPublic: isConsolePath }, metrics);
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
    if (guard.check(request, reply)) return;
    // While requests are served, an indexer that catches up does so in short transactions (indexer/run.ts);
    // refused ones (no token, shed, malformed) do not slow it.
    deps.indexer?.requestArrived();
    done();
  });
  const requestCounters = new Map<string, { inc(): void }>();
  const durations = new Map<string, { observe(seconds: number): void }>();
  app.addHook('onResponse', (request, reply, done) => {
    guard.release(request);
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
      finishDocument(spec, { auth: deps.security.auth, network: config.network, alwaysToken });
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
