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

function matches(route: Route, method: string, path: string): boolean {
  const [routeMethod, template] = route.split(' ') as [string, string];
  if (routeMethod !== method) return false;
  const pattern = template
    .split(PARAMETER)
    .map((part, i) => (i % 2 === 1 ? '[^/]+' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${pattern}/?$`).test(path);
}

/** How a user calls a command: its name and required arguments (`node-daemon update-subscription TASK --price P`). */
function invocation(spec: CommandSpec): string {
  const required = spec.synopsis
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  return `\`node-daemon ${spec.name}${required === '' ? '' : ` ${required}`}\``;
}

/**
 * A message of the daemon in the client's words: each HTTP request it names (`register first with POST
 * /nodes/register`) becomes the command that makes it (`register first with \`node-daemon register\``).
 * A request no command makes stays as it is.
 */
export function inCliWords(text: string, commands: readonly CommandSpec[]): string {
  return text.replace(REQUEST_IN_TEXT, (request, method: string, path: string) => {
    const spec = commands.find((c) => matches(c.route, method, path));
    return spec === undefined ? request : invocation(spec);
  });
}
