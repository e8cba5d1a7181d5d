import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';
import { dataOf, openEvents } from './helpers/sse.ts';
import { tempDir } from './helpers/tmp.ts';

type Json = Record<string, unknown>;

function ok(res: LightMyRequestResponse): Json {
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Json;
}

const OURS = 2;

/** Tasks 1 (no security) and 2 (sampling consensus), peer 1, our node 2, subscribed to both. */
async function world(d: DevDaemon): Promise<void> {
  for (const security_level of [0, 2]) {
    ok(
      await d.post('/dev/tasks', {
        role: 0,
        model_name: 'meta-llama/Llama-3.3-70B-Instruct',
        security_level,
      }),
    );
  }
  const subscriptions = [1, 2].map((task_small_id) => ({
    task_small_id,
    price_per_one_million_compute_units: 1,
  }));
  ok(await d.post('/dev/nodes', { subscriptions }));
  ok(await d.post('/nodes/register'));
  for (const s of subscriptions) ok(await d.post('/nodes/task-subscribe', s));
}

async function buy(d: DevDaemon, task: number, units: number, node = OURS): Promise<number> {
  const bought = ok(
    await d.post('/dev/stacks', {
      task_small_id: task,
      num_compute_units: units,
      price_per_one_million_compute_units: 2_000_000,
      selected_node_id: node,
    }),
  );
  return bought.stack_small_id as number;
}

async function listening(d: DevDaemon): Promise<string> {
  return d.app.listen({ port: 0, host: '127.0.0.1' });
}

