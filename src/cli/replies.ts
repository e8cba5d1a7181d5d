/**
 * The daemon's replies as the client reads them: the server's own schemas, imported as types only (the
 * client must not load the server; test/cli-imports.test.ts checks it). The parsed JSON matches them
 * exactly: a u64 arrives as a number, or a bigint above 2^53 (src/internal/json.ts), as U64 says.
 */

export type { ActionView, AutopilotStatus, PlanItem, RunResult } from '../schemas/autopilot.ts';
export type { Earnings } from '../schemas/earnings.ts';
export type { Status } from '../schemas/ops.ts';
export type { ClaimResult, GasUsed, NotClaimable, StackResult } from '../schemas/writes.ts';

/** A JSON object of a reply (or a problem document), read by field name. */
export type Json = Record<string, unknown>;
