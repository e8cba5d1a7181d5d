/**
 * npm run bench:usage-source: what one poll of the atoma-state usage source costs PostgreSQL when
 * atoma-state holds 1,000,000 stacks (issue 48's target: at most 5 ms of PostgreSQL time). atoma-state has
 * no index on stacks.selected_node_id, so the source reads the stacks it follows by primary key
 * (src/usage/atoma-state.ts READ_STACKS). A throwaway database laid out like atoma-state
 * (test/helpers/atoma-state.ts) gets STACKS stacks over 50 nodes; then, for a few numbers of followed open
 * stacks, the poll's statement runs ROUNDS times and reports:
 *   - server: the statement's execution time as PostgreSQL measures it (EXPLAIN ANALYZE, timing off);
 *   - wall: the whole round trip as the daemon's client sees it (loopback; server time is part of it);
 *   - a sequential scan of the same question, for scale: what a query by selected_node_id would cost.
 *
 *   npm run bench:usage-source -- [--stacks 1000000] [--rounds 200] [--database-url URL]
 */
import { performance } from 'node:perf_hooks';
import { READ_STACKS } from '../src/usage/atoma-state.ts';
import { ATOMA_STATE_SCHEMA } from '../test/helpers/atoma-state.ts';
import { benchArgs } from './args.ts';
import { DEFAULT_SERVER_URL, ThrowawayDatabases, withClient } from './postgres.ts';
import { percentile } from './report.ts';

const HELP = `npm run bench:usage-source -- [--stacks N] [--rounds N] [--database-url URL]

What one poll of the atoma-state usage source costs PostgreSQL at N atoma-state stacks (default 1,000,000),
for 100, 1,000 and 5,000 followed open stacks: server execution time and round-trip wall time, p50 and p99.`;

const args = benchArgs('bench:usage-source', HELP, {
  stacks: { type: 'string', default: '1000000' },
  rounds: { type: 'string', default: '200' },
  'database-url': { type: 'string', default: DEFAULT_SERVER_URL },
});
const STACKS = Number(args.stacks);
const ROUNDS = Number(args.rounds);
const NODES = 50;
const OURS = 7;
const FOLLOWED = [100, 1000, 5000];

const ms = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50).toFixed(3)} ms, p99 ${percentile(sorted, 99).toFixed(3)} ms`;
};

/** The statement's execution time as PostgreSQL reports it (no per-node timing, so little overhead). */
async function serverTime(client: import('pg').Client, ids: string[], scan: boolean): Promise<number> {
  if (scan) await client.query('SET enable_indexscan = off; SET enable_bitmapscan = off');
  const { rows } = await client.query(`EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ${READ_STACKS}`, [ids]);
  if (scan) await client.query('RESET enable_indexscan; RESET enable_bitmapscan');
  return Number(rows[0]['QUERY PLAN'][0]['Execution Time']);
}

async function main(): Promise<void> {
  const databases = new ThrowawayDatabases(args['database-url']);
  try {
    const { url } = await databases.create();
    process.stdout.write(`atoma-state: ${STACKS.toLocaleString('en-US')} stacks over ${NODES} nodes\n`);
    await withClient(url, async (client) => {
      await client.query(ATOMA_STATE_SCHEMA);
      const started = performance.now();
      await client.query(
        `INSERT INTO stacks (stack_small_id, owner_address, stack_id, task_small_id, selected_node_id,
          num_compute_units, price_per_one_million_compute_units, already_computed_units, in_settle_period,
          num_total_messages)
        SELECT i, '0x' || md5(i::text), '0x' || lpad(i::text, 64, '0'), 1, i % $2, 100000, 1000000,
          i % 100000, i % 7 = 0, i % 50
        FROM generate_series(1, $1) AS i`,
        [STACKS, NODES],
      );
      await client.query('VACUUM ANALYZE stacks');
      process.stdout.write(`  built in ${((performance.now() - started) / 1000).toFixed(1)} s\n\n`);
      // The node's newest stacks are the open ones a daemon follows.
      const ours = (
        await client.query<{ id: string }>(
          'SELECT stack_small_id::text AS id FROM stacks WHERE selected_node_id = $1 ORDER BY stack_small_id DESC LIMIT $2',
          [OURS, Math.max(...FOLLOWED)],
        )
      ).rows.map((r) => r.id);
      for (const followed of FOLLOWED) {
        const ids = ours.slice(0, followed);
        for (let i = 0; i < 20; i++) await client.query(READ_STACKS, [ids]);
        const wall: number[] = [];
        const server: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          const t = performance.now();
          await client.query(READ_STACKS, [ids]);
          wall.push(performance.now() - t);
          server.push(await serverTime(client, ids, false));
        }
        const scan: number[] = [];
        for (let round = 0; round < 5; round++) scan.push(await serverTime(client, ids, true));
        process.stdout.write(
          `${String(followed).padStart(5)} followed stacks: server ${ms(server)}; wall ${ms(wall)}; ` +
            `a sequential scan instead: p50 ${percentile(
              scan.sort((a, b) => a - b),
              50,
            ).toFixed(1)} ms\n`,
        );
      }
    });
  } finally {
    await databases.dropAll();
  }
}

await main();
