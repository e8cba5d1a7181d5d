import type { QueryResult } from 'pg';
import { GroupCommit } from '../../internal/group-commit.ts';
import { mirrorChange, usageChange } from '../changes.ts';
import { fromPostgresError, StoreError } from '../errors.ts';
import { columns } from '../params.ts';
import { compareDigits } from '../stack-list/columns.ts';
import type { UsageValues } from '../stack-list/stack-lists.ts';
import {
  type MirrorOutcome,
  topics,
  type UsageOutcome,
  type UsageReport,
  type UsageStore,
} from '../store.ts';
import type { PostgresDatabase, Row } from './database.ts';
import { S } from './statements.ts';
import { dec, enc, rows } from './u64.ts';

/** Times a group of usage reports is written before a deadlock or serialization failure is given up on. */
const USAGE_ATTEMPTS = 3;

/** A stack as this process's last usage group left it: its locked columns and its request record. */
interface UsageState {
  row: Row;
  record: Row;
}

/** Stacks whose usage state this process keeps for one-round-trip groups; past it, it starts over. */
const USAGE_STATES = 100_000;

/** The SQLSTATE of node_daemon_usage_guard (migration 0009): the rows were not what this process kept. */
const USAGE_GUARD_FAILED = 'NDU01';

/** A group on kept stacks that one of its reports refuses: it is read and decided again. */
class UsageUnguarded extends Error {}

/**
 * The group has to be read: a usage guard failed (the stacks were not as this process kept them,
 * migration 0009), or one of its reports writes nothing for a guard to check.
 */
function isUsageGuardFailure(error: unknown): boolean {
  if (error instanceof UsageUnguarded) return true;
  const cause = error instanceof StoreError ? error.cause : error;
  return (cause as { code?: unknown } | undefined)?.code === USAGE_GUARD_FAILED;
}

