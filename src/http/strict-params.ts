import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { parseU64, U64_MAX } from '../internal/u64.ts';
import { ProblemError } from '../problems/catalog.ts';

/**
 * Path and query parameters arrive as strings. Ajv's coercion is lax (it reads " 7", "0x10" and "1e3" as
 * numbers), so numeric parameters are parsed here instead: digits only for integers, a plain decimal for
 * numbers, each within the schema's bounds. Ajv then validates with coercion off.
 */

interface NumericField {
  part: 'params' | 'query';
  name: string;
  /** A u64 (the schema's `u64` keyword, schemas/common.ts U64In): exact digits up to 2^64 - 1. */
  u64: boolean;
  integer: boolean;
  minimum: number | undefined;
  maximum: number | undefined;
}

const INTEGER = /^[0-9]+$/;
const DECIMAL = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$/;
const LOCATION = { params: 'path parameter', query: 'query parameter' } as const;

function numericFields(schema: unknown, part: NumericField['part']): NumericField[] {
  const properties = (schema as { properties?: Record<string, Record<string, unknown>> } | undefined)
    ?.properties;
  if (!properties) return [];
  return Object.entries(properties)
    .filter(([, s]) => s.type === 'integer' || s.type === 'number' || s.u64 === true)
    .map(([name, s]) => ({
      part,
      name,
      u64: s.u64 === true,
      integer: s.type === 'integer',
      minimum: s.minimum as number | undefined,
      maximum: s.maximum as number | undefined,
    }));
}

function expected(field: NumericField): string {
  if (field.u64) return `an integer (digits only) from 0 to ${U64_MAX}`;
  const kind = field.integer ? 'an integer (digits only)' : 'a decimal number';
  if (field.minimum !== undefined && field.maximum !== undefined) {
    return `${kind} from ${field.minimum} to ${field.maximum}`;
  }
  return field.minimum !== undefined ? `${kind} of at least ${field.minimum}` : kind;
}

/** The parameter as a number of the field's kind within its bounds, or undefined. */
function boundedNumber(raw: string, field: NumericField): number | undefined {
  const value = Number(raw);
  const valid =
    (field.integer ? INTEGER : DECIMAL).test(raw) &&
    Number.isFinite(value) &&
    (field.minimum === undefined || value >= field.minimum) &&
    (field.maximum === undefined || value <= field.maximum);
  return valid ? value : undefined;
}

function parseField(request: FastifyRequest, field: NumericField): void {
  const container = (field.part === 'params' ? request.params : request.query) as Record<string, unknown>;
  const raw = container[field.name];
  if (raw === undefined) return;
  const where = `${LOCATION[field.part]} ${field.name}`;
  if (typeof raw !== 'string') {
    throw new ProblemError('invalid_parameter', `${where} was given more than once; give it once`, {
      parameter: field.name,
    });
  }
  // A u64 exactly (parseU64 takes digits only, up to 2^64 - 1), above 2^53 as a bigint.
  const value = field.u64 ? parseU64(raw) : boundedNumber(raw, field);
  if (value === undefined) {
    throw new ProblemError(
      'invalid_parameter',
      `${where} must be ${expected(field)}; got ${JSON.stringify(raw)}`,
      {
        parameter: field.name,
      },
    );
  }
  container[field.name] = value;
}

/**
 * A route of the API that declares no query parameters takes none: one given is refused, as
 * docs/ERRORS.md says, rather than silently ignored (a misspelt `limit` would otherwise return the
 * whole list). Routes hidden from the API document (the console's files, the document itself) are left
 * alone: a browser may add a cache-busting query.
 */
function refuseQuery(route: RouteOptions): ((request: FastifyRequest) => Promise<void>) | undefined {
  const schema = route.schema as { hide?: boolean; querystring?: unknown } | undefined;
  if (schema === undefined || schema.hide === true || schema.querystring !== undefined) return undefined;
  return async (request) => {
    const names = Object.keys((request.query ?? {}) as Record<string, unknown>);
    if (names.length === 0) return;
    throw new ProblemError(
      'invalid_parameter',
      `${request.method} ${route.url} takes no query parameters; got ${names.map((n) => JSON.stringify(n)).join(', ')}: remove them`,
      { parameter: names[0]! },
    );
  };
}

/** Runs step before the route's own preValidation hooks. */
function first(route: RouteOptions, step: (request: FastifyRequest) => Promise<void>): void {
  const existing = route.preValidation;
  route.preValidation = existing === undefined ? [step] : [step, ...[existing].flat()];
}

/**
 * Adds the strict parsing step to every route that declares numeric path or query parameters, and the
 * refusal of any query parameter to the API routes that declare none.
 */
export function installStrictParams(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const refuse = refuseQuery(route);
    if (refuse) first(route, refuse);
    const fields = [
      ...numericFields(route.schema?.params, 'params'),
      ...numericFields(route.schema?.querystring, 'query'),
    ];
    if (fields.length === 0) return;
    first(route, async (request: FastifyRequest) => {
      for (const field of fields) parseField(request, field);
    });
  });
}
