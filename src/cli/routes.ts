import type { CommandSpec, Route } from './spec.ts';

/**
 * The daemon's HTTP routes as the commands call them: a route's path with its parameters filled in, and
 * the command a user types for a route that a message of the daemon names.
 */

const PARAMETER = /\{([^}]+)\}/g;

/** The route's path with each {name} replaced by params[name]. */
export function routePath(route: Route, params: Record<string, string | number> = {}): string {
  const path = route.slice(route.indexOf(' ') + 1);
  return path.replace(PARAMETER, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`no value for {${name}} of ${route}`);
    return encodeURIComponent(String(value));
  });
}

/** Matches a request the way a message writes it: `POST /nodes/register`, `GET /stacks/nodes/3`. */
const REQUEST_IN_TEXT = /\b(GET|POST|DELETE|PUT|PATCH) (\/[\w\-/{}]*)/g;

/** The path parameters of `path` when it is a request of `route` (`{stack: '15'}`), else undefined. */
function matchRoute(route: Route, method: string, path: string): Record<string, string> | undefined {
  const [routeMethod, template] = route.split(' ') as [string, string];
  if (routeMethod !== method) return undefined;
  const names: string[] = [];
  const pattern = template
    .split(PARAMETER)
    .map((part, i) => {
      if (i % 2 === 0) return part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
      names.push(part);
      return '([^/]+)';
    })
    .join('');
  const match = new RegExp(`^${pattern}/?$`).exec(path);
  if (!match) return undefined;
  // A `{name}` left as is in the message (`POST /stacks/{stack}/usage`) gives no value.
  const values = names.map((name, i): [string, string] => [name, decodeURIComponent(match[i + 1]!)]);
  return Object.fromEntries(values.filter(([, value]) => !/^\{.*\}$/.test(value)));
}

/** The one id a message gives for `what` (`stack 15`, `task 1`), when it names exactly one. */
function onlyId(text: string, what: string): string | undefined {
  const ids = new Set([...text.matchAll(new RegExp(`\\b${what} ([0-9]+)\\b`, 'g'))].map((m) => m[1]!));
  return ids.size === 1 ? [...ids][0] : undefined;
}

/**
 * How a user calls a command, with what the message says filled in: the path's parameters
 * (`POST /stacks/15/usage` → `node-daemon usage 15 UNITS`) and the one stack or task the message is
 * about (`task 1 ...; change its price with POST /nodes/task-update-subscription` → `node-daemon
 * update-subscription 1 --price P`). What is not known stays a placeholder; optional parts go, but an
 * optional node the path names (`GET /stacks/nodes/7` → `node-daemon stacks 7`).
 */
function invocation(spec: CommandSpec, params: Record<string, string>, text: string): string {
  const known: Record<string, string | undefined> = {
    stack: params.stack ?? onlyId(text, 'stack'),
    task: params.task ?? onlyId(text, 'task'),
    node: params.node,
  };
  const words = spec.synopsis
    .replace(/\[node\]/g, known.node ?? '')
    .replace(/\[[^\]]*\]/g, '')
    .split(/\s+/)
    .filter((word) => word !== '')
    .map((word) => {
      if (word.includes('|')) return word.split('|').find((choice) => choice === params.side) ?? word;
      return known[word.replace(/\.\.\.$/, '').toLowerCase()] ?? word;
    });
  return `\`node-daemon ${[spec.name, ...words].join(' ')}\``;
}

/**
 * A message of the daemon in the client's words: each HTTP request it names (`register first with POST
 * /nodes/register`) becomes the command that makes it (`register first with \`node-daemon register\``),
 * and each request body field a command sets with an option (`num_claimed_compute_units`) that option
 * (`--claimed U`). A request no command makes stays as it is.
 */
export function inCliWords(text: string, commands: readonly CommandSpec[]): string {
  const requests = text.replace(REQUEST_IN_TEXT, (request, method: string, path: string) => {
    for (const spec of commands) {
      const params = matchRoute(spec.route, method, path);
      if (params !== undefined) return invocation(spec, params, text);
    }
    return request;
  });
  const fields = fieldOptions(commands);
  if (fields.size === 0) return requests;
  const names = [...fields.keys()].join('|');
  return requests.replace(
    new RegExp(`(?<![\`\\w])(${names})(?![\`\\w])`, 'g'),
    (field) => fields.get(field)!,
  );
}

/** Each body field a command names in `fields`, as the option that sets it: `--claimed U`. */
function fieldOptions(commands: readonly CommandSpec[]): Map<string, string> {
  const fields = new Map<string, string>();
  for (const spec of commands) {
    for (const [field, option] of Object.entries(spec.fields ?? {})) {
      const arg = spec.options?.[option]?.arg;
      if (!fields.has(field)) fields.set(field, `\`--${option}${arg === undefined ? '' : ` ${arg}`}\``);
    }
  }
  return fields;
}
