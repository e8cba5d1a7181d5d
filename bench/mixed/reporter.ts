// The usage reporter of bench/mixed.ts, in a worker thread of its own so that the bench's other work (the
// fullnode double executing the stream's transactions) never delays it: it sends POST
// /stacks/{id}/usage at a fixed rate (open loop: on schedule, whatever the answers), over the node's own
// stacks in turn, until told to stop, and answers each report's latency in ms and its thread's CPU.
import { connect, type Socket } from 'node:net';
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
  /** The address to send from (wire.ts), or the system's choice. */
  from?: string;
};
const latencies: number[] = [];
/** This thread's CPU from here: what the reporter itself costs the load generator's core. */
const cpuFrom = process.threadCpuUsage();
let failed = 0;
let sent = 0;
let running = true;
let inFlight = 0;

// The reports go over kept-alive sockets of this thread's own, each request written as prepared bytes and
// each answer read as far as its status and length: node:http's client cost about 250 µs of this core a
// report at 500/s (a tenth of the core wrk needs), for bytes the daemon receives the same way.
const MAX_SOCKETS = 64;
const { hostname, port } = new URL(origin);
const BODY = '{"compute_units":1}';
const requests = new Map<number, Buffer>();
const requestOf = (stack: number): Buffer => {
  let bytes = requests.get(stack);
  if (bytes === undefined) {
    bytes = Buffer.from(
      `POST /stacks/${stack}/usage HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
        `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`,
    );
    requests.set(stack, bytes);
  }
  return bytes;
};

/** A kept-alive connection and the report it waits on (one at a time: no pipelining). */
interface Connection {
  socket: Socket;
  t0: number | undefined;
  received: Buffer;
}
const idle: Connection[] = [];
const waiting: { stack: number; t0: number }[] = [];
let open = 0;

function finish(t0: number, ok: boolean): void {
  inFlight -= 1;
  if (ok) latencies.push(performance.now() - t0);
  else failed += 1;
}

const HEAD_END = Buffer.from('\r\n\r\n');

/** The answer's status once it is whole (by Content-Length), or undefined while more is to come. */
function answered(received: Buffer): { status: number; close: boolean } | undefined {
  const headEnd = received.indexOf(HEAD_END);
  if (headEnd < 0) return undefined;
  const head = received.toString('latin1', 0, headEnd).toLowerCase();
  const length = /\r\ncontent-length: *(\d+)/.exec(head);
  // The daemon answers every report with a length; anything else ends the connection as a failure.
  if (length === null) return { status: 0, close: true };
  if (received.length < headEnd + 4 + Number(length[1])) return undefined;
  return { status: Number(head.slice(9, 12)), close: /\r\nconnection: *close/.test(head) };
}

function openConnection(): Connection {
  open += 1;
  const socket = connect({ host: hostname, port: Number(port), ...(from ? { localAddress: from } : {}) });
  socket.setNoDelay(true);
  const conn: Connection = { socket, t0: undefined, received: Buffer.alloc(0) };
  socket.on('data', (chunk: Buffer) => {
    conn.received = conn.received.length === 0 ? chunk : Buffer.concat([conn.received, chunk]);
    const answer = answered(conn.received);
    if (answer === undefined || conn.t0 === undefined) return;
    const t0 = conn.t0;
    conn.t0 = undefined;
    conn.received = Buffer.alloc(0);
    finish(t0, answer.status === 200);
    if (answer.close) socket.destroy();
    else release(conn);
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    open -= 1;
    const at = idle.indexOf(conn);
    if (at >= 0) idle.splice(at, 1);
    if (conn.t0 !== undefined) finish(conn.t0, false);
    conn.t0 = undefined;
    // A report that waited for a connection goes on a new one.
    const next = waiting.shift();
    if (next !== undefined) send(next.stack, next.t0);
  });
  return conn;
}

function release(conn: Connection): void {
  const next = waiting.shift();
  if (next === undefined) idle.push(conn);
  else write(conn, next.stack, next.t0);
}

function write(conn: Connection, stack: number, t0: number): void {
  conn.t0 = t0;
  conn.socket.write(requestOf(stack));
}

function send(stack: number, t0: number): void {
  const conn = idle.pop() ?? (open < MAX_SOCKETS ? openConnection() : undefined);
  if (conn === undefined) waiting.push({ stack, t0 });
  else write(conn, stack, t0);
}

function report(stack: number): void {
  inFlight += 1;
  send(stack, performance.now());
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
    for (const conn of idle) conn.socket.destroy();
    const cpu = process.threadCpuUsage(cpuFrom);
    parentPort!.postMessage({ sent, failed, latencies, cpuUs: cpu.user + cpu.system });
  };
  drain();
}
tick();
