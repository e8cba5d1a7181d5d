import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

/** The file a running daemon keeps locked in its data dir. */
export const LOCK_FILE = 'daemon.lock';

/** SQLite's result code for a lock another connection holds. */
const SQLITE_BUSY = 5;

/** How long a start waits for the lock: enough for a daemon that is stopping to let it go. */
const WAIT_MS = 250;

/**
 * Why a data dir could not be created or written, in a few words, for the file-system errors that say so
 * (a directory of another user, a read-only file system, a path through a file); undefined for others.
 */
export function dataDirFailure(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return 'permission denied';
  if (code === 'ENOTDIR' || code === 'EEXIST') return 'a part of that path is a file, not a directory';
  return undefined;
}

/**
 * Takes the connection's database file for the connection's lifetime (exclusive locking mode: the lock taken
 * by the first write is never let go until it closes). False when another connection holds the file (past
 * the connection's busy timeout); other errors are thrown. The dev network's ledger and the data dir's lock
 * file both keep out a second process this way.
 */
export function holdExclusively(db: DatabaseSync): boolean {
  db.exec('PRAGMA locking_mode = EXCLUSIVE');
  try {
    db.exec('BEGIN EXCLUSIVE');
    db.exec('COMMIT');
    return true;
  } catch (error) {
    if ((error as { errcode?: number }).errcode === SQLITE_BUSY) return false;
    throw error;
  }
}

/**
 * One daemon per data dir, whatever its network and store. Two daemons on one data dir would both follow the
 * chain into one SQLite file, both run an autopilot that spends the signer's gas on the same stacks, and
 * overwrite each other's daemon.json. The lock is SQLite's own (an fcntl lock on `daemon.lock`, taken with
 * exclusive locking mode and held by one open connection), so the kernel drops it when the process ends,
 * however it ends: a crash leaves nothing to clean up. The file stays when the lock is let go: removing it
 * would let a third process lock a new file while a second still waits on the old one.
 */
export class DataDirLock {
  readonly #db: DatabaseSync;

  private constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /** Takes the data dir's lock (creating the dir and the file when missing); undefined when another holds it. */
  static take(dataDir: string): DataDirLock | undefined {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const db = new DatabaseSync(join(dataDir, LOCK_FILE), { timeout: WAIT_MS });
    let held = false;
    try {
      held = holdExclusively(db);
    } finally {
      if (!held) db.close();
    }
    return held ? new DataDirLock(db) : undefined;
  }

  /** Lets the data dir go (once; later calls do nothing). */
  release(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}
