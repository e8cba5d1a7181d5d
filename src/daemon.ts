import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { type App, buildApp } from './app.ts';
import type { Chain } from './chain/chain.ts';
import { DevNetwork } from './chain/dev/dev-network.ts';
import { LedgerBusyError } from './chain/dev/ledger.ts';
import { instrumentChain } from './chain/instrument.ts';
import { loadOrCreateSigner } from './chain/signer.ts';
import { KeystoreError } from './chain/sui/keystore.ts';
import type { SuiSettings } from './chain/sui/settings.ts';
import { SuiConfigError, SuiNetwork } from './chain/sui/sui-network.ts';
import type { Config, DevSettings } from './config.ts';
import { loadOrCreateToken } from './http/security.ts';
import { LiveIndexer } from './indexer/run.ts';
import { DataDirLock, dataDirFailure, LOCK_FILE } from './internal/data-dir-lock.ts';
import { CliError, ExitCode } from './internal/exit-codes.ts';
import { createMetrics, type Metrics } from './internal/metrics.ts';
import { Mutex } from './internal/mutex.ts';
import { isLoopback } from './internal/net.ts';
import { VERSION } from './internal/version.ts';
import { Autopilot } from './operations/autopilot.ts';
import { Conditions, ConditionWatch } from './operations/conditions.ts';
import { startDemo } from './operations/demo.ts';
import { DevActors } from './operations/dev-actors.ts';
import { EventHub } from './operations/event-stream.ts';
import { ownNodes } from './operations/own-nodes.ts';
import { Submitter } from './operations/submit.ts';
import { WebhookSender, Webhooks } from './operations/webhooks.ts';
import { Writes } from './operations/writes.ts';
import { ERRORS, PROBLEM_TYPE_PREFIX } from './problems/catalog.ts';
import { instrumentStore } from './store/instrument.ts';
import { openStore } from './store/open.ts';
import { redactUrl } from './store/postgres/migrations.ts';
import type { Store } from './store/store.ts';
import { AtomaState } from './usage/atoma-state.ts';
import { UsageMirror } from './usage/mirror.ts';

/** How long a write waits for its transaction's events to be indexed before answering anyway. */
export const INDEX_WAIT_MS = 5000;

/** Everything the daemon runs besides HTTP: the store, and on a chain network the chain, indexer and writes. */
export interface Services {
  readonly metrics: Metrics;
  readonly store: Store;
  readonly chain: Chain | undefined;
  readonly dev: DevNetwork | undefined;
  readonly indexer: LiveIndexer | undefined;
  readonly writes: Writes | undefined;
  readonly devActors: DevActors | undefined;
  /** The autopilot (mode off does nothing); absent on network none. */
  readonly autopilot: Autopilot | undefined;
  /** The live node events (GET /events). */
  readonly events: EventHub;
  /** The usage source (--usage-source atoma-state), when configured. */
  readonly usageSource: UsageMirror | undefined;
  /** The conditions the daemon checks itself (the indexer, the signer's gas); absent on network none. */
  readonly conditions: ConditionWatch | undefined;
  /** The webhook endpoints; their sender runs while the services are open (docs/WEBHOOKS.md). */
  readonly webhooks: Webhooks;
  /** Stops the indexer after its current page, then closes the chain and the store. */
  close(): Promise<void>;
}

