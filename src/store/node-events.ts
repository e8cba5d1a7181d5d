import { stringifyJson } from '../internal/json.ts';
import type { U64 } from '../internal/u64.ts';
import type { NodeEventType } from '../schemas/events.ts';
import type { AutopilotAction } from './autopilot-actions.ts';

/**
 * The node events (GET /events): what happened to the nodes, in the operator's terms, each written in the
 * transaction of the change it reports. This module holds their names and the builders the store itself
 * uses (usage, autopilot); the indexer derives the others from chain events (src/indexer/node-events.ts).
 */

export { NODE_EVENT_TYPES, type NodeEventType } from '../schemas/events.ts';

/** An event to record. */
export interface NewNodeEvent {
  type: NodeEventType;
  /** The node it is about; null when it concerns everyone (a task, the indexer). */
  node_small_id: U64 | null;
  /** A second node it concerns (the attester of a settler's stack, the disputer). */
  other_node_small_id?: U64 | null;
  /** When it happened (ms since the epoch); the time of recording when absent. */
  at?: number;
  /** Its fields, besides id, at, type and node_small_id (exact u64 in the JSON). */
  data: Record<string, unknown>;
}

/** The nodes whose events the store records (digits); null: every node's. */
export type NodeEventScope = ReadonlySet<string> | null;

/**
 * Whether the store records the event under its scope: everyone's events (no node: a task, a condition)
 * always; a node's when it, or the second node it names (the attester, the disputer), is in the scope.
 */
export function inScope(event: NewNodeEvent, scope: NodeEventScope): boolean {
  if (scope === null || event.node_small_id === null) return true;
  if (scope.has(String(event.node_small_id))) return true;
  const other = event.other_node_small_id;
  return other !== undefined && other !== null && scope.has(String(other));
}

/** A recorded event: `data` is its JSON object text, as stored. */
export interface NodeEventRow {
  id: number;
  at: number;
  type: NodeEventType;
  node_small_id: U64 | null;
  other_node_small_id: U64 | null;
  data: string;
}

/** Which recorded events to read: after an id, of these nodes (plus everyone's), of these types. */
export interface NodeEventQuery {
  after: number;
  limit: number;
  /** null: every node's. Events about no node (tasks, the indexer) always match. */
  nodes: readonly U64[] | null;
  /** null: every type. */
  types: readonly NodeEventType[] | null;
}

/** The stored form of an event's data. */
export function eventData(event: NewNodeEvent): string {
  return stringifyJson(event.data);
}

/** The fill fractions at which a stack's usage is reported (stack_filled). */
export const FILL_THRESHOLDS = [0.5, 0.9, 1] as const;

/** The stack_filled events of a usage report that took a stack from `before` to `after` parts per million. */
export function fillEvents(
  stack: { stack_small_id: U64; selected_node_id: U64; num_compute_units: U64 },
  beforePpm: number,
  afterPpm: number,
  already: U64,
  at: number,
): NewNodeEvent[] {
  return FILL_THRESHOLDS.filter((t) => beforePpm < t * 1_000_000 && afterPpm >= t * 1_000_000).map(
    (threshold) => ({
      type: 'stack_filled',
      node_small_id: stack.selected_node_id,
      at,
      data: {
        stack_small_id: stack.stack_small_id,
        threshold,
        already_computed_units: already,
        num_compute_units: stack.num_compute_units,
        fill_fraction: afterPpm / 1_000_000,
      },
    }),
  );
}

/** The autopilot_action event of an action as recorded (at each change of its status). */
export function autopilotEvent(action: AutopilotAction): NewNodeEvent {
  return {
    type: 'autopilot_action',
    node_small_id: action.node_small_id,
    at: action.updated_at,
    data: {
      action_id: action.id,
      action: action.kind,
      status: action.status,
      stack_small_ids: action.stack_small_ids,
      node_fee_amount: action.node_fee_amount,
      tx_digests: action.tx_digests,
      reason: action.reason,
      error: action.error,
    },
  };
}
