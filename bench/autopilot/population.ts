/**
 * bench:autopilot's stores: N stacks, almost all of them needing nothing from the operator's node (the
 * population below), plus the same work at every N. The bulk is inserted directly, one transaction per
 * engine (sqliteWriter, postgresWriter), with the values the store writes for each state; the tasks, the
 * chain's epoch, the tickets that asked our node to attest and the work go through the store's own code.
 */
import { DatabaseSync } from 'node:sqlite';
import { Client } from 'pg';
import { SecurityLevel } from '../../src/protocol/constants.ts';
import type { Store } from '../../src/store/store.ts';

/** The operator's node; other nodes are 2 to 11. */
export const OURS = 1;
export const EPOCH = 100;
const UNITS = 1_000_000;
const PRICE = 1_000_000;
export const NOW = Date.now();
export const IDLE_SECONDS = 3600;
export const SETTLE_FILL = 0.95;
/** The work at every N: what a pass must find, whatever the store's size. */
export const WORK = { fill: 25, idle: 25, attest: 20, claim: 100 } as const;
export const WORK_STACKS = WORK.fill + WORK.idle + WORK.attest + WORK.claim;
/** Tasks: 1 NoSecurity, 2 ConfidentialCompute, 3 SamplingConsensus (the one that asks attesters). */
const TASKS = [SecurityLevel.NoSecurity, SecurityLevel.ConfidentialCompute, SecurityLevel.SamplingConsensus];
export const HASH = new Uint8Array(32).fill(1);
export const hex = (n: number, width = 64) => `0x${n.toString(16).padStart(width, '0')}`;

/** One stack row as the store writes it (u64 values as numbers: all are far below 2^53). */
interface StackRow {
  node: number;
  id: number;
  task: number;
  used: number;
  settling: boolean;
  claimed: boolean;
  lastUsage: number | null;
}

/** One ticket row as the store writes it: try-settled in `settled` (null: a direct claim), maybe claimed. */
interface TicketRow {
  id: number;
  node: number;
  settled: number | null;
  claimed: boolean;
  disputed: boolean;
}

/** What bulk stack i is: a row (and its ticket), or a ticket that asked the node to attest (store API). */
type Bulk = { stack: StackRow; ticket?: TicketRow } | { askedOurs: number };

/** The population, by i % 100, with how many of each there are per 100 bulk stacks. */
export const POPULATION = [
  [25, 'ours, open, used below the fill threshold within the last 10 min'],
  [10, 'ours, open, never used'],
  [30, 'ours, settled and claimed'],
  [4, 'ours, settled, in the dispute period'],
  [1, 'ours, settled, disputed'],
  [2, 'ours, ConfidentialCompute, claimed directly'],
  [8, "other nodes', open, full and idle"],
  [19, "other nodes', settled and claimed"],
  [1, "other nodes', settled and claimed, had asked our node to attest (it never did)"],
] as const;

function bulk(i: number): Bulk {
  const r = i % 100;
  const other = 2 + (i % 10);
  const settledIn = 1 + (i % (EPOCH - 10));
  const open = (node: number, used: number, lastUsage: number | null, task = 1): Bulk => ({
    stack: { node, id: i, task, used, settling: false, claimed: false, lastUsage },
  });
  const claimed = (node: number): Bulk => ({
    stack: { node, id: i, task: 1, used: UNITS, settling: true, claimed: true, lastUsage: NOW - 864e5 },
    ticket: { id: i, node, settled: settledIn, claimed: true, disputed: false },
  });
  if (r < 25) return open(OURS, (UNITS / 100) * (5 + (i % 90)), NOW - (i % 600) * 1000);
  if (r < 35) return open(OURS, 0, null);
  if (r < 65) return claimed(OURS);
  if (r < 70) {
    return {
      stack: {
        node: OURS,
        id: i,
        task: 1,
        used: UNITS,
        settling: true,
        claimed: false,
        lastUsage: NOW - 6e5,
      },
      ticket: { id: i, node: OURS, settled: r < 69 ? EPOCH : settledIn, claimed: false, disputed: r === 69 },
    };
  }
  if (r < 72) {
    return {
      stack: {
        node: OURS,
        id: i,
        task: 2,
        used: UNITS,
        settling: false,
        claimed: true,
        lastUsage: NOW - 864e5,
      },
      ticket: { id: i, node: OURS, settled: null, claimed: true, disputed: false },
    };
  }
  if (r < 80) return open(other, UNITS, NOW - 72e5);
  if (r < 99) return claimed(other);
  return { askedOurs: other };
}

