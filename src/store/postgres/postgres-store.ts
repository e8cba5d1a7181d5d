import type { Store } from '../store.ts';
import { postgresAccess } from './access.ts';
import { postgresAutopilot } from './autopilot.ts';
import { postgresConditions } from './conditions.ts';
import { postgresCoordination } from './coordination.ts';
import { PostgresDatabase, type PostgresStoreOptions } from './database.ts';
import { postgresIdempotency } from './idempotency.ts';
import { postgresIndexer } from './indexer.ts';
import { postgresNodeEvents } from './node-events.ts';
import { postgresReads } from './reads.ts';
import { postgresUsage } from './usage.ts';
import { postgresWebhooks } from './webhooks.ts';

export type { PostgresStoreOptions } from './database.ts';
export { AUTOPILOT_QUERIES, LIST_QUERIES, NODE_LIST_QUERIES } from './statements.ts';

/** Every role of the store (store.ts), as this engine implements them. */
type Roles = Omit<Store, 'engine' | 'location'>;

/**
 * The PostgreSQL store, for daemons that share one database (database.ts). Its roles are written one file
 * each (indexer, reads, usage, autopilot, node events, idempotency, coordination) over the one database.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the constructor assigns a checked, whole Roles.
export class PostgresStore {
  readonly engine = 'postgres' as const;
  readonly location: string;
  /** How many migrations this open applied (0 when the database was up to date). */
  readonly migrationsApplied: number;
  /** The objects this open moved into its schema from public, where an earlier version kept them. */
  readonly movedFromPublic: readonly string[];
  /** The schema that holds its tables. */
  readonly schema: string;

  private constructor(db: PostgresDatabase) {
    this.location = db.location;
    this.migrationsApplied = db.migrationsApplied;
    this.movedFromPublic = db.movedFromPublic;
    this.schema = db.schema;
    const roles: Roles = {
      ...postgresIndexer(db),
      ...postgresReads(db),
      ...postgresUsage(db),
      ...postgresAutopilot(db),
      ...postgresNodeEvents(db),
      ...postgresConditions(db),
      ...postgresIdempotency(db),
      ...postgresAccess(db),
      ...postgresWebhooks(db),
      ...postgresCoordination(db),
      close: () => db.close(),
    };
    Object.assign(this, roles);
  }

  /** Connects, applies the pending migrations (under the migration lock) and returns the store. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    return new PostgresStore(await PostgresDatabase.open(options));
  }
}

export interface PostgresStore extends Roles {}
