import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';
import { referenceEarnings } from './helpers/ledger-from-events.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from './helpers/postgres.ts';
import { tempDir } from './helpers/tmp.ts';

type Json = Record<string, unknown>;

function ok(res: LightMyRequestResponse): Json {
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Json;
}

const PRICE = 2_000_000;
const OURS = 2;
const REQUEST = new Uint8Array(32).fill(4);

/** Tasks 1 (no security), 2 (confidential compute), 3 (sampling consensus); peers 1 and 3; our node 2. */
async function world(d: DevDaemon): Promise<void> {
  for (const security_level of [0, 1, 2]) {
    ok(
      await d.post('/dev/tasks', {
        role: 0,
        model_name: 'meta-llama/Llama-3.3-70B-Instruct',
        security_level,
      }),
    );
  }
  const subscriptions = [1, 2, 3].map((task_small_id) => ({
    task_small_id,
    price_per_one_million_compute_units: 1_000_000,
  }));
  ok(await d.post('/dev/nodes', { subscriptions }));
  ok(await d.post('/nodes/register'));
  for (const s of subscriptions) ok(await d.post('/nodes/task-subscribe', s));
  ok(await d.post('/dev/nodes', { subscriptions }));
}

async function buy(d: DevDaemon, task: number, units: number, node = OURS): Promise<number> {
  const bought = ok(
    await d.post('/dev/stacks', {
      task_small_id: task,
      num_compute_units: units,
      price_per_one_million_compute_units: PRICE,
      selected_node_id: node,
    }),
  );
  return bought.stack_small_id as number;
}

/** Reports `units` on a stack in three requests, as an inference server would. */
async function serve(d: DevDaemon, stack: number, units: number, usage: Map<bigint, bigint>) {
  const parts = [Math.floor(units / 3), Math.floor(units / 3), units - 2 * Math.floor(units / 3)];
  for (const part of parts) {
    if (part > 0) ok(await d.post(`/stacks/${stack}/usage`, { compute_units: part }));
  }
  usage.set(BigInt(stack), (usage.get(BigInt(stack)) ?? 0n) + BigInt(units));
}

const run = async (d: DevDaemon) => ok(await d.post('/autopilot/run'));

/** The attester a settled stack asks for, if any (the dev network samples it). */
async function attesterOf(d: DevDaemon, stack: number): Promise<number | undefined> {
  const ticket = await d.services.dev!.getTicket(stack);
  const first = ticket?.requested_attestation_nodes[0];
  return first === undefined ? undefined : Number(first);
}

/**
 * Peers attest our stacks when asked (honestly: they re-run the requests the daemon recorded); our node's
 * requests are the autopilot's. A peer's stack that asks another peer stays unattested, as it may on chain.
 */
async function peersAttest(d: DevDaemon, stacks: number[]): Promise<void> {
  for (const stack of stacks) {
    const attester = await attesterOf(d, stack);
    const ticket = await d.services.dev!.getTicket(stack);
    if (attester === undefined || attester === OURS || ticket?.already_attested_nodes.length) continue;
    ok(await d.post(`/dev/stacks/${stack}/attest`, { node_small_id: attester }));
  }
}

