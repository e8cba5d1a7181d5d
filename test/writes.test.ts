import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';
import { tempDir } from './helpers/tmp.ts';

type Json = Record<string, unknown>;

function ok(res: LightMyRequestResponse): Json {
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Json;
}

function problem(res: LightMyRequestResponse, status: number, code: string): Json {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  const body = res.json() as Json;
  assert.equal(body.code, code, res.body);
  return body;
}

/** Tasks 1 (no security), 2 (confidential compute) and 3 (sampling consensus); peer node 1 on all; our node 2. */
async function world(d: DevDaemon) {
  for (const security_level of [0, 1, 2]) {
    ok(
      await d.post('/dev/tasks', {
        role: 0,
        model_name: 'meta-llama/Llama-3.3-70B-Instruct',
        security_level,
      }),
    );
  }
  const peer = ok(
    await d.post('/dev/nodes', {
      subscriptions: [1, 2, 3].map((task_small_id) => ({
        task_small_id,
        price_per_one_million_compute_units: 1_000_000,
      })),
    }),
  );
  assert.equal(peer.node_small_id, 1);
  const registered = ok(await d.post('/nodes/register'));
  assert.equal(registered.node_small_id, 2);
  for (const task_small_id of [1, 2, 3]) {
    ok(
      await d.post('/nodes/task-subscribe', {
        task_small_id,
        price_per_one_million_compute_units: 1_000_000,
      }),
    );
  }
}

async function buy(d: DevDaemon, task: number, units = 1000, node = 2): Promise<number> {
  const bought = ok(
    await d.post('/dev/stacks', {
      task_small_id: task,
      num_compute_units: units,
      price_per_one_million_compute_units: 2_000_000,
      selected_node_id: node,
    }),
  );
  // Answered once indexed: on SQLite the stack's row is what records its creation event.
  assert.equal(bought.indexed, true);
  return bought.stack_small_id as number;
}

