import { type Static, Type } from 'typebox';
import { NODE_EVENT_TYPES, type NodeEventType } from '../internal/node-event-types.ts';

/** GET /events: the node events as Server-Sent Events (docs/NODE-EVENTS.md). */

export { NODE_EVENT_TYPES, type NodeEventType };

export const EventsQuerySchema = Type.Object(
  {
    node_id: Type.Optional(
      Type.String({
        description:
          "The nodes whose events to stream: small ids separated by commas, or `all` (every node the store keeps: the operator's nodes; another node's events are not recorded). Default: the signer's own nodes. Events about no node (tasks, the indexer) always come.",
        examples: ['4', '4,7', 'all'],
      }),
    ),
    types: Type.Optional(
      Type.String({
        description: `Only these event types, separated by commas: ${NODE_EVENT_TYPES.join(', ')}. Default: all.`,
        examples: ['stack_settled,funds_claimed'],
      }),
    ),
    after: Type.Optional(
      Type.String({
        description:
          'Resume after this event id (the `Last-Event-ID` header, which browsers send when they reconnect, takes precedence). Default: only new events.',
        pattern: '^[0-9]{1,15}$',
        examples: ['120'],
      }),
    ),
    last: Type.Optional(
      Type.String({
        description:
          'Start with the newest N events of the filter (1 to 1000), then the live ones: what a console or a terminal shows when it opens. Ignored when the stream resumes (`Last-Event-ID` or `after`). Default: only new events.',
        examples: ['50'],
      }),
    ),
  },
  { additionalProperties: false },
);
export type EventsQuery = Static<typeof EventsQuerySchema>;

export const EVENTS_DESCRIPTION = `A live stream of what happens to the node, in Server-Sent Events (\`text/event-stream\`).

Each event is one frame: \`id:\` (a sequence number the daemon keeps in its store, gap-free, the same on every
daemon sharing a database), \`event:\` its type, and \`data:\` one JSON object with \`id\`, \`at\` (ISO time),
\`type\`, \`node_small_id\` (null for everyone's events) and the type's fields, u64 amounts exact:

| type | when | fields |
|---|---|---|
| stack_assigned | a user bought a stack from the node | stack_small_id, task_small_id, num_compute_units, price_per_one_million_compute_units, owner_address |
| stack_filled | a usage report took a stack past 0.5, 0.9 or 1 of its units | stack_small_id, threshold, already_computed_units, num_compute_units, fill_fraction |
| stack_settled | the node try-settled a stack | stack_small_id, num_claimed_compute_units, node_fee_amount, settled_epoch, claimable_from_epoch, requested_attestation_nodes, tx_digest |
| attestation_requested | a settlement asks the node to attest | stack_small_id, selected_node_id, slots, until_epoch |
| attestation_submitted | the node attested, or a stack of the node was attested | stack_small_id, attestation_node_id, selected_node_id, tx_digest |
| dispute_opened | a stack of the node was disputed, or the node disputed one | stack_small_id, original_node_id, attestation_node_id, tx_digest |
| stack_claimable | an epoch passed: the stack can be claimed | stack_small_id, claimable_from_epoch, epoch, num_claimed_compute_units, node_fee_amount |
| funds_claimed | a claim transaction paid the node | tx_digest, path, stack_small_ids, num_claimed_compute_units, node_fee_amount, user_refund_amount, unpriced_stacks |
| subscription_changed | subscribed, price updated, unsubscribed | task_small_id, change, price_per_one_million_compute_units, max_num_compute_units |
| task_added, task_deprecated, task_removed | a task's life (everyone's) | task_small_id, and model_name, security_level, ... or epoch |
| autopilot_action | the autopilot recorded, completed or skipped an action | action_id, action, status, stack_small_ids, node_fee_amount, tx_digests, reason, error |
| subscribed_task_deprecated | a task the node serves was deprecated | task_small_id, epoch |
| indexer_status | a condition: the indexer fell behind (ready false), or caught up again (everyone's) | ready, lag_seconds, detail |
| signer_gas_low, signer_gas_restored | a condition: the signer's SUI for gas went below --gas-warning-mist, or back (everyone's) | address, balance_mist, threshold_mist |
| autopilot_failing, autopilot_recovered | a condition: an autopilot action failed, or the next succeeded (everyone's) | address, action_id, action, node_small_id, stack_small_ids, error |
| autopilot_halted, autopilot_resumed | a condition: the autopilot halted, or acts again (everyone's) | address, reason; or address, by |
| autopilot_gas_budget_spent, autopilot_gas_budget_restored | a condition: the autopilot's next action would pass --autopilot-max-gas-per-day, or it acts again (everyone's) | address, budget_mist, spent_mist, needed_mist, frees_at; or address, budget_mist |
| usage_source_lost, usage_source_restored | a condition: the usage source (atoma-state) stopped answering, or answers again (everyone's) | source, reason, detail; or source, lost_seconds |

A condition's events come once when it starts and once when it ends, however often it is checked, and a restart
does not announce again what was announced and still holds.

\`?last=50\` starts with the newest 50 events of the filter, then the live ones. Resume with \`Last-Event-ID\` or \`?after=\`: nothing is lost or repeated, across reconnects and restarts, within the
retention (7 days and 1,000,000 events by default). Two frames carry no id: \`events_lost\` (the events asked for
are past the retention) and \`overflow\` (the client read too slowly; it is the last frame, then the connection
closes: reconnect with the last id). A comment line (\`: keep-alive\`) comes every 15 seconds.

\`curl -N http://127.0.0.1:3001/events\``;
