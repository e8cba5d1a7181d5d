import type { Logger } from 'pino';
import { dataDirFailure } from '../internal/data-dir-lock.ts';
import { CliError } from '../internal/exit-codes.ts';
import { StoreError } from './errors.ts';
import { describeUrl } from './postgres/migrations.ts';
import { PostgresStore } from './postgres/postgres-store.ts';
import { SqliteStore, type SqliteStoreOptions } from './sqlite/sqlite-store.ts';
import type { Store } from './store.ts';

/** Opens the configured store and applies its pending migrations. Throws CliError with one line. */
export async function openStore(
  config: {
    dataDir: string;
    databaseUrl: string | undefined;
    databaseSchema?: string;
    sqliteSynchronous?: SqliteStoreOptions['synchronous'];
  },
  log?: Pick<Logger, 'info'>,
): Promise<Store> {
  if (config.databaseUrl !== undefined) {
    const store = await openPostgres(config.databaseUrl, config.databaseSchema);
    if (store.movedFromPublic.length > 0) {
      log?.info(
        { schema: store.schema, moved: store.movedFromPublic },
        `moved the store from schema public, where an earlier version kept it, into schema ${store.schema}`,
      );
    }
    return store;
  }
  try {
    return new SqliteStore({ dataDir: config.dataDir, synchronous: config.sqliteSynchronous });
  } catch (error) {
    if (error instanceof StoreError)
      throw new CliError(`cannot open the store in ${config.dataDir}: ${error.message}`, 1);
    const reason = dataDirFailure(error);
    if (reason !== undefined)
      throw new CliError(`cannot create the data directory ${config.dataDir}: ${reason}`, 1);
    throw error;
  }
}

async function openPostgres(url: string, schema: string | undefined): Promise<PostgresStore> {
  try {
    return await PostgresStore.open({ url, ...(schema === undefined ? {} : { schema }) });
  } catch (error) {
    const { host, database } = describeUrl(url);
    const { code, message } = error as { code?: unknown; message?: unknown };
    let reason = typeof message === 'string' && message !== '' ? message : String(code ?? error);
    // Driver messages do not carry the password; this makes sure of it, and keeps the message one line.
    const password = passwordOf(url);
    if (password.length >= 4) reason = reason.replaceAll(password, '***');
    reason = reason.replace(/\s*\n\s*/g, ' ');
    throw new CliError(`cannot open the PostgreSQL store at ${host}, database ${database}: ${reason}`, 1);
  }
}

function passwordOf(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return '';
  }
}
