/** What happened to the nodes, in the operator's terms: the types of the node events (GET /events). */
export const NODE_EVENT_TYPES = [
  'stack_assigned',
  'stack_filled',
  'stack_settled',
  'attestation_requested',
  'attestation_submitted',
  'dispute_opened',
  'stack_claimable',
  'funds_claimed',
  'subscription_changed',
  'task_added',
  'task_deprecated',
  'task_removed',
  'autopilot_action',
  'indexer_status',
  'usage_source_lost',
  'usage_source_restored',
  // The conditions an operator is told of once when they start and once when they end
  // (operations/conditions.ts), and the deprecation of a task a node serves.
  'signer_gas_low',
  'signer_gas_restored',
  'autopilot_halted',
  'autopilot_resumed',
  'autopilot_failing',
  'autopilot_recovered',
  'autopilot_gas_budget_spent',
  'autopilot_gas_budget_restored',
  'subscribed_task_deprecated',
  // A webhook endpoint disabled: its receiver answered 410, or failed for 3 days (docs/WEBHOOKS.md).
  'webhook_endpoint_disabled',
] as const;
export type NodeEventType = (typeof NODE_EVENT_TYPES)[number];
