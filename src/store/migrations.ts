import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { StoreError } from './errors.ts';

/**
 * Migrations are numbered SQL files per engine (src/store/<engine>/migrations/0001-name.sql), append-only:
 * each applied file's checksum is recorded, and a store whose applied migrations differ from the shipped
 * ones, or include one this version does not know, is refused. Each engine runs them under its own lock.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export interface AppliedMigration {
  version: number;
  name: string;
  checksum: string;
}

export function loadMigrations(dir: URL): Migration[] {
  return readdirSync(dir)
    .filter((name) => /^\d{4}-.+\.sql$/.test(name))
    .sort()
    .map((name) => {
      const sql = readFileSync(new URL(name, dir), 'utf8');
      return {
        version: Number(name.slice(0, 4)),
        name,
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    });
}

/** Refuses applied migrations unknown to this version, or different from the shipped ones. */
export function checkApplied(applied: readonly AppliedMigration[], shipped: readonly Migration[]): void {
  const byVersion = new Map(shipped.map((m) => [m.version, m]));
  for (const row of applied) {
    const migration = byVersion.get(row.version);
    if (!migration) {
      throw new StoreError(
        'store_too_new',
        `the store was migrated by a newer node-daemon (migration ${row.name}); upgrade node-daemon`,
        false,
      );
    }
    if (migration.checksum !== row.checksum) {
      throw new StoreError(
        'store_migration_changed',
        `migration ${migration.name} differs from the one applied to this store; migrations are append-only`,
        false,
      );
    }
  }
}
