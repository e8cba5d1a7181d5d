/**
 * How long the store takes to build a node's 1,000-stack list body (issue 13's cheap miss: at most 1 ms on
 * SQLite), timed around Store.listStacksJson, the call GET /stacks/nodes/{id} makes on a miss of the
 * response cache, at the topic version the route reads just before it. A fresh store gets NODES nodes of
 * 1,000 stacks through applyPage (not timed); then, for every node:
 *   - first sight: its list built the first time, from whole rows (once per node in a daemon's life, while
 *     the store keeps what it read);
 *   - after a report: ROUNDS times, one usage report on one of its stacks, then its list built again (the
 *     store patches the one piece that holds the stack);
 *   - after the indexer: ROUNDS times, a StackTrySettleEvent on one of its stacks applied through applyPage,
 *     then its list built again (the store patches the stack's piece too, since 2026-11-29; before, it
 *     read all the list's changing columns);
 *   - after a new stack: ROUNDS times, a StackCreatedEvent of a stack bought from the node, numbered after
 *     all others, applied through applyPage, then its list built again (since 2026-11-30 the kept list
 *     takes the stack; before, it read all the list's changing columns again). DECISIONS.md, "A node's kept
 *     stack list: one module, one rule on both engines".
 * Every body is checked outside the timing: its stacks (1,000, and one more each round), the change in it.
 */
import { applyPage } from '../../src/indexer/apply.ts';
import { type Store, topics } from '../../src/store/store.ts';
import type { ForeignLoad } from '../cpu.ts';
import { datasetStack, EventFactory } from '../events.ts';
import { applyStream, type FreshStore, silentLogger } from '../ingest.ts';
import { fmt, percentile } from '../report.ts';

const NODES = 20;
const STACKS_PER_NODE = 1000;
const TASKS = 10;
const ROUNDS = 5;

export interface BuildTimes {
  samples: number;
  p50ms: number;
  p99ms: number;
  maxMs: number;
}

export interface BodyBuildResult {
  nodes: number;
  stacksPerNode: number;
  bodyBytes: number;
  firstSight: BuildTimes;
  afterReport: BuildTimes;
  afterIndexer: BuildTimes;
  afterNewStack: BuildTimes;
}

/** A body-build run, with the CPU other processes used meanwhile. */
export type MeasuredBodyBuild = BodyBuildResult & { otherLoad?: ForeignLoad };

/** The run's line in the ingest step's log. */
export function bodyBuildLine(b: MeasuredBodyBuild): string {
  const t = (x: BuildTimes) => `p50 ${fmt(x.p50ms, 3)} / p99 ${fmt(x.p99ms, 2)} ms`;
  return (
    `list body build (${b.nodes} nodes x ${fmt(b.stacksPerNode, 0)} stacks, ${fmt(b.bodyBytes, 0)} B): ` +
    `first sight ${t(b.firstSight)}; after a usage report ${t(b.afterReport)}; ` +
    `after an indexer page ${t(b.afterIndexer)}; after a new stack ${t(b.afterNewStack)}`
  );
}

interface ListedStack {
  stack_small_id: number;
  already_computed_units: number;
  in_settle_period: boolean;
}

function times(ms: number[]): BuildTimes {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50ms: percentile(sorted, 50),
    p99ms: percentile(sorted, 99),
    maxMs: sorted.at(-1)!,
  };
}

/** Node n's list, built as the route builds it on a miss, and how long the build took. */
async function build(
  store: Store,
  node: number,
  count = STACKS_PER_NODE,
): Promise<{ ms: number; bytes: number; stacks: ListedStack[] }> {
  const [version] = await store.topicVersions([topics.stacks(node)]);
  const started = process.hrtime.bigint();
  const rows = await store.listStacksJson(node, undefined, {}, version);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const stacks = JSON.parse(rows.body.toString()) as ListedStack[];
  if (stacks.length !== count) {
    throw new Error(`node ${node}: ${stacks.length} stacks in its list, not ${count}`);
  }
  return { ms, bytes: rows.body.length, stacks };
}

function listed(stacks: ListedStack[], id: number): ListedStack {
  const stack = stacks.find((s) => Number(s.stack_small_id) === id);
  if (stack === undefined) throw new Error(`stack ${id} is not in its node's list`);
  return stack;
}

export async function measureBodyBuild(fresh: () => Promise<FreshStore>): Promise<BodyBuildResult> {
  const { store, dispose } = await fresh();
  try {
    const factory = new EventFactory(11);
    const stream = function* (): Generator<unknown> {
      for (let t = 1; t <= TASKS; t++) yield factory.task(t);
      for (let s = 1; s <= NODES * STACKS_PER_NODE; s++) yield factory.stack(datasetStack(s, NODES, TASKS));
    };
    await applyStream(store, 'bench:body-build', stream());
    // Node n's stacks are n, n + NODES, n + 2 NODES, ...; the k-th of them:
    const stackOf = (node: number, k: number) => node + NODES * (k % STACKS_PER_NODE);

    const first: number[] = [];
    let bodyBytes = 0;
    for (let node = 1; node <= NODES; node++) {
      const { ms, bytes } = await build(store, node);
      first.push(ms);
      bodyBytes = bytes;
    }

    const afterReport: number[] = [];
    const afterIndexer: number[] = [];
    const afterNewStack: number[] = [];
    // One page of one event, as the live indexer applies what a read brought.
    const apply = (position: string, raw: unknown) =>
      applyPage(
        store,
        'bench:body-build',
        { events: [{ position, raw }], nextCursor: null, hasMore: false },
        silentLogger,
      );
    for (let round = 1; round <= ROUNDS; round++) {
      // The stacks each node has this round: the new ones of the rounds before are listed too.
      const count = STACKS_PER_NODE + round - 1;
      for (let node = 1; node <= NODES; node++) {
        const reported = stackOf(node, round * 97);
        const outcome = await store.addStackUsage(reported, round, undefined, Date.now());
        if (outcome.status !== 'recorded')
          throw new Error(`the report on stack ${reported}: ${outcome.status}`);
        const one = await build(store, node, count);
        if (Number(listed(one.stacks, reported).already_computed_units) !== round) {
          throw new Error(`stack ${reported}: the report is not in its node's list`);
        }
        afterReport.push(one.ms);

        const settling = stackOf(node, round * 89 + 500);
        await apply(
          `bench:body-build:${settling}`,
          factory.trySettle(settling, node, [1 + (node % NODES)], 1),
        );
        const two = await build(store, node, count);
        if (!listed(two.stacks, settling).in_settle_period) {
          throw new Error(`stack ${settling}: the try-settle is not in its node's list`);
        }
        afterIndexer.push(two.ms);

        // Numbered after every stack so far; datasetStack gives it to this node.
        const bought = NODES * (STACKS_PER_NODE + round - 1) + node;
        await apply(`bench:body-build:new:${bought}`, factory.stack(datasetStack(bought, NODES, TASKS)));
        const three = await build(store, node, count + 1);
        if (three.stacks.at(-1)?.stack_small_id !== bought) {
          throw new Error(`stack ${bought}: the new stack is not last in its node's list`);
        }
        afterNewStack.push(three.ms);
      }
    }
    return {
      nodes: NODES,
      stacksPerNode: STACKS_PER_NODE,
      bodyBytes,
      firstSight: times(first),
      afterReport: times(afterReport),
      afterIndexer: times(afterIndexer),
      afterNewStack: times(afterNewStack),
    };
  } finally {
    await dispose();
  }
}
