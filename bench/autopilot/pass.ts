/**
 * bench:autopilot's pass: the autopilot in dry-run mode over a store, the check that a pass plans exactly the
 * work, the four store questions a pass asks, and their query plans on each engine.
 */
import { DatabaseSync } from 'node:sqlite';
import { Client } from 'pg';
import type { Chain } from '../../src/chain/chain.ts';
import type { LiveIndexer } from '../../src/indexer/run.ts';
import { createMetrics } from '../../src/internal/metrics.ts';
import { Autopilot } from '../../src/operations/autopilot.ts';
import type { Writes } from '../../src/operations/writes.ts';
import { AUTOPILOT_QUERIES as PG_QUERIES } from '../../src/store/postgres/postgres-store.ts';
import { AUTOPILOT_QUERIES as SQLITE_QUERIES } from '../../src/store/sqlite/sqlite-store.ts';
import type { Store } from '../../src/store/store.ts';
import { silentLogger } from '../ingest.ts';
import { EPOCH, hex, IDLE_SECONDS, NOW, OURS, SETTLE_FILL, WORK } from './population.ts';

const BADGE = { badge_id: hex(0xbad9e), node_small_id: OURS };

/** The autopilot in dry-run mode over a store, with a chain whose simulation answers at once. */
export function autopilotOver(store: Store): Autopilot {
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
      maxGasPerDay: 50_000_000_000n,
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
export async function checkPlan(autopilot: Autopilot): Promise<void> {
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
export const QUESTIONS = {
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

export function sqlitePlans(file: string): Record<string, string> {
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
export async function postgresPlans(url: string): Promise<Record<string, string>> {
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
