import { readdirSync, readFileSync, statSync } from 'node:fs';

/**
 * How much CPU something other than the benchmark used during a measurement. The machine may be shared
 * (other people's builds and tests); a number taken while they ran is flagged, never silently kept.
 *
 * busy = user + nice + system ticks of all CPUs (/proc/stat); ours = this process and its reaped children
 * (the load generator, once it exited) plus the server under test (/proc/PID/stat). Interrupt time is left
 * out on both sides: loopback networking shows up there.
 */

export interface CpuSnapshot {
  at: number;
  busyTicks: number;
  stealTicks: number;
  ourTicks: number;
  /** The server under test. */
  serverTicks: number;
  /** This process's reaped children: the load generator, once it has exited. */
  childTicks: number;
  /** The database server's processes (see countUserAsOurs), 0 when none is counted. */
  databaseTicks: number;
}

let databaseUid: number | undefined;

/**
 * Counts every process of this OS user (the local PostgreSQL server's: postmaster, backends, WAL writer,
 * checkpointer) as part of the benchmark rather than as other load, and reports its CPU separately. The
 * database is part of the system under test on a PostgreSQL run. Returns false when the user is unknown.
 */
export function countUserAsOurs(user: string): boolean {
  try {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${user}:`));
    const uid = line === undefined ? Number.NaN : Number(line.split(':')[2]);
    if (!Number.isInteger(uid)) return false;
    databaseUid = uid;
    return true;
  } catch {
    return false;
  }
}

/**
 * Own + reaped children's ticks of the database user's processes (exited backends land in the postmaster's);
 * 0 unless countUserAsOurs named the user.
 */
export function databaseTicks(): number {
  if (databaseUid === undefined) return 0;
  let sum = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (statSync(`/proc/${name}`).uid !== databaseUid) continue;
    } catch {
      continue; // Exited meanwhile.
    }
    const [own, children] = procTicks(Number(name));
    sum += own + children;
  }
  return sum;
}

/** Clock ticks per second of /proc/PID/stat's times (USER_HZ; 100 on Linux). */
export const TICKS_PER_SECOND = 100;

/** [own, reaped children's] CPU ticks of a process (0 when it cannot be read). */
export function procTicks(pid: number | 'self'): [number, number] {
  try {
    const line = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = line.slice(line.lastIndexOf(')') + 2).split(' ');
    // Fields 14-17 of the full line: utime, stime, cutime, cstime.
    return [Number(f[11]) + Number(f[12]), Number(f[13]) + Number(f[14])];
  } catch {
    return [0, 0];
  }
}

export function snapshot(serverPid?: number): CpuSnapshot | undefined {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , , , steal = 0] = cpu;
    const [self, children] = procTicks('self');
    const [server] = serverPid === undefined ? [0] : procTicks(serverPid);
    const database = databaseTicks();
    return {
      at: performance.now(),
      busyTicks: user + nice + system,
      stealTicks: steal,
      ourTicks: self + children + server + database,
      serverTicks: server,
      childTicks: children,
      databaseTicks: database,
    };
  } catch {
    return undefined; // Not Linux: no accounting.
  }
}

export interface ForeignLoad {
  /** Percent of one core used by other processes during the window. */
  otherPercent: number;
  /** Percent of one core stolen by the hypervisor. */
  stealPercent: number;
  /** Percent of one core the server under test used (100 = its core was saturated). */
  serverPercent: number;
  /** Percent of one core the load generator used (near 100: it, not the server, may be the limit). */
  clientPercent: number;
  /** CPU seconds the server under test used. */
  serverCpuSeconds: number;
  /** Percent of one core the database server used (PostgreSQL runs only). */
  databasePercent?: number;
}

export function foreignLoad(
  before: CpuSnapshot | undefined,
  after: CpuSnapshot | undefined,
): ForeignLoad | undefined {
  if (!before || !after) return undefined;
  const seconds = (after.at - before.at) / 1000;
  if (seconds <= 0) return undefined;
  const other = after.busyTicks - before.busyTicks - (after.ourTicks - before.ourTicks);
  const pct = (ticks: number) => Math.round((100 * Math.max(0, ticks)) / TICKS_PER_SECOND / seconds);
  return {
    otherPercent: pct(other),
    stealPercent: pct(after.stealTicks - before.stealTicks),
    serverPercent: pct(after.serverTicks - before.serverTicks),
    clientPercent: pct(after.childTicks - before.childTicks),
    serverCpuSeconds: (after.serverTicks - before.serverTicks) / TICKS_PER_SECOND,
    ...(databaseUid === undefined
      ? {}
      : { databasePercent: pct(after.databaseTicks - before.databaseTicks) }),
  };
}

/** A measurement is flagged when others used more than this share of one core meanwhile. */
export const DISTURBED_PERCENT = 10;

/**
 * Waits (up to maxSeconds) until other processes use less than DISTURBED_PERCENT of a core over one
 * second. Returns the seconds waited, or undefined when it never settled (or there is no /proc).
 */
export async function waitForQuiet(
  serverPid: number | undefined,
  maxSeconds: number,
): Promise<number | undefined> {
  const started = performance.now();
  while ((performance.now() - started) / 1000 < maxSeconds) {
    const before = snapshot(serverPid);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const load = foreignLoad(before, snapshot(serverPid));
    if (!load) return undefined;
    if (load.otherPercent < DISTURBED_PERCENT) return Math.round((performance.now() - started) / 1000);
  }
  return undefined;
}

/** A process's threads by name (`comm`): nanoseconds on a CPU, and runnable but waiting for one. */
export type ThreadTimes = Map<string, { runNs: number; waitNs: number }>;

/**
 * The run and run-queue wait of a process's threads, summed by thread name, from each thread's
 * /proc/PID/task/TID/schedstat (the scheduler's own nanosecond counters). The wait is what the event loop
 * loses to other threads on a shared core: the time MainThread could have run and did not. Threads that
 * exited between two readings drop out of the later one. Empty when the process cannot be read.
 */
export function threadTimes(pid: number): ThreadTimes {
  const times: ThreadTimes = new Map();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return times;
  }
  for (const tid of tasks) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const [run = 0, wait = 0] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')
        .split(' ')
        .map(Number);
      const sum = times.get(name) ?? { runNs: 0, waitNs: 0 };
      times.set(name, { runNs: sum.runNs + run, waitNs: sum.waitNs + wait });
    } catch {
      // The thread exited meanwhile.
    }
  }
  return times;
}