function stretch(engine: 'sqlite' | 'postgres', flags: () => Record<string, string>) {
  it(`runs a stretch of network life on ${engine}: everything due is done once, and earnings equal the events`, async () => {
    const d = await devDaemon({
      autopilot: 'on',
      'autopilot-settle-fill': '0.9',
      'autopilot-min-claim': '5000',
      'dev-sampling-probability': '1',
      ...flags(),
    });
    try {
      await world(d);
      const usage = new Map<bigint, bigint>();
      // Our stacks: four sizes on each task, filled to 95%, 50%, 100% and 30%.
      const fills = [0.95, 0.5, 1, 0.3];
      const ours: { id: number; task: number; units: number; fill: number }[] = [];
      for (const task of [1, 2, 3]) {
        for (const [i, units] of [1000, 4000, 10_000, 50_000].entries()) {
          ours.push({ id: await buy(d, task, units), task, units, fill: fills[i]! });
        }
      }
      for (const stack of ours) {
        const units = Math.floor(stack.units * stack.fill);
        if (stack.task === 1 && stack.fill === 0.3) {
          // Served two hours ago, nothing since: idle past --autopilot-settle-idle (an hour).
          await d.services.store.addStackUsage(stack.id, units, REQUEST, Date.now() - 7_200_000);
          usage.set(BigInt(stack.id), BigInt(units));
        } else {
          await serve(d, stack.id, units, usage);
        }
      }
      await run(d);
      // Peers' own stacks of the sampling-consensus task, settled by them: some ask our node to attest.
      const theirs: number[] = [];
      for (let i = 0; i < 6; i++) theirs.push(await buy(d, 3, 2000, i % 2 === 0 ? 1 : 3));
      for (const stack of theirs) ok(await d.post(`/dev/stacks/${stack}/try-settle`, {}));
      const settledOurs = ours.filter(
        (s) => s.task !== 2 && (s.fill >= 0.9 || (s.task === 1 && s.fill === 0.3)),
      );
      await peersAttest(
        d,
        settledOurs.map((s) => s.id),
      );
      await run(d);
      // A peer disputes one of our sampling-consensus settlements: its fee is locked for good.
      const disputed = settledOurs.find((s) => s.task === 3)!;
      ok(await d.post('/dev/disputes', { stack_small_id: disputed.id, node_small_id: 3 }));
      ok(await d.post('/dev/epoch'));
      await run(d);
      // The peers claim theirs: our node is credited for what it attested.
      for (const node of [1, 3]) {
        const mine = theirs.filter((_, i) => (i % 2 === 0 ? 1 : 3) === node);
        const open = [];
        for (const stack of mine) {
          const ticket = await d.services.dev!.getTicket(stack);
          if (ticket && !ticket.is_in_dispute) open.push(stack);
        }
        if (open.length > 0) ok(await d.post('/dev/claims', { node_small_id: node, stack_small_ids: open }));
      }
      // One more small stack, settled late: its fee alone is below --autopilot-min-claim.
      const small = await buy(d, 1, 1000);
      await serve(d, small, 1000, usage);
      await run(d);
      ok(await d.post('/dev/epoch'));
      const last = await run(d);

      // Every stack that reached the threshold (or went idle with usage) was settled with its recorded units,
      // and everything claimable worth claiming was claimed; the confidential-compute ones were claimed directly.
      for (const stack of ours) {
        const row = ok(await d.get(`/claimed-stacks/nodes/${OURS}`)) as unknown as Json[];
        const claimed = row.find((r) => r.stack_small_id === stack.id);
        const due = stack.fill >= 0.9 || (stack.task === 1 && stack.fill === 0.3);
        const ticket = await d.services.store.getTicket(stack.id);
        if (!due) {
          assert.equal(ticket, undefined, `stack ${stack.id} (${stack.fill}) was left open`);
          continue;
        }
        assert.equal(
          ticket?.num_claimed_compute_units,
          Number(usage.get(BigInt(stack.id))),
          `stack ${stack.id}`,
        );
        if (stack.id === disputed.id) assert.equal(claimed, undefined, 'the disputed stack is not claimable');
        else assert.ok(claimed, `stack ${stack.id} was claimed`);
        if (stack.task === 2) assert.equal(claimed?.claim_path, 'confidential_compute');
      }
      // The small late stack waits: its fee is below the policy's minimum, and the plan says so.
      assert.equal((await d.services.store.getTicket(small))?.is_claimed, false);
      const waiting = (last.plan as Json[]).find((p) => (p.stack_small_ids as number[]).includes(small));
      assert.equal(waiting?.will, 'skip');
      assert.match(String(waiting?.reason), /below --autopilot-min-claim/);
      // Every attestation asked of our node was submitted.
      assert.deepEqual(
        (await d.services.store.listAttestationRequests(OURS)).filter((r) => !r.is_in_dispute),
        [],
      );
      // Nothing was done twice: every transaction of the signer succeeded, no action failed or hangs.
      const signer = d.services.chain!.signerAddress;
      const transactions = d.services.dev!.transactionsOf(signer);
      assert.deepEqual(
        transactions.filter((t) => t.status !== 'success').map((t) => [t.kind, t.abort?.name]),
        [],
      );
      const status = ok(await d.get('/autopilot'));
      const actions = status.recent_actions as Json[];
      assert.deepEqual(
        actions.filter((a) => a.status === 'failed' || a.status === 'pending'),
        [],
      );
      const acted = actions.filter((a) => a.status === 'succeeded');
      const settles = acted
        .filter((a) => a.action === 'settle')
        .flatMap((a) => a.stack_small_ids as number[]);
      assert.equal(new Set(settles).size, settles.length, 'no stack settled twice');
      assert.ok(
        acted.some((a) => a.action === 'claim' && (a.stack_small_ids as number[]).length > 1),
        'claims are batched',
      );
      assert.ok(acted.some((a) => a.action === 'direct_claim'));

      // The earnings endpoint equals the fees summed from the chain's events with the contract's formula.
      const epoch = BigInt(await d.services.chain!.currentEpoch());
      const reference = await referenceEarnings(d.services.dev!.events, BigInt(OURS), epoch, usage);
      const earnings = ok(await d.get(`/earnings/nodes/${OURS}`));
      for (const key of [
        'claimed',
        'claimable',
        'settling',
        'disputed',
        'unsettled',
        'attester_rewards',
        'refunded_to_users',
      ] as const) {
        assert.equal(BigInt(earnings[key] as number), reference[key], key);
      }
      assert.deepEqual(earnings.stacks, reference.stacks);
      assert.equal(earnings.unsettled_stacks, reference.unsettled_stacks);
      assert.deepEqual(
        earnings.settled_stacks,
        reference.settled_stacks.map((t) => ({
          stack_small_id: Number(t.stack_small_id),
          state: t.state,
          num_claimed_compute_units: Number(t.units),
          node_fee_amount: Number(t.fee),
          claimable_from_epoch: Number(t.from),
        })),
      );
      assert.deepEqual(
        earnings.by_epoch,
        [...reference.by_epoch].map(([e, b]) => ({
          epoch: Number(e),
          claimed: Number(b.claimed),
          stacks_claimed: b.stacks_claimed,
        })),
      );
      assert.ok(reference.claimed > 0n && reference.disputed > 0n && reference.unsettled > 0n);
      // Every settlement that asked our node to attest (its own stacks too: the contract may sample the settler)
      // was attested by the autopilot, once.
      const attested = acted
        .filter((a) => a.action === 'attest')
        .flatMap((a) => a.stack_small_ids as number[]);
      assert.deepEqual(
        attested.toSorted((a, b) => a - b),
        reference.asked_to_attest.map(Number),
      );
      // /metrics says the same, in USDC.
      const metrics = (await d.get('/metrics')).body;
      const metric = (name: string) => {
        const line = metrics.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
        return line === undefined ? undefined : Number(line.split(' ').at(-1));
      };
      const asUsdc = (amount: bigint) => Number(amount) / 1e6;
      assert.equal(
        metric(`node_daemon_earnings_claimed_usdc_total{node="${OURS}"}`),
        asUsdc(reference.claimed),
      );
      assert.equal(
        metric(`node_daemon_earnings_usdc{node="${OURS}",state="disputed"}`),
        asUsdc(reference.disputed),
      );
      assert.equal(
        metric(`node_daemon_earnings_usdc{node="${OURS}",state="unsettled"}`),
        asUsdc(reference.unsettled),
      );
      assert.equal(metric(`node_daemon_stacks{node="${OURS}",state="claimed"}`), reference.stacks.claimed);
      // And the chain agrees: what the signer holds, plus what it can still withdraw, is what it was paid.
      const account = d.services.dev!.nodeAccount(OURS)!;
      assert.equal(
        d.services.dev!.balanceOf(signer) + BigInt(account.available_fee_amount),
        reference.claimed + reference.attester_rewards,
      );
    } finally {
      await d.close();
    }
  });
}

