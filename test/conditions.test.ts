import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { type Chain, ChainUnavailableError } from '../src/chain/chain.ts';
import { createLogger } from '../src/internal/logger.ts';
import { Autopilot } from '../src/operations/autopilot.ts';
import { Conditions } from '../src/operations/conditions.ts';
import type { NodeEventType } from '../src/store/node-events.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * The conditions of docs/NODE-EVENTS.md ("Conditions"), on real dev daemons: each starts once and ends
 * once, is not repeated by the checks in between, and is not announced again by a restart while it holds.
 * The checks are driven by hand (the daemon's own timers are stopped), so that each test says exactly when
 * one runs.
 */

type Json = Record<string, unknown>;

function ok(res: LightMyRequestResponse): Json {
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Json;
}

const CONDITION_TYPES: NodeEventType[] = [
  'signer_gas_low',
  'signer_gas_restored',
  'indexer_status',
  'autopilot_halted',
  'autopilot_resumed',
  'autopilot_failing',
  'autopilot_recovered',
];

/** The condition events recorded so far, as [type, data]. */
async function conditionEvents(d: DevDaemon): Promise<[string, Json][]> {
  const rows = await d.services.store.listNodeEvents({
    after: 0,
    limit: 1000,
    nodes: null,
    types: CONDITION_TYPES,
  });
  return rows.map((row) => [row.type, JSON.parse(row.data) as Json]);
}

const types = async (d: DevDaemon) => (await conditionEvents(d)).map(([type]) => type);

/** A dev daemon whose condition checks run only when the test calls them. */
async function daemon(flags: Record<string, string> = {}, dir = tempDir()): Promise<DevDaemon> {
  const d = await devDaemon(flags, dir);
  d.services.conditions!.stop();
  return d;
}

const keep = (dir: string) => ({ dir, remove: async () => undefined });

/** Task 1 at this security level, and our node 1 subscribed to it. */
async function ourNodeServes(d: DevDaemon, securityLevel: number): Promise<void> {
  ok(await d.post('/dev/tasks', { role: 0, model_name: 'm', security_level: securityLevel }));
  ok(await d.post('/nodes/register'));
  ok(await d.post('/nodes/task-subscribe', { task_small_id: 1, price_per_one_million_compute_units: 1 }));
}

/** A user buys a stack of task 1 from our node, at 2 USDC per million units. */
async function buy(d: DevDaemon, units: number): Promise<number> {
  const bought = ok(
    await d.post('/dev/stacks', {
      task_small_id: 1,
      num_compute_units: units,
      price_per_one_million_compute_units: 2_000_000,
      selected_node_id: 1,
    }),
  );
  return bought.stack_small_id as number;
}

describe('conditions', () => {
  it("announces the signer's gas below --gas-warning-mist once, its return once, and exports both", async () => {
    const dir = tempDir();
    let d = await daemon({ 'gas-warning-mist': '5000000000' }, keep(dir.dir));
    try {
      const watch = () => d.services.conditions!.checkGas();
      const address = d.services.chain!.signerAddress;
      await watch();
      assert.deepEqual(await types(d), [], '100 SUI at genesis: nothing to say');
      // Drained to just above the warning: the next transactions take it below.
      ok(await d.post('/dev/gas', { balance_mist: 5_000_000_001 }));
      await watch();
      ok(await d.post('/nodes/register'));
      await watch();
      await watch();
      ok(await d.post('/nodes/register'));
      await watch();
      const events = await conditionEvents(d);
      assert.deepEqual(
        events.map(([type]) => type),
        ['signer_gas_low'],
        'once, however many checks and transactions',
      );
      const balance = (await d.services.dev!.balances()).SUI;
      assert.deepEqual(events[0]![1], {
        address,
        balance_mist: 5_000_000_001 - 1_997_880,
        threshold_mist: 5_000_000_000,
      });
      const metrics = (await d.get('/metrics')).body;
      assert.match(metrics, new RegExp(`^node_daemon_signer_gas_balance_mist ${balance}$`, 'm'));
      assert.match(metrics, /^node_daemon_gas_warning_threshold_mist 5000000000$/m);

      // A restart while it holds says nothing more.
      await d.close();
      d = await daemon({ 'gas-warning-mist': '5000000000' }, keep(dir.dir));
      await d.services.conditions!.checkGas();
      assert.deepEqual(await types(d), ['signer_gas_low']);

      ok(await d.post('/dev/gas', { balance_mist: 20_000_000_000 }));
      await d.services.conditions!.checkGas();
      await d.services.conditions!.checkGas();
      const after = await conditionEvents(d);
      assert.deepEqual(
        after.map(([type]) => type),
        ['signer_gas_low', 'signer_gas_restored'],
      );
      assert.deepEqual(after[1]![1], {
        address,
        balance_mist: 20_000_000_000,
        threshold_mist: 5_000_000_000,
      });
    } finally {
      await d.close();
      await dir.remove();
    }
  });

  it('refuses a transaction the signer cannot pay, as Sui does, and spends the net gas of each', async () => {
    const d = await daemon();
    try {
      assert.equal((await d.services.dev!.balances()).SUI, 100_000_000_000);
      ok(await d.post('/nodes/register'));
      assert.equal((await d.services.dev!.balances()).SUI, 100_000_000_000 - 1_997_880);
      ok(await d.post('/dev/gas', { balance_mist: 1000 }));
      const res = await d.post('/nodes/register');
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'gas_rejected');
      assert.match(res.json().detail, /holds 1000 MIST, less than the gas budget/);
      assert.equal((await d.services.dev!.balances()).SUI, 1000, 'nothing spent');
    } finally {
      await d.close();
    }
  });

  it('announces the indexer behind once past --ready-max-lag, and caught up once', async () => {
    const dir = tempDir();
    let d = await daemon({ 'ready-max-lag': '5' }, keep(dir.dir));
    try {
      const check = (aheadMs: number) => d.services.conditions!.checkIndexer(Date.now() + aheadMs);
      await check(0);
      assert.deepEqual(await types(d), [], 'ready from the start: nothing to say');
      // The same indexer, seen later with no page at the head since: its lag grows past 5 s.
      await check(60_000);
      await check(61_000);
      await check(62_000);
      const behind = await conditionEvents(d);
      assert.deepEqual(
        behind.map(([type, data]) => [type, data.ready]),
        [['indexer_status', false]],
      );
      assert.match(String(behind[0]![1].detail), /behind the chain head \(more than --ready-max-lag 5\)/);
      // A restart while it was behind: not caught up yet since the start is no news.
      await d.close();
      d = await daemon({ 'ready-max-lag': '5' }, keep(dir.dir));
      assert.deepEqual(await types(d), ['indexer_status']);
      await check(0);
      await check(0);
      assert.deepEqual(
        (await conditionEvents(d)).map(([type, data]) => [type, data.ready]),
        [
          ['indexer_status', false],
          ['indexer_status', true],
        ],
      );
    } finally {
      await d.close();
      await dir.remove();
    }
  });

  it('announces the autopilot failing at its first failed action, and its recovery at the next success', async () => {
    const d = await daemon({ autopilot: 'on', 'autopilot-settle-fill': '0.5' });
    try {
      await ourNodeServes(d, 0);
      const stacks = [await buy(d, 1000), await buy(d, 1000)];
      // No SUI left: settling fails, and a pass run again fails again (the back-off retries it).
      ok(await d.post('/dev/gas', { balance_mist: 0 }));
      for (const stack of stacks) ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 900 }));
      ok(await d.post('/autopilot/run'));
      ok(await d.post('/autopilot/run'));
      const failing = await conditionEvents(d);
      assert.deepEqual(
        failing.map(([type]) => type),
        ['autopilot_failing'],
      );
      assert.equal(failing[0]![1].action, 'settle');
      assert.match(String(failing[0]![1].error), /less than the gas budget/);
      ok(await d.post('/dev/gas', { balance_mist: 10_000_000_000 }));
      ok(await d.post('/autopilot/run'));
      ok(await d.post('/autopilot/run'));
      assert.deepEqual(await types(d), ['autopilot_failing', 'autopilot_recovered']);
    } finally {
      await d.close();
    }
  });

  it('announces a halt once, and its end by the operator or by a restart', async () => {
    const d = await daemon({ 'dev-sampling-probability': '1', 'autopilot-min-claim': '1' });
    const log = createLogger('silent');
    // Test double at the chain's boundary: a fullnode that cannot simulate now (the autopilot then acts
    // unsimulated); the transactions themselves run on the real dev network, and abort there.
    const dev = d.services.chain!;
    const blind = new Proxy(dev, {
      get(target, name) {
        if (name === 'simulate') {
          return () => Promise.reject(new ChainUnavailableError('the fullnode cannot simulate now'));
        }
        const value = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as Chain;
    const autopilot = () =>
      new Autopilot({
        settings: {
          mode: 'on',
          settleFill: 0.95,
          settleIdleSeconds: 3600,
          maxGasPerDay: 50_000_000_000n,
          minClaim: 1n,
          maxGas: 50_000_000n,
        },
        chain: blind,
        store: d.services.store,
        writes: d.services.writes!,
        indexer: d.services.indexer!,
        metrics: d.services.metrics,
        log,
        conditions: new Conditions({ store: d.services.store, log }),
      });
    let pilot = autopilot();
    try {
      // A sampling-consensus task our node alone serves: each claim pays the node and its attester out of
      // a treasury paid 1.212x, so a claim of all four stacks aborts with ENotEnough (contracts.md §4.3).
      await ourNodeServes(d, 2);
      for (let i = 0; i < 4; i++) {
        ok(await d.post(`/stacks/${await buy(d, 10_000)}/usage`, { compute_units: 10_000 }));
      }
      await pilot.run();
      await pilot.run();
      ok(await d.post('/dev/epoch'));
      for (let i = 0; i < 3; i++) await pilot.run();
      assert.equal(pilot.halted !== undefined, true, 'three aborts in a row halt it');
      await pilot.run();
      const halted = await conditionEvents(d);
      assert.deepEqual(
        halted.map(([type]) => type),
        ['autopilot_failing', 'autopilot_halted'],
      );
      assert.match(
        String(halted[1]![1].reason),
        /^3 contract aborts in a row, the last: claim of .*ENotEnough/,
      );
      pilot.resume();
      await pilot.stop();
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual((await types(d)).slice(2), ['autopilot_resumed']);
      assert.equal((await conditionEvents(d))[2]![1].by, 'operator');

      // Halted again; then the daemon restarts (a new autopilot on the same store): the halt is over.
      pilot = autopilot();
      for (let i = 0; i < 3; i++) await pilot.run();
      assert.equal(pilot.halted !== undefined, true);
      await pilot.stop();
      pilot = autopilot();
      await pilot.run();
      const ends = await conditionEvents(d);
      assert.deepEqual(
        ends.slice(2).map(([type, data]) => [type, data.by ?? null]),
        [
          ['autopilot_resumed', 'operator'],
          ['autopilot_halted', null],
          ['autopilot_resumed', 'restart'],
        ],
        'the failing condition still holds: no recovery was seen',
      );
    } finally {
      await pilot.stop();
      await d.close();
    }
  });
});