/** Rows written: stacks, tickets, and the tickets that asked our node to attest. */
export interface Counts {
  stacks: number;
  tickets: number;
  askedOurs: number;
}

/** The direct inserts of one engine, inside one transaction. */
export interface BulkWriter {
  stacks(rows: readonly StackRow[]): Promise<void>;
  tickets(rows: readonly TicketRow[]): Promise<void>;
  commit(): Promise<void>;
}

const fillPpm = (used: number) => Math.floor((used * 1_000_000) / UNITS);
const messagesOf = (s: StackRow) => (s.used === 0 ? 0 : 1 + (s.id % 50));
/** Our node served it: usage reports gave it a running hash of its requests (stack_hashes). */
const served = (s: StackRow) => s.node === OURS && s.used > 0;
const feeOf = (used: number) => Math.floor((used * PRICE) / 1_000_000);

export function sqliteWriter(file: string): BulkWriter {
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('BEGIN');
  const stack = db.prepare(`INSERT INTO stacks (selected_node_id, stack_small_id, stack_id, owner_address,
    task_small_id, num_compute_units, price_per_one_million_compute_units, already_computed_units,
    in_settle_period, num_total_messages, is_claimed, is_confidential, user_refund_amount, security_level,
    last_usage_at, fill_ppm) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const hash = db.prepare(
    'INSERT INTO stack_hashes (stack_small_id, total_hash, num_requests) VALUES (?, ?, ?)',
  );
  const ticket = db.prepare(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
    num_claimed_compute_units, is_in_dispute, user_refund_amount, is_claimed, claim_path, settled_epoch,
    claimable_from_epoch, claimed_epoch, node_fee_amount) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  return {
    async stacks(rows) {
      for (const s of rows) {
        stack.run(
          s.node,
          s.id,
          hex(s.id),
          hex(s.node * 7919),
          s.task,
          UNITS,
          PRICE,
          s.used,
          s.settling ? 1 : 0,
          messagesOf(s),
          s.claimed ? 1 : 0,
          s.task === 2 ? 1 : 0,
          s.claimed ? UNITS - s.used : null,
          TASKS[s.task - 1]!,
          s.lastUsage,
          fillPpm(s.used),
        );
        if (served(s)) hash.run(s.id, HASH, messagesOf(s));
      }
    },
    async tickets(rows) {
      for (const t of rows) {
        ticket.run(
          t.id,
          t.node,
          UNITS,
          t.disputed ? 1 : 0,
          0,
          t.claimed ? 1 : 0,
          t.claimed ? (t.settled === null ? 'confidential_compute' : 'settlement_ticket') : null,
          t.settled,
          t.settled === null ? null : t.settled + 1,
          t.claimed ? (t.settled ?? EPOCH - 1) + 2 : null,
          t.claimed ? feeOf(UNITS) : null,
        );
      }
    },
    async commit() {
      db.exec('COMMIT');
      db.close();
    },
  };
}

export async function postgresWriter(url: string): Promise<BulkWriter> {
  const client = new Client({ connectionString: url, application_name: 'node-daemon bench' });
  await client.connect();
  await client.query('BEGIN');
  const column = <T, V>(rows: readonly T[], f: (row: T) => V) => rows.map(f);
  return {
    async stacks(rows) {
      await client.query(
        `INSERT INTO stacks (selected_node_id, stack_small_id, stack_id, owner_address, task_small_id,
          num_compute_units, price_per_one_million_compute_units, already_computed_units, in_settle_period,
          num_total_messages, is_claimed, is_confidential, user_refund_amount, security_level, last_usage_at,
          fill_ppm)
        SELECT node, id, '0x' || lpad(to_hex(id), 64, '0'), '0x' || lpad(to_hex(node * 7919), 64, '0'), task,
          $11::numeric, $12::numeric, used, settling, messages, claimed, level = 1,
          CASE WHEN claimed THEN $11::numeric - used END, level, last_usage, fill
        FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::numeric[], $5::boolean[], $6::bigint[],
          $7::boolean[], $8::int[], $9::bigint[], $10::int[])
          AS x(node, id, task, used, settling, messages, claimed, level, last_usage, fill)`,
        [
          column(rows, (s) => s.node),
          column(rows, (s) => s.id),
          column(rows, (s) => s.task),
          column(rows, (s) => s.used),
          column(rows, (s) => s.settling),
          column(rows, messagesOf),
          column(rows, (s) => s.claimed),
          column(rows, (s) => TASKS[s.task - 1]!),
          column(rows, (s) => s.lastUsage),
          column(rows, (s) => fillPpm(s.used)),
          UNITS,
          PRICE,
        ],
      );
      const hashed = rows.filter(served);
      await client.query(
        `INSERT INTO stack_hashes (stack_small_id, total_hash, num_requests)
        SELECT id, $3::bytea, n FROM unnest($1::bigint[], $2::bigint[]) AS x(id, n)`,
        [column(hashed, (s) => s.id), column(hashed, messagesOf), Buffer.from(HASH)],
      );
    },
    async tickets(rows) {
      await client.query(
        `INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id, num_claimed_compute_units,
          is_in_dispute, user_refund_amount, is_claimed, claim_path, settled_epoch, claimable_from_epoch,
          claimed_epoch, node_fee_amount)
        SELECT id, node, $6::numeric, disputed, 0, claimed,
          CASE WHEN NOT claimed THEN NULL WHEN settled IS NULL THEN 'confidential_compute'
            ELSE 'settlement_ticket' END,
          settled, settled + 1, CASE WHEN claimed THEN coalesce(settled, $7::bigint - 1) + 2 END,
          CASE WHEN claimed THEN $8::numeric END
        FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::boolean[], $5::boolean[])
          AS x(id, node, settled, claimed, disputed)`,
        [
          column(rows, (t) => t.id),
          column(rows, (t) => t.node),
          column(rows, (t) => t.settled),
          column(rows, (t) => t.claimed),
          column(rows, (t) => t.disputed),
          UNITS,
          EPOCH,
          feeOf(UNITS),
        ],
      );
    },
    async commit() {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

const proof = new Uint8Array(32).fill(7);
const leaf = new Uint8Array(32).fill(9);
const newStack = (id: number, node: number, task: number) => ({
  stack_small_id: id,
  stack_id: hex(id),
  owner_address: hex(node * 7919),
  task_small_id: task,
  selected_node_id: node,
  num_compute_units: UNITS,
  price_per_one_million_compute_units: PRICE,
});
const trySettle = (id: number, node: number, requested: number[]) => ({
  stack_small_id: id,
  selected_node_id: node,
  requested_attestation_nodes: requested,
  committed_stack_proof: proof,
  stack_merkle_leaf: leaf,
  num_claimed_compute_units: UNITS,
});

/**
 * Fills a new store with n stacks: the bulk (direct inserts, one transaction), the tickets that asked our
 * node to attest and the work (the store's own writes). Returns how many rows of each kind it wrote.
 */
export async function fill(store: Store, writer: BulkWriter, n: number): Promise<Counts> {
  await putTasks(store);
  const bulkStacks = n - WORK_STACKS;
  const { counts, asked } = await writeBulk(writer, bulkStacks);
  counts.askedOurs = await askOurs(store, asked);
  await putWork(store, bulkStacks);
  counts.stacks += counts.askedOurs + WORK_STACKS;
  counts.tickets += counts.askedOurs + WORK.attest + WORK.claim;
  return counts;
}

/** Rows a direct insert or an indexer transaction takes at a time. */
const BATCH = 5000;

/** The three tasks, and the chain's epoch. */
async function putTasks(store: Store): Promise<void> {
  await store.indexerTransaction(async (tx) => {
    for (const [i, level] of TASKS.entries()) {
      await tx.putTask({
        task_small_id: i + 1,
        task_id: hex(i + 1),
        role: 0,
        model_name: 'llama',
        security_level: level,
        minimum_reputation_score: null,
      });
    }
    await tx.saveChainState({ epoch: EPOCH });
  });
}

/**
 * The bulk stacks 1 to `count`, inserted directly in batches and committed; returns the rows written and
 * the stacks that are to ask our node to attest (askOurs writes those through the store).
 */
async function writeBulk(
  writer: BulkWriter,
  count: number,
): Promise<{ counts: Counts; asked: { id: number; node: number }[] }> {
  const counts: Counts = { stacks: 0, tickets: 0, askedOurs: 0 };
  let stacks: StackRow[] = [];
  let tickets: TicketRow[] = [];
  const asked: { id: number; node: number }[] = [];
  const flush = async () => {
    await writer.stacks(stacks);
    await writer.tickets(tickets);
    counts.stacks += stacks.length;
    counts.tickets += tickets.length;
    stacks = [];
    tickets = [];
  };
  for (let i = 1; i <= count; i++) {
    const b = bulk(i);
    if ('askedOurs' in b) asked.push({ id: i, node: b.askedOurs });
    else {
      stacks.push(b.stack);
      if (b.ticket) tickets.push(b.ticket);
    }
    if (stacks.length >= BATCH) await flush();
  }
  await flush();
  await writer.commit();
  return { counts, asked };
}

/**
 * Another node's stack asks ours and a third node to attest; the third does, ours never does; it is
 * claimed. Returns how many.
 */
async function askOurs(store: Store, asked: { id: number; node: number }[]): Promise<number> {
  for (let start = 0; start < asked.length; start += BATCH) {
    await store.indexerTransaction(async (tx) => {
      for (const { id, node } of asked.slice(start, start + BATCH)) {
        const third = node === 11 ? 2 : node + 1;
        await tx.putStack(newStack(id, node, 3));
        await tx.putTicket(trySettle(id, node, [OURS, third]), EPOCH - 20);
        await tx.recordAttestation({
          stack_small_id: id,
          attestation_node_id: third,
          committed_stack_proof: proof,
          stack_merkle_leaf: leaf,
        });
        await tx.claimTicket(
          {
            stack_small_id: id,
            selected_node_id: node,
            attestation_nodes: [OURS, third],
            num_claimed_compute_units: UNITS,
            user_refund_amount: 0,
          },
          { epoch: EPOCH - 18, node_fee_amount: Math.floor(feeOf(UNITS) * 1.2) },
        );
      }
    });
  }
  return asked.length;
}

/** The work, the same at every size, numbered after the bulk's `after` stacks. */
async function putWork(store: Store, after: number): Promise<void> {
  let id = after;
  const ids = (k: number) => Array.from({ length: k }, () => ++id);
  const full = ids(WORK.fill);
  const idle = ids(WORK.idle);
  const attest = ids(WORK.attest);
  const claim = ids(WORK.claim);
  await store.indexerTransaction(async (tx) => {
    for (const s of [...full, ...idle, ...claim]) await tx.putStack(newStack(s, OURS, 1));
    for (const s of attest) {
      await tx.putStack(newStack(s, 2, 3));
      await tx.putTicket(trySettle(s, 2, [OURS, 3]), EPOCH);
    }
    for (const s of claim) await tx.putTicket(trySettle(s, OURS, []), EPOCH - 3);
  });
  for (const s of full) await store.addStackUsage(s, UNITS * 0.97, HASH, NOW);
  for (const s of idle) await store.addStackUsage(s, UNITS * 0.4, HASH, NOW - 2 * IDLE_SECONDS * 1000);
  for (const s of attest) await store.putStackHash(s, HASH, 1);
}
