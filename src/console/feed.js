// @ts-check
import { formatCoin, formatFill, formatInt, formatUsdc, idList, shortId } from './format.js';

/**
 * One node event (GET /events, its `data`) as a line of the activity feed. The fields are those
 * EVENTS_DESCRIPTION documents (src/schemas/events.ts).
 * @param {Record<string, any>} e
 * @returns {{ id: number | null, at: string, type: string, tone: 'good' | 'warn' | 'bad' | 'info', text: string }}
 */
export function describeEvent(e) {
  const base = {
    id: typeof e.id === 'number' ? e.id : null,
    at: String(e.at ?? new Date().toISOString()),
    type: String(e.type),
  };
  const stack = `stack ${e.stack_small_id}`;
  switch (e.type) {
    case 'stack_assigned':
      return {
        ...base,
        tone: 'info',
        text: `A user bought ${stack}: ${formatInt(e.num_compute_units)} units of task ${e.task_small_id} at ${formatUsdc(e.price_per_one_million_compute_units)} per million`,
      };
    case 'stack_filled':
      return {
        ...base,
        tone: Number(e.threshold) >= 0.9 ? 'warn' : 'info',
        text: `${capital(stack)} passed ${Math.round(Number(e.threshold) * 100)} % of its units: ${formatInt(e.already_computed_units)} of ${formatInt(e.num_compute_units)} used (${formatFill(e.already_computed_units, e.num_compute_units)})`,
      };
    case 'stack_settled':
      return {
        ...base,
        tone: 'good',
        text: `${capital(stack)} settled: ${formatInt(e.num_claimed_compute_units)} units, node fee ${formatUsdc(e.node_fee_amount)}, claimable from epoch ${e.claimable_from_epoch ?? '—'}`,
      };
    case 'attestation_requested':
      return {
        ...base,
        tone: 'warn',
        text: `Node ${e.node_small_id} is asked to attest ${stack} of node ${e.selected_node_id}, until epoch ${e.until_epoch ?? '—'}`,
      };
    case 'attestation_submitted':
      return {
        ...base,
        tone: 'info',
        text: `Node ${e.attestation_node_id} attested ${stack} of node ${e.selected_node_id}`,
      };
    case 'dispute_opened':
      return {
        ...base,
        tone: 'bad',
        text: `Dispute on ${stack} of node ${e.original_node_id}, raised by node ${e.attestation_node_id}: its funds are locked`,
      };
    case 'stack_claimable':
      return {
        ...base,
        tone: 'good',
        text: `Epoch ${e.epoch}: ${stack} can be claimed (node fee ${formatUsdc(e.node_fee_amount)})`,
      };
    case 'funds_claimed':
      return {
        ...base,
        tone: 'good',
        text: `Claimed ${formatUsdc(e.node_fee_amount)} for stacks ${idList(e.stack_small_ids)} (refund to users ${formatUsdc(e.user_refund_amount)}; tx ${shortId(e.tx_digest)})`,
      };
    case 'subscription_changed':
      return {
        ...base,
        tone: 'info',
        text:
          e.change === 'unsubscribed'
            ? `Node ${e.node_small_id} unsubscribed from task ${e.task_small_id}`
            : `Node ${e.node_small_id} ${e.change === 'subscribed' ? 'subscribed to' : 'changed its price for'} task ${e.task_small_id}: ${formatUsdc(e.price_per_one_million_compute_units)} per million units`,
      };
    case 'task_added':
      return {
        ...base,
        tone: 'info',
        text: `New task ${e.task_small_id}${e.model_name ? `: ${e.model_name}` : ''}`,
      };
    case 'task_deprecated':
      return { ...base, tone: 'warn', text: `Task ${e.task_small_id} deprecated` };
    case 'task_removed':
      return { ...base, tone: 'warn', text: `Task ${e.task_small_id} removed` };
    case 'autopilot_action':
      return {
        ...base,
        tone: e.status === 'failed' ? 'bad' : e.status === 'succeeded' ? 'good' : 'info',
        text: `Autopilot ${e.action} of stacks ${idList(e.stack_small_ids)}: ${e.status}${e.error ? ` (${e.error})` : e.reason ? `, ${e.reason}` : ''}`,
      };
    case 'indexer_status':
      return {
        ...base,
        tone: e.ready ? 'good' : 'warn',
        text: `Indexer ${e.ready ? 'ready' : 'not ready'}: ${e.detail}`,
      };
    case 'signer_gas_low':
      return {
        ...base,
        tone: 'bad',
        text: `The signer has ${formatCoin('SUI', e.balance_mist)} for gas, below the warning of ${formatCoin('SUI', e.threshold_mist)}: fund it`,
      };
    case 'signer_gas_restored':
      return {
        ...base,
        tone: 'good',
        text: `The signer has ${formatCoin('SUI', e.balance_mist)} for gas again`,
      };
    case 'autopilot_halted':
      return { ...base, tone: 'bad', text: `Autopilot halted: ${e.reason}` };
    case 'autopilot_gas_budget_spent':
      return {
        ...base,
        tone: 'bad',
        text: `Autopilot paused: its daily gas budget of ${formatCoin('SUI', e.budget_mist)} is spent; it frees up at ${e.frees_at}`,
      };
    case 'autopilot_gas_budget_restored':
      return { ...base, tone: 'good', text: 'Autopilot acts again: its daily gas budget has room' };
    case 'autopilot_resumed':
      return {
        ...base,
        tone: 'good',
        text: `Autopilot resumed ${e.by === 'restart' ? '(the daemon restarted)' : 'by the operator'}`,
      };
    case 'autopilot_failing':
      return {
        ...base,
        tone: 'bad',
        text: `Autopilot ${e.action} of stacks ${idList(e.stack_small_ids)} failed (${e.error}); it retries with back-off`,
      };
    case 'autopilot_recovered':
      return {
        ...base,
        tone: 'good',
        text: `Autopilot ${e.action} of stacks ${idList(e.stack_small_ids)} succeeded: it acts again`,
      };
    case 'subscribed_task_deprecated':
      return {
        ...base,
        tone: 'warn',
        text: `Task ${e.task_small_id}, which node ${e.node_small_id} serves, was deprecated in epoch ${e.epoch}: its price is fixed now, and it can be removed from the next epoch`,
      };
    case 'usage_source_lost':
      return {
        ...base,
        tone: 'bad',
        text: `The usage source (${e.source}) cannot be read: ${e.detail}; the last usage stays, and it retries`,
      };
    case 'usage_source_restored':
      return {
        ...base,
        tone: 'good',
        text: `The usage source (${e.source}) answers again${e.lost_seconds === null || e.lost_seconds === undefined ? '' : ` after ${formatInt(e.lost_seconds)} s`}`,
      };
    case 'webhook_endpoint_disabled':
      return {
        ...base,
        tone: 'bad',
        text: `Webhook endpoint ${e.endpoint_id} (${e.origin}) disabled: ${e.reason}; nothing is sent to it until it is enabled`,
      };
    default:
      return { ...base, tone: 'info', text: `${e.type}` };
  }
}

/** @param {string} text */
function capital(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
