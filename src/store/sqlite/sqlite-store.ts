import type { Coordination, Store } from '../store.ts';
import { sqliteAccess } from './access.ts';
import { sqliteAutopilot } from './autopilot.ts';
import { sqliteConditions } from './conditions.ts';
import { SqliteDatabase, type SqliteStoreOptions } from './database.ts';
import { sqliteIdempotency } from './idempotency.ts';
import { sqliteIndexer } from './indexer.ts';
import { sqliteNodeEvents } from './node-events.ts';
import { sqliteReads } from './reads.ts';
import { sqliteUsage } from './usage.ts';
import { sqliteWebhooks } from './webhooks.ts';

export { SQLITE_FILE, type SqliteStoreOptions } from './database.ts';
export { AUTOPILOT_QUERIES } from './statements.ts';

/** Every role of the store (store.ts), as this engine implements them. */
type Roles = Omit<Store, 'engine' | 'location'>;

/**
 * The embedded store: one file in the data directory, WAL mode (database.ts). Its roles are written one
 * file each (indexer, reads, usage, autopilot, node events, idempotency) over the one database.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the constructor assigns a checked, whole Roles.
export class SqliteStore {
  readonly engine = 'sqlite' as const;
  readonly location: string;
  readonly migrationsApplied: number;
  /** How the writer's commits reach the disk, as SQLite reports it back (SqliteStoreOptions.synchronous). */
  readonly synchronous: 'normal' | 'full';

  constructor(options: SqliteStoreOptions) {
    const db = new SqliteDatabase(options);
    this.location = db.location;
    this.migrationsApplied = db.migrationsApplied;
    this.synchronous = db.synchronous;
    const roles: Roles = {
      ...sqliteIndexer(db),
      ...sqliteReads(db),
      ...sqliteUsage(db),
      ...sqliteAutopilot(db),
      ...sqliteNodeEvents(db),
      ...sqliteConditions(db),
      ...sqliteIdempotency(db),
      ...sqliteAccess(db),
      ...sqliteWebhooks(db),
      ...coordination(db),
      close: () => db.close(),
    };
    Object.assign(this, roles);
  }
}

export interface SqliteStore extends Roles {}

/**
 * One daemon per SQLite file is the supported setup (the data directory is locked), so a lease is always
 * granted and a lock has no one to wait for. A second process would still be correct (pages are
 * transactions and events are de-duplicated), only wasteful.
 */
function coordination(db: SqliteDatabase): Coordination {
  return {
    tryLease: async () => {
      db.usable();
      return { lost: new Promise<void>(() => undefined), release: async () => undefined };
    },
    withLock: (_name, fn) => fn(),
  };
}