/** Opens the store and, on a chain network, the chain with its indexer and the write operations. */
export async function openServices(config: Config, logger: Logger): Promise<Services> {
  const metrics = createMetrics();
  const store = instrumentStore(await openStore(config, logger.child({ component: 'store' })), metrics);
  const events = new EventHub({
    store,
    log: logger.child({ component: 'events' }),
    settings: { retentionMs: config.eventsRetentionDays * 24 * 3600 * 1000 },
  });
  // The webhooks' sender: woken by every commit of node events, off the API's and the indexer's path.
  const webhookSender = new WebhookSender({
    store,
    engine: store.engine,
    metrics,
    log: logger.child({ component: 'webhooks' }),
    retentionMs: config.eventsRetentionDays * 24 * 3600 * 1000,
  });
  const webhooks = new Webhooks({ store, poke: () => webhookSender.poke() });
  webhookSender.start();
  if (config.network === 'none') {
    const none = {
      chain: undefined,
      dev: undefined,
      indexer: undefined,
      writes: undefined,
      devActors: undefined,
      autopilot: undefined,
      conditions: undefined,
    };
    const conditions = new Conditions({ store, log: logger.child({ component: 'conditions' }) });
    const usageSource = startUsageSource(config, store, metrics, logger, conditions, undefined, undefined);
    return {
      metrics,
      store,
      ...none,
      events,
      usageSource,
      webhooks,
      close: async () => {
        await usageSource?.stop();
        events.close();
        await webhookSender.stop();
        await store.close();
      },
    };
  }
  let raw: Chain;
  let dev: DevNetwork | undefined;
  try {
    if (config.network === 'dev') {
      dev = openDevNetwork(config.dataDir, config.dev, logger);
      raw = dev;
    } else {
      raw = await openSui(config.sui, logger);
    }
  } catch (error) {
    await webhookSender.stop();
    await store.close();
    throw error;
  }
  const indexer = new LiveIndexer(store, raw.events, logger.child({ component: 'indexer' }), {
    batchEvents: config.indexerBatchEvents,
    onCounts: (counts) => {
      for (const [outcome, n] of Object.entries(counts)) if (n > 0) metrics.indexerEvents.inc({ outcome }, n);
    },
    onError: () => metrics.indexerErrors.inc(),
  });
  const unsubscribe = raw.onNewEvents(() => indexer.wake());
  indexer.start();
  const chain = instrumentChain(raw, metrics);
  const submitter = new Submitter({
    indexer,
    indexWaitMs: INDEX_WAIT_MS,
    log: logger.child({ component: 'writes' }),
  });
  const writes = new Writes({
    chain,
    store,
    submitter,
    lock: new Mutex(),
    usageSource: config.usageSource.kind === 'none' ? undefined : config.usageSource.kind,
  });
  const stopDemo =
    dev && config.network === 'dev' && config.dev.demo
      ? await startDemo({ dev, store, writes, indexer, log: logger.child({ component: 'demo' }) })
      : () => {};
  // The usage source tells the autopilot of a change; the autopilot leaves atoma-node's own claims to it.
  let poke = () => {};
  const conditions = new Conditions({ store, log: logger.child({ component: 'conditions' }) });
  const usageSource = startUsageSource(config, store, metrics, logger, conditions, writes, () => poke());
  const autopilot = new Autopilot({
    settings: config.autopilot,
    conditions,
    chain,
    store,
    writes,
    indexer,
    metrics,
    log: logger.child({ component: 'autopilot' }),
    nodeClaims: usageSource,
  });
  poke = () => autopilot.poke('usage');
  // The store records the events of the operator's nodes and everyone's, not every node's: on a busy network
  // the others' would end --events-retention-days within minutes (docs/NODE-EVENTS.md, "Whose events").
  const scopeEvents = () =>
    ownNodes(config.nodeSmallIds, writes, true).then(
      (nodes) => store.scopeNodeEvents(nodes.length === 0 ? null : nodes),
      () => undefined,
    );
  const stopScope = writes.onBadges(() => void scopeEvents());
  await scopeEvents();
  const stopUsage = writes.onUsage(() => autopilot.poke('usage'));
  autopilot.start();
  const watch = new ConditionWatch({
    conditions,
    chain,
    indexer,
    maxLagSeconds: config.readyMaxLag,
    gasWarningMist: config.gasWarningMist,
    metrics,
    log: logger.child({ component: 'conditions' }),
  });
  watch.start();
  return {
    metrics,
    store,
    chain,
    dev,
    indexer,
    writes,
    devActors: dev && new DevActors({ dev, store, submitter }),
    autopilot,
    events,
    usageSource,
    conditions: watch,
    webhooks,
    async close() {
      stopDemo();
      stopUsage();
      stopScope();
      watch.stop();
      await usageSource?.stop();
      events.close();
      await autopilot.stop();
      unsubscribe();
      await indexer.stop();
      await raw.close();
      await webhookSender.stop();
      await store.close();
    },
  };
}

