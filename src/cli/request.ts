import { randomUUID } from 'node:crypto';
import { idempotencyKey, objectId, u64, usageError } from './args.ts';
import type { Reply } from './connection.ts';
import type { Json } from './replies.ts';
import { routePath } from './routes.ts';
import type { Context } from './spec.ts';

/** How a command reads its options, makes its request (its spec's route), and prints the answer. */

export const READ_TIMEOUT_MS = 10_000;
export const WRITE_TIMEOUT_MS = 30_000;

type Params = Record<string, string | number>;

/** A string option's value, if given. */
export function str(ctx: Context, name: string): string | undefined {
  const value = ctx.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A string option the command cannot do without: its value, else a usage error (`--price P is required`). */
export function required(ctx: Context, name: string, arg: string): string {
  const value = str(ctx, name);
  if (value === undefined) throw usageError(ctx.command, `--${name} ${arg} is required`);
  return value;
}

/** A repeatable option's values, in the order given. */
export function list(ctx: Context, name: string): string[] {
  const value = ctx.values[name];
  return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
}

/** The command's GET, with its path parameters and a query string (`?min_fill_fraction=0.9`). */
export async function read(ctx: Context, params: Params = {}, query = ''): Promise<Reply> {
  return ctx.daemon().request('GET', `${routePath(ctx.route, params)}${query}`, {
    timeoutMs: ctx.timeoutMs ?? READ_TIMEOUT_MS,
  });
}

function method(ctx: Context): 'POST' | 'DELETE' {
  return ctx.route.startsWith('DELETE ') ? 'DELETE' : 'POST';
}

/**
 * A write of the operator's node: with an Idempotency-Key (the given one or a fresh one) and gas options.
 * A write of several stacks waits a second longer for each stack beyond the first (one transaction each).
 */
export async function write(
  ctx: Context,
  body: Json,
  { params = {}, stacks = 1 }: { params?: Params; stacks?: number } = {},
): Promise<Reply> {
  const given = str(ctx, 'idempotency-key');
  const key = given === undefined ? `node-daemon-cli-${randomUUID()}` : idempotencyKey(ctx.command, given);
  const gas: Json = {};
  const budget = str(ctx, 'gas-budget');
  const gasPrice = str(ctx, 'gas-price');
  const coin = str(ctx, 'gas');
  if (budget !== undefined) gas.gas_budget = u64(ctx.command, budget, '--gas-budget');
  if (gasPrice !== undefined) gas.gas_price = u64(ctx.command, gasPrice, '--gas-price');
  if (coin !== undefined) gas.gas = objectId(ctx.command, coin, '--gas');
  const reply = await ctx.daemon().request(method(ctx), routePath(ctx.route, params), {
    body: { ...body, ...gas },
    idempotencyKey: key,
    timeoutMs: ctx.timeoutMs ?? WRITE_TIMEOUT_MS + (stacks - 1) * 1000,
  });
  if (!ctx.json && reply.headers.get('idempotent-replayed') === 'true') {
    await ctx.err(`the first result for Idempotency-Key ${key}; nothing was submitted again`);
  }
  return reply;
}

/**
 * A write with neither an Idempotency-Key nor gas options: a dev network actor's (the dev network pays),
 * or the autopilot's controls (a pass decides its own transactions, and running one twice is harmless).
 */
export async function plainWrite(
  ctx: Context,
  body?: Json,
  { params = {}, timeoutMs = WRITE_TIMEOUT_MS }: { params?: Params; timeoutMs?: number } = {},
): Promise<Reply> {
  return ctx.daemon().request(method(ctx), routePath(ctx.route, params), {
    ...(body === undefined ? {} : { body }),
    timeoutMs: ctx.timeoutMs ?? timeoutMs,
  });
}

/** Prints the answer: the daemon's JSON as is with --json, else what `render` makes of it. */
export async function show(ctx: Context, reply: Reply, render: (body: never) => string): Promise<void> {
  await ctx.out(ctx.json ? reply.text.trim() : render(reply.body as never));
}
