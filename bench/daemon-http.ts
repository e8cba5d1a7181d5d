// HTTP calls from the benchmarks to the daemon under test.
import { type Agent, request } from 'node:http';

/** One HTTP request to the daemon; the answer's status and body. */
export function call(
  origin: string,
  method: string,
  path: string,
  token?: string,
  body?: unknown,
  agent: Agent | false = false,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      `${origin}${path}`,
      {
        method,
        // By default a connection each: setup calls are few, and a kept-alive one may be closed under them.
        agent,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(payload
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The same, refusing anything but a 200; the answer's JSON. */
export async function json<T>(
  origin: string,
  method: string,
  path: string,
  token?: string,
  body?: unknown,
  agent: Agent | false = false,
): Promise<T> {
  const { status, text } = await call(origin, method, path, token, body, agent);
  if (status !== 200) throw new Error(`${method} ${path}: ${status} ${text}`);
  return JSON.parse(text) as T;
}
