import type { Config } from '../config.ts';
import { CliError } from '../internal/exit-codes.ts';
import { StoreError } from './errors.ts';
import { SqliteStore } from './sqlite.ts';
import type { Store } from './store.ts';

/** Opens the configured store and applies its pending migrations. Throws CliError with one line. */
export async function openStore(config: Pick<Config, 'dataDir' | 'databaseUrl'>): Promise<Store> {
  if (config.databaseUrl !== undefined) {
    throw new CliError(
      'DATABASE_URL (or --database-url) is set, but this version of node-daemon has only the embedded SQLite store; unset it',
    );
  }
  try {
    return new SqliteStore({ dataDir: config.dataDir });
  } catch (error) {
    if (error instanceof StoreError)
      throw new CliError(`cannot open the store in ${config.dataDir}: ${error.message}`, 1);
    if ((error as NodeJS.ErrnoException).code === 'EACCES') {
      throw new CliError(`cannot create the data directory ${config.dataDir}: permission denied`, 1);
    }
    throw error;
  }
}
