import { mkdirSync } from 'node:fs';
import type { Logger } from 'pino';
import { type App, buildApp } from './app.ts';
import type { Chain } from './chain/chain.ts';
import { DevNetwork } from './chain/dev/dev-network.ts';
import { instrumentChain } from './chain/instrument.ts';
import { loadOrCreateSigner } from './chain/signer.ts';
import { KeystoreError } from './chain/sui/keystore.ts';
import type { SuiSettings } from './chain/sui/settings.ts';
import { SuiConfigError, SuiNetwork } from './chain/sui/sui-network.ts';
import type { Config, DevSettings } from './config.ts';
import { loadOrCreateToken } from './http/security.ts';
import { LiveIndexer } from './indexer/run.ts';
import { CliError, ExitCode } from './internal/exit-codes.ts';
import { createMetrics, type Metrics } from './internal/metrics.ts';
import { Mutex } from './internal/mutex.ts';
import { isLoopback } from './internal/net.ts';
import { Autopilot } from './operations/autopilot.ts';
import { startDemo } from './operations/demo.ts';
import { DevActors } from './operations/dev-actors.ts';
import { EventHub } from './operations/event-stream.ts';
import { watchReadiness } from './operations/readiness.ts';
import { Submitter } from './operations/submit.ts';
import { Writes } from './operations/writes.ts';
import { instrumentStore } from './store/instrument.ts';
import { openStore } from './store/open.ts';
import type { Store } from './store/store.ts';

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
  /** Stops the indexer after its current page, then closes the chain and the store. */
  close(): Promise<void>;
}

/** Opens the store and, on a chain network, the chain with its indexer and the write operations. */
export async function openServices(config: Config, logger: Logger): Promise<Services> {
  const metrics = createMetrics();
  const store = instrumentStore(await openStore(config), metrics);
  const events = new EventHub({
    store,
    log: logger.child({ component: 'events' }),
    settings: { retentionMs: config.eventsRetentionDays * 24 * 3600 * 1000 },
  });
  if (config.network === 'none') {
    const none = {
      chain: undefined,
      dev: undefined,
      indexer: undefined,
      writes: undefined,
      devActors: undefined,
      autopilot: undefined,
    };
    return {
      metrics,
      store,
      ...none,
      events,
      close: async () => {
        events.close();
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
  const writes = new Writes({ chain, store, submitter, lock: new Mutex() });
  const stopDemo =
    dev && config.network === 'dev' && config.dev.demo
      ? await startDemo({ dev, store, writes, indexer, log: logger.child({ component: 'demo' }) })
      : () => {};
  const autopilot = new Autopilot({
    settings: config.autopilot,
    chain,
    store,
    writes,
    indexer,
    metrics,
    log: logger.child({ component: 'autopilot' }),
  });
  const stopUsage = writes.onUsage(() => autopilot.poke('usage'));
  autopilot.start();
  const stopReadiness = watchReadiness({
    store,
    indexer,
    chain: raw,
    maxLag: config.readyMaxLag,
    log: logger.child({ component: 'events' }),
  });
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
    async close() {
      stopDemo();
      stopUsage();
      stopReadiness();
      events.close();
      await autopilot.stop();
      unsubscribe();
      await indexer.stop();
      await raw.close();
      await store.close();
    },
  };
}

function openDevNetwork(dataDir: string, settings: DevSettings, logger: Logger): DevNetwork {
  try {
    const { signer, created, file } = loadOrCreateSigner(dataDir);
    if (created) logger.info({ address: signer.address, file }, 'created the signer key');
    return DevNetwork.open({
      dataDir,
      signerAddress: signer.address,
      samplingProbability: settings.samplingProbability,
      attestationNodes: settings.attestationNodes,
    });
  } catch (error) {
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
    security: {
      auth: config.auth,
      tokenFile: token.file,
      boundHost: config.host,
      allowedHosts: config.allowedHosts,
      maxInFlight: config.maxInFlight,
    },
  });
}

/** Opens the services, builds the app and listens. Throws CliError with one line when it cannot. */
export async function startDaemon(config: Config, logger: Logger): Promise<Daemon> {
  const services = await openServices(config, logger);
  let app: App;
  try {
    app = await buildDaemonApp(config, services, logger);
    if (!isLoopback(config.host)) {
      logger.warn(
        { host: config.host },
        'listening beyond loopback: every request needs the API token (--auth all)',
      );
    }
    logger.info(
      { network: config.network, store: services.store.location, signer: services.chain?.signerAddress },
      'store opened',
    );
    await app.listen({
      host: config.host,
      port: config.port,
      listenTextResolver: (address) => `node-daemon listening on ${address}`,
    });
  } catch (error) {
    await services.close();
    const code = (error as NodeJS.ErrnoException).code ?? '';
    const reason = LISTEN_ERRORS[code];
    if (reason)
      throw new CliError(`cannot listen on ${config.host}:${config.port}: ${reason}`, ExitCode.listen);
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;

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
      })();
      return closing;
    },
  };
}