describe('autopilot', () => {
  stretch('sqlite', () => ({}));

  it('plans in dry-run exactly what it does once on', async () => {
    const dir = tempDir();
    const keep = { dir: dir.dir, remove: async () => undefined };
    const flags = {
      'autopilot-settle-fill': '0.9',
      'autopilot-min-claim': '1',
      'dev-sampling-probability': '0',
    };
    const dry = await devDaemon({ ...flags, autopilot: 'dry-run' }, keep);
    const usage = new Map<bigint, bigint>();
    let planned: string[];
    try {
      await world(dry);
      const stacks: number[] = [];
      for (const task of [1, 2, 3])
        for (const units of [1000, 2000]) stacks.push(await buy(dry, task, units));
      for (const [i, stack] of stacks.entries()) await serve(dry, stack, i % 2 === 0 ? 1000 : 500, usage);
      // Two stacks settled by hand in the previous epoch: claimable now.
      ok(await dry.post('/nodes/try-settle-stacks', { stack_small_ids: [stacks[1], stacks[5]] }));
      ok(await dry.post('/dev/epoch'));
      const result = await run(dry);
      assert.equal(result.acted, false);
      assert.deepEqual(result.actions, []);
      planned = (result.plan as Json[])
        .filter((p) => p.will === 'act')
        .map((p) => `${p.action} ${p.node_small_id} ${(p.stack_small_ids as number[]).join(',')}`)
        .sort();
      assert.deepEqual(
        planned.map((p) => p.split(' ')[0]),
        ['claim', 'direct_claim', 'settle', 'settle'],
        'settles, a direct claim and a claim',
      );
      // A dry run records what it would do, once, and submits nothing.
      const recorded = (ok(await dry.get('/autopilot')).recent_actions as Json[]).filter(
        (a) => a.status === 'planned',
      );
      assert.equal(recorded.length, planned.length);
      await run(dry);
      assert.equal(
        (ok(await dry.get('/autopilot')).recent_actions as Json[]).filter((a) => a.status === 'planned')
          .length,
        planned.length,
      );
    } finally {
      await dry.close();
    }
    const on = await devDaemon({ ...flags, autopilot: 'on' }, dir);
    try {
      await run(on);
      const done = (ok(await on.get('/autopilot')).recent_actions as Json[])
        .filter((a) => a.status === 'succeeded')
        .map((a) => `${a.action} ${a.node_small_id} ${(a.stack_small_ids as number[]).join(',')}`)
        .sort();
      assert.deepEqual(done, planned);
    } finally {
      await on.close();
    }
  });

  it('does not send what the chain would abort: the claim waits with the reason, and nothing is spent', async () => {
    const d = await devDaemon({ autopilot: 'on', 'autopilot-min-claim': '1' });
    try {
      await world(d);
      const stack = await buy(d, 1, 1000);
      await serve(d, stack, 1000, new Map());
      // The task goes away between the settlement and the claim: claim_funds would then abort (its task is
      // gone, contracts.md §2.14). It is deprecated an epoch before, so that it can be removed in the
      // settlement's own epoch: the ticket is not claimable yet, and no pass of the autopilot (woken by
      // every event it indexes) can claim before the task is gone.
      ok(await d.post('/dev/tasks/1/deprecate'));
      ok(await d.post('/dev/epoch'));
      await run(d);
      const ticket = await d.services.store.getTicket(stack);
      assert.ok(ticket, 'settled');
      ok(await d.post('/dev/tasks/1/remove'));
      while ((await d.services.dev!.currentEpoch()) < BigInt(ticket.claimable_from_epoch ?? 0)) {
        ok(await d.post('/dev/epoch'));
      }
      // The autopilot plans from the store: the claim is in its plan once the indexer has read the new epoch.
      // POST /dev/epoch waits 5 s at most for that and answers all the same; this waits for it and says so.
      const indexed = await d.services.indexer!.waitUntil(async () => {
        const { epoch } = await d.services.store.getChainState();
        return epoch !== null && BigInt(epoch) >= BigInt(ticket.claimable_from_epoch ?? 0);
      }, 10_000);
      assert.ok(indexed, 'the indexer reads the epoch the ticket is claimable from');
      const sentBefore = d.services.dev!.transactionsOf(d.services.chain!.signerAddress).length;
      for (let i = 0; i < 3; i++) await run(d);
      const status = ok(await d.get('/autopilot'));
      assert.equal(status.state, 'idle', 'a simulated abort is no reason to halt: nothing was spent');
      const claim = (status.plan as Json[]).find((p) => p.action === 'claim');
      assert.equal(claim?.will, 'skip');
      assert.match(
        String(claim?.reason),
        /would abort it now: EFieldDoesNotExist \(abort code 1 in dynamic_field\)/,
      );
      assert.equal(d.services.dev!.transactionsOf(d.services.chain!.signerAddress).length, sentBefore);
      // Recorded once, not at every pass.
      const skipped = (status.recent_actions as Json[]).filter((a) => a.action === 'claim');
      assert.deepEqual(
        skipped.map((a) => a.status),
        ['skipped'],
      );
    } finally {
      await d.close();
    }
  });

  it('attests inside the window only, and says when a window has closed', async () => {
    const d = await devDaemon({ 'dev-sampling-probability': '1' });
    try {
      // Only our node serves the sampling-consensus task, so the contract can only sample our node.
      ok(
        await d.post('/dev/tasks', {
          role: 0,
          model_name: 'meta-llama/Llama-3.3-70B-Instruct',
          security_level: 2,
        }),
      );
      ok(await d.post('/nodes/register'));
      ok(
        await d.post('/nodes/task-subscribe', {
          task_small_id: 1,
          price_per_one_million_compute_units: 1_000_000,
        }),
      );
      const stack = await buy(d, 1, 1000, 1);
      await serve(d, stack, 1000, new Map());
      ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [stack] }));
      const attestOf = (result: Json) =>
        (result.plan as Json[]).find(
          (p) => p.action === 'attest' && (p.stack_small_ids as number[])[0] === stack,
        );
      const inside = attestOf(await run(d));
      assert.equal(inside?.will, 'act');
      assert.match(String(inside?.reason), /asked to attest \(slot 1\), until epoch 1/);
      ok(await d.post('/dev/epoch'));
      assert.equal(attestOf(await run(d))?.will, 'act', 'epoch E+1 is still inside the window');
      ok(await d.post('/dev/epoch'));
      const closed = attestOf(await run(d));
      assert.equal(closed?.will, 'skip');
      assert.match(String(closed?.reason), /attestation window closed with epoch 1/);
    } finally {
      await d.close();
    }
  });

  it('never sends a claim the pooled treasury cannot pay: it claims the part that fits, and says why it waits', async () => {
    const d = await devDaemon({
      autopilot: 'on',
      'autopilot-min-claim': '1',
      'dev-sampling-probability': '1',
    });
    try {
      // Our node alone serves a sampling-consensus task: every settlement asks it to attest its own stack, and
      // each claim then pays the node and the attester 1.2x the base each, against 1.212x paid in
      // (contracts.md §4.3). Four equal stacks: the treasury pays two claims, not four.
      ok(
        await d.post('/dev/tasks', {
          role: 0,
          model_name: 'meta-llama/Llama-3.3-70B-Instruct',
          security_level: 2,
        }),
      );
      ok(await d.post('/nodes/register'));
      ok(
        await d.post('/nodes/task-subscribe', {
          task_small_id: 1,
          price_per_one_million_compute_units: 1_000_000,
        }),
      );
      const stacks: number[] = [];
      for (let i = 0; i < 4; i++) stacks.push(await buy(d, 1, 10_000, 1));
      for (const stack of stacks) await serve(d, stack, 10_000, new Map());
      await run(d);
      await run(d);
      assert.equal((await d.services.store.listAttestationRequests(1)).length, 0, 'all four attested');
      ok(await d.post('/dev/epoch'));
      await run(d);
      // The claim sent, by this pass or by one the epoch's change woke first (the autopilot is on), as
      // recorded; the claims it held back are recorded as skipped.
      const status = ok(await d.get('/autopilot'));
      const claims = (status.recent_actions as Json[]).filter(
        (a) => a.action === 'claim' && a.status !== 'skipped',
      );
      assert.equal(claims.length, 1);
      assert.equal(claims[0]!.status, 'succeeded');
      assert.equal((claims[0]!.stack_small_ids as number[]).length, 2, 'the half the treasury can pay');
      assert.notEqual(status.state, 'halted');
      const waiting = (status.plan as Json[]).filter((p) => p.action === 'claim');
      assert.deepEqual(waiting.flatMap((p) => p.stack_small_ids as number[]).length, 2, 'two stacks wait');
      for (const p of waiting) {
        assert.equal(p.will, 'skip');
        assert.match(String(p.reason), /would abort it now: ENotEnough .*fee treasury cannot pay/);
      }
      // Nothing was sent that failed: the simulation kept the gas.
      const sent = d.services.dev!.transactionsOf(d.services.chain!.signerAddress);
      assert.deepEqual(
        sent.filter((t) => t.status !== 'success').map((t) => t.kind),
        [],
      );
    } finally {
      await d.close();
    }
  });

  it('in mode off plans but never acts, and records nothing', async () => {
    const d = await devDaemon({});
    try {
      await world(d);
      const stack = await buy(d, 1, 1000);
      await serve(d, stack, 1000, new Map());
      const result = await run(d);
      assert.equal(result.mode, 'off');
      assert.equal(result.acted, false);
      assert.equal((result.plan as Json[])[0]?.action, 'settle');
      assert.equal(await d.services.store.getTicket(stack), undefined);
      const status = ok(await d.get('/autopilot'));
      assert.equal(status.state, 'off');
      assert.deepEqual(status.recent_actions, []);
    } finally {
      await d.close();
    }
  });
});

describe('autopilot on PostgreSQL', async () => {
  if (!(await postgresAvailable('autopilot on PostgreSQL'))) return;
  let db: TestDatabase;
  before(async () => {
    db = (await createTestDatabase())!;
  });
  after(() => db.drop());
  stretch('postgres', () => ({ 'database-url': db.url }));
});
