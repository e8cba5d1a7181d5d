/**
 * node bench/probes/kept-list-probe.ts [REPORTS] [--rounds N] [--over S]: what a usage report costs the
 * PostgreSQL store while a 1,000-stack list of its node is kept and not read: an operator's console read the
 * list once, and the node's inference server goes on reporting. The store (no HTTP) runs in this process,
 * pinned to CPU 0, on a throwaway database of the local server; the reports go one after another round S of
 * the stacks (default 50), after 1,000 not counted. Prints this process's CPU per report and the wall time,
 * for each round (default 3).
 */
import { stringifyJson } from '../../src/internal/json.ts';
import { benchArgsAndOperands, usageError } from '../args.ts';
import { pinSelf } from '../load.ts';
import { DEFAULT_SERVER_URL, ThrowawayDatabases } from '../postgres.ts';
import { SERVER_CPU } from '../servers.ts';
import { seedNodeStacks } from './seed.ts';

const NAME = 'bench/probes/kept-list-probe.ts';
const HELP = `Usage: node bench/probes/kept-list-probe.ts [REPORTS] [--rounds N] [--over S]

What a usage report costs the PostgreSQL store (CPU and wall time) while a 1,000-stack list of its node is
kept and not read: REPORTS (default 4000) reports one after another, after 1000 not counted, in each of N
rounds (default 3), each on a fresh throwaway database of the local server. The reports go round S of the
node's stacks (--over, default 50, at most 1000): the list's pending rows grow to S between reads.`;
const { values: flags, positionals } = benchArgsAndOperands(NAME, HELP, {
  rounds: { type: 'string' },
  over: { type: 'string' },
});
const reports = Number(positionals[0] ?? 4000);
if (!Number.isInteger(reports) || reports < 1 || positionals.length > 1) {
  usageError(NAME, `REPORTS is one whole number of reports, not ${positionals.join(' ')}`);
}
const rounds = Number(flags.rounds ?? 3);
if (!Number.isInteger(rounds) || rounds < 1)
  usageError(NAME, `--rounds is a number of rounds, 1 or more, not ${flags.rounds}`);
const over = Number(flags.over ?? 50);
if (!Number.isInteger(over) || over < 1 || over > 1000)
  usageError(NAME, `--over is a number of stacks from 1 to 1000, not ${flags.over}`);
// The store under test owns the first core, as the daemon does in the other benchmarks.
pinSelf(SERVER_CPU);

const STACKS = 1000;
const WARM_UP = 1000;
const databases = new ThrowawayDatabases(DEFAULT_SERVER_URL);
try {
  for (let round = 1; round <= rounds; round++) {
    const { store, dispose } = await databases.fresh();
    try {
      await seedNodeStacks(store, STACKS, {
        node: 1,
        units: 1_000_000_000,
        price: 2_000_000,
        model: 'bench',
      });
      // The read that keeps the node's list; nothing reads it again until the end.
      await store.listStacksJson(1);
      const report = (i: number) => store.addStackUsage((i % over) + 1, 1, undefined, Date.now());
      for (let i = 0; i < WARM_UP; i++) await report(i);
      const cpuFrom = process.cpuUsage();
      const from = performance.now();
      for (let i = 0; i < reports; i++) await report(i);
      const cpu = process.cpuUsage(cpuFrom);
      const wallUs = ((performance.now() - from) * 1000) / reports;
      // The list, read at last, shows every report: the store's own rows say the same.
      const kept = (await store.listStacksJson(1)).body.toString();
      const rows = stringifyJson(await store.listStacks(1));
      if (kept !== rows) throw new Error('the kept list does not show the reports');
      const cpuUs = (cpu.user + cpu.system) / reports;
      console.log(
        `round ${round}: ${reports} reports with the node's list kept: ${cpuUs.toFixed(0)} µs of CPU and ${wallUs.toFixed(0)} µs wall a report`,
      );
    } finally {
      await dispose();
    }
  }
} finally {
  await databases.dropAll();
}
