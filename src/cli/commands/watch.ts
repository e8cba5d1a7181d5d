import { CliError } from '../../internal/exit-codes.ts';
import { NODE_EVENT_TYPES } from '../../internal/node-event-types.ts';
import { type SseMessage, SseParser } from '../../internal/sse.ts';
import { usageError } from '../args.ts';
import { DaemonProblem } from '../connection.ts';
import { ClientExitCode } from '../exit-codes.ts';
import {
  amount,
  digits,
  fractionPercent,
  idList,
  oneLine,
  price,
  shortId,
  sui,
  timestamp,
} from '../format.ts';
import type { CommandSpec, Context } from '../spec.ts';

/** `watch`: the node's events as they happen (GET /events), one line each, resuming after a break. */

type Data = Record<string, unknown>;

const CONNECT_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;

const TYPES: readonly string[] = NODE_EVENT_TYPES;

const stack = (d: Data) => `stack ${digits(d.stack_small_id)}`;

/** What an event says, in a few words. */
export function describeEvent(type: string, d: Data): string {
  switch (type) {
    case 'stack_assigned':
      return `${stack(d)} of task ${digits(d.task_small_id)}: ${digits(d.num_compute_units)} units at ${price(d.price_per_one_million_compute_units)}, bought by ${shortId(d.owner_address)}`;
    case 'stack_filled':
      return `${stack(d)} reached ${fractionPercent(d.threshold)} (${digits(d.already_computed_units)} of ${digits(d.num_compute_units)} units)`;
    case 'stack_settled': {
      const asked = Array.isArray(d.requested_attestation_nodes) ? d.requested_attestation_nodes : [];
      const attesters = asked.length > 0 ? `; attesters asked: ${idList(asked)}` : '';
      return `${stack(d)} settled for ${digits(d.num_claimed_compute_units)} units: fee ${amount(d.node_fee_amount)}, claimable from epoch ${digits(d.claimable_from_epoch)}${attesters}`;
    }
    case 'attestation_requested':
      return `${stack(d)} of node ${digits(d.selected_node_id)} asks this node to attest (until epoch ${digits(d.until_epoch)})`;
    case 'attestation_submitted':
      return `node ${digits(d.attestation_node_id)} attested ${stack(d)} of node ${digits(d.selected_node_id)}`;
    case 'dispute_opened':
      return `${stack(d)} of node ${digits(d.original_node_id)} disputed by node ${digits(d.attestation_node_id)}`;
    case 'stack_claimable':
      return `${stack(d)} can be claimed: fee ${amount(d.node_fee_amount)} (epoch ${digits(d.epoch)})`;
    case 'funds_claimed': {
      const ids = Array.isArray(d.stack_small_ids) ? d.stack_small_ids : [];
      const unpriced = Number(d.unpriced_stacks) > 0 ? `, ${digits(d.unpriced_stacks)} of unknown price` : '';
      return `claimed ${ids.length === 1 ? 'stack' : `${ids.length} stacks`} ${idList(ids)}: fee ${amount(d.node_fee_amount)}, refunds ${amount(d.user_refund_amount)}${unpriced}`;
    }
    case 'subscription_changed': {
      const task = `task ${digits(d.task_small_id)}`;
      if (d.change === 'subscribed')
        return `subscribed to ${task} at ${price(d.price_per_one_million_compute_units)}`;
      if (d.change === 'unsubscribed') return `unsubscribed from ${task}`;
      return `price of ${task} now ${price(d.price_per_one_million_compute_units)}`;
    }
    case 'task_added':
      return `task ${digits(d.task_small_id)} added: ${d.model_name ?? 'no model'}, security level ${digits(d.security_level)}`;
    case 'task_deprecated':
      return `task ${digits(d.task_small_id)} deprecated in epoch ${digits(d.epoch)}`;
    case 'task_removed':
      return `task ${digits(d.task_small_id)} removed in epoch ${digits(d.epoch)}`;
    case 'autopilot_action': {
      const why = d.error ?? d.reason;
      return `autopilot ${d.action} of ${idList(Array.isArray(d.stack_small_ids) ? d.stack_small_ids : [])}: ${d.status}${typeof why === 'string' && why !== '' ? ` (${oneLine(why)})` : ''}`;
    }
    case 'indexer_status':
      return d.ready === true
        ? `indexer ready${typeof d.lag_seconds === 'number' ? ` (${d.lag_seconds} s behind the head)` : ''}`
        : `indexer not ready: ${oneLine(String(d.detail))}`;
    case 'signer_gas_low':
      return `the signer ${shortId(d.address)} has ${sui(d.balance_mist)} for gas, below the warning of ${sui(d.threshold_mist)}: fund it`;
    case 'signer_gas_restored':
      return `the signer ${shortId(d.address)} has ${sui(d.balance_mist)} for gas again (warning below ${sui(d.threshold_mist)})`;
    case 'autopilot_gas_budget_spent':
      return `autopilot paused: its gas of the last 24 hours (${sui(d.spent_mist)}) and the next action's (${sui(d.needed_mist)}) would pass --autopilot-max-gas-per-day ${sui(d.budget_mist)}; it frees up at ${String(d.frees_at)}`;
    case 'autopilot_gas_budget_restored':
      return `autopilot acts again: its daily gas budget (${sui(d.budget_mist)}) has room`;
    case 'autopilot_halted':
      return `autopilot halted: ${oneLine(String(d.reason))}; resume it with \`node-daemon autopilot resume\``;
    case 'autopilot_resumed':
      return `autopilot resumed (${d.by === 'restart' ? 'the daemon restarted' : 'by the operator'})`;
    case 'autopilot_failing':
      return `autopilot ${d.action} of ${idList(Array.isArray(d.stack_small_ids) ? d.stack_small_ids : [])} failed: ${oneLine(String(d.error))}; it retries with back-off`;
    case 'autopilot_recovered':
      return `autopilot ${d.action} of ${idList(Array.isArray(d.stack_small_ids) ? d.stack_small_ids : [])} succeeded: it acts again`;
    case 'subscribed_task_deprecated':
      return `task ${digits(d.task_small_id)}, which this node serves, deprecated in epoch ${digits(d.epoch)}: its price is fixed now, and it can be removed from the next epoch`;
    case 'events_lost':
      return `events after ${digits(d.after)} up to ${digits(Number(d.oldest_available ?? 0) - 1)} are past the daemon's retention and gone: re-read the state`;
    default:
      return oneLine(JSON.stringify(d));
  }
}

