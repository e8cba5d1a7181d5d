import { type Static, type TSchema, Type } from 'typebox';
import { HASH32_PATTERN, MAX_SMALL_ID, OBJECT_ID_PATTERN } from '../internal/formats.ts';
import type { U64 as U64Value } from '../internal/u64.ts';

/**
 * The building blocks of the wire schemas: one definition gives validation, the TypeScript types (Static)
 * and the OpenAPI document. Field names and types follow the upstream daemon (snake_case, integers as JSON
 * numbers, byte vectors as arrays of 0..255).
 */

/** A u64 in a response: a JSON number with exact digits, even above 2^53 (the serializer writes bigints). */
export const U64 = (description?: string) =>
  Type.Unsafe<U64Value>({
    type: 'integer',
    minimum: 0,
    description: description ? `${description} (u64)` : 'u64',
  });

/**
 * A u64 in a request body: exact up to 2^64 - 1, parsed as a number or a bigint (http/json-body.ts) and
 * checked by the `u64` keyword; the OpenAPI document shows integer/uint64.
 */
export const U64In = (description: string) =>
  Type.Unsafe<U64Value>({ u64: true, description: `${description} (u64)` });

/**
 * `T | null`. Written with the OpenAPI 3.0 `nullable` keyword because the serializer then still writes a
 * bigint u64 as exact digits; the published OpenAPI 3.1 document rewrites it as a type array.
 */
export function Nullable<T extends TSchema>(schema: T, description?: string) {
  return Type.Unsafe<Static<T> | null>({
    ...schema,
    nullable: true,
    ...(description ? { description } : {}),
  });
}

export const Bytes = (description: string) =>
  Type.Array(Type.Integer({ minimum: 0, maximum: 255 }), { description });

/** A small id (node, task, stack): 0 to 2^53 - 1 (src/internal/formats.ts). */
export const SmallId = (description: string) =>
  Type.Integer({ minimum: 0, maximum: MAX_SMALL_ID, description });

export const ObjectId = (description: string) => Type.String({ pattern: OBJECT_ID_PATTERN, description });

export const Hash32 = (description: string) => Type.String({ pattern: HASH32_PATTERN, description });

export const Strict = { additionalProperties: false } as const;

/** One of the given strings: `{ type: 'string', enum }` on the wire, the union of the literals in TypeScript. */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: { description?: string } = {},
) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}
