/**
 * npm run bench:autopilot: the cost of an autopilot pass at 10,000 and at 1,000,000 stacks, in one run.
 *
 * Each store holds N stacks, almost all of them needing nothing from the operator's node (used below the
 * fill threshold, never used, settled and claimed, settling, disputed, claimed directly, other nodes'),
 * plus the same work at every N: 25 stacks filled to 97 %, 25 idle for 2 h, 20 attestations asked of the
 * node, 100 claimable tickets. A pass's cost must follow that work, not N: the ratio of the 1,000,000
 * pass to the 10,000 one should be about 1.
 *
 * What goes through the store's own code: the tasks, the chain's epoch, the whole action set (putStack,
 * putTicket, addStackUsage, putStackHash) and the tickets that asked the node to attest (try-settle,
 * another attester's attestation, the claim), so the attestation requests are what the indexer leaves.
 * The bulk is inserted directly, one transaction, with the values the store writes for each state (the
 * running hash of every stack our node served included).
 *
 * Timed: Autopilot.run() in dry-run mode (the pending records, the four store questions, the plan with a
 * stub chain whose simulation costs nothing, the next timer), the stores' passes interleaved so the
 * machine's drift hits both sizes alike; then each store question alone. Printed with the query plans;
 * written to bench/results/autopilot.json (autopilot-postgres.json). See docs/PERFORMANCE.md.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Client } from 'pg';
import type { Chain } from '../src/chain/chain.ts';
import type { LiveIndexer } from '../src/indexer/run.ts';
import { createMetrics } from '../src/internal/metrics.ts';
import { Autopilot } from '../src/operations/autopilot.ts';
import type { Writes } from '../src/operations/writes.ts';
import { SecurityLevel } from '../src/protocol/constants.ts';
import { AUTOPILOT_QUERIES as PG_QUERIES, PostgresStore } from '../src/store/postgres/postgres-store.ts';
import {
  SQLITE_FILE,
  AUTOPILOT_QUERIES as SQLITE_QUERIES,
  SqliteStore,
} from '../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../src/store/store.ts';
import { benchArgs } from './args.ts';
import { countUserAsOurs, foreignLoad, snapshot, waitForQuiet } from './cpu.ts';
import { silentLogger } from './ingest.ts';
import { DEFAULT_SERVER_URL, ThrowawayDatabases } from './postgres.ts';
import { exitCode, fail, fmt, log, machine, table, warn, writeResults } from './report.ts';

const ROOT = resolve(import.meta.dirname, '..');
const RESULTS = join(ROOT, 'bench/results');

/** The operator's node; other nodes are 2 to 11. */
const OURS = 1;
const EPOCH = 100;
const UNITS = 1_000_000;
const PRICE = 1_000_000;
const NOW = Date.now();
const IDLE_SECONDS = 3600;
const SETTLE_FILL = 0.95;
/** The work at every N: what a pass must find, whatever the store's size. */
const WORK = { fill: 25, idle: 25, attest: 20, claim: 100 } as const;
const WORK_STACKS = WORK.fill + WORK.idle + WORK.attest + WORK.claim;
/** Tasks: 1 NoSecurity, 2 ConfidentialCompute, 3 SamplingConsensus (the one that asks attesters). */
const TASKS = [SecurityLevel.NoSecurity, SecurityLevel.ConfidentialCompute, SecurityLevel.SamplingConsensus];
const HASH = new Uint8Array(32).fill(1);
const hex = (n: number, width = 64) => `0x${n.toString(16).padStart(width, '0')}`;

const HELP = `Usage: npm run bench:autopilot -- [--postgres [--database-url URL]] [--sizes N,N] [--passes N]

  --postgres       PostgreSQL instead of SQLite: one throwaway database bench_<id>_<n> per size, dropped
                   at the end (also on failure or SIGINT); default server ${DEFAULT_SERVER_URL}
  --sizes N,N      stacks per store (default 10000,1000000); the ratio is the last over the first
  --passes N       timed passes per store (default 100, after 10 untimed)`;