/** One line per event: time, type, node, what happened. */
export function eventLine(message: SseMessage): string {
  const data = JSON.parse(message.data) as Data;
  const node =
    data.node_small_id === null || data.node_small_id === undefined ? '-' : `node ${data.node_small_id}`;
  const at = typeof data.at === 'string' ? timestamp(data.at) : timestamp(new Date().toISOString());
  return `${at}  ${message.event.padEnd(21)}  ${node.padEnd(8)}  ${describeEvent(message.event, data)}`;
}

function query(ctx: Context): string {
  const params = new URLSearchParams();
  const nodes = ctx.values.node as string[] | undefined;
  if (ctx.values.all === true && nodes?.length)
    throw usageError(ctx.command, '--all and --node do not go together');
  if (ctx.values.all === true) params.set('node_id', 'all');
  else if (nodes?.length) {
    const ids = nodes.flatMap((n) => n.split(','));
    for (const id of ids) {
      if (!/^[0-9]{1,15}$/.test(id))
        throw usageError(ctx.command, `--node takes node small ids; got ${JSON.stringify(id)}`);
    }
    params.set('node_id', ids.join(','));
  }
  if (typeof ctx.values.types === 'string') {
    const types = ctx.values.types.split(',');
    const unknown = types.filter((t) => !TYPES.includes(t));
    if (unknown.length > 0) {
      throw usageError(
        ctx.command,
        `unknown event type ${unknown.join(', ')}; the types are ${TYPES.join(', ')}`,
      );
    }
    params.set('types', types.join(','));
  }
  if (typeof ctx.values.last === 'string') {
    const last = ctx.values.last;
    if (!/^[0-9]{1,4}$/.test(last) || Number(last) < 1 || Number(last) > 1000)
      throw usageError(
        ctx.command,
        `--last takes a count of events from 1 to 1000; got ${JSON.stringify(last)}`,
      );
    if (ctx.values.after !== undefined)
      throw usageError(ctx.command, '--last and --after do not go together');
    // Once the stream printed an event it resumes after it (Last-Event-ID), which the daemon prefers.
    params.set('last', last);
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

async function watch(ctx: Context): Promise<void> {
  const path = `/events${query(ctx)}`;
  let lastId = typeof ctx.values.after === 'string' ? ctx.values.after : undefined;
  if (lastId !== undefined && !/^[0-9]{1,15}$/.test(lastId)) {
    throw usageError(ctx.command, `--after takes an event id (digits); got ${JSON.stringify(lastId)}`);
  }
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let failures = 0;
  try {
    while (!stop.signal.aborted) {
      let why: string;
      try {
        const response = await ctx
          .daemon()
          .stream(
            path,
            lastId === undefined ? {} : { 'last-event-id': lastId },
            stop.signal,
            ctx.timeoutMs ?? CONNECT_MS,
          );
        if (failures > 0)
          await ctx.err(`node-daemon: reconnected${lastId === undefined ? '' : ` after event ${lastId}`}`);
        failures = 0;
        why = await follow(ctx, response, stop.signal, (id) => {
          lastId = id;
        });
      } catch (error) {
        if (stop.signal.aborted) break;
        // A refusal (bad parameters, a wrong token) does not heal by retrying; an overloaded daemon does.
        if (error instanceof DaemonProblem && error.status < 500) throw error;
        if (error instanceof CliError && error.exitCode !== ClientExitCode.unavailable) throw error;
        why = error instanceof DaemonProblem ? error.problem.detail : (error as Error).message;
      }
      if (stop.signal.aborted) break;
      failures += 1;
      const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (failures - 1));
      await ctx.err(`node-daemon: ${oneLine(why)}; reconnecting in ${delay / 1000} s`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        stop.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Prints the stream's events until it ends; answers why it ended. */
async function follow(
  ctx: Context,
  response: Response,
  signal: AbortSignal,
  seen: (id: string) => void,
): Promise<string> {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body ?? []) {
      for (const message of parser.push(decoder.decode(chunk as Uint8Array, { stream: true }))) {
        if (message.event === 'overflow') return 'the daemon closed the stream: this client read too slowly';
        await ctx.out(ctx.json ? jsonLine(message) : eventLine(message));
        if (message.id !== undefined && message.event !== 'events_lost') seen(message.id);
      }
    }
    return 'the daemon ended the stream';
  } catch (error) {
    if (signal.aborted) return 'stopped';
    return `the stream broke: ${(error as Error).message}`;
  }
}

/** One NDJSON line: the event's data as the daemon sent it (exact digits). */
function jsonLine(message: SseMessage): string {
  return message.data;
}

export const WATCH: CommandSpec[] = [
  {
    name: 'watch',
    route: 'GET /events',
    synopsis: '[--node N]... [--all] [--types T,T] [--after ID | --last N] [--json]',
    summary: 'follow what happens to the node, live: a line per event',
    description: [
      [
        "A line per event as it happens: a stack assigned, filled, settled, claimable, claimed (with the fee and the refunds), attestations, disputes, subscriptions, tasks, the autopilot's actions and the indexer's readiness. By default, the events of the signer's nodes and everyone's (tasks, the indexer).",
        'It reconnects by itself when the connection breaks or the daemon restarts, and resumes after the last event it printed, so nothing is missed or repeated within the daemon\u2019s retention. Ctrl-C stops it (exit 0).',
        '--json prints one JSON object per line (NDJSON), each as the daemon sent it, u64 amounts exact. --timeout bounds the wait for the daemon to answer (default 10 s), not the stream.',
      ],
    ],
    options: {
      node: {
        type: 'string',
        multiple: true,
        arg: 'N',
        describe: 'only these nodes (repeat it, or N,N); default: the signer\u2019s',
      },
      all: { type: 'boolean', describe: 'the events of every node the store keeps (node_id=all)' },
      types: { type: 'string', arg: 'T,T', describe: `only these event types: ${TYPES.join(', ')}` },
      after: {
        type: 'string',
        arg: 'ID',
        describe: 'start after this event id (the daemon keeps 7 days by default); default: new events only',
      },
      last: {
        type: 'string',
        arg: 'N',
        describe: 'start with the newest N events (1 to 1000), then the live ones; default: new events only',
      },
    },
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: [
      'node-daemon watch',
      'node-daemon watch --last 20',
      'node-daemon watch --types funds_claimed,stack_claimable',
      'node-daemon watch --json --all | jq .type',
    ],
    run: watch,
  },
];
