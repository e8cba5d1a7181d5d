import { createHmac, randomBytes } from 'node:crypto';
import { type ClientRequest, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Metrics } from '../internal/metrics.ts';
import { NODE_EVENT_TYPES } from '../internal/node-event-types.ts';
import { VERSION } from '../internal/version.ts';
import { ProblemError } from '../problems/catalog.ts';
import type {
  CreatedWebhook,
  CreateWebhook,
  WebhookDeliveries,
  WebhookDelivery,
  WebhookEndpoint,
} from '../schemas/webhooks.ts';
import type {
  ClaimedDelivery,
  NodeEventStore,
  WebhookAttemptOutcome,
  WebhookAttemptRow,
  WebhookDeliveryRow,
  WebhookEndpointRow,
  WebhookStore,
} from '../store/store.ts';
import { eventJson } from './event-stream.ts';

/**
 * Signed webhooks (docs/WEBHOOKS.md): the operator's endpoints, and the sender that delivers the outbox
 * the store fills in each node event's own transaction, as the Standard Webhooks 1.0 specification says.
 */

/** When each attempt goes, after the event: at once, then ~5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const WEBHOOK_SCHEDULE_MS: readonly number[] = [
  0,
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3600_000,
  5 * 3600_000,
  10 * 3600_000,
  10 * 3600_000,
];
/** One attempt's limit: a receiver that answers later has failed it. */
export const WEBHOOK_TIMEOUT_MS = 15_000;
/** An endpoint whose deliveries fail this long (none succeeding) is disabled. */
export const WEBHOOK_DISABLE_AFTER_MS = 3 * 24 * 3600_000;
/** Deliveries in flight at once, per daemon. */
export const WEBHOOK_CONCURRENCY = 8;
/** The test event's type (not a node event: it goes to one endpoint only). */
export const WEBHOOK_TEST_TYPE = 'webhook.test';
/** A Retry-After beyond this is held to it. */
const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/** A new signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The `webhook-signature` header: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` under the secret's bytes. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The JSON body of a delivery: `{type, timestamp, data}`, data the event as GET /events shows it. */
export function webhookBody(
  d: Pick<WebhookDeliveryRow, 'event_id' | 'type' | 'at' | 'node_small_id' | 'data'>,
): string {
  const data =
    d.event_id === null
      ? d.data
      : eventJson({
          id: d.event_id,
          at: d.at,
          type: d.type as never,
          node_small_id: d.node_small_id,
          data: d.data,
        });
  return `{"type":${JSON.stringify(d.type)},"timestamp":"${new Date(d.at).toISOString()}","data":${data}}`;
}

/** A URL as it may be logged or put in an event: scheme and host only (a chat hook's path holds its token). */
export function webhookOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function endpointView(e: WebhookEndpointRow): WebhookEndpoint {
  return {
    id: e.id,
    url: e.url,
    types: e.types,
    description: e.description,
    state: e.disabled_at !== null ? 'disabled' : e.failing_since !== null ? 'failing' : 'enabled',
    created_at: new Date(e.created_at).toISOString(),
    disabled_at: iso(e.disabled_at),
    disabled_reason: e.disabled_reason,
    failing_since: iso(e.failing_since),
  };
}

function deliveryView(d: WebhookDeliveryRow & { attempts_list: WebhookAttemptRow[] }): WebhookDelivery {
  return {
    id: d.id,
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    type: d.type,
    state: d.state,
    event_at: new Date(d.at).toISOString(),
    next_attempt_at: d.state === 'pending' ? new Date(d.next_attempt_at).toISOString() : null,
    finished_at: iso(d.finished_at),
    attempts: d.attempts_list.map((a) => ({
      at: new Date(a.at).toISOString(),
      status: a.status,
      error: a.error,
      duration_ms: a.duration_ms,
    })),
  };
}