/**
 * The usage source, started, when one is configured: it follows the operator's nodes (the configured ones,
 * then the signer's badges), and tells the autopilot when a stack's usage moved.
 */
function startUsageSource(
  config: Config,
  store: Store,
  metrics: Metrics,
  logger: Logger,
  conditions: Conditions,
  writes: Writes | undefined,
  onChange: (() => void) | undefined,
): UsageMirror | undefined {
  const settings = config.usageSource;
  if (settings.kind === 'none') return undefined;
  const location = redactUrl(settings.url);
  const mirror = new UsageMirror({
    store,
    source: new AtomaState(settings.url),
    location,
    conditions,
    nodes: () => ownNodes(config.nodeSmallIds, writes, true),
    pollIntervalMs: settings.pollIntervalMs,
    log: logger.child({ component: 'usage-source' }),
    metrics,
    onChange,
  });
  mirror.start();
  return mirror;
}

function openDevNetwork(dataDir: string, settings: DevSettings, logger: Logger): DevNetwork {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const { signer, created, file } = loadOrCreateSigner(dataDir);
    if (created) logger.info({ address: signer.address, file }, 'created the signer key');
    return DevNetwork.open({
      dataDir,
      signerAddress: signer.address,
      samplingProbability: settings.samplingProbability,
      attestationNodes: settings.attestationNodes,
    });
  } catch (error) {
    if (error instanceof LedgerBusyError) throw new CliError(dataDirInUse(dataDir), ExitCode.listen);
    throw new CliError(
      `cannot open the dev network in ${dataDir}: ${(error as Error).message}`,
      ExitCode.failure,
    );
  }
}

/**
 * Opens the Sui adapter. A setting it cannot use is a usage error; an unreachable fullnode is not: the
 * adapter opens without it, /ready says so, and it connects once the fullnode answers.
 */
async function openSui(settings: SuiSettings, logger: Logger): Promise<SuiNetwork> {
  try {
    return await SuiNetwork.open(settings, logger.child({ component: 'sui' }));
  } catch (error) {
    if (error instanceof SuiConfigError || error instanceof KeystoreError) throw new CliError(error.message);
    throw error;
  }
}

export interface Daemon {
  readonly app: App;
  readonly services: Services;
  /** The address actually bound (the port is real even when 0 was asked for). */
  readonly url: string;
  /** Stops accepting, finishes in-flight requests, lets the indexer commit its page, closes everything. */
  close(): Promise<void>;
}

const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE:
    'the port is already in use; stop the other process or choose another port with --port or NODE_DAEMON_PORT',
  EADDRNOTAVAIL: "the address is not one of this machine's; choose another with --host or NODE_DAEMON_HOST",
  EACCES: 'permission denied (ports below 1024 need privileges); choose another port with --port',
};

/** The HTTP app over the services, with the API token of the data directory (created on first start). */
export async function buildDaemonApp(config: Config, services: Services, logger: Logger): Promise<App> {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const token = loadOrCreateToken(config.dataDir);
  if (token.created) logger.info({ file: token.file }, 'created the API token');
  return buildApp({
    config,
    store: services.store,
    logger,
    metrics: services.metrics,
    indexer: services.indexer,
    chain: services.chain,
    writes: services.writes,
    dev: services.devActors,
    autopilot: services.autopilot,
    events: services.events,
    usageSource: services.usageSource,
    auditRetentionDays: config.auditRetentionDays,
    webhooks: services.webhooks,
    security: {
      auth: config.auth,
      tokenFile: token.file,
      boundHost: config.host,
      allowedHosts: config.allowedHosts,
      maxInFlight: config.maxInFlight,
    },
  });
}

