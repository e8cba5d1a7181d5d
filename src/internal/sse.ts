/**
 * A Server-Sent Events parser (the WHATWG "event stream interpretation", without the browser's retry
 * loop): text in as it arrives, whole messages out. Comment lines (": ...") are skipped; a message without
 * data is not dispatched; `id:` persists as the last event id, as in a browser.
 */
export interface SseMessage {
  /** The last event id as of this message (undefined when the stream has not set one). */
  id: string | undefined;
  /** The `event:` field, "message" when absent. */
  event: string;
  data: string;
}

export class SseParser {
  #buffer = '';
  #lastId: string | undefined;
  #event = '';
  #data: string[] = [];
  /** The reconnection time the server asked for, in ms. */
  retryMs: number | undefined;

  get lastId(): string | undefined {
    return this.#lastId;
  }

  /** Feeds text; returns the messages it completed. */
  push(text: string): SseMessage[] {
    this.#buffer += text;
    const out: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.#buffer);
      // A lone \r at the very end may be the first half of \r\n: wait for more.
      if (!match || (match[0] === '\r' && match.index === this.#buffer.length - 1)) break;
      const line = this.#buffer.slice(0, match.index);
      this.#buffer = this.#buffer.slice(match.index + match[0].length);
      const message = this.#line(line);
      if (message) out.push(message);
    }
    return out;
  }

  #line(line: string): SseMessage | undefined {
    if (line === '') {
      const data = this.#data;
      const event = this.#event;
      this.#data = [];
      this.#event = '';
      if (data.length === 0) return undefined;
      return { id: this.#lastId, event: event || 'message', data: data.join('\n') };
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.#event = value;
        break;
      case 'data':
        this.#data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.#lastId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
    }
    return undefined;
  }
}
