import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, describe, it } from 'node:test';
import { DevNetwork } from '../src/chain/dev/dev-network.ts';
import { loadOrCreateSigner } from '../src/chain/signer.ts';
import { SQLITE_FILE } from '../src/store/sqlite/sqlite-store.ts';
import { referenceEarnings } from './helpers/ledger-from-events.ts';
import { type Finished, startDaemon } from './helpers/process.ts';
import { mulberry32 } from './helpers/random.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * kill -9 during autopilot passes, then restart, many times over: the autopilot never submits twice and
 * misses nothing. Real daemon processes on one data directory; the dev network persists its chain there,
 * so it outlives each kill as a real chain would.
 */

type Json = Record<string, unknown>;
const OURS = 2;
const PRICE = 2_000_000;
const PER_TASK = 30;
const SEED = Number(process.env.NODE_DAEMON_TEST_SEED ?? Date.now() % 1_000_000);

interface Running {
  child: ChildProcess;
  url: string;
  exited: Promise<Finished>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('autopilot under kill -9', () => {
  const dir = tempDir();
  after(() => dir.remove());
  const flags = (autopilot: string) => [
    '--data-dir',
    dir.dir,
    '--auth',
    'none',
    '--no-demo',
    '--dev-sampling-probability',
    '1',
    '--autopilot',
    autopilot,
    '--autopilot-settle-fill',
    '0.9',
    '--autopilot-min-claim',
    '1',
  ];

  async function call(d: Running, method: string, path: string, body?: unknown): Promise<Json> {
    const res = await fetch(`${d.url}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, `${method} ${path}: ${text}`);
    return JSON.parse(text) as Json;
  }

  /** Reads the daemon's store from its file, as another process would (WAL: the daemon keeps writing). */
  function readStore<T>(read: (db: DatabaseSync) => T): T {
    const db = new DatabaseSync(join(dir.dir, SQLITE_FILE), { readOnly: true });
    try {
      db.exec('PRAGMA busy_timeout = 1000');
      return read(db);
    } finally {
      db.close();
    }
  }
  const lastActionId = () =>
    readStore((db) =>
      Number(db.prepare('SELECT coalesce(max(id), 0) AS id FROM autopilot_actions').get()?.id),
    );
  /** Pending autopilot records newer than `after` (a kill's own, not one an earlier kill left). */
  const pendingAfter = (after: number, db?: DatabaseSync) => {
    const count = (on: DatabaseSync) =>
      Number(
        on
          .prepare("SELECT count(*) AS n FROM autopilot_actions WHERE status = 'pending' AND id > ?")
          .get(after)?.n,
      );
    return db ? count(db) : readStore(count);
  };

  /** Kills the daemon the moment it has an action of its own in flight (recorded, not yet completed). */
  async function killInFlight(
    d: Running,
    after: number,
    extraMs: number,
    timeoutMs: number,
  ): Promise<boolean> {
    // One connection for the tight poll: opening one per look would be slower than the action.
    const db = new DatabaseSync(join(dir.dir, SQLITE_FILE), { readOnly: true });
    try {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        if (pendingAfter(after, db) > 0) {
          if (extraMs > 0) await sleep(extraMs);
          d.child.kill('SIGKILL');
          await d.exited;
          return true;
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
      return false;
    } finally {
      db.close();
    }
  }

  /**
   * New work for the autopilot while it runs: users buy stacks from our node and it serves them in full.
   * The daemon may be killed meanwhile: a failed request is fine, the final check reads what was recorded.
   */
  async function addWork(d: Running, round: number): Promise<void> {
    for (const task of [1, round % 2 === 0 ? 3 : 2]) {
      try {
        const bought = await call(d, 'POST', '/dev/stacks', {
          task_small_id: task,
          num_compute_units: 2000,
          price_per_one_million_compute_units: PRICE,
          selected_node_id: OURS,
        });
        await call(d, 'POST', `/stacks/${bought.stack_small_id}/usage`, { compute_units: 2000 });
      } catch {
        return;
      }
    }
  }

  /** Peers' sampling-consensus stacks, settled by them: some ask our node to attest. */
  async function peersSettle(d: Running, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const bought = await call(d, 'POST', '/dev/stacks', {
        task_small_id: 3,
        num_compute_units: 2000,
        price_per_one_million_compute_units: PRICE,
        selected_node_id: i % 2 === 0 ? 1 : 3,
      });
      await call(d, 'POST', `/dev/stacks/${bought.stack_small_id}/try-settle`, {});
    }
  }

  it('never submits twice and misses nothing', { timeout: 240_000 }, async (t) => {
    t.diagnostic(`seed ${SEED} (NODE_DAEMON_TEST_SEED replays it)`);
    const random = mulberry32(SEED);
    const usage = new Map<bigint, bigint>();
    const start = async (autopilot: string) => startDaemon(flags(autopilot), {}, 120_000);

    // The world, built with the autopilot off: three tasks (no security, confidential compute, sampling
    // consensus), two peers, our node, PER_TASK stacks per task, all of them served in full.
    let d = await start('off');
    for (const security_level of [0, 1, 2]) {
      await call(d, 'POST', '/dev/tasks', {
        role: 0,
        model_name: 'meta-llama/Llama-3.3-70B-Instruct',
        security_level,
      });
    }
    const subscriptions = [1, 2, 3].map((task_small_id) => ({
      task_small_id,
      price_per_one_million_compute_units: 1_000_000,
    }));
    await call(d, 'POST', '/dev/nodes', { subscriptions });
    await call(d, 'POST', '/nodes/register', {});
    for (const s of subscriptions) await call(d, 'POST', '/nodes/task-subscribe', s);
    await call(d, 'POST', '/dev/nodes', { subscriptions });
    const ours: number[] = [];
    for (const task of [1, 2, 3]) {
      for (let i = 0; i < PER_TASK; i++) {
        const units = 1000 * (1 + (i % 7));
        const bought = await call(d, 'POST', '/dev/stacks', {
          task_small_id: task,
          num_compute_units: units,
          price_per_one_million_compute_units: PRICE,
          selected_node_id: OURS,
        });
        const id = bought.stack_small_id as number;
        ours.push(id);
        await call(d, 'POST', `/stacks/${id}/usage`, { compute_units: units });
        usage.set(BigInt(id), BigInt(units));
      }
    }
    // With every sampling-consensus settlement asking for an attester, claims pay attesters on top of nodes
    // out of the pooled treasury (contracts.md §4.3): a large stack bought from a peer and never used keeps
    // the treasury able to pay them all.
    await call(d, 'POST', '/dev/stacks', {
      task_small_id: 1,
      num_compute_units: 1_000_000,
      price_per_one_million_compute_units: PRICE,
      selected_node_id: 1,
    });
    await peersSettle(d, 12);
    d.child.kill('SIGTERM');
    await d.exited;

    // Now the autopilot, killed with SIGKILL mid-action again and again: two kills in three land while an
    // action is recorded but not completed (at once, or a random 0-15 ms into it), on work that comes in as
    // the daemon starts; the third at a random moment of the pass. Midway an epoch passes (the claims
    // begin) and peers settle more stacks (more attestations are asked of our node).
    let kills = 0;
    let leftPending = 0;
    // Each round adds work as it starts; rounds go on until enough kills have landed mid-action (a loaded
    // machine starts daemons slowly), at most 12.
    let epochPassed = false;
    for (let round = 0; round < 12 && !(kills >= 6 && leftPending >= 3); round++) {
      const after = lastActionId();
      d = await start('on');
      if (round === 3) {
        await call(d, 'POST', '/dev/epoch', {});
        epochPassed = true;
      }
      if (round === 6) await peersSettle(d, 12);
      let killed: boolean;
      if (round % 3 !== 2) {
        const kill = killInFlight(d, after, round % 3 === 0 ? 0 : Math.floor(random() * 16), 10_000);
        await addWork(d, round);
        killed = await kill;
      } else {
        await sleep(Math.floor(random() * 100));
        d.child.kill('SIGKILL');
        await d.exited;
        killed = true;
      }
      if (!killed) {
        d.child.kill('SIGTERM');
        await d.exited;
        continue;
      }
      kills += 1;
      leftPending += pendingAfter(after);
    }
    t.diagnostic(`${kills} kills; ${leftPending} of them left the action in flight pending`);
    assert.ok(kills >= 4, `the daemon was killed mid-pass ${kills} times`);
    assert.ok(leftPending >= 2, 'kills landed between recording an action and completing it');

    // Finally a daemon that is left alone: it resolves what the kills left pending and finishes the work.
    d = await start('on');
    if (!epochPassed) await call(d, 'POST', '/dev/epoch', {});
    /** Runs passes until nothing is due and nothing pending. */
    const finish = async () => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const status = await call(d, 'POST', '/autopilot/run', {});
        const due = (status.plan as Json[]).filter((p) => p.will === 'act');
        if (due.length === 0 && pendingAfter(0) === 0) return;
        assert.ok(Date.now() < deadline, `the autopilot did not finish: ${JSON.stringify(due)}`);
        await sleep(100);
      }
    };
    await finish();
    // The stacks settled in this epoch become claimable in the next.
    await call(d, 'POST', '/dev/epoch', {});
    await finish();
    const earnings = await call(d, 'GET', `/earnings/nodes/${OURS}`);
    const epoch = BigInt(earnings.epoch as number);
    // Our stacks and their usage as the daemon recorded them (a request cut by a kill may or may not have
    // been): what the autopilot had to act on.
    const mine = (await (await fetch(`${d.url}/stacks/nodes/${OURS}`)).json()) as {
      stack_small_id: number;
      task_small_id: number;
      already_computed_units: number;
    }[];
    for (const stack of mine) usage.set(BigInt(stack.stack_small_id), BigInt(stack.already_computed_units));
    const served = (tasks: number[]) =>
      mine
        .filter((s) => tasks.includes(s.task_small_id) && s.already_computed_units > 0)
        .map((s) => s.stack_small_id)
        .sort((a, b) => a - b);
    const idle = mine.filter((s) => s.already_computed_units === 0).length;
    d.child.kill('SIGTERM');
    await d.exited;

    // The record: nothing failed, nothing hangs, and what the crashes interrupted was resolved.
    const db = new DatabaseSync(join(dir.dir, SQLITE_FILE), { readOnly: true });
    const actions = db
      .prepare('SELECT kind, stack_small_ids, status, error FROM autopilot_actions ORDER BY id')
      .all() as { kind: string; stack_small_ids: string; status: string; error: string | null }[];
    db.close();
    assert.deepEqual(
      actions.filter((a) => a.status === 'pending' || a.status === 'failed'),
      [],
      'no action failed or was left pending',
    );
    assert.ok(
      actions.some((a) => /after a restart/.test(a.error ?? '')),
      'a restart resolved an action a kill interrupted',
    );

    // The chain: every transaction the signer sent succeeded (a second settle or claim of a stack aborts),
    // and each of our stacks was settled or claimed directly once and claimed once.
    const { signer } = loadOrCreateSigner(dir.dir);
    const dev = DevNetwork.open({
      dataDir: dir.dir,
      signerAddress: signer.address,
      samplingProbability: 1,
      attestationNodes: 1,
    });
    try {
      const sent = dev.transactionsOf(signer.address);
      assert.deepEqual(
        sent.filter((x) => x.status !== 'success').map((x) => [x.kind, x.abort?.name]),
        [],
        'no transaction of the signer failed',
      );
      /** The stacks named by the `event`s of the signer's `kind` transactions. */
      const stacksOf = (kind: string, event: string) =>
        sent
          .filter((x) => x.kind === kind)
          .flatMap((x) => x.events as { type: string; parsedJson: { stack_small_id: { inner: string } } }[])
          .filter((e) => e.type.endsWith(`::${event}`))
          .map((e) => Number(e.parsedJson.stack_small_id.inner));
      const once = (ids: number[], what: string) =>
        assert.equal(new Set(ids).size, ids.length, `${what}: a stack appears twice`);
      const settled = stacksOf('try_settle_stack', 'StackTrySettleEvent');
      const direct = stacksOf('claim_funds_for_stacks', 'ClaimedStackEvent');
      const claimed = stacksOf('claim_funds', 'StackSettlementTicketClaimedEvent');
      once(settled, 'settlements');
      once(direct, 'direct claims');
      once(claimed, 'claims');
      assert.deepEqual(
        settled.toSorted((a, b) => a - b),
        served([1, 3]),
      );
      assert.deepEqual(
        direct.toSorted((a, b) => a - b),
        served([2]),
      );
      assert.ok(served([1, 2, 3]).length >= ours.length, 'the work added while killing came on top');

      // Nothing missed: everything is claimed, every attestation asked of our node was submitted once, and
      // the earnings the daemon reports equal those recomputed from the chain's events.
      const reference = await referenceEarnings(dev.events, BigInt(OURS), epoch, usage);
      assert.deepEqual(reference.stacks, {
        open: idle,
        settling: 0,
        claimable: 0,
        claimed: mine.length - idle,
        disputed: 0,
      });
      const attested = stacksOf('submit_stack_settlement_attestation', 'NewStackSettlementAttestationEvent');
      once(attested, 'attestations');
      assert.deepEqual(
        attested.toSorted((a, b) => a - b),
        reference.asked_to_attest.map(Number),
      );
      for (const key of ['claimed', 'claimable', 'settling', 'unsettled', 'refunded_to_users'] as const) {
        assert.equal(BigInt(earnings[key] as number), reference[key], key);
      }
    } finally {
      await dev.close();
    }
  });
});
