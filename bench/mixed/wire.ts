// The usage reports' latency on the wire, for bench:mixed --wire: tcpdump on the loopback interface sees each
// report's request leave the reporter and its answer leave the daemon, with the kernel's timestamps. Their
// difference is the daemon's latency, the TCP path into it included, without the reporter's own delays: the
// reporter is a thread on the load generator's core, which wrk keeps busy, and the time it takes to be
// scheduled, parse the answer and see its end is part of what it measures. The reporter sends from an
// address of its own (REPORTER_ADDRESS) so that the capture holds its packets only, not wrk's reads.
//
// Needs tcpdump (Debian's tcpdump package) and the right to capture (root, or CAP_NET_RAW).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { LOAD_CPU } from '../load.ts';
import { percentile } from '../report.ts';

/** The reporter's source address: any 127/8 address is loopback on Linux. */
export const REPORTER_ADDRESS = '127.0.0.2';

/** A report seen on the wire: when its request was sent (s since the epoch) and how long its answer took (ms). */
export interface WireReport {
  at: number;
  ms: number;
}

export class WireCapture {
  readonly #file: string;
  readonly #child: ChildProcess;

  /** The tcpdump process, for the caller to kill if it stops early. */
  get process(): ChildProcess {
    return this.#child;
  }

  private constructor(file: string, child: ChildProcess) {
    this.#file = file;
    this.#child = child;
  }

  /** Starts capturing the reporter's packets into FILE, on the load generator's core. */
  static async start(file: string): Promise<WireCapture> {
    const child = spawn(
      'taskset',
      [
        '-c',
        LOAD_CPU,
        'tcpdump',
        '-i',
        'lo',
        '-n',
        '-s',
        '200',
        '-U',
        '-w',
        file,
        `host ${REPORTER_ADDRESS}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('listening on')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`tcpdump exited (${code}): ${stderr.trim()}`)));
      child.once('error', reject);
    });
    return new WireCapture(file, child);
  }

  /** Stops the capture and reads it: every report whose request and answer it saw. */
  async stop(): Promise<WireReport[]> {
    if (this.#child.exitCode === null) {
      this.#child.kill('SIGINT');
      await once(this.#child, 'exit');
    }
    const text = spawnSync('tcpdump', ['-r', this.#file, '-tt', '-n'], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    }).stdout;
    return reportsOf(text);
  }
}

/**
 * Pairs each connection's request with its answer, from tcpdump's text: the first packet with data from
 * the reporter's port opens a request, and the first with data back to it answers it (one request at a
 * time on a connection: HTTP/1.1 without pipelining).
 */
export function reportsOf(text: string): WireReport[] {
  const open = new Map<string, number>();
  const out: WireReport[] = [];
  const line = /^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): .* length (\d+)/;
  for (const row of text.split('\n')) {
    const m = line.exec(row);
    if (!m || m[6] === '0') continue;
    const at = Number(m[1]);
    if (m[2] === REPORTER_ADDRESS) {
      if (!open.has(m[3]!)) open.set(m[3]!, at);
    } else if (m[4] === REPORTER_ADDRESS) {
      const sent = open.get(m[5]!);
      if (sent === undefined) continue;
      open.delete(m[5]!);
      out.push({ at: sent, ms: (at - sent) * 1000 });
    }
  }
  return out;
}

/** The p50 and p99 of the reports sent within [from, to] (s since the epoch), and how many there were. */
export function wireLatency(
  reports: WireReport[],
  from: number,
  to: number,
): { count: number; p50ms: number; p99ms: number } {
  const ms = reports
    .filter((r) => r.at >= from && r.at <= to)
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  return { count: ms.length, p50ms: percentile(ms, 50), p99ms: percentile(ms, 99) };
}