/** Checks an endpoint's URL and types; a 400 problem that names what to change. */
function checkEndpoint(body: CreateWebhook): void {
  let url: URL;
  try {
    url = new URL(body.url);
  } catch {
    throw new ProblemError(
      'invalid_body',
      `url "${body.url}" is not a URL: give an http:// or https:// URL`,
      {
        parameter: 'url',
      },
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ProblemError(
      'invalid_body',
      `url "${body.url}" uses ${url.protocol.slice(0, -1)}: only http:// and https:// URLs are sent to`,
      { parameter: 'url' },
    );
  }
  const known = new Set<string>(NODE_EVENT_TYPES);
  const unknown = (body.types ?? []).filter((t) => !known.has(t));
  if (unknown.length > 0) {
    throw new ProblemError(
      'invalid_body',
      `unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.map((t) => `"${t}"`).join(', ')} in types: use some of ${NODE_EVENT_TYPES.join(', ')}, or leave types out for all`,
      { parameter: 'types' },
    );
  }
}

/** The operator's endpoints: what the routes and the CLI call. */
export class Webhooks {
  readonly #store: WebhookStore;
  readonly #now: () => number;
  readonly #poke: () => void;

  constructor(deps: { store: WebhookStore; now?: () => number; poke?: () => void }) {
    this.#store = deps.store;
    this.#now = deps.now ?? Date.now;
    this.#poke = deps.poke ?? (() => undefined);
  }

  async create(body: CreateWebhook): Promise<CreatedWebhook> {
    checkEndpoint(body);
    const row = await this.#store.createWebhookEndpoint({
      url: body.url,
      types: body.types ? [...new Set(body.types)] : null,
      description: body.description ?? '',
      secret: newWebhookSecret(),
      created_at: this.#now(),
    });
    return { ...endpointView(row), secret: row.secret };
  }

  async list(): Promise<{ endpoints: WebhookEndpoint[] }> {
    return { endpoints: (await this.#store.listWebhookEndpoints()).map(endpointView) };
  }

  async #endpoint(id: number): Promise<WebhookEndpointRow> {
    const row = await this.#store.getWebhookEndpoint(id);
    if (!row) {
      throw new ProblemError(
        'webhook_not_found',
        `there is no webhook endpoint ${id}: GET /webhooks (node-daemon webhooks list) lists them`,
      );
    }
    return row;
  }

  async get(id: number): Promise<WebhookEndpoint> {
    return endpointView(await this.#endpoint(id));
  }

  async remove(id: number): Promise<WebhookEndpoint> {
    const row = await this.#endpoint(id);
    await this.#store.deleteWebhookEndpoint(id);
    return endpointView(row);
  }

  async enable(id: number): Promise<WebhookEndpoint> {
    await this.#endpoint(id);
    await this.#store.enableWebhookEndpoint(id);
    this.#poke();
    return endpointView(await this.#endpoint(id));
  }

  async deliveries(id: number, page: { before: number | null; limit: number }): Promise<WebhookDeliveries> {
    await this.#endpoint(id);
    const rows = await this.#store.listWebhookDeliveries(id, page);
    return {
      deliveries: rows.map(deliveryView),
      next_before: rows.length === page.limit ? rows.at(-1)!.id : null,
    };
  }

  /** Sends a `webhook.test` event to this endpoint only (even a disabled one's test waits for enable). */
  async test(id: number): Promise<WebhookDelivery> {
    const endpoint = await this.#endpoint(id);
    const row = await this.#store.addWebhookDelivery(id, {
      webhook_id: `msg_${randomBytes(16).toString('hex')}`,
      type: WEBHOOK_TEST_TYPE,
      at: this.#now(),
      data: JSON.stringify({
        endpoint_id: id,
        message: 'A test from node-daemon: this endpoint receives its events.',
        description: endpoint.description,
      }),
    });
    this.#poke();
    return deliveryView({ ...row, attempts_list: [] });
  }

  /** Replays a delivered or failed delivery: pending again, due now, its schedule started over. */
  async retry(id: number, deliveryId: number): Promise<WebhookDelivery> {
    await this.#endpoint(id);
    const delivery = await this.#store.getWebhookDelivery(deliveryId);
    if (!delivery || delivery.endpoint_id !== id) {
      throw new ProblemError(
        'webhook_delivery_not_found',
        `endpoint ${id} has no delivery ${deliveryId}: node-daemon webhooks deliveries ${id} lists them`,
      );
    }
    if (!(await this.#store.retryWebhookDelivery(deliveryId))) {
      throw new ProblemError(
        'webhook_delivery_pending',
        `delivery ${deliveryId} is still pending: it goes at its next attempt; replay it once it has failed or been delivered`,
      );
    }
    this.#poke();
    const [row] = (await this.#store.listWebhookDeliveries(id, { before: deliveryId + 1, limit: 1 })).filter(
      (d) => d.id === deliveryId,
    );
    return deliveryView(row ?? { ...delivery, attempts_list: [] });
  }
}

/** The sender's settings; tests shorten the schedule and the timeout, and may give a clock. */
export interface WebhookSenderOptions {
  store: WebhookStore & Pick<NodeEventStore, 'onNodeEvents'>;
  log: Logger;
  metrics?: Metrics | undefined;
  /** The engine: on SQLite this process is the store's only user, so any lease left is a dead process's. */
  engine: 'sqlite' | 'postgres';
  now?: () => number;
  scheduleMs?: readonly number[];
  timeoutMs?: number;
  disableAfterMs?: number;
  concurrency?: number;
  /** How long an endpoint's lease lasts (longer than an attempt can take). */
  leaseMs?: number;
  /** The longest the sender sleeps without a wake-up (other daemons' deliveries and leases). */
  idlePollMs?: number;
  /** How long delivered and failed deliveries are kept (the daemon: --events-retention-days). */
  retentionMs?: number;
}

/** What an attempt got back. */
interface Answer {
  status: number | null;
  error: string | null;
  retryAfterMs: number | undefined;
}

/** Retry-After as seconds or an HTTP date, in ms from now; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.min(Math.max(0, date - now), MAX_RETRY_AFTER_MS);
}

/**
 * Delivers the outbox: woken when node events commit (and by the routes), it leases endpoints with a due
 * delivery and sends each one's oldest, at most `concurrency` at a time, off the API's and the indexer's
 * path. One delivery in flight per endpoint, so each endpoint's first attempts go in event order.
 */
export class WebhookSender {
  readonly #o: Required<Omit<WebhookSenderOptions, 'metrics'>> & { metrics: Metrics | undefined };
  readonly #owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  readonly #stop = new AbortController();
  readonly #sends = new Set<Promise<void>>();
  #off: (() => void) | undefined;
  #pumping = false;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #statsTimer: NodeJS.Timeout | undefined;
  #started: Promise<void> | undefined;

  constructor(options: WebhookSenderOptions) {
    this.#o = {
      now: Date.now,
      scheduleMs: WEBHOOK_SCHEDULE_MS,
      timeoutMs: WEBHOOK_TIMEOUT_MS,
      disableAfterMs: WEBHOOK_DISABLE_AFTER_MS,
      concurrency: WEBHOOK_CONCURRENCY,
      leaseMs: WEBHOOK_TIMEOUT_MS + 5_000,
      idlePollMs: 30_000,
      retentionMs: 30 * 24 * 3600_000,
      ...options,
      metrics: options.metrics,
    };
  }

  /** Starts: pending deliveries (a restart's too) go out, and every commit of node events wakes it. */
  start(): void {
    this.#started ??= (async () => {
      if (this.#o.engine === 'sqlite') {
        await this.#o.store.releaseWebhookLeases(null).catch((error: unknown) => {
          this.#o.log.warn({ err: error }, 'could not free the webhook leases of a previous run');
        });
      }
      if (this.#stop.signal.aborted) return;
      this.#off = this.#o.store.onNodeEvents(() => this.poke());
      let prunedAt = 0;
      this.#statsTimer = setInterval(() => {
        void this.#refreshStats();
        // Hourly: finished deliveries older than the retention go, as old node events do.
        if (this.#o.now() - prunedAt >= 3600_000) {
          prunedAt = this.#o.now();
          void this.#o.store.pruneWebhookDeliveries(prunedAt - this.#o.retentionMs).catch(() => undefined);
        }
      }, 5_000);
      this.#statsTimer.unref();
      this.poke();
    })();
  }

  /** Looks for due deliveries now (an event committed, a test or a replay was asked). */
  poke(): void {
    if (this.#stop.signal.aborted) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    void this.#pump();
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    clearTimeout(this.#timer);
    let wait = this.#o.idlePollMs;
    try {
      do {
        this.#again = false;
        while (this.#sends.size < this.#o.concurrency && !this.#stop.signal.aborted) {
          const now = this.#o.now();
          // A read first: a wake-up with nothing due (every event commit of a node with no endpoints)
          // costs no write transaction on the store's writer.
          const due = await this.#o.store.nextWebhookDue();
          if (due === null || due > now) break;
          const claimed = await this.#o.store.claimWebhookDeliveries(
            now,
            this.#o.concurrency - this.#sends.size,
            now + this.#o.leaseMs,
            this.#owner,
          );
          if (claimed.length === 0) break;
          for (const delivery of claimed) {
            const send: Promise<void> = this.#send(delivery).finally(() => {
              this.#sends.delete(send);
              this.poke();
            });
            this.#sends.add(send);
          }
        }
      } while (this.#again && !this.#stop.signal.aborted);
      const next = await this.#o.store.nextWebhookDue();
      // A delivery due now but not claimed waits for its endpoint's attempt in flight, whose end wakes the
      // sender; looking again in a second keeps one leased by another daemon from making a busy loop.
      if (next !== null) {
        const left = next - this.#o.now();
        wait = Math.min(this.#o.idlePollMs, left > 0 ? left : 1000);
      }
      void this.#refreshStats();
    } catch (error) {
      if (this.#stop.signal.aborted) return;
      this.#o.log.warn({ err: error }, 'webhook deliveries could not be claimed; retrying in 5 s');
      wait = 5000;
    } finally {
      this.#pumping = false;
    }
    if (this.#stop.signal.aborted) return;
    if (this.#again) {
      this.poke();
      return;
    }
    this.#timer = setTimeout(() => this.poke(), wait);
    this.#timer.unref();
  }

  async #send(d: ClaimedDelivery): Promise<void> {
    const startedAt = this.#o.now();
    const timestamp = Math.floor(startedAt / 1000);
    const body = webhookBody(d);
    const started = performance.now();
    const answer = await this.#post(d, timestamp, body);
    const duration = Math.round(performance.now() - started);
    // Stopping: the attempt is not recorded, and the delivery goes again after the restart (same id).
    if (this.#stop.signal.aborted) return;
    const outcome = this.#outcome(d, startedAt, duration, answer);
    const label =
      outcome.state === 'delivered' ? 'delivered' : outcome.state === 'pending' ? 'retried' : 'failed';
    try {
      await this.#o.store.recordWebhookAttempt(d, outcome, this.#owner);
      this.#o.metrics?.webhookDeliveries.inc({ outcome: label });
      if (label !== 'delivered') {
        this.#o.log.info(
          {
            endpoint: d.endpoint_id,
            to: webhookOrigin(d.url),
            delivery: d.id,
            status: answer.status,
            error: answer.error,
            outcome: label,
          },
          'webhook delivery failed',
        );
      }
      if (outcome.disable) {
        this.#o.log.warn(
          { endpoint: d.endpoint_id, to: webhookOrigin(d.url), reason: outcome.disable.reason },
          'webhook endpoint disabled',
        );
      }
    } catch (error) {
      this.#o.log.warn(
        { err: error, delivery: d.id },
        'could not record a webhook attempt; it will be sent again',
      );
    }
  }

  /**
   * One POST on a connection of its own (no keep-alive: a receiver that hangs keeps nothing of ours after
   * the attempt), destroyed at the timeout or when the sender stops.
   */
  #post(d: ClaimedDelivery, timestamp: number, body: string): Promise<Answer> {
    return new Promise<Answer>((resolve) => {
      let settled = false;
      const done = (answer: Answer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.#stop.signal.removeEventListener('abort', onStop);
        resolve(answer);
      };
      const fail = (error: string) => done({ status: null, error, retryAfterMs: undefined });
      let request: ClientRequest;
      try {
        const url = new URL(d.url);
        request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
          method: 'POST',
          agent: false,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': `node-daemon/${VERSION}`,
            'webhook-id': d.webhook_id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signWebhook(d.secret, d.webhook_id, timestamp, body),
          },
        });
      } catch (error) {
        fail(describe(error));
        return;
      }
      const timer = setTimeout(() => {
        fail(`no answer within ${this.#o.timeoutMs / 1000} s`);
        request.destroy();
      }, this.#o.timeoutMs);
      const onStop = () => {
        fail('stopped');
        request.destroy();
      };
      this.#stop.signal.addEventListener('abort', onStop, { once: true });
      request.on('error', (error) => fail(describe(error)));
      request.on('response', (response) => {
        // The body is not read: only the status counts.
        response.resume();
        const status = response.statusCode ?? 0;
        const limited = status === 429 || status === 503;
        const header = response.headers['retry-after'];
        done({
          status,
          error: null,
          retryAfterMs: limited
            ? retryAfterMs(typeof header === 'string' ? header : null, this.#o.now())
            : undefined,
        });
        response.on('end', () => request.destroy());
      });
      request.end(body);
    });
  }

  /** What an attempt's answer makes of the delivery and its endpoint. */
  #outcome(d: ClaimedDelivery, at: number, duration: number, answer: Answer): WebhookAttemptOutcome {
    const attempt = { at, status: answer.status, error: answer.error, duration_ms: duration };
    if (answer.status !== null && answer.status >= 200 && answer.status < 300) {
      return {
        attempt,
        state: 'delivered',
        step: d.step,
        next_attempt_at: d.next_attempt_at,
        failing_since: null,
      };
    }
    const failingSince = d.failing_since ?? at;
    const disableEvent = (reason: string) => ({
      reason,
      event: {
        type: 'webhook_endpoint_disabled' as const,
        node_small_id: null,
        at,
        data: { endpoint_id: d.endpoint_id, origin: webhookOrigin(d.url), reason },
      },
    });
    if (answer.status === 410) {
      return {
        attempt,
        state: 'failed',
        step: d.step,
        next_attempt_at: d.next_attempt_at,
        failing_since: failingSince,
        disable: disableEvent('the receiver answered 410 Gone'),
      };
    }
    const step = d.step + 1;
    const more = step < this.#o.scheduleMs.length;
    const disable =
      at - failingSince >= this.#o.disableAfterMs
        ? disableEvent(`its deliveries failed since ${new Date(failingSince).toISOString()}`)
        : undefined;
    return {
      attempt,
      state: more ? 'pending' : 'failed',
      step,
      next_attempt_at: more ? at + (answer.retryAfterMs ?? this.#o.scheduleMs[step]!) : d.next_attempt_at,
      failing_since: failingSince,
      disable,
    };
  }

  async #refreshStats(): Promise<void> {
    const metrics = this.#o.metrics;
    if (!metrics || this.#stop.signal.aborted) return;
    try {
      const stats = await this.#o.store.webhookStats();
      metrics.webhookPending.set(stats.pending);
      metrics.webhookOldestPendingAge.set(
        stats.oldest_pending_at === null ? 0 : Math.max(0, (this.#o.now() - stats.oldest_pending_at) / 1000),
      );
      metrics.webhookEndpointsDisabled.set(stats.disabled_endpoints);
    } catch {
      // The next refresh tries again; a store that is closing has nothing to report.
    }
  }

  /** Stops: attempts in flight are abandoned unrecorded (they go again, with their ids, after a restart). */
  async stop(): Promise<void> {
    this.#stop.abort();
    clearTimeout(this.#timer);
    clearInterval(this.#statsTimer);
    this.#off?.();
    await this.#started;
    await Promise.allSettled([...this.#sends]);
    // Their endpoints' leases end now rather than when they run out (another daemon may send them).
    await this.#o.store.releaseWebhookLeases(this.#owner).catch(() => undefined);
  }
}

function describe(error: unknown): string {
  const e = error as { code?: string; message?: string };
  const text =
    e.code && e.message && !e.message.startsWith(e.code)
      ? `${e.code}: ${e.message}`
      : String(e.message ?? error);
  return text.slice(0, 300);
}
