import { type SseMessage, SseParser } from '../../src/internal/sse.ts';

/** An open GET /events stream, read as a client reads it. */
export interface EventStream {
  /** The status and headers of the response. */
  status: number;
  headers: Headers;
  /** Every message received so far. */
  received: SseMessage[];
  /** The next message not yet taken, waiting at most timeoutMs. */
  next(timeoutMs?: number): Promise<SseMessage>;
  /** Messages until `until` returns true for one (included), waiting at most timeoutMs in all. */
  until(until: (m: SseMessage) => boolean, timeoutMs?: number): Promise<SseMessage[]>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openEvents(url: string, headers: Record<string, string> = {}): Promise<EventStream> {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  const parser = new SseParser();
  const received: SseMessage[] = [];
  let taken = 0;
  let wake: (() => void) | undefined;
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) {
        received.push(...parser.push(decoder.decode(chunk as Uint8Array, { stream: true })));
        wake?.();
      }
    } catch {
      // Aborted by close().
    }
    wake?.();
  })();
  let done = false;
  void ended.then(() => {
    done = true;
  });
  const next = async (timeoutMs = 5000): Promise<SseMessage> => {
    const deadline = Date.now() + timeoutMs;
    while (taken >= received.length) {
      if (done) throw new Error(`the stream ended; received ${JSON.stringify(received.map((m) => m.event))}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `no event within ${timeoutMs} ms; received ${JSON.stringify(received.map((m) => m.event))}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return received[taken++]!;
  };
  return {
    status: res.status,
    headers: res.headers,
    received,
    next,
    async until(until, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      const out: SseMessage[] = [];
      for (;;) {
        const message = await next(Math.max(1, deadline - Date.now()));
        out.push(message);
        if (until(message)) return out;
      }
    },
    ended,
    close: () => abort.abort(),
  };
}

/** The JSON data of a node event message. */
export function dataOf(message: SseMessage): Record<string, unknown> {
  return JSON.parse(message.data) as Record<string, unknown>;
}
