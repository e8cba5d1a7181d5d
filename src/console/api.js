// @ts-check
import { parseJson, stringifyJson } from './json.js';

/**
 * The daemon's HTTP API, same origin. Reads go without the token unless the console has one (the daemon
 * asks for it on reads only with --auth all); writes ask the operator for it once. The token is kept in
 * sessionStorage: this tab only, gone when it closes, never in a cookie or the URL.
 */

const TOKEN_KEY = 'node-daemon:api-token';

/** @type {Set<() => void>} */
const tokenListeners = new Set();

export const token = {
  /** @returns {string | null} */
  get() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  /** @param {string} value */
  set(value) {
    sessionStorage.setItem(TOKEN_KEY, value.trim());
    for (const listener of tokenListeners) listener();
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
    for (const listener of tokenListeners) listener();
  },
  /** @param {() => void} listener */
  onChange(listener) {
    tokenListeners.add(listener);
  },
};

/** An answer that is not a success: the daemon's problem details (RFC 9457), or why there was no answer. */
export class ApiProblem extends Error {
  /**
   * @param {number} status 0 when the daemon did not answer
   * @param {Record<string, any>} body the problem body: code, title, detail, and extensions such as results
   */
  constructor(status, body) {
    super(body.detail ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.code = String(body.code ?? 'error');
    this.title = String(body.title ?? `HTTP ${status}`);
    this.detail = String(body.detail ?? '');
  }
}

/** @type {(problem?: ApiProblem) => Promise<string | null>} */
let promptForToken = async () => null;

/**
 * Sets how the console asks the operator for the token (a dialog; null when they cancel).
 * @param {(problem?: ApiProblem) => Promise<string | null>} prompt
 */
export function setTokenPrompt(prompt) {
  promptForToken = prompt;
}

/** A fresh Idempotency-Key for one action of the operator: a double submission sends one transaction. */
function idempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * One request; resolves with the parsed JSON body (exact integers), rejects with an ApiProblem.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
async function send(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  const bearer = token.get();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['idempotency-key'] = idempotencyKey();
  }
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : stringifyJson(body),
      cache: 'no-store',
    });
  } catch (error) {
    throw new ApiProblem(0, {
      code: 'unreachable',
      title: 'The daemon does not answer',
      detail: `the request could not be sent (${error instanceof Error ? error.message : String(error)}); is the daemon running?`,
    });
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? parseJson(text) : null;
  } catch {
    parsed = { detail: text.slice(0, 300) };
  }
  if (!response.ok) throw new ApiProblem(response.status, parsed ?? {});
  return parsed;
}

/**
 * A read.
 * @param {string} path
 */
export function get(path) {
  return send('GET', path);
}

/**
 * A write: asks for the token first when the console has none, and forgets a token the daemon refused
 * (403), so the next write asks again.
 * @param {'POST' | 'DELETE'} method
 * @param {string} path
 * @param {unknown} [body]
 */
export function write(method, path, body = {}) {
  return withToken(method, path, body, 'writes need the API token; nothing was sent');
}

/**
 * A request of a route that always needs the token, reads included (the /webhooks routes): asks for it
 * first as a write does, and sends a body only when given.
 * @param {'GET' | 'POST' | 'DELETE'} method
 * @param {string} path
 * @param {unknown} [body]
 */
export function admin(method, path, body) {
  return withToken(method, path, body, 'the webhooks need the API token; nothing was sent');
}

/**
 * Sends with the token, asking for it first when the console has none (`cancelled`: the dialog was closed,
 * nothing was sent); a 401 or 403 forgets it, so the next request asks again.
 * @param {'GET' | 'POST' | 'DELETE'} method
 * @param {string} path
 * @param {unknown} body
 * @param {string} cancelled
 */
async function withToken(method, path, body, cancelled) {
  if (!token.get()) {
    const entered = await promptForToken();
    if (!entered) throw new ApiProblem(0, { code: 'cancelled', title: 'Not sent', detail: cancelled });
  }
  try {
    return await send(method, path, body);
  } catch (error) {
    if (error instanceof ApiProblem && (error.status === 401 || error.status === 403)) token.clear();
    throw error;
  }
}

/**
 * Opens a raw streaming request (GET /events) with the token when there is one.
 * @param {string} path
 * @param {Record<string, string>} extra
 * @param {AbortSignal} signal
 */
export function openStream(path, extra, signal) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'text/event-stream', ...extra };
  const bearer = token.get();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  return fetch(path, { headers, signal, cache: 'no-store' });
}
