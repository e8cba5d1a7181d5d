// @ts-check
import { openStream } from './api.js';
import { parseJson } from './json.js';

/**
 * GET /events, followed with fetch() and a streaming body reader rather than EventSource: EventSource
 * cannot send the Authorization header that --auth all requires. A fresh tab starts with the newest events
 * (?last=); then it resumes after the last event id it saw (Last-Event-ID, kept for this tab in
 * sessionStorage, so a reload resumes too) and reconnects with capped exponential back-off and jitter.
 */

const LAST_ID_KEY = 'node-daemon:last-event-id';
/** A fresh tab starts with this many of the newest events (the daemon keeps days of them), then live ones. */
const RECENT = 50;
const MIN_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;

/**
 * @typedef {{ id: string | undefined, event: string, data: any }} StreamMessage
 * @typedef {'connecting' | 'live' | 'retrying' | 'needs-token'} StreamState
 */

/** Splits Server-Sent Events text into messages (the WHATWG event stream interpretation). */
export class SseParser {
  buffer = '';
  /** @type {string | undefined} */
  lastId = undefined;
  event = '';
  /** @type {string[]} */
  data = [];
  /** @type {number | undefined} */
  retryMs = undefined;

  /**
   * @param {string} text
   * @returns {{ id: string | undefined, event: string, data: string }[]}
   */
  push(text) {
    this.buffer += text;
    const out = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match || (match[0] === '\r' && match.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      if (line === '') {
        if (this.data.length > 0)
          out.push({ id: this.lastId, event: this.event || 'message', data: this.data.join('\n') });
        this.data = [];
        this.event = '';
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') this.event = value;
      else if (field === 'data') this.data.push(value);
      else if (field === 'id' && !value.includes('\0')) this.lastId = value;
      else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
    }
    return out;
  }
}

export class EventFeed {
  /** @type {AbortController | undefined} */
  #abort;
  #delay = MIN_DELAY_MS;
  #stopped = false;
  /** @type {(() => void) | undefined} */
  #wakeUp;

  /**
   * @param {{
   *   onMessage: (message: StreamMessage) => void,
   *   onState: (state: StreamState, detail?: string) => void,
   *   onConnected: (resumed: boolean) => void,
   * }} handlers
   */
  constructor(handlers) {
    this.handlers = handlers;
  }

  /** The id of the last event received in this tab, if any. */
  get lastId() {
    return sessionStorage.getItem(LAST_ID_KEY) ?? undefined;
  }

  start() {
    void this.#run();
  }

  /** Reconnects now (the token changed, or the operator asked). */
  restart() {
    this.#delay = MIN_DELAY_MS;
    this.#abort?.abort();
    this.#wakeUp?.();
  }

  stop() {
    this.#stopped = true;
    this.#abort?.abort();
    this.#wakeUp?.();
  }

  async #run() {
    while (!this.#stopped) {
      const detail = await this.#connect();
      if (this.#stopped) return;
      if (detail === 'needs-token') {
        this.handlers.onState('needs-token');
        await this.#sleep(Number.POSITIVE_INFINITY);
        continue;
      }
      const wait = Math.round(this.#delay * (0.75 + Math.random() / 2));
      this.handlers.onState('retrying', `${detail}; reconnecting in ${Math.ceil(wait / 1000)} s`);
      await this.#sleep(wait);
      this.#delay = Math.min(MAX_DELAY_MS, Math.max(MIN_DELAY_MS, this.#delay * 2));
    }
  }

  /** @param {number} ms */
  #sleep(ms) {
    return new Promise((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(resolve, ms) : undefined;
      this.#wakeUp = () => {
        clearTimeout(timer);
        resolve(undefined);
      };
    });
  }

  /**
   * One connection, until it ends; answers why it ended.
   * @returns {Promise<string>}
   */
  async #connect() {
    this.#abort = new AbortController();
    this.handlers.onState('connecting');
    const last = this.lastId;
    let response;
    try {
      // ?last is for a fresh tab: the daemon ignores it when the stream resumes after Last-Event-ID.
      response = await openStream(
        `/events?last=${RECENT}`,
        last ? { 'last-event-id': last } : {},
        this.#abort.signal,
      );
    } catch {
      return 'the daemon does not answer';
    }
    if (response.status === 401 || response.status === 403) {
      await response.body?.cancel();
      return 'needs-token';
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return `the event stream answered ${response.status}`;
    }
    this.handlers.onState('live');
    this.handlers.onConnected(last !== undefined);
    const parser = new SseParser();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const raw of parser.push(value)) {
          // A good frame means the connection works: the next failure starts the back-off afresh.
          this.#delay = parser.retryMs ?? MIN_DELAY_MS;
          if (raw.id !== undefined) sessionStorage.setItem(LAST_ID_KEY, raw.id);
          let data;
          try {
            data = parseJson(raw.data);
          } catch {
            data = raw.data;
          }
          this.handlers.onMessage({ id: raw.id, event: raw.event, data });
          // The daemon closes a client that read too slowly: come back at once with the last id.
          if (raw.event === 'overflow') this.#delay = 0;
        }
      }
    } catch {
      // Aborted, or the connection dropped.
    }
    return 'the event stream closed';
  }
}
