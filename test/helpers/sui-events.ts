import { createHash } from 'node:crypto';
import { base58 } from '../../src/internal/base58.ts';

/** Builders for SuiEvent JSON as the fullnode's JSON-RPC returns it, for tests. */

export const PACKAGE = `0x${'a1'.repeat(32)}`;

export function digest(seed: string): string {
  return base58(createHash('sha256').update(seed).digest());
}

export function hexId(seed: string | number): string {
  return `0x${createHash('sha256').update(String(seed)).digest('hex')}`;
}

/** A small-id newtype ({ inner: "7" }); u64 values are decimal strings. */
export const inner = (n: number | bigint | string) => ({ inner: String(n) });

export function bytes(length: number, fill = 1): number[] {
  return Array.from({ length }, (_, i) => (fill + i) % 256);
}

export interface SuiEventJson {
  id: { txDigest: string; eventSeq: string };
  packageId: string;
  transactionModule: string;
  sender: string;
  type: string;
  parsedJson: unknown;
  timestampMs: string;
}

let counter = 0;

/** One event; each call gets its own transaction digest unless `tx` names one. */
export function event(
  name: string,
  parsedJson: unknown,
  options: { tx?: string; seq?: number; sender?: string; module?: string } = {},
): SuiEventJson {
  counter += 1;
  return {
    id: { txDigest: digest(options.tx ?? `tx-${counter}-${name}`), eventSeq: String(options.seq ?? 0) },
    packageId: PACKAGE,
    transactionModule: options.module ?? 'db',
    sender: options.sender ?? hexId('sender'),
    type: `${PACKAGE}::${options.module ?? 'db'}::${name}`,
    parsedJson,
    timestampMs: String(1_760_000_000_000 + counter),
  };
}

export const task = (id: number | string, level = 0, extra: Record<string, unknown> = {}) =>
  event('TaskRegisteredEvent', {
    task_id: hexId(`task-${id}`),
    task_small_id: inner(id),
    role: { inner: 0 },
    model_name: 'meta-llama/Llama-3.3-70B-Instruct',
    security_level: { inner: level },
    minimum_reputation_score: null,
    ...extra,
  });

export const node = (id: number | string, sender = hexId(`operator-${id}`)) =>
  event('NodeRegisteredEvent', { badge_id: hexId(`badge-${id}`), node_small_id: inner(id) }, { sender });

export const subscribe = (
  nodeId: number | string,
  taskId: number | string,
  price: number | string = 1_000_000,
) =>
  event('NodeSubscribedToTaskEvent', {
    task_small_id: inner(taskId),
    node_small_id: inner(nodeId),
    price_per_one_million_compute_units: String(price),
    max_num_compute_units: '1000000',
  });

export const stack = (
  id: number | string,
  nodeId: number | string,
  taskId: number | string = 1,
  units: number | string = 1000,
  price: number | string = 2_000_000,
) =>
  event('StackCreatedEvent', {
    stack_id: hexId(`stack-${id}`),
    stack_small_id: inner(id),
    owner: hexId('user'),
    task_small_id: inner(taskId),
    selected_node_id: inner(nodeId),
    num_compute_units: String(units),
    price_per_one_million_compute_units: String(price),
  });

export const trySettle = (stackId: number, nodeId: number, attesters: number[] = [], claimed = 500) =>
  event('StackTrySettleEvent', {
    stack_small_id: inner(stackId),
    selected_node_id: inner(nodeId),
    requested_attestation_nodes: attesters.map(inner),
    committed_stack_proof: bytes(32, 7),
    stack_merkle_leaf: bytes(32, 9),
    num_claimed_compute_units: String(claimed),
  });

export function jsonl(events: unknown[]): string {
  return `${events.map((e) => JSON.stringify(e)).join('\n')}\n`;
}

/**
 * A long, valid history for crash and bulk tests: 3 tasks, 20 nodes subscribed to them, then stacks,
 * with every fifth stack try-settled and every tenth claimed.
 */
export function history(stacks: number): SuiEventJson[] {
  const events: SuiEventJson[] = [task(1, 0), task(2, 1), task(3, 2)];
  for (let n = 1; n <= 20; n++) {
    events.push(node(n), subscribe(n, 1 + (n % 3), 1_000_000 + n));
  }
  for (let s = 1; s <= stacks; s++) {
    const nodeId = 1 + (s % 20);
    events.push(stack(s, nodeId, 1 + (nodeId % 3), 1000 + (s % 7)));
    if (s % 5 === 0) events.push(trySettle(s, nodeId, [], 500));
    if (s % 10 === 0) {
      events.push(
        event('StackSettlementTicketClaimedEvent', {
          stack_small_id: inner(s),
          selected_node_id: inner(nodeId),
          attestation_nodes: [],
          num_claimed_compute_units: '500',
          user_refund_amount: String(s),
        }),
      );
    }
  }
  return events;
}
