import type { Logger } from 'pino';
import { type App, buildApp } from './app.ts';
import type { Config } from './config.ts';
import { CliError, ExitCode } from './internal/exit-codes.ts';
import { openStore } from './store/open.ts';
import type { Store } from './store/store.ts';

export interface Daemon {
  readonly app: App;
  readonly store: Store;
  /** The address actually bound (the port is real even when 0 was asked for). */
  readonly url: string;
  /** Stops accepting, finishes in-flight requests, lets the indexer commit its page, closes the store. */
  close(): Promise<void>;
}

const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE:
    'the port is already in use; stop the other process or choose another port with --port or NODE_DAEMON_PORT',
  EADDRNOTAVAIL: "the address is not one of this machine's; choose another with --host or NODE_DAEMON_HOST",
  EACCES: 'permission denied (ports below 1024 need privileges); choose another port with --port',
};

/** Opens the store, builds the app and listens. Throws CliError with one line when it cannot. */
export async function startDaemon(config: Config, logger: Logger): Promise<Daemon> {
  const store = await openStore(config);
  let app: App;
  try {
    app = await buildApp({ config, store, logger });
    logger.info({ network: config.network, store: store.location }, 'store opened');
    await app.listen({
      host: config.host,
      port: config.port,
      listenTextResolver: (address) => `node-daemon listening on ${address}`,
    });
  } catch (error) {
    await store.close();
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
    store,
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
        await store.close();
      })();
      return closing;
    },
  };
}
