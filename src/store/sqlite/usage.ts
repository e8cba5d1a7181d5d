import { GroupCommit } from '../../internal/group-commit.ts';
import { mirrorChange, usageChange } from '../changes.ts';
import type { MirrorOutcome, UsageOutcome, UsageReport, UsageStore } from '../store.ts';
import type { SqliteDatabase } from './database.ts';
import { dec, enc, rows } from './u64.ts';

/** The usage reports, and the running hash of each stack's requests, on SQLite. */
export function sqliteUsage(db: SqliteDatabase): UsageStore {
  const { w, r } = db;

  const record = (report: UsageReport): UsageOutcome => {
    const { stackSmallId, nowMs } = report;
    const row = w.getUsage.get(enc(stackSmallId));
    if (!row) return { status: 'not_found' };
    const previous = w.getStackHash.get(enc(stackSmallId));
    const { outcome, write } = usageChange(dec, row, previous, report);
    if (write) {
      db.stackChanged(dec(row.selected_node_id), stackSmallId);
      db.append(write.events);
      w.setUsage.run(enc(write.already), enc(write.messages), write.fillPpm, nowMs, enc(stackSmallId));
      w.putStackHash.run(enc(stackSmallId), write.record.total_hash, enc(write.record.num_requests));
    }
    return outcome;
  };

  /**
   * Usage reports that wait for the writer (behind an indexer transaction, or the reports before them)
   * are written together, in one transaction (group-commit.ts): each a read-modify-write of its stack in
   * turn, so two on one stack add up as they would one after the other.
   */
  const usage = new GroupCommit<UsageReport, UsageOutcome>((reports) =>
    db.transaction(async () => db.guard(() => reports.map(record))),
  );

  return {
    addStackUsage: (stackSmallId, computeUnits, requestHash, nowMs, ownNodes) =>
      usage.submit({ stackSmallId, computeUnits, requestHash, nowMs, ownNodes }),
    putStackHash: (stackSmallId, totalHash, numRequests) =>
      db.transaction(async () => {
        db.guard(() => w.putStackHash.run(enc(stackSmallId), totalHash, enc(numRequests)));
      }),
    getStackHash: async (stackSmallId) => {
      const row = db.guard(() => r.getStackHash.get(enc(stackSmallId)));
      return row
        ? { total_hash: row.total_hash as Uint8Array, num_requests: dec(row.num_requests) }
        : undefined;
    },
    listFollowedStacks: async (node, after) =>
      db.guard(() =>
        r.followedStacks.all(enc(node), after === null ? -1 : enc(after)).map(rows.followedStack),
      ),
    mirrorStackUsage: (usage, nowMs) =>
      db.transaction(async () =>
        db.guard(() =>
          usage.map((mirrored): MirrorOutcome => {
            const row = w.mirrorRow.get(enc(mirrored.stack_small_id));
            if (!row) return 'closed';
            const { outcome, write } = mirrorChange(dec, row, mirrored, nowMs);
            if (write) {
              db.stackChanged(mirrored.selected_node_id, mirrored.stack_small_id);
              db.append(write.events);
              w.setMirrored.run(
                enc(write.already),
                enc(write.messages),
                write.fillPpm,
                write.peakPpm,
                nowMs,
                enc(mirrored.stack_small_id),
              );
            }
            return outcome;
          }),
        ),
      ),
  };
}