describe('GET /events', () => {
  it("streams what happens to the node, live, in order, with exact amounts, and nothing of other nodes'", async () => {
    const d = await devDaemon({ autopilot: 'dry-run', 'autopilot-min-claim': '1' });
    try {
      await world(d);
      const url = await listening(d);
      const stream = await openEvents(`${url}/events`);
      assert.equal(stream.status, 200);
      assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
      const stack = await buy(d, 1, 1000);
      await buy(d, 1, 1000, 1); // the peer's: not ours
      const assigned = await stream.next();
      assert.equal(assigned.event, 'stack_assigned');
      assert.deepEqual(
        { ...dataOf(assigned), at: undefined, id: undefined },
        {
          id: undefined,
          at: undefined,
          type: 'stack_assigned',
          node_small_id: OURS,
          stack_small_id: stack,
          task_small_id: 1,
          num_compute_units: 1000,
          price_per_one_million_compute_units: 2_000_000,
          owner_address: dataOf(assigned).owner_address,
        },
      );
      assert.equal(assigned.id, String(dataOf(assigned).id));

      ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 950 }));
      const filled = await stream.until((m) => m.event === 'stack_filled' && dataOf(m).threshold === 0.9);
      assert.deepEqual(
        filled.filter((m) => m.event === 'stack_filled').map((m) => dataOf(m).threshold),
        [0.5, 0.9],
      );
      // The dry-run autopilot planned the settlement, and says so on the stream.
      const planned = await stream.until((m) => m.event === 'autopilot_action');
      assert.deepEqual(
        [
          dataOf(planned.at(-1)!).action,
          dataOf(planned.at(-1)!).status,
          dataOf(planned.at(-1)!).stack_small_ids,
        ],
        ['settle', 'planned', [stack]],
      );

      ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [stack] }));
      const settled = (await stream.until((m) => m.event === 'stack_settled')).at(-1)!;
      assert.equal(dataOf(settled).num_claimed_compute_units, 950);
      assert.equal(dataOf(settled).node_fee_amount, 1900);
      assert.equal(dataOf(settled).claimable_from_epoch, 1);

      ok(await d.post('/dev/epoch'));
      const claimable = (await stream.until((m) => m.event === 'stack_claimable')).at(-1)!;
      assert.deepEqual(
        [dataOf(claimable).stack_small_id, dataOf(claimable).epoch, dataOf(claimable).node_fee_amount],
        [stack, 1, 1900],
      );

      const claim = ok(await d.post('/nodes/claim-funds', { stack_small_ids: [stack] }));
      const claimed = (await stream.until((m) => m.event === 'funds_claimed')).at(-1)!;
      assert.deepEqual(
        [
          dataOf(claimed).tx_digest,
          dataOf(claimed).stack_small_ids,
          dataOf(claimed).node_fee_amount,
          dataOf(claimed).user_refund_amount,
        ],
        [claim.tx_digest, [stack], 1900, 100],
      );

      // A task is everyone's news.
      ok(await d.post('/dev/tasks', { role: 0, security_level: 0 }));
      const task = (await stream.until((m) => m.event === 'task_added')).at(-1)!;
      assert.equal(dataOf(task).node_small_id, null);

      // Every event came once, in id order, and exactly those of our node and everyone's that the store has.
      const ids = stream.received.map((m) => Number(m.id));
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
      );
      assert.equal(new Set(ids).size, ids.length);
      const stored = await d.services.store.listNodeEvents({
        after: ids[0]! - 1,
        limit: 1000,
        nodes: [OURS],
        types: null,
      });
      assert.deepEqual(
        ids,
        stored.filter((e) => e.id <= ids.at(-1)!).map((e) => e.id),
      );
      assert.ok(!stream.received.some((m) => dataOf(m).node_small_id === 1), "no peer's events");
      stream.close();
    } finally {
      await d.close();
    }
  });

  it('tells the operator, once, of a dispute against its node and of the deprecation of a task it serves', async () => {
    const d = await devDaemon();
    try {
      await world(d);
      const url = await listening(d);
      const stream = await openEvents(`${url}/events`);
      // Our stack of the sampling-consensus task, settled; the peer disputes it (any badge holder may).
      const stack = await buy(d, 2, 1000);
      ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 1000 }));
      ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [stack] }));
      ok(await d.post('/dev/disputes', { stack_small_id: stack, node_small_id: 1 }));
      const dispute = (await stream.until((m) => m.event === 'dispute_opened')).at(-1)!;
      assert.deepEqual(
        [
          dataOf(dispute).node_small_id,
          dataOf(dispute).original_node_id,
          dataOf(dispute).attestation_node_id,
        ],
        [OURS, OURS, 1],
      );
      // A stack is disputed once: a second dispute aborts on chain, and says nothing more.
      const again = await d.post('/dev/disputes', { stack_small_id: stack, node_small_id: 1 });
      assert.equal(again.statusCode, 422, again.body);

      // Task 1, which both nodes serve, is deprecated: everyone's news, and each subscriber's own.
      ok(await d.post('/dev/tasks/1/deprecate'));
      const served = (await stream.until((m) => m.event === 'subscribed_task_deprecated')).at(-1)!;
      assert.deepEqual(
        { ...dataOf(served), id: undefined, at: undefined },
        {
          id: undefined,
          at: undefined,
          type: 'subscribed_task_deprecated',
          node_small_id: OURS,
          task_small_id: 1,
          epoch: 0,
        },
      );
      const stored = await d.services.store.listNodeEvents({
        after: 0,
        limit: 1000,
        nodes: null,
        types: ['dispute_opened', 'task_deprecated', 'subscribed_task_deprecated'],
      });
      assert.deepEqual(
        stored.map((e) => [e.type, e.node_small_id]),
        [
          ['dispute_opened', OURS],
          ['task_deprecated', null],
          ['subscribed_task_deprecated', OURS],
        ],
        "the store keeps the operator's node's events and everyone's, not the peer's (node 1's)",
      );
      assert.equal(
        stream.received.filter(
          (m) => m.event === 'dispute_opened' || m.event === 'subscribed_task_deprecated',
        ).length,
        2,
        "our node's stream: its dispute and its task, once each, not the peer's",
      );
      stream.close();
    } finally {
      await d.close();
    }
  });

  it('resumes exactly after Last-Event-ID, across reconnects and a restart of the daemon', async () => {
    const dir = tempDir();
    const keep = { dir: dir.dir, remove: async () => undefined };
    let d = await devDaemon({}, keep);
    const seen: number[] = [];
    try {
      await world(d);
      let url = await listening(d);
      const first = await openEvents(`${url}/events?node_id=all&after=0`);
      await first.until((m) => m.event === 'subscription_changed' && dataOf(m).task_small_id === 2);
      first.close();
      seen.push(...first.received.map((m) => Number(m.id)));
      // Events happen while no one listens, then the daemon restarts.
      for (let i = 0; i < 3; i++) await buy(d, 1, 1000);
      await d.app.close();
      await d.services.close();
      d = await devDaemon({}, keep);
      for (let i = 0; i < 2; i++) await buy(d, 1, 1000);
      url = await listening(d);
      const second = await openEvents(`${url}/events?node_id=all`, { 'last-event-id': String(seen.at(-1)) });
      const newest = (await d.services.store.nodeEventBounds()).newest;
      await second.until((m) => Number(m.id) === newest);
      second.close();
      seen.push(...second.received.filter((m) => m.id !== undefined).map((m) => Number(m.id)));
      const all = await d.services.store.listNodeEvents({
        after: 0,
        limit: 10_000,
        nodes: null,
        types: null,
      });
      assert.deepEqual(
        seen,
        all.filter((e) => e.id <= newest).map((e) => e.id),
        'every event once, none missed',
      );
      assert.deepEqual(
        seen,
        Array.from({ length: seen.length }, (_, i) => i + 1),
        'the ids are a gap-free sequence',
      );
    } finally {
      await d.close();
      await dir.remove();
    }
  });

  it('filters by type and node, and answers bad parameters with a problem', async () => {
    // Node 1 is configured as the operator's too, so that the store keeps its events beside node 2's.
    const d = await devDaemon({ 'node-small-ids': '1' });
    try {
      await world(d);
      const url = await listening(d);
      const stream = await openEvents(`${url}/events?node_id=1,2&types=stack_assigned&after=0`);
      await buy(d, 1, 1000, 1);
      await buy(d, 1, 1000, OURS);
      const got = await stream.until((m) => dataOf(m).node_small_id === OURS);
      assert.deepEqual(
        got.map((m) => [m.event, dataOf(m).node_small_id]),
        [
          ['stack_assigned', 1],
          ['stack_assigned', OURS],
        ],
      );
      stream.close();
      for (const [query, headers, parameter] of [
        ['types=nope', {}, 'types'],
        ['node_id=two', {}, 'node_id'],
        ['after=-1', {}, 'after'],
        ['', { 'last-event-id': 'x1' }, 'last-event-id'],
        ['last=0', {}, 'last'],
        ['last=1001', {}, 'last'],
        ['last=ten', {}, 'last'],
      ] as const) {
        const res = await fetch(`${url}/events?${query}`, { headers });
        assert.equal(res.status, 400, query);
        assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
        const problem = (await res.json()) as Json;
        assert.equal(problem.code, 'invalid_parameter');
        if (parameter !== 'after') assert.equal(problem.parameter, parameter);
      }
    } finally {
      await d.close();
    }
  });

  it('starts with the newest events of its filter when asked (?last=N), then the live ones', async () => {
    const d = await devDaemon({});
    try {
      await world(d);
      const url = await listening(d);
      const bought: number[] = [];
      for (let i = 0; i < 4; i++) bought.push(await buy(d, 1, 1000));
      await buy(d, 1, 1000, 1); // the peer's: not in our node's filter
      const stream = await openEvents(`${url}/events?last=2&types=stack_assigned`);
      const first = await stream.until((m) => dataOf(m).stack_small_id === bought[3]);
      assert.deepEqual(
        first.map((m) => dataOf(m).stack_small_id),
        bought.slice(2),
        'the newest two of our node, in order',
      );
      const live = await buy(d, 1, 1000);
      await stream.until((m) => dataOf(m).stack_small_id === live);
      const lastId = stream.received.at(-1)!.id!;
      stream.close();
      // Resuming wins: ?last is for a fresh client only.
      const resumed = await openEvents(`${url}/events?last=2&types=stack_assigned`, {
        'last-event-id': String(Number(lastId) - 1),
      });
      const again = await resumed.until((m) => m.id === lastId);
      assert.deepEqual(
        again.map((m) => m.id),
        [lastId],
      );
      resumed.close();
      // Nothing of the filter yet: only what comes.
      const none = await openEvents(`${url}/events?last=5&types=funds_claimed`);
      ok(await d.post('/dev/tasks', { role: 0, security_level: 0 }));
      const stack = await buy(d, 1, 1000);
      ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 1000 }));
      ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [stack] }));
      ok(await d.post('/dev/epoch'));
      ok(await d.post('/nodes/claim-funds', { stack_small_ids: [stack] }));
      const claimed = await none.until((m) => m.event === 'funds_claimed');
      assert.deepEqual(
        claimed.map((m) => m.event),
        ['funds_claimed'],
      );
      none.close();
    } finally {
      await d.close();
    }
  });

  it('needs the token under --auth all, like every read', async () => {
    const d = await devDaemon({ auth: 'all' });
    try {
      const url = await listening(d);
      const res = await fetch(`${url}/events`);
      assert.equal(res.status, 401);
      assert.equal(((await res.json()) as Json).code, 'unauthorized');
    } finally {
      await d.close();
    }
  });

  it('says which events are past the retention when a client resumes from before it', async () => {
    const d = await devDaemon({});
    try {
      await world(d);
      const { newest } = await d.services.store.nodeEventBounds();
      assert.ok(newest > 3);
      await d.services.store.pruneNodeEvents(0, 2);
      const url = await listening(d);
      const stream = await openEvents(`${url}/events?node_id=all`, { 'last-event-id': '1' });
      const lost = await stream.next();
      assert.equal(lost.event, 'events_lost');
      assert.deepEqual([dataOf(lost).after, dataOf(lost).oldest_available], [1, newest - 1]);
      assert.equal(lost.id, undefined, 'a control frame carries no id');
      assert.deepEqual(
        [(await stream.next()).id, (await stream.next()).id],
        [String(newest - 1), String(newest)],
      );
      stream.close();
    } finally {
      await d.close();
    }
  });

  it('closes a client that does not read, with a last frame saying so, and holds no more than its bound', async () => {
    const d = await devDaemon({});
    try {
      const url = new URL(await listening(d));
      const socket = connect(Number(url.port), url.hostname);
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      socket.write(`GET /events?node_id=all HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(d.services.events.streams, 1);
      socket.pause();
      // 40 MB of events that the client never reads: far past the socket buffers and the 1 MiB bound.
      const big = 'x'.repeat(20_000);
      for (let batch = 0; batch < 20; batch++) {
        await d.services.store.appendNodeEvents(
          Array.from({ length: 100 }, () => ({
            type: 'task_added' as const,
            node_small_id: null,
            data: { big },
          })),
        );
        await new Promise((resolve) => setImmediate(resolve));
      }
      const deadline = Date.now() + 10_000;
      while (d.services.events.streams > 0) {
        assert.ok(Date.now() < deadline, 'the slow stream was not closed');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      socket.resume();
      await closed;
      // The last frame, then the end of the chunked body.
      const tail = Buffer.concat(chunks).toString('utf8').slice(-600);
      assert.match(
        tail,
        /event: overflow\ndata: \{"type":"overflow","last_id":\d+,"detail":"this client read too slowly[^\n]*\n\n\r\n0\r\n\r\n$/,
      );
      assert.ok(Buffer.concat(chunks).length < 40_000_000, 'it stopped sending');
    } finally {
      await d.close();
    }
  });
});
