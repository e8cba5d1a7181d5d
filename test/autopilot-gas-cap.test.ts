import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../src/internal/logger.ts';
import { Autopilot, GAS_WINDOW_MS } from '../src/operations/autopilot.ts';
import { Conditions } from '../src/operations/conditions.ts';
import { type DevDaemon, devDaemon, nodeWithStacks } from './helpers/dev-daemon.ts';

/**
 * The autopilot's daily gas cap (--autopilot-max-gas-per-day) on a real dev daemon, with a fake clock: the
 * autopilot under test runs beside the daemon's own (off), on its store, chain and writes. On the dev
 * network a settlement is simulated at 3,976,000 MIST and uses 2,997,880 once the storage rebate is back.
 */

type Json = Record<string, unknown>;

const ESTIMATE = 3_976_000n;
const USED = 2_997_880n;
/** Two settlements fit (2 × 2,997,880 spent + 3,976,000 estimated), a third does not. */
const CAP = 8_000_000n;

async function budgetEvents(d: DevDaemon): Promise<[string, Json][]> {
  const rows = await d.services.store.listNodeEvents({
    after: 0,
    limit: 1000,
    nodes: null,
    types: ['autopilot_gas_budget_spent', 'autopilot_gas_budget_restored'],
  });
  return rows.map((row) => [row.type, JSON.parse(row.data) as Json]);
}

async function settled(d: DevDaemon, ids: number[]): Promise<number[]> {
  const done: number[] = [];
  for (const id of ids) if (await d.services.store.getTicket(id)) done.push(id);
  return done;
}

async function gauge(d: DevDaemon): Promise<string | undefined> {
  const text = (await d.get('/metrics')).body;
  return /^node_daemon_autopilot_gas_budget_remaining_mist (\S+)$/m.exec(text)?.[1];
}

/** The autopilot on, at the test's CAP, on the daemon's own services, at the test's clock. */
function autopilotOn(d: DevDaemon, clock: () => number, conditions?: Conditions): Autopilot {
  return new Autopilot({
    settings: {
      mode: 'on',
      settleFill: 0.95,
      settleIdleSeconds: 3600,
      minClaim: 1n,
      maxGas: 50_000_000n,
      maxGasPerDay: CAP,
    },
    chain: d.services.chain!,
    store: d.services.store,
    writes: d.services.writes!,
    indexer: d.services.indexer!,
    metrics: d.services.metrics,
    log: createLogger('silent'),
    conditions,
    clock,
  });
}

describe('the autopilot gas cap', () => {
  it('never signs past --autopilot-max-gas-per-day in 24 hours, says when it pauses and resumes, and counts from the store across a restart', async () => {
    const d = await devDaemon({ 'autopilot-max-gas-per-day': String(CAP) });
    d.services.conditions!.stop();
    const _log = createLogger('silent');
    let now = Date.now();
    const autopilot = () =>
      autopilotOn(d, () => now, new Conditions({ store: d.services.store, log: createLogger('silent') }));
    let pilot = autopilot();
    try {
      const ids = await nodeWithStacks(d, 3, 1000);
      const first = await pilot.run();
      assert.equal(first.actions.length, 2, 'two settlements fit the budget');
      assert.deepEqual(
        first.actions.map((a) => [a.status, a.gas_used]),
        [
          ['succeeded', Number(USED)],
          ['succeeded', Number(USED)],
        ],
      );
      assert.equal((await settled(d, ids)).length, 2);
      const paused = first.plan.find(
        (p) => p.will === 'act' && !first.actions.some((a) => a.stack_small_ids[0] === p.stack_small_ids[0]),
      );
      assert.ok(paused, 'the third is planned but waits');
      const startedAt = now;

      let status = await pilot.status();
      assert.deepEqual(status.gas_budget, {
        per_day: Number(CAP),
        spent: Number(2n * USED),
        remaining: Number(CAP - 2n * USED),
        paused: true,
        needed: Number(ESTIMATE),
        frees_at: new Date(startedAt + GAS_WINDOW_MS).toISOString(),
      });
      assert.match(status.plan.find((p) => p.will === 'act')?.reason ?? '', /./);
      assert.equal(await gauge(d), String(CAP - 2n * USED));
      const events = await budgetEvents(d);
      assert.deepEqual(
        events.map(([type]) => type),
        ['autopilot_gas_budget_spent'],
      );
      assert.deepEqual(events[0]![1], {
        address: d.services.chain!.signerAddress,
        budget_mist: Number(CAP),
        spent_mist: Number(2n * USED),
        needed_mist: Number(ESTIMATE),
        frees_at: new Date(startedAt + GAS_WINDOW_MS).toISOString(),
      });
      const skipped = (await d.services.store.listAutopilotActions({ limit: 50 })).find(
        (a) => a.status === 'skipped',
      );
      assert.match(skipped?.reason ?? '', /would pass --autopilot-max-gas-per-day 8000000: paused until /);

      // Later the same day, and after a restart (a new autopilot on the same store): still paused.
      now += GAS_WINDOW_MS / 2;
      await pilot.stop();
      pilot = autopilot();
      assert.equal((await pilot.run()).actions.length, 0);
      now = startedAt + GAS_WINDOW_MS - 1;
      assert.equal((await pilot.run()).actions.length, 0);
      assert.equal((await settled(d, ids)).length, 2);
      assert.deepEqual(
        (await budgetEvents(d)).map(([type]) => type),
        ['autopilot_gas_budget_spent'],
        'a restart does not announce it again',
      );

      // 24 hours after the first settlement, it has left the window: the third one is signed.
      now = startedAt + GAS_WINDOW_MS;
      const later = await pilot.run();
      assert.equal(later.actions.length, 1);
      assert.equal((await settled(d, ids)).length, 3);
      assert.deepEqual(
        (await budgetEvents(d)).map(([type]) => type),
        ['autopilot_gas_budget_spent', 'autopilot_gas_budget_restored'],
      );
      status = await pilot.status();
      assert.equal(status.gas_budget.paused, false);
      assert.equal(status.gas_budget.spent, Number(USED), 'the first two have left the window');
      assert.equal(status.gas_budget.frees_at, new Date(now + GAS_WINDOW_MS).toISOString());
    } finally {
      await pilot.stop();
      await d.close();
    }
  });

  it("counts what another daemon's autopilot recorded in the shared store (the lease moved to this one)", async () => {
    const d = await devDaemon({});
    d.services.conditions!.stop();
    const _log = createLogger('silent');
    const now = Date.now();
    try {
      await nodeWithStacks(d, 1, 1000);
      // Another daemon sharing the store signed an action that used the whole budget but one MIST.
      await d.services.store.insertAutopilotAction({
        at: now - 1000,
        updated_at: now - 1000,
        kind: 'claim',
        node_small_id: 1,
        stack_small_ids: [99],
        status: 'succeeded',
        reason: 'elsewhere',
        node_fee_amount: null,
        gas_estimate: null,
        gas_used: Number(CAP - 1n),
        tx_digests: ['digest'],
        error: null,
      });
      const pilot = autopilotOn(d, () => now);
      try {
        const pass = await pilot.run();
        assert.equal(pass.actions.filter((a) => a.action === 'settle').length, 0);
        const status = await pilot.status();
        assert.equal(status.gas_budget.remaining, 1);
        assert.equal(status.gas_budget.paused, true);
      } finally {
        await pilot.stop();
      }
    } finally {
      await d.close();
    }
  });
});