/**
 * Opens the services, builds the app and listens. The address is taken first (holdAddress), so that a
 * port already in use stops the start before anything is created in the data dir. Throws CliError with
 * one line when it cannot: exit 3 when the address or the data dir belongs to another process, 130 when
 * `signal` aborts (SIGINT or SIGTERM) before it listens.
 */
export async function startDaemon(config: Config, logger: Logger, signal?: AbortSignal): Promise<Daemon> {
  const interrupted = () => {
    if (signal?.aborted) {
      throw new CliError(
        `interrupted by ${String(signal.reason)} while starting, before it listened: nothing was served`,
        ExitCode.interrupted,
      );
    }
  };
  interrupted();
  for (const notice of config.notices) logger.warn(notice);
  let hold: Server | undefined;
  try {
    hold = await holdAddress(config);
  } catch (error) {
    throw listenError(config, error);
  }
  let services: Services | undefined;
  let lock: DataDirLock | undefined;
  let app: App;
  try {
    interrupted();
    lock = takeDataDir(config.dataDir);
    services = await openServices(config, logger);
    writeOwner(config, null);
    interrupted();
    app = await buildDaemonApp(config, services, logger);
    if (!isLoopback(config.host)) {
      logger.warn(
        { host: config.host },
        'listening beyond loopback: every request needs the API token (--auth all)',
      );
    }
    logger.info(
      {
        network: config.network,
        store: services.store.location,
        ...(config.databaseUrl === undefined ? { sqlite_synchronous: config.sqliteSynchronous } : {}),
        signer: services.chain?.signerAddress,
      },
      'store opened',
    );
    interrupted();
    await release(hold);
    await app.listen({
      host: config.host,
      port: config.port,
      listenTextResolver: (address) => `node-daemon listening on ${address}`,
    });
  } catch (error) {
    await release(hold);
    await services?.close();
    if (services) removeOwner(config.dataDir);
    lock?.release();
    throw listenError(config, error);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  writeOwner(config, url);

  let closing: Promise<void> | undefined;
  return {
    app,
    services,
    url,
    close() {
      closing ??= (async () => {
        // app.close() stops accepting and waits for in-flight requests; a keep-alive connection whose
        // request finishes meanwhile becomes idle and is closed here rather than held open.
        const reaper = setInterval(() => app.server.closeIdleConnections(), 50);
        try {
          await app.close();
        } finally {
          clearInterval(reaper);
        }
        await services.close();
        removeOwner(config.dataDir);
        lock.release();
      })();
      return closing;
    },
  };
}

/** A listen failure as one line (exit 3) naming the address; any other error as it is. */
function listenError(config: Config, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  const reason = LISTEN_ERRORS[code];
  if (reason === undefined) return error;
  const where = `${config.host}:${config.port}`;
  const owner = code === 'EADDRINUSE' ? otherOwner(config.dataDir) : undefined;
  if (owner?.url != null && new URL(owner.url).port === String(config.port)) {
    return new CliError(
      `cannot listen on ${where}: node-daemon pid ${owner.pid} already runs on this data dir (${config.dataDir}) and listens on ${owner.url}; stop it first, or start this one with another --port and --data-dir`,
      ExitCode.listen,
    );
  }
  return new CliError(`cannot listen on ${where}: ${reason}`, ExitCode.listen);
}

/**
 * Takes the address before the daemon opens anything: a taken port then leaves a fresh data dir as it
 * was. Until the daemon listens, the holder answers every request 503 not_ready (retry in a second), so
 * that a client sees a daemon starting, not a connection refused or reset. With port 0 any free port
 * will do: the address is only checked.
 */
async function holdAddress(config: Config): Promise<Server | undefined> {
  const server = createServer((request, response) => {
    const { status, title } = ERRORS.not_ready;
    const body = JSON.stringify({
      type: `${PROBLEM_TYPE_PREFIX}not_ready`,
      title,
      status,
      code: 'not_ready',
      detail: 'node-daemon is starting; retry in a moment',
      instance: (request.url ?? '/').split('?')[0],
      request_id: randomUUID(),
    });
    response.writeHead(status, {
      'content-type': 'application/problem+json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'retry-after': '1',
      connection: 'close',
    });
    response.end(body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: config.host, port: config.port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  if (config.port !== 0) return server;
  await release(server);
  return undefined;
}

/** Closes the address holder and its connections, once. */
async function release(server: Server | undefined): Promise<void> {
  if (!server?.listening) return;
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** The file of the data dir that says which process runs a daemon on it and where it listens. */
export const OWNER_FILE = 'daemon.json';

/**
 * The owner record, `<data dir>/daemon.json`: written once the daemon holds its data dir, with its
 * address once it listens, removed when it stops. It only describes: the data dir's lock (daemon.lock,
 * data-dir-lock.ts) is what keeps a second daemon out, and the record names the holder in the refusal.
 */
export interface OwnerRecord {
  pid: number;
  /** Where it listens; null while it starts. */
  url: string | null;
  network: string;
  version: string;
  started_at: string;
}

function writeOwner(config: Config, url: string | null): void {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const record: OwnerRecord = {
    pid: process.pid,
    url,
    network: config.network,
    version: VERSION,
    started_at: new Date().toISOString(),
  };
  const file = join(config.dataDir, OWNER_FILE);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  renameSync(temporary, file);
}

/** The data dir's owner record, if there is a readable one. */
export function readOwner(dataDir: string): OwnerRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(join(dataDir, OWNER_FILE), 'utf8')) as Partial<OwnerRecord>;
    if (!Number.isInteger(record.pid) || (record.url !== null && typeof record.url !== 'string')) {
      return undefined;
    }
    return record as OwnerRecord;
  } catch {
    return undefined;
  }
}

/** Removes the owner record when it is this process's (another daemon may have written its own since). */
function removeOwner(dataDir: string): void {
  if (readOwner(dataDir)?.pid === process.pid) rmSync(join(dataDir, OWNER_FILE), { force: true });
}

/** The owner record of another process that is alive; a record left by a crash names a dead pid. */
function otherOwner(dataDir: string): OwnerRecord | undefined {
  const owner = readOwner(dataDir);
  if (owner === undefined || owner.pid === process.pid) return undefined;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  return owner;
}

/**
 * The data dir's lock (data-dir-lock.ts), or one line (exit 3): who holds it, or why the dir cannot be
 * created or written (a path through a file, a directory of another user).
 */
function takeDataDir(dataDir: string): DataDirLock {
  let lock: DataDirLock | undefined;
  try {
    lock = DataDirLock.take(dataDir);
  } catch (error) {
    const reason =
      dataDirFailure(error) ?? `cannot open ${join(dataDir, LOCK_FILE)} (${(error as Error).message})`;
    throw new CliError(
      `cannot use the data dir ${dataDir}: ${reason}; give --data-dir a directory this user can create and write`,
      ExitCode.listen,
    );
  }
  if (lock === undefined) throw new CliError(dataDirInUse(dataDir), ExitCode.listen);
  return lock;
}

/** Why the data dir cannot be this daemon's: its lock, or its dev network's ledger, is held by another process. */
function dataDirInUse(dataDir: string): string {
  const owner = otherOwner(dataDir);
  if (owner === undefined) {
    return `the data dir ${dataDir} is in use by another process (it holds ${LOCK_FILE} or the dev network's ledger); stop it first, or give this daemon another --data-dir`;
  }
  const where = owner.url === null ? 'still starting' : `listening on ${owner.url}`;
  return `the data dir ${dataDir} is in use by node-daemon pid ${owner.pid}, ${where}; stop it first, or give this daemon another --data-dir`;
}