describe('write API on the dev network', () => {
  it('runs the whole life cycle: register, subscribe, usage, settle, attest, epoch, claim', async () => {
    const d = await devDaemon({ 'dev-sampling-probability': '1', 'dev-attestation-nodes': '1' });
    try {
      await world(d);
      const badges = ok(await d.get('/nodes/badges'));
      assert.equal((badges.badges as Json[])[0]?.node_small_id, 2);
      assert.deepEqual(
        (ok(await d.get('/subscriptions/nodes/2')) as unknown as Json[]).map((s) => s.task_small_id),
        [1, 2, 3],
        'each subscription is visible at once',
      );

      // Other users' deposits in the pooled treasury: with attesters, a SamplingConsensus claim pays out
      // more than its own stack's deposit (contracts.md §4.3), and the dev network follows the contract.
      await buy(d, 1, 1_000_000, 1);
      const stack = await buy(d, 3);
      const usage = ok(
        await d.post(`/stacks/${stack}/usage`, { compute_units: 600, request_hash: 'ab'.repeat(32) }),
      );
      assert.deepEqual(usage, {
        stack_small_id: stack,
        already_computed_units: 600,
        num_compute_units: 1000,
        num_total_messages: 1,
        fill_fraction: 0.6,
      });
      ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 300 }));
      const almostFull = ok(await d.get('/stacks/nodes/2?min_fill_fraction=0.9')) as unknown as Json[];
      assert.deepEqual(
        almostFull.map((s) => [s.stack_small_id, s.already_computed_units, s.num_total_messages]),
        [[stack, 900, 2]],
      );

      const settled = ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [stack] }));
      assert.equal(settled.indexed, true);
      assert.deepEqual(
        (settled.results as Json[])[0]?.num_claimed_compute_units,
        900,
        'claims the recorded usage',
      );
      const stackNow = (ok(await d.get('/stacks/nodes/2')) as unknown as Json[]).find(
        (s) => s.stack_small_id === stack,
      );
      assert.equal(stackNow?.in_settle_period, true);

      // Sampling is forced (probability 1, k = 1): the attester is the peer or our own node.
      const ticket = await d.services.dev!.getTicket(stack);
      const attester = Number(ticket?.requested_attestation_nodes[0]);
      if (attester === 1) ok(await d.post(`/dev/stacks/${stack}/attest`, { node_small_id: 1 }));
      else ok(await d.post('/nodes/submit-attestations', { stack_small_ids: [stack] }));
      const afterAttest = await d.services.dev!.getTicket(stack);
      assert.equal(afterAttest?.is_in_dispute, false, 'the proofs matched');
      assert.equal(afterAttest?.already_attested_nodes.length, 1);

      const early = problem(
        await d.post('/nodes/claim-funds', { stack_small_ids: [stack] }),
        409,
        'nothing_to_claim',
      );
      assert.deepEqual(early.not_claimable, [
        {
          stack_small_id: stack,
          reason: 'dispute_period',
          detail: `stack ${stack} is in its dispute period; it can be claimed from epoch 1 (now 0)`,
          claimable_from_epoch: 1,
        },
      ]);
      assert.deepEqual(ok(await d.post('/dev/epoch')), { epoch: 1, indexed: true });
      const before = d.services.dev!.balanceOf(d.services.chain!.signerAddress);
      const claim = ok(await d.post('/nodes/claim-funds', { stack_small_ids: [stack] }));
      // SamplingConsensus pays 1.2 x price per unit (contracts.md §4.2): 900 * 2_000_000 * 1200 / 1e9,
      // and refunds the buyer the same for the 100 units not claimed.
      const fee = (900n * 2_000_000n * 1200n) / 1_000_000_000n;
      assert.deepEqual(claim.claimed, [
        {
          stack_small_id: stack,
          path: 'settlement_ticket',
          num_claimed_compute_units: 900,
          node_fee_amount: Number(fee),
          user_refund_amount: 240,
        },
      ]);
      assert.deepEqual(claim.total, { node_fee_amount: 2160, user_refund_amount: 240, unpriced_stacks: 0 });
      assert.deepEqual(
        (claim.results as Json[]).map((r) => [r.stack_small_id, r.status, r.tx_digest]),
        [[stack, 'success', claim.tx_digest]],
      );
      const gained = d.services.dev!.balanceOf(d.services.chain!.signerAddress) - before;
      assert.ok(gained >= fee, `the node was paid at least its fee ${fee} (got ${gained})`);
      const claimed = ok(await d.get('/claimed-stacks/nodes/2')) as unknown as Json[];
      assert.deepEqual(
        claimed.map((c) => [
          c.stack_small_id,
          c.claim_path,
          c.num_claimed_compute_units,
          c.user_refund_amount,
          c.is_claimed,
        ]),
        [[stack, 'settlement_ticket', 900, (100 * 2_000_000 * 1200) / 1e9, true]],
      );
    } finally {
      await d.close();
    }
  });

  it('estimates a settlement before it is made: units, fee, refund and simulated gas, nothing sent', async () => {
    const d = await devDaemon({ 'dev-sampling-probability': '0' });
    try {
      await world(d);
      const used = await buy(d, 1);
      const unused = await buy(d, 1);
      const sampled = await buy(d, 3);
      const peers = await buy(d, 1, 1000, 1);
      ok(await d.post(`/stacks/${used}/usage`, { compute_units: 950 }));
      ok(await d.post(`/stacks/${sampled}/usage`, { compute_units: 500 }));
      const sui = (await d.services.dev!.balances()).SUI;
      const before = d.services.dev!.transactionsOf(d.services.chain!.signerAddress).length;
      const estimate = ok(
        await d.post('/nodes/try-settle-stacks/estimate', {
          stack_small_ids: [used, unused, sampled, peers],
        }),
      );
      // 950 units at 2 USDC per million: a fee of 0.0019 USDC and a refund of the 50 left; on the
      // sampling-consensus task 1.2 times that. The dev network's gas for a try-settle: 3,976,000 MIST.
      assert.deepEqual(estimate, {
        results: [
          {
            stack_small_id: used,
            status: 'ready',
            num_claimed_compute_units: 950,
            node_fee_amount: 1900,
            user_refund_amount: 100,
            gas_estimate: 3_976_000,
          },
          {
            stack_small_id: unused,
            status: 'skipped',
            error: {
              code: 'no_usage',
              detail: `stack ${unused} has no recorded usage: settling it would claim 0 compute units and give its pay up; report usage first (POST /stacks/${unused}/usage) or name the units to claim (num_claimed_compute_units)`,
            },
          },
          {
            stack_small_id: sampled,
            status: 'ready',
            num_claimed_compute_units: 500,
            node_fee_amount: 1200,
            user_refund_amount: 1200,
            gas_estimate: 3_976_000,
          },
          {
            stack_small_id: peers,
            status: 'skipped',
            error: {
              code: 'stack_not_ours',
              detail: `stack ${peers} is assigned to node 1, not to this signer's node`,
            },
          },
        ],
        total: { node_fee_amount: 3100, gas_estimate: 7_952_000 },
      });
      assert.equal(d.services.dev!.transactionsOf(d.services.chain!.signerAddress).length, before);
      assert.equal((await d.services.dev!.balances()).SUI, sui, 'no gas spent');
      assert.equal((ok(await d.get(`/stacks/nodes/2`)) as unknown as Json[])[0]!.in_settle_period, false);
      // What the estimate said is what the settlement does.
      const settled = ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [used] }));
      assert.equal((settled.results as Json[])[0]!.num_claimed_compute_units, 950);
      const tx = d.services.dev!.transaction((settled.tx_digests as string[])[0]!)!;
      assert.equal(Number(tx.gas_used.computation_cost) + Number(tx.gas_used.storage_cost), 3_976_000);
      const again = ok(await d.post('/nodes/try-settle-stacks/estimate', { stack_small_ids: [used] }));
      assert.equal(((again.results as Json[])[0]!.error as Json).code, 'already_settled');
      problem(
        await d.post('/nodes/try-settle-stacks/estimate', { stack_small_ids: [] }),
        400,
        'invalid_body',
      );
    } finally {
      await d.close();
    }
  });

  it('claims confidential-compute stacks directly, with their recorded usage', async () => {
    const d = await devDaemon();
    try {
      await world(d);
      const stack = await buy(d, 2);
      ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 400 }));
      const claim = ok(await d.post('/nodes/claim-funds', { stack_small_ids: [stack] }));
      // The direct path pays floor(units x price / 1e6): 400 x 2_000_000 / 1e6, and refunds 600 units' worth.
      assert.deepEqual(claim.claimed, [
        {
          stack_small_id: stack,
          path: 'confidential_compute',
          num_claimed_compute_units: 400,
          node_fee_amount: 800,
          user_refund_amount: 1200,
        },
      ]);
      const [row] = ok(await d.get('/claimed-stacks/nodes/2')) as unknown as Json[];
      assert.deepEqual(
        [row?.claim_path, row?.num_claimed_compute_units, row?.user_refund_amount],
        ['confidential_compute', 400, 1200],
      );
      problem(await d.post('/nodes/claim-funds', { stack_small_ids: [stack] }), 409, 'nothing_to_claim');
    } finally {
      await d.close();
    }
  });

  it('shows a dispute in both listings and refuses to claim a disputed stack', async () => {
    const d = await devDaemon({ 'dev-sampling-probability': '1' });
    try {
      await world(d);
      const stack = await buy(d, 3);
      ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 10 }));
      ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [stack] }));
      ok(await d.post('/dev/disputes', { stack_small_id: stack, node_small_id: 1 }));
      const against = ok(await d.get('/attestation_disputes/against/nodes/2')) as unknown as Json[];
      assert.deepEqual(
        against.map((x) => [x.stack_small_id, x.attestation_node_id, x.original_node_id]),
        [[stack, 1, 2]],
      );
      assert.equal((ok(await d.get('/attestation_disputes/own/nodes/1')) as unknown as Json[]).length, 1);
      ok(await d.post('/dev/epoch'));
      const refused = problem(
        await d.post('/nodes/claim-funds', { stack_small_ids: [stack] }),
        409,
        'nothing_to_claim',
      );
      assert.equal((refused.not_claimable as Json[])[0]?.reason, 'in_dispute');
    } finally {
      await d.close();
    }
  });

  it('settles a peer stack that asks this node to attest, and attests it from the re-run record', async () => {
    const d = await devDaemon({ 'dev-sampling-probability': '1' });
    try {
      await world(d);
      // Only our node may be sampled: the peer's own price is above the stack's price cap.
      ok(
        await d.post('/dev/nodes', {
          subscriptions: [{ task_small_id: 3, price_per_one_million_compute_units: 500_000 }],
        }),
      );
      const peerStack = ok(
        await d.post('/dev/stacks', {
          task_small_id: 3,
          num_compute_units: 1000,
          price_per_one_million_compute_units: 1_000_000,
          selected_node_id: 3,
        }),
      ).stack_small_id as number;
      const settle = ok(await d.post(`/dev/stacks/${peerStack}/try-settle`, {}));
      const requested = settle.requested_attestation_nodes as number[];
      assert.ok(requested.length === 1);
      if (requested[0] === 2) {
        const attested = ok(await d.post('/nodes/submit-attestations', { stack_small_ids: [peerStack] }));
        assert.equal((attested.results as Json[])[0]?.status, 'success');
        assert.equal(
          (await d.services.dev!.getTicket(peerStack))?.is_in_dispute,
          false,
          'our proof matched the peer',
        );
      } else {
        problem(
          await d.post('/nodes/submit-attestations', { stack_small_ids: [peerStack] }),
          409,
          'nothing_to_attest',
        );
      }
    } finally {
      await d.close();
    }
  });

  it('commits over the attester slots the chain will fill: k = 3 with two eligible nodes', async () => {
    const d = await devDaemon({ 'dev-sampling-probability': '1', 'dev-attestation-nodes': '3' });
    try {
      // The peer (node 1) and this node (node 2) are the task's only eligible subscribers: the sampling
      // lists both, in subscription order, and slot 3 stays zero.
      await world(d);
      const stack = await buy(d, 3);
      ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 500, request_hash: 'cd'.repeat(32) }));
      ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [stack] }));
      assert.deepEqual((await d.services.dev!.getTicket(stack))?.requested_attestation_nodes, [1, 2]);
      ok(await d.post(`/dev/stacks/${stack}/attest`, { node_small_id: 1 }));
      const attested = ok(await d.post('/nodes/submit-attestations', { stack_small_ids: [stack] }));
      assert.equal((attested.results as Json[])[0]?.status, 'success');
      const ticket = await d.services.dev!.getTicket(stack);
      assert.deepEqual(ticket?.already_attested_nodes, [1, 2]);
      assert.equal(ticket?.is_in_dispute, false, 'the last attestation passed the hash check');
      assert.deepEqual(ok(await d.get('/attestation_disputes/against/nodes/2')), []);
    } finally {
      await d.close();
    }
  });

  it('refuses, before signing anything, what the contract would refuse or cannot mean', async () => {
    const d = await devDaemon();
    try {
      problem(
        await d.post('/nodes/task-subscribe', { task_small_id: 1, price_per_one_million_compute_units: 1 }),
        409,
        'no_badge',
      );
      await world(d);
      ok(await d.post('/dev/tasks', { role: 0, security_level: 0, minimum_reputation_score: 60 }));
      ok(await d.post('/dev/tasks', { role: 0, security_level: 0 }));
      ok(await d.post('/dev/tasks/5/deprecate'));
      const cases: [LightMyRequestResponse, number, string, string?][] = [
        [
          await d.post('/nodes/task-subscribe', {
            task_small_id: 99,
            price_per_one_million_compute_units: 1,
          }),
          404,
          'task_not_found',
          'task_small_id',
        ],
        [
          await d.post('/nodes/task-subscribe', { task_small_id: 5, price_per_one_million_compute_units: 1 }),
          409,
          'task_inactive',
        ],
        [
          await d.post('/nodes/task-subscribe', { task_small_id: 1, price_per_one_million_compute_units: 1 }),
          409,
          'already_subscribed',
        ],
        [
          await d.post('/nodes/task-subscribe', { task_small_id: 4, price_per_one_million_compute_units: 1 }),
          409,
          'requirements_not_met',
        ],
        [
          await d.post('/nodes/task-subscribe', { task_small_id: 4, price_per_one_million_compute_units: 0 }),
          409,
          'requirements_not_met',
        ],
        [
          await d.post('/nodes/task-update-subscription', {
            task_small_id: 4,
            price_per_one_million_compute_units: 5,
          }),
          409,
          'not_subscribed',
        ],
        [
          await d.post('/nodes/task-update-subscription', {
            task_small_id: 1,
            price_per_one_million_compute_units: 0,
          }),
          400,
          'invalid_body',
          'price_per_one_million_compute_units',
        ],
        [await d.del('/nodes/task-unsubscribe', { task_small_id: 5 }), 409, 'task_inactive'],
        [
          await d.post('/nodes/task-subscribe', {
            task_small_id: 1,
            price_per_one_million_compute_units: 1,
            node_badge_id: `0x${'9'.repeat(64)}`,
          }),
          404,
          'badge_not_found',
          'node_badge_id',
        ],
        [
          await d.post('/nodes/task-subscribe', {
            task_small_id: -1,
            price_per_one_million_compute_units: 1,
          }),
          400,
          'invalid_body',
          'task_small_id',
        ],
        [
          await d.post('/nodes/task-subscribe', {
            task_small_id: '1',
            price_per_one_million_compute_units: 1,
          }),
          400,
          'invalid_body',
          'task_small_id',
        ],
        [
          await d.post(
            '/nodes/task-subscribe',
            '{"task_small_id":1,"price_per_one_million_compute_units":18446744073709551616}',
          ),
          400,
          'invalid_body',
          'price_per_one_million_compute_units',
        ],
        [
          await d.post('/nodes/task-subscribe', {
            task_small_id: 1,
            price_per_one_million_compute_units: 1.5,
          }),
          400,
          'invalid_body',
          'price_per_one_million_compute_units',
        ],
        [await d.post('/nodes/task-subscribe', { task_small_id: 1, price: 1 }), 400, 'invalid_body'],
        [
          await d.post('/nodes/try-settle-stacks', { stack_small_ids: [] }),
          400,
          'invalid_body',
          'stack_small_ids',
        ],
        [
          await d.post('/nodes/try-settle-stacks', { stack_small_ids: [1, 1] }),
          400,
          'invalid_body',
          'stack_small_ids',
        ],
        [await d.post('/nodes/try-settle-stacks', { stack_small_ids: [77] }), 404, 'stack_not_found'],
        [await d.post('/stacks/77/usage', { compute_units: 1 }), 404, 'stack_not_found'],
        [
          await d.post('/stacks/1/usage', { compute_units: 1, request_hash: 'xyz' }),
          400,
          'invalid_body',
          'request_hash',
        ],
        [await d.post('/nodes/register', { gas_budget: 1 }), 400, 'gas_rejected', 'gas_budget'],
        [await d.post('/nodes/register', { gas_price: 1 }), 400, 'gas_rejected', 'gas_price'],
        [await d.post('/nodes/register', { gas: `0x${'5'.repeat(64)}` }), 400, 'gas_rejected', 'gas'],
      ];
      for (const [res, status, code, parameter] of cases) {
        const body = problem(res, status, code);
        assert.equal(body.tx_digest, undefined, 'nothing was submitted');
        if (parameter) assert.equal(body.parameter, parameter, res.body);
      }
      const peerStack = await buy(d, 1, 1000, 1);
      const own = await buy(d, 1, 1000, 2);
      problem(
        await d.post('/nodes/try-settle-stacks', { stack_small_ids: [peerStack] }),
        409,
        'stack_not_ours',
      );
      problem(await d.post(`/stacks/${peerStack}/usage`, { compute_units: 1 }), 409, 'stack_not_ours');
      problem(await d.post(`/stacks/${own}/usage`, { compute_units: 1001 }), 409, 'over_capacity');
      problem(
        await d.post('/nodes/try-settle-stacks', { stack_small_ids: [own], num_claimed_compute_units: 1001 }),
        400,
        'invalid_body',
      );
      problem(
        await d.post('/nodes/try-settle-stacks', {
          stack_small_ids: [own],
          num_claimed_compute_units_by_stack: { '9': 1 },
        }),
        400,
        'invalid_body',
      );
      ok(
        await d.post('/nodes/try-settle-stacks', {
          stack_small_ids: [own],
          num_claimed_compute_units_by_stack: { [own]: 7 },
        }),
      );
      assert.equal((await d.services.dev!.getTicket(own)) !== undefined, true);
      problem(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [own] }), 409, 'already_settled');
      assert.deepEqual(
        (ok(await d.get('/subscriptions/nodes/2')) as unknown as Json[]).length,
        3,
        'nothing changed',
      );
    } finally {
      await d.close();
    }
  });

  it('answers a contract abort with 422, its name, code and digest', async () => {
    const d = await devDaemon();
    try {
      await world(d);
      const unknownModel = problem(
        await d.post('/nodes/model-subscribe', { model_name: 'no/such-model', echelon_id: 1 }),
        422,
        'transaction_failed',
      );
      assert.equal((unknownModel.abort as Json).name, 'EFieldDoesNotExist');
      assert.match(String(unknownModel.tx_digest), /^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
      const echelon = problem(
        await d.post('/nodes/model-subscribe', {
          model_name: 'meta-llama/Llama-3.3-70B-Instruct',
          echelon_id: 42,
        }),
        422,
        'transaction_failed',
      );
      assert.deepEqual(echelon.abort, { name: 'EEchelonNotFound', code: 312012005, module: 'db' });
      ok(
        await d.post('/nodes/model-subscribe', {
          model_name: 'meta-llama/Llama-3.3-70B-Instruct',
          echelon_id: 1,
        }),
      );
      const twice = problem(
        await d.post('/nodes/model-subscribe', {
          model_name: 'meta-llama/Llama-3.3-70B-Instruct',
          echelon_id: 2,
        }),
        422,
        'transaction_failed',
      );
      assert.deepEqual(twice.abort, { name: 'ENodeAlreadySubscribedToModel', code: 312012009, module: 'db' });
      ok(await d.post('/dev/tasks', { role: 0, security_level: 0, is_public: false }));
      const whitelist = problem(
        await d.post('/nodes/task-subscribe', { task_small_id: 4, price_per_one_million_compute_units: 1 }),
        422,
        'transaction_failed',
      );
      assert.deepEqual(whitelist.abort, {
        name: 'ENodeNotWhitelistedForTask',
        code: 312012045,
        module: 'db',
      });
      const badTask = problem(
        await d.post('/dev/tasks', { role: 9, security_level: 0 }),
        422,
        'transaction_failed',
      );
      assert.deepEqual(badTask.abort, { name: 'EInvalidTaskRole', code: 312012035, module: 'db' });
      // One claim_funds carries both stacks: one transaction failed, not two.
      const stacks = [await buy(d, 1), await buy(d, 1)];
      for (const stack of stacks) ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 500 }));
      ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: stacks }));
      ok(await d.post('/dev/tasks/1/deprecate'));
      ok(await d.post('/dev/epoch'));
      ok(await d.post('/dev/tasks/1/remove'));
      const claim = problem(
        await d.post('/nodes/claim-funds', { stack_small_ids: stacks }),
        422,
        'transaction_failed',
      );
      assert.match(
        String(claim.detail),
        /^the claim of 2 stacks failed: claim_funds failed on chain: EFieldDoesNotExist \(abort code 1 in dynamic_field\); transaction \w+$/,
      );
      const results = claim.results as Json[];
      assert.deepEqual(
        results.map((r) => [r.stack_small_id, r.status]),
        stacks.map((id) => [id, 'failed']),
      );
      assert.equal(results[0]!.tx_digest, results[1]!.tx_digest);
    } finally {
      await d.close();
    }
  });

  it('answers a retried Idempotency-Key with the first result, without submitting again', async () => {
    const d = await devDaemon();
    try {
      const key = { 'idempotency-key': 'register-once' };
      const first = await d.post('/nodes/register', {}, key);
      const again = await d.post('/nodes/register', {}, key);
      assert.equal(again.body, first.body);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal((ok(await d.get('/nodes/badges')).badges as Json[]).length, 1, 'one registration');
      problem(await d.post('/nodes/register', { gas_price: 5000 }, key), 409, 'idempotency_key_reused');
      problem(
        await d.post('/nodes/register', {}, { 'idempotency-key': 'x'.repeat(256) }),
        400,
        'invalid_idempotency_key',
      );
      // A refusal submits nothing and frees the key: the corrected retry goes through.
      const retry = { 'idempotency-key': 'subscribe-1' };
      problem(
        await d.post(
          '/nodes/task-subscribe',
          { task_small_id: 1, price_per_one_million_compute_units: 1 },
          retry,
        ),
        404,
        'task_not_found',
      );
      ok(await d.post('/dev/tasks', { role: 0, security_level: 0 }));
      ok(
        await d.post(
          '/nodes/task-subscribe',
          { task_small_id: 1, price_per_one_million_compute_units: 1 },
          retry,
        ),
      );
      // A failed transaction is an outcome: it is replayed, not retried.
      const failing = { 'idempotency-key': 'echelon-42' };
      const body = { model_name: 'meta-llama/Llama-3.3-70B-Instruct', echelon_id: 42 };
      const failed = problem(
        await d.post('/nodes/model-subscribe', body, failing),
        422,
        'transaction_failed',
      );
      const replayed = problem(
        await d.post('/nodes/model-subscribe', body, failing),
        422,
        'transaction_failed',
      );
      assert.equal(replayed.tx_digest, failed.tx_digest);
    } finally {
      await d.close();
    }
  });

  it('serializes concurrent writes from one signer', async () => {
    const d = await devDaemon();
    try {
      await world(d);
      for (let i = 0; i < 4; i++) ok(await d.post('/dev/tasks', { role: 0, security_level: 0 }));
      const results = await Promise.all([
        ...[4, 5, 6, 7].map((task_small_id) =>
          d.post('/nodes/task-subscribe', { task_small_id, price_per_one_million_compute_units: 1 }),
        ),
        d.post('/nodes/task-subscribe', { task_small_id: 7, price_per_one_million_compute_units: 2 }),
      ]);
      const codes = results.map((r) => r.statusCode).sort();
      assert.deepEqual(codes, [200, 200, 200, 200, 409], 'the duplicate saw the first one indexed');
      const stack = await buy(d, 1, 100_000);
      const usage = await Promise.all(
        Array.from({ length: 20 }, () => d.post(`/stacks/${stack}/usage`, { compute_units: 5 })),
      );
      assert.ok(usage.every((r) => r.statusCode === 200));
      const row = (ok(await d.get('/stacks/nodes/2')) as unknown as Json[]).find(
        (s) => s.stack_small_id === stack,
      );
      assert.deepEqual([row?.already_computed_units, row?.num_total_messages], [100, 20]);
    } finally {
      await d.close();
    }
  });

  it('keeps the chain, the signer and the read model across a restart', async () => {
    const dir = tempDir();
    const first = await devDaemon({}, { dir: dir.dir, remove: async () => {} });
    await world(first);
    const stack = await buy(first, 1);
    ok(await first.post(`/stacks/${stack}/usage`, { compute_units: 10 }));
    const signer = first.services.chain!.signerAddress;
    await first.close();
    const second = await devDaemon({}, dir);
    try {
      assert.equal(second.services.chain!.signerAddress, signer);
      assert.equal((ok(await second.get('/nodes/badges')).badges as Json[]).length, 1);
      const [row] = (ok(await second.get('/stacks/nodes/2')) as unknown as Json[]).filter(
        (s) => s.stack_small_id === stack,
      );
      assert.equal(row?.already_computed_units, 10);
      ok(await second.post('/nodes/try-settle-stacks', { stack_small_ids: [stack] }));
      assert.equal(Number((await second.services.dev!.getTicket(stack))?.stack_small_id), stack);
    } finally {
      await second.close();
    }
  });
});