/** The usage reports, and the running hash of each stack's requests, on PostgreSQL. */
export function postgresUsage(db: PostgresDatabase): UsageStore {
  /** Each stack as this process's last usage group left it (record), by small id as decimal text. */
  const usageStates = new Map<string, UsageState>();

  /**
   * One transaction for a group of reports. Its stacks and hashes are locked and read in one round trip,
   * and the writes go with COMMIT in a second. When this process's own last group left every one of the
   * stacks (usageStates), the reports are computed from what it left, and the writes go with BEGIN and
   * COMMIT in one round trip, each guarded: it fails the transaction unless its rows still hold those
   * values. A guard that fails (another daemon's report, an indexer page in between) sends the group
   * again the first way. Once committed, the group's values are noted for its nodes' kept stack lists,
   * with the topic versions the group's bump returned: a list that nobody changed in between takes them
   * without a read (stack-list/stack-lists.ts).
   */
  const record = async (reports: UsageReport[]): Promise<UsageOutcome[]> => {
    const ids = [...new Set(reports.map((r) => enc(r.stackSmallId)))].sort(compareDigits);
    const kept = ids.map((id) => usageStates.get(id));
    const known = kept.every((state) => state !== undefined) ? (kept as UsageState[]) : undefined;
    let current = new Map<string, Row>();
    let records = new Map<string, Row>();
    let appended = false;
    /** What the group wrote, by node stacks topic: each stack's usage columns after it. */
    let written = new Map<string, Map<string, UsageValues>>();
    let bumped: Promise<QueryResult> | undefined;
    const outcomes = await db.transaction(
      async (client, defer, versionBumped): Promise<UsageOutcome[]> => {
        appended = false;
        written = new Map();
        if (known !== undefined) {
          current = new Map(ids.map((id, i) => [id, known[i]!.row]));
          records = new Map(ids.map((id, i) => [id, known[i]!.record]));
        } else {
          const [stacks, hashes] = await Promise.all([
            db.exec(client, S.lockStacks, [ids]),
            db.exec(client, S.lockHashes, [ids]),
          ]);
          // The rows as each report leaves them, for the next report on the same stack.
          current = new Map(stacks.rows.map((row) => [enc(dec(row.stack_small_id)), row]));
          records = new Map<string, Row>(hashes.rows.map((row) => [enc(dec(row.stack_small_id)), row]));
        }
        const out = reports.map((report): UsageOutcome => {
          const id = enc(report.stackSmallId);
          const row = current.get(id);
          if (!row) return { status: 'not_found' };
          const prior = records.get(id);
          const { outcome, write } = usageChange(dec, row, prior, report);
          // A refusal cannot be guarded (it writes nothing): the group is read and decided again.
          if (!write && known !== undefined) throw new UsageUnguarded();
          if (!write) return outcome;
          const { already, messages, fillPpm, record } = write;
          // Sent together with COMMIT (the connection pipelines): one round trip for all of them.
          if (write.events.length > 0) {
            for (const [statement, values] of db.nodeEventStatements(write.events)) {
              defer(db.exec(client, statement, values));
            }
            appended = true;
          }
          const values = [
            id,
            enc(already),
            enc(messages),
            record.total_hash,
            enc(record.num_requests),
            fillPpm,
            report.nowMs,
          ];
          defer(
            known === undefined
              ? db.exec(client, S.setUsage, values)
              : db.exec(client, S.setUsageGuarded, [
                  ...values,
                  row.already_computed_units,
                  row.num_total_messages,
                  prior!.total_hash,
                  prior!.num_requests,
                ]),
          );
          const topic = topics.stacks(dec(row.selected_node_id));
          const stacks = written.get(topic) ?? new Map<string, UsageValues>();
          // The values as a read gives them (NUMERIC as decimal text).
          stacks.set(id, { already: enc(already), messages: enc(messages) });
          written.set(topic, stacks);
          current.set(id, {
            ...row,
            already_computed_units: enc(already),
            num_total_messages: enc(messages),
          });
          records.set(id, { total_hash: record.total_hash, num_requests: enc(record.num_requests) });
          return outcome;
        });
        bumped = undefined;
        if (written.size > 0) {
          bumped = db.exec(client, S.bumpTopicsAndVersionReturning, [[...written.keys()]]);
          defer(bumped);
          versionBumped();
        }
        return out;
      },
      (out) => out.some((outcome) => outcome.status === 'recorded'),
    );
    // Committed (or refused whole, with the guard passed): the stacks are as the group left them.
    if (usageStates.size + ids.length > USAGE_STATES) usageStates.clear();
    for (const id of ids) {
      const row = current.get(id);
      const record = records.get(id);
      if (row !== undefined && record !== undefined) usageStates.set(id, { row, record });
    }
    if (appended) db.nodeEvents.emit();
    // Committed: the bump answered (it went before COMMIT on the same connection).
    if (bumped !== undefined) {
      for (const row of (await bumped).rows) {
        const stacks = written.get(row.topic as string);
        if (stacks !== undefined) db.stackLists.noteUsage(row.topic as string, Number(row.version), stacks);
      }
    }
    return outcomes;
  };

  /**
   * Usage reports that arrive while earlier ones are being written go together in the next transaction
   * (group-commit.ts). Each report's transaction held its node's topic row and the store's version row
   * until its COMMIT was flushed, so reports on one node queued one flush behind the other; a group takes
   * those locks, and pays the flush, once.
   */
  const usage = new GroupCommit<UsageReport, UsageOutcome>((reports) =>
    db.op(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await record(reports);
        } catch (error) {
          // What this process kept of these stacks is not trusted after a failure: the next attempt
          // reads them. A failed guard only means another writer came first, so it is not an attempt.
          for (const report of reports) usageStates.delete(enc(report.stackSmallId));
          if (isUsageGuardFailure(error)) {
            attempt -= 1;
            continue;
          }
          // The group locks its stacks in id order, an indexer page in event order: should the two ever
          // deadlock, the server rolls one back, and the group is simply written again.
          const translated = fromPostgresError(error);
          const code = translated instanceof StoreError ? translated.code : undefined;
          if (
            attempt >= USAGE_ATTEMPTS ||
            (code !== 'store_deadlock' && code !== 'store_serialization_failure')
          ) {
            throw error;
          }
        }
      }
    }),
  );

  return {
    addStackUsage: (stackSmallId, computeUnits, requestHash, nowMs, ownNodes) =>
      usage.submit({ stackSmallId, computeUnits, requestHash, nowMs, ownNodes }),
    putStackHash: async (stackSmallId, totalHash, numRequests) => {
      await db.query(S.putStackHash, [enc(stackSmallId), totalHash, enc(numRequests)]);
      db.forgetVersion();
    },
    getStackHash: async (stackSmallId) => {
      const [row] = await db.rows(S.getStackHash, [enc(stackSmallId)]);
      // A copy: pg's Buffer may be a view into a shared pool, and callers compare plain Uint8Arrays.
      return row
        ? { total_hash: new Uint8Array(row.total_hash as Uint8Array), num_requests: dec(row.num_requests) }
        : undefined;
    },
    listFollowedStacks: async (node, after) =>
      (await db.rows(S.followedStacks, [enc(node), after === null ? '-1' : enc(after)])).map(
        rows.followedStack,
      ),
    mirrorStackUsage: (usage, nowMs) =>
      db.op(async () => {
        if (usage.length === 0) return [];
        let appended = false;
        const outcomes = await db.transaction(
          async (client, defer, bumped): Promise<MirrorOutcome[]> => {
            appended = false;
            const ids = [...new Set(usage.map((u) => enc(u.stack_small_id)))].sort(compareDigits);
            // Locked in id order, as a usage group locks them: the two never wait on each other in a cycle.
            const locked = await db.exec(client, S.lockMirrored, [ids]);
            const current = new Map(locked.rows.map((row) => [enc(dec(row.stack_small_id)), row]));
            const written = new Map<string, unknown[]>();
            const touched = new Set<string>();
            const out = usage.map((mirrored): MirrorOutcome => {
              const id = enc(mirrored.stack_small_id);
              const row = current.get(id);
              if (!row) return 'closed';
              const { outcome, write } = mirrorChange(dec, row, mirrored, nowMs);
              if (!write) return outcome;
              // A stack named twice: the later usage is the one it holds.
              current.set(id, {
                ...row,
                already_computed_units: enc(write.already),
                num_total_messages: enc(write.messages),
                fill_ppm: write.fillPpm,
                fill_peak_ppm: write.peakPpm,
              });
              written.set(id, [id, enc(write.already), enc(write.messages), write.fillPpm, write.peakPpm]);
              touched.add(topics.stacks(mirrored.selected_node_id));
              if (write.events.length > 0) {
                for (const [statement, values] of db.nodeEventStatements(write.events)) {
                  defer(db.exec(client, statement, values));
                }
                appended = true;
              }
              return outcome;
            });
            if (written.size > 0) {
              defer(db.exec(client, S.setMirrored, [...columns([...written.values()], 5), nowMs]));
              defer(db.exec(client, S.bumpTopicsAndVersion, [[...touched]]));
              bumped();
            }
            return out;
          },
          (out) => out.includes('set'),
        );
        if (appended) db.nodeEvents.emit();
        return outcomes;
      }),
  };
}
