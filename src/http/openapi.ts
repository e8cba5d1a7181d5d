/** The OpenAPI document as served: OpenAPI 3.1, from the route schemas. */

/** Rewrites `nullable: true` (see schemas/common.ts Nullable) into OpenAPI 3.1's `type: [T, "null"]`, in place. */
export function toOpenApi31(node: unknown): void {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const item of node) toOpenApi31(item);
    return;
  }
  const record = node as Record<string, unknown>;
  if (record.u64 === true) {
    delete record.u64;
    Object.assign(record, { type: 'integer', minimum: 0, format: 'uint64' });
  }
  if (record.nullable === true && typeof record.type === 'string') {
    record.type = [record.type, 'null'];
    delete record.nullable;
  }
  for (const value of Object.values(record)) toOpenApi31(value);
}