// --- the stores' contents ---------------------------------------------------------------------------------

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
const POPULATION = [
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
interface Counts {
  stacks: number;
  tickets: number;
  askedOurs: number;
}

/** The direct inserts of one engine, inside one transaction. */
interface BulkWriter {
  stacks(rows: readonly StackRow[]): Promise<void>;
  tickets(rows: readonly TicketRow[]): Promise<void>;
  commit(): Promise<void>;
}

const fillPpm = (used: number) => Math.floor((used * 1_000_000) / UNITS);
const messagesOf = (s: StackRow) => (s.used === 0 ? 0 : 1 + (s.id % 50));
/** Our node served it: usage reports gave it a running hash of its requests (stack_hashes). */
const served = (s: StackRow) => s.node === OURS && s.used > 0;
const feeOf = (used: number) => Math.floor((used * PRICE) / 1_000_000);

function sqliteWriter(file: string): BulkWriter {
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

async function postgresWriter(url: string): Promise<BulkWriter> {
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
async function fill(store: Store, writer: BulkWriter, n: number): Promise<Counts> {
  const counts: Counts = { stacks: 0, tickets: 0, askedOurs: 0 };
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
  const bulkStacks = n - WORK_STACKS;
  const BATCH = 5000;
  let stacks: StackRow[] = [];
  let tickets: TicketRow[] = [];
  let asked: { id: number; node: number }[] = [];
  const flush = async () => {
    await writer.stacks(stacks);
    await writer.tickets(tickets);
    counts.stacks += stacks.length;
    counts.tickets += tickets.length;
    stacks = [];
    tickets = [];
  };
  for (let i = 1; i <= bulkStacks; i++) {
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

  // Another node's stack asks ours and a third node to attest; the third does, ours never does; it is claimed.
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
  counts.askedOurs = asked.length;
  asked = [];

  // The work, the same at every size.
  let id = bulkStacks;
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
  counts.stacks += counts.askedOurs + WORK_STACKS;
  counts.tickets += counts.askedOurs + WORK.attest + WORK.claim;
  return counts;
}

// --- the autopilot, planning only ---------------------------------------------------------------------------

const BADGE = { badge_id: hex(0xbad9e), node_small_id: OURS };

/** The autopilot in dry-run mode over a store, with a chain whose simulation answers at once. */
function autopilotOver(store: Store): Autopilot {
  const chain = {
    network: 'dev',
    signerAddress: hex(0xa11ce),
    outcomeWindowMs: 0,
    simulate: async () => ({ gas: 2_000_000n, abort: null }),
  } as unknown as Chain;
  return new Autopilot({
    settings: {
      mode: 'dry-run',
      settleFill: SETTLE_FILL,
      settleIdleSeconds: IDLE_SECONDS,
      minClaim: 1_000_000n,
      maxGas: 50_000_000n,
    },
    chain,
    store,
    writes: { badges: async () => [BADGE] } as unknown as Writes,
    indexer: { onApplied: () => () => undefined, lastCaughtUpAt: Date.now() } as unknown as LiveIndexer,
    metrics: createMetrics(),
    log: silentLogger,
  });
}

/** Checks a pass found exactly the work: 50 settlements, 20 attestations, one claim of 100 stacks. */
async function checkPlan(autopilot: Autopilot): Promise<void> {
  const { plan } = await autopilot.run();
  const acts = (action: string) => plan.filter((p) => p.action === action && p.will === 'act');
  const found = {
    settle: acts('settle').length,
    attest: acts('attest').length,
    claims: acts('claim').map((p) => p.stack_small_ids.length),
    other: plan.length - acts('settle').length - acts('attest').length - acts('claim').length,
  };
  const expected = { settle: WORK.fill + WORK.idle, attest: WORK.attest, claims: [WORK.claim], other: 0 };
  if (JSON.stringify(found) !== JSON.stringify(expected)) {
    throw new Error(
      `the plan is not the work: ${JSON.stringify(found)}, expected ${JSON.stringify(expected)}`,
    );
  }
}

/** The four store questions a pass asks, one function each. */
const QUESTIONS = {
  listSettleCandidates: (s: Store) =>
    s.listSettleCandidates(OURS, Math.floor(SETTLE_FILL * 1_000_000), NOW - IDLE_SECONDS * 1000),
  oldestUsageAt: (s: Store) => s.oldestUsageAt(OURS),
  listClaimable: (s: Store) => s.listClaimable(OURS, EPOCH),
  listAttestationRequests: (s: Store) => s.listAttestationRequests(OURS),
} as const;

// --- query plans -----------------------------------------------------------------------------------------------

/** Each autopilot query's parameters: node, fill threshold (ppm), idle cut-off; node, epoch; node. */
function paramsOf(name: string): number[] {
  if (name === 'settleCandidates') return [OURS, SETTLE_FILL * 1_000_000, NOW - IDLE_SECONDS * 1000];
  if (name === 'claimable') return [OURS, EPOCH];
  return [OURS];
}

function sqlitePlans(file: string): Record<string, string> {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const plans: Record<string, string> = {};
    for (const [name, sql] of Object.entries(SQLITE_QUERIES)) {
      plans[name] = db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...paramsOf(name))
        .map((r) => String(r.detail))
        .join(' | ');
    }
    const stat = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'sqlite_stat1'").get();
    plans['(statistics)'] =
      Number(stat?.n) > 0
        ? `sqlite_stat1: ${Number(db.prepare('SELECT count(*) AS n FROM sqlite_stat1').get()?.n)} rows`
        : 'none';
    return plans;
  } finally {
    db.close();
  }
}

/** PostgreSQL: the scans of each query's plan, custom (its parameters) and generic (a named statement's). */
async function postgresPlans(url: string): Promise<Record<string, string>> {
  const client = new Client({ connectionString: url, application_name: 'node-daemon bench' });
  await client.connect();
  const scans = (rows: { 'QUERY PLAN': string }[]) =>
    rows
      .map((r) => r['QUERY PLAN'].trim().replace(/^->\s*/, ''))
      // Plan nodes carry a cost; their keys and conditions do not.
      .filter((line) => line.includes('(cost='))
      .map((line) => line.replace(/\s+\(cost=.*$/, ''))
      .join(' > ');
  try {
    const plans: Record<string, string> = {};
    for (const [name, sql] of Object.entries(PG_QUERIES)) {
      const params = paramsOf(name);
      plans[`${name} (custom)`] = scans((await client.query(`EXPLAIN ${sql}`, params)).rows);
      await client.query(`PREPARE q AS ${sql}`);
      await client.query('SET plan_cache_mode = force_generic_plan');
      plans[`${name} (generic)`] = scans(
        (await client.query(`EXPLAIN EXECUTE q(${params.join(', ')})`)).rows,
      );
      await client.query('RESET plan_cache_mode');
      await client.query('DEALLOCATE q');
    }
    return plans;
  } finally {
    await client.end();
  }
}

// --- the run -----------------------------------------------------------------------------------------------------

interface Sized {
  n: number;
  store: Store;
  autopilot: Autopilot;
  counts: Counts;
  loadSeconds: number;
  plans: Record<string, string>;
  passes: number[];
  questions: Record<string, number[]>;
  release(): Promise<void>;
}

function quantile(samples: readonly number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}
const median = (s: readonly number[]) => quantile(s, 0.5);

function options() {
  const values = benchArgs('bench:autopilot', HELP, {
    postgres: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    sizes: { type: 'string', default: '10000,1000000' },
    passes: { type: 'string', default: '100' },
  });
  const sizes = values.sizes.split(',').map(Number);
  const passes = Number(values.passes);
  if (
    sizes.some((n) => !Number.isInteger(n) || n < WORK_STACKS + 100) ||
    !Number.isInteger(passes) ||
    passes < 1
  ) {
    process.stderr.write(
      `bench: --sizes takes integers of at least ${WORK_STACKS + 100}, --passes a positive integer\n`,
    );
    process.exit(2);
  }
  if (values['database-url'] !== undefined && !values.postgres) {
    process.stderr.write('bench: --database-url needs --postgres\n');
    process.exit(2);
  }
  return {
    postgres: values.postgres === true,
    serverUrl: values['database-url'] ?? DEFAULT_SERVER_URL,
    sizes,
    passes,
  };
}

async function main(): Promise<number> {
  const opts = options();
  const engine = opts.postgres ? 'postgres' : 'sqlite';
  const tmp = mkdtempSync(join(tmpdir(), 'node-daemon-bench-autopilot-'));
  const dbs = opts.postgres ? new ThrowawayDatabases(opts.serverUrl) : undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    warn(`\nbench: ${signal}: dropping the run's databases`);
    void (dbs?.dropAll() ?? Promise.resolve()).finally(() => {
      rmSync(tmp, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const sized: Sized[] = [];
  const info = machine(ROOT);
  const results: Record<string, unknown> = { engine, machine: info, work: WORK, population: POPULATION };
  try {
    if (dbs) {
      log(`PostgreSQL: ${await dbs.version()}`);
      countUserAsOurs('postgres');
    }
    log(
      `autopilot pass on ${engine}: sizes ${opts.sizes.map((n) => n.toLocaleString('en-US')).join(', ')}; ` +
        `${opts.passes} passes each; code ${info.commit}, ${info.cpus} x ${info.cpuModel}, Node ${info.node}`,
    );
    for (const n of opts.sizes) {
      const started = performance.now();
      let store: Store;
      let counts: Counts;
      let release: () => Promise<void>;
      let plans: () => Promise<Record<string, string>>;
      if (dbs) {
        const { name, url } = await dbs.create();
        const loading = await PostgresStore.open({ url, applicationName: 'node-daemon bench' });
        counts = await fill(loading, await postgresWriter(url), n);
        await loading.close();
        // What autovacuum does after a bulk load, done now: the plans do not depend on when it runs.
        const client = new Client({ connectionString: url });
        await client.connect();
        await client.query('VACUUM ANALYZE');
        await client.end();
        store = await PostgresStore.open({ url, applicationName: 'node-daemon bench' });
        release = async () => {
          await store.close();
          await dbs.drop(name);
        };
        plans = () => postgresPlans(url);
      } else {
        const dir = join(tmp, `n${n}`);
        mkdirSync(dir);
        const loading = new SqliteStore({ dataDir: dir });
        counts = await fill(loading, sqliteWriter(join(dir, SQLITE_FILE)), n);
        // A daemon restart: the store's PRAGMA optimize at close leaves the statistics the planner then uses.
        await checkPlan(autopilotOver(loading));
        await loading.close();
        store = new SqliteStore({ dataDir: dir });
        release = () => store.close();
        plans = async () => sqlitePlans(join(dir, SQLITE_FILE));
      }
      const loadSeconds = (performance.now() - started) / 1000;
      const autopilot = autopilotOver(store);
      await checkPlan(autopilot);
      const entry: Sized = {
        n,
        store,
        autopilot,
        counts,
        loadSeconds,
        plans: await plans(),
        passes: [],
        questions: Object.fromEntries(Object.keys(QUESTIONS).map((q) => [q, []])),
        release,
      };
      sized.push(entry);
      log(
        `  ${n.toLocaleString('en-US')} stacks (${counts.tickets.toLocaleString('en-US')} tickets, ` +
          `${counts.askedOurs.toLocaleString('en-US')} of them asked our node to attest): built in ${fmt(loadSeconds, 1)} s`,
      );
    }

    // Untimed passes right before the timed ones (after the wait for quiet, during which other clients of
    // the server may have taken its buffers): caches, JIT, and on PostgreSQL the switch to generic plans
    // after five executions.
    const waited = await waitForQuiet(undefined, 30);
    for (let k = 0; k < 10; k++) for (const s of sized) await s.autopilot.run();
    const before = snapshot();
    for (let k = 0; k < opts.passes; k++) {
      for (const s of sized) {
        const t = performance.now();
        await s.autopilot.run();
        s.passes.push(performance.now() - t);
      }
    }
    for (let k = 0; k < opts.passes; k++) {
      for (const s of sized) {
        for (const [name, ask] of Object.entries(QUESTIONS)) {
          const t = performance.now();
          await ask(s.store);
          s.questions[name]!.push(performance.now() - t);
        }
      }
    }
    const load = foreignLoad(before, snapshot());
    for (const s of sized) await checkPlan(s.autopilot);

    const first = sized[0]!;
    const last = sized.at(-1)!;
    const ratio = (a: number, b: number) => `${fmt(a / b, 2)}x`;
    log('');
    log(
      table(
        [
          'stacks',
          'tickets',
          'median ms',
          'p95 ms',
          'min ms',
          ...Object.keys(QUESTIONS).map((q) => `${q} ms`),
        ],
        [
          ...sized.map((s) => [
            fmt(s.n, 0),
            fmt(s.counts.tickets, 0),
            fmt(median(s.passes), 2),
            fmt(quantile(s.passes, 0.95), 2),
            fmt(Math.min(...s.passes), 2),
            ...Object.values(s.questions).map((q) => fmt(median(q), 3)),
          ]),
          [
            'ratio',
            '',
            ratio(median(last.passes), median(first.passes)),
            ratio(quantile(last.passes, 0.95), quantile(first.passes, 0.95)),
            ratio(Math.min(...last.passes), Math.min(...first.passes)),
            ...Object.keys(QUESTIONS).map((q) =>
              ratio(median(last.questions[q]!), median(first.questions[q]!)),
            ),
          ],
        ],
        new Set([0, 1, 2, 3, 4, 5, 6, 7, 8]),
      ),
    );
    log(
      `\nA pass: Autopilot.run() in dry-run mode (${WORK.fill + WORK.idle} settlements, ${WORK.attest} ` +
        `attestations, 1 claim of ${WORK.claim} planned, each simulated by a stub). Question columns: the store ` +
        'call alone, median.',
    );
    log(
      `other processes used ${load ? `${load.otherPercent}%` : '?'} of a core while timing` +
        `${load?.databasePercent === undefined ? '' : `, PostgreSQL ${load.databasePercent}%`}` +
        `${waited === undefined ? ' (the machine never went quiet: waited 30 s)' : ''}`,
    );
    for (const s of [first, last]) {
      log(`\nplans at ${s.n.toLocaleString('en-US')} stacks:`);
      for (const [name, plan] of Object.entries(s.plans)) log(`  ${name}: ${plan}`);
    }
    results.sizes = sized.map((s) => ({
      stacks: s.n,
      counts: s.counts,
      loadSeconds: s.loadSeconds,
      passMs: { median: median(s.passes), p95: quantile(s.passes, 0.95), min: Math.min(...s.passes) },
      passSamplesMs: s.passes.map((ms) => Math.round(ms * 1000) / 1000),
      questionMedianMs: Object.fromEntries(Object.entries(s.questions).map(([q, v]) => [q, median(v)])),
      plans: s.plans,
    }));
    results.ratio = {
      median: median(last.passes) / median(first.passes),
      p95: quantile(last.passes, 0.95) / quantile(first.passes, 0.95),
    };
    results.otherLoad = load;
    mkdirSync(RESULTS, { recursive: true });
    writeResults(
      join(RESULTS, engine === 'postgres' ? 'autopilot-postgres.json' : 'autopilot.json'),
      results,
    );
  } catch (error) {
    fail('the autopilot pass', error);
  } finally {
    for (const s of sized) await s.release().catch(() => undefined);
    await dbs?.dropAll();
    rmSync(tmp, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  return exitCode();
}

process.exitCode = await main();
