// The usage reporter of bench/mixed.ts, in a worker thread of its own so that the bench's other work (the
// fullnode double executing the stream's transactions) never delays it: it sends POST
// /stacks/{id}/usage at a fixed rate (open loop: on schedule, whatever the answers), over the node's own
// stacks in turn, until told to stop, and answers each report's latency in ms and its thread's CPU.
import { Agent, request } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

const {
  origin,
  token,
  rate,
  stacks,
  paused: startPaused,
  from,
} = workerData as {
  origin: string;
  token: string;
  rate: number;
  stacks: number[];
  paused?: boolean;
  /** The address to send from (bench/wire.ts), or the system's choice. */
  from?: string;
};
const agent = new Agent({ keepAlive: true, maxSockets: 64, ...(from ? { localAddress: from } : {}) });
const latencies: number[] = [];
/** This thread's CPU from here: what the reporter itself costs the load generator's core. */
const cpuFrom = process.threadCpuUsage();
let failed = 0;
let sent = 0;
let running = true;
let inFlight = 0;

function report(stack: number): void {
  const body = '{"compute_units":1}';
  const t0 = performance.now();
  inFlight += 1;
  const req = request(
    `${origin}/stacks/${stack}/usage`,
    {
      method: 'POST',
      agent,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      },
    },
    (res) => {
      res.resume();
      res.on('end', () => {
        inFlight -= 1;
        if (res.statusCode === 200) latencies.push(performance.now() - t0);
        else failed += 1;
      });
    },
  );
  req.on('error', () => {
    inFlight -= 1;
    failed += 1;
  });
  req.end(body);
}

// The schedule runs on active time: 'pause' stops it (for the bench's interleaved segments) and 'resume'
// takes it up where it was.
let paused = startPaused === true;
let activeBefore = 0;
let resumedAt = performance.now();
let timer: ReturnType<typeof setTimeout> | undefined;
const active = (): number => activeBefore + (paused ? 0 : performance.now() - resumedAt);

parentPort!.on('message', (message) => {
  if (message === 'stop') {
    running = false;
    paused = false;
    clearTimeout(timer);
    tick();
  } else if (message === 'pause' && !paused) {
    activeBefore = active();
    paused = true;
    clearTimeout(timer);
  } else if (message === 'resume' && paused) {
    resumedAt = performance.now();
    paused = false;
    tick();
  }
});

function tick(): void {
  if (paused && running) return;
  const due = Math.floor((active() / 1000) * rate);
  while (sent < due && running) report(stacks[sent++ % stacks.length]!);
  if (running) {
    // Wake when the next report is due, not every millisecond: this thread shares the load generator's
    // core with wrk, and a thousand wake-ups a second took turns from it.
    const next = ((sent + 1) * 1000) / rate - active();
    timer = setTimeout(tick, Math.max(0, next));
    return;
  }
  const drain = (): void => {
    if (inFlight > 0) {
      setTimeout(drain, 5);
      return;
    }
    agent.destroy();
    const cpu = process.threadCpuUsage(cpuFrom);
    parentPort!.postMessage({ sent, failed, latencies, cpuUs: cpu.user + cpu.system });
  };
  drain();
}
tick();
