import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * A local webhook receiver (the outside boundary of the webhook tests): it checks every request's
 * signature twice, with its own HMAC code and with the npm `standardwebhooks` package, records it, and
 * answers as the test's script says (a status and headers, or never).
 */
export interface Received {
  id: string;
  timestamp: number;
  body: string;
  json: { type: string; timestamp: string; data: Record<string, unknown> };
  /** Both verifications passed. */
  verified: boolean;
  /** Why not, when not. */
  problem: string | undefined;
  headers: IncomingHttpHeaders;
  receivedAt: number;
}

export type Answer = { status: number; headers?: Record<string, string> } | 'hang';

/** Verifies a Standard Webhooks signature by hand: HMAC-SHA256 of `id.timestamp.body` under the secret's bytes. */
export function verifyByHand(secret: string, headers: IncomingHttpHeaders, body: string): string | undefined {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signature = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signature !== 'string') {
    return 'missing headers';
  }
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return 'timestamp too far from now';
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = Buffer.from(
    createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64'),
  );
  const ok = signature
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .some((s) => {
      const given = Buffer.from(s.slice(3));
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
  return ok ? undefined : 'signature does not match';
}

export class Receiver {
  readonly received: Received[] = [];
  secret = '';
  /** The answer to the nth request (0-based); default 200. */
  script: (n: number, request: Received) => Answer = () => ({ status: 200 });
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #hanging = new Set<ServerResponse>();
  readonly #waiters: (() => void)[] = [];
  port = 0;

  constructor() {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let problem = verifyByHand(this.secret, request.headers, body);
        try {
          new Webhook(this.secret).verify(body, request.headers as Record<string, string>);
        } catch (error) {
          problem ??= `standardwebhooks: ${(error as Error).message}`;
        }
        const got: Received = {
          id: String(request.headers['webhook-id']),
          timestamp: Number(request.headers['webhook-timestamp']),
          body,
          json: JSON.parse(body),
          verified: problem === undefined,
          problem,
          headers: request.headers,
          receivedAt: Date.now(),
        };
        const answer = this.script(this.received.length, got);
        this.received.push(got);
        for (const wake of this.#waiters.splice(0)) wake();
        if (answer === 'hang') {
          this.#hanging.add(response);
          return;
        }
        response.writeHead(answer.status, answer.headers ?? {});
        response.end('ok');
      });
    });
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Listens (on the port it had, when it had one: a receiver that was down comes back). */
  async listen(port = this.port): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(port, '127.0.0.1', resolve));
    this.port = (this.#server.address() as AddressInfo).port;
    return this;
  }

  /** Drops the requests it never answered. */
  async releaseHanging(): Promise<void> {
    for (const response of this.#hanging) response.destroy();
    this.#hanging.clear();
  }

  /** Stops listening and drops every connection: the receiver is down. */
  async down(): Promise<void> {
    for (const response of this.#hanging) response.destroy();
    this.#hanging.clear();
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  /** Resolves once `count` requests arrived (rejects after timeoutMs). */
  async waitFor(count: number, timeoutMs = 10_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`${this.received.length} of ${count} requests arrived in ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.received;
  }
}
