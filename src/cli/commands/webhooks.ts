import { smallId, usageError } from '../args.ts';
import { keyValues, oneLine, table, timestamp } from '../format.ts';
import type { Json } from '../replies.ts';
import { list, plainWrite, read, show, str } from '../request.ts';
import type { CommandSpec } from '../spec.ts';

/** The webhooks: the operator's endpoints for the node's events, signed (docs/WEBHOOKS.md). */

interface Endpoint {
  id: number;
  url: string;
  types: string[] | null;
  description: string;
  state: string;
  created_at: string;
  disabled_at: string | null;
  disabled_reason: string | null;
  failing_since: string | null;
  secret?: string;
}
interface Attempt {
  at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
}
interface Delivery {
  id: number;
  webhook_id: string;
  event_id: number | null;
  type: string;
  state: string;
  event_at: string;
  next_attempt_at: string | null;
  attempts: Attempt[];
}

const TOKEN_NOTE =
  'Every webhooks command needs the API token, the reads too (they show where the events go).';

function stateText(e: Endpoint): string {
  if (e.state === 'disabled') {
    return `disabled ${timestamp(e.disabled_at)}: ${oneLine(e.disabled_reason ?? '')}; \`node-daemon webhooks enable ${e.id}\` sends again`;
  }
  if (e.state === 'failing') return `failing since ${timestamp(e.failing_since)} (retries go on)`;
  return 'enabled';
}

function endpointText(e: Endpoint): string {
  const rows: [string, string][] = [
    ['id', String(e.id)],
    ['url', e.url],
    ['types', e.types === null ? 'all' : e.types.join(', ')],
    ['description', e.description === '' ? '-' : e.description],
    ['state', stateText(e)],
    ['added', timestamp(e.created_at)],
  ];
  if (e.secret !== undefined) rows.push(['secret', e.secret]);
  const text = keyValues(rows);
  return e.secret === undefined
    ? text
    : `${text}\n\nThe secret is shown only now: give it to the receiver, which verifies each request's webhook-signature with it (docs/WEBHOOKS.md).`;
}

function listText(body: { endpoints: Endpoint[] }): string {
  if (body.endpoints.length === 0) return '(no webhook endpoints; add one: node-daemon webhooks add URL)';
  return table(body.endpoints, [
    { header: 'ID', align: 'right', value: (e) => String(e.id) },
    { header: 'STATE', value: (e) => e.state },
    { header: 'TYPES', value: (e) => (e.types === null ? 'all' : e.types.join(',')) },
    { header: 'URL', value: (e) => e.url },
    { header: 'DESCRIPTION', value: (e) => e.description },
  ]);
}

function attemptText(a: Attempt): string {
  return `${a.status === null ? oneLine(a.error ?? 'no answer') : String(a.status)} (${a.duration_ms} ms)`;
}

function deliveriesText(body: { deliveries: Delivery[]; next_before: number | null }): string {
  if (body.deliveries.length === 0) return '(no deliveries yet)';
  const text = table(body.deliveries, [
    { header: 'ID', align: 'right', value: (d) => String(d.id) },
    { header: 'EVENT', align: 'right', value: (d) => (d.event_id === null ? '-' : String(d.event_id)) },
    { header: 'TYPE', value: (d) => d.type },
    { header: 'STATE', value: (d) => d.state },
    { header: 'ATTEMPTS', align: 'right', value: (d) => String(d.attempts.length) },
    {
      header: 'LAST ANSWER',
      value: (d) => (d.attempts.length === 0 ? '-' : attemptText(d.attempts.at(-1)!)),
    },
    { header: 'NEXT', value: (d) => (d.next_attempt_at === null ? '-' : timestamp(d.next_attempt_at)) },
  ]);
  return body.next_before === null ? text : `${text}\n(older: --before ${body.next_before})`;
}

function deliveryText(d: Delivery): string {
  return `delivery ${d.id} (${d.type}, webhook-id ${d.webhook_id}) is ${d.state}; \`node-daemon webhooks deliveries\` shows its attempts`;
}

const endpointId = (command: string, raw: string) => smallId(command, raw, 'ID');

/** One command on one endpoint (`webhooks show ID`, `remove`, `test`, `enable`). */
function onEndpoint(
  name: string,
  route: CommandSpec['route'],
  summary: string,
  does: string,
  render: (body: never) => string,
): CommandSpec {
  return {
    name: `webhooks ${name}`,
    route,
    synopsis: 'ID',
    summary,
    description: [[`${does} (${route}).`, TOKEN_NOTE]],
    arguments: [['ID', 'the endpoint id (`node-daemon webhooks list`)']],
    kind: route.startsWith('GET') ? 'read' : 'control',
    positionals: { min: 1, max: 1 },
    examples: [`node-daemon webhooks ${name} 1`],
    async run(ctx) {
      const id = endpointId(ctx.command, ctx.args[0]!);
      const reply = route.startsWith('GET')
        ? await read(ctx, { id })
        : await plainWrite(ctx, undefined, { params: { id } });
      await show(ctx, reply, render);
    },
  };
}

export const WEBHOOKS: CommandSpec[] = [
  {
    name: 'webhooks list',
    route: 'GET /webhooks',
    synopsis: '',
    summary: "the webhook endpoints the node's events are POSTed to, with their state",
    description: [
      [
        'Lists the webhook endpoints (GET /webhooks): id, state (enabled, failing: retries go on,',
        'disabled: nothing is sent until `webhooks enable`), the event types each receives, its URL and',
        'description. Never the secrets.',
      ],
      [TOKEN_NOTE],
    ],
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon webhooks list', 'node-daemon webhooks list --json'],
    async run(ctx) {
      await show(ctx, await read(ctx), listText);
    },
  },
  {
    name: 'webhooks add',
    route: 'POST /webhooks',
    synopsis: 'URL [--types T,T] [--description D]',
    summary: "add an endpoint: the node's events are POSTed to it, signed; prints its secret, once",
    description: [
      [
        'Adds a webhook endpoint (POST /webhooks): every node event of the given types (all by default)',
        'is POSTed to URL as JSON {type, timestamp, data}, signed as Standard Webhooks says, and retried',
        'with back-off until the receiver answers 2xx. Prints the endpoint with its signing secret: it is',
        'shown only now.',
      ],
      [TOKEN_NOTE],
    ],
    arguments: [['URL', 'an http:// or https:// URL']],
    options: {
      types: {
        type: 'string',
        multiple: true,
        arg: 'T,T',
        describe: 'only these event types (commas, or the option repeated); default: all',
      },
      description: { type: 'string', arg: 'D', describe: "the operator's note (e.g. where it goes)" },
    },
    kind: 'control',
    positionals: { min: 1, max: 1 },
    examples: [
      'node-daemon webhooks add https://ntfy.sh/my-node-alerts',
      'node-daemon webhooks add http://127.0.0.1:8787/hook --types dispute_opened,signer_gas_low,autopilot_halted --description phone',
    ],
    async run(ctx) {
      const types = list(ctx, 'types')
        .flatMap((t) => t.split(','))
        .map((t) => t.trim())
        .filter((t) => t !== '');
      if (ctx.values.types !== undefined && types.length === 0) {
        throw usageError(ctx.command, '--types needs at least one event type (leave it out for all)');
      }
      const description = str(ctx, 'description');
      const body: Json = {
        url: ctx.args[0]!,
        ...(types.length > 0 ? { types } : {}),
        ...(description === undefined ? {} : { description }),
      };
      await show(ctx, await plainWrite(ctx, body), endpointText);
    },
  },
  onEndpoint(
    'show',
    'GET /webhooks/{id}',
    'one webhook endpoint',
    'Shows one webhook endpoint',
    endpointText,
  ),
  onEndpoint(
    'remove',
    'DELETE /webhooks/{id}',
    'remove an endpoint and its deliveries',
    'Removes a webhook endpoint with its deliveries',
    (e: Endpoint) => `removed webhook endpoint ${e.id} (${e.url})`,
  ),
  onEndpoint(
    'test',
    'POST /webhooks/{id}/test',
    'send a webhook.test event to one endpoint',
    'Sends a `webhook.test` event to this endpoint only; `webhooks deliveries ID` shows the answer',
    deliveryText,
  ),
  onEndpoint(
    'enable',
    'POST /webhooks/{id}/enable',
    'enable a disabled endpoint: its pending deliveries go again',
    'Enables an endpoint that was disabled (its receiver answered 410, or failed for 3 days); its pending deliveries go again',
    endpointText,
  ),
  {
    name: 'webhooks deliveries',
    route: 'GET /webhooks/{id}/deliveries',
    synopsis: 'ID [--limit N] [--before DELIVERY]',
    summary: "an endpoint's deliveries, newest first, with each one's attempts",
    description: [
      [
        "Lists an endpoint's deliveries, newest first (GET /webhooks/{id}/deliveries): the delivery, the",
        'event, its type and state, how many attempts, the last answer (status or error, and duration), and',
        'when the next attempt is due. --json has every attempt.',
      ],
      [TOKEN_NOTE],
    ],
    arguments: [['ID', 'the endpoint id']],
    options: {
      limit: { type: 'string', arg: 'N', describe: 'how many (1 to 500, default 50)' },
      before: {
        type: 'string',
        arg: 'DELIVERY',
        describe: 'only deliveries older than this one (the next page)',
      },
    },
    kind: 'read',
    positionals: { min: 1, max: 1 },
    examples: [
      'node-daemon webhooks deliveries 1',
      'node-daemon webhooks deliveries 1 --json | jq ".deliveries[0].attempts"',
    ],
    async run(ctx) {
      const id = endpointId(ctx.command, ctx.args[0]!);
      const query = new URLSearchParams();
      const limit = str(ctx, 'limit');
      const before = str(ctx, 'before');
      if (limit !== undefined) query.set('limit', String(smallId(ctx.command, limit, '--limit')));
      if (before !== undefined) query.set('before', String(smallId(ctx.command, before, '--before')));
      const q = query.toString();
      await show(ctx, await read(ctx, { id }, q === '' ? '' : `?${q}`), deliveriesText);
    },
  },
  {
    name: 'webhooks retry',
    route: 'POST /webhooks/{id}/deliveries/{delivery}/retry',
    synopsis: 'ID DELIVERY',
    summary: 'replay a failed delivery now, with its webhook-id',
    description: [
      [
        'Replays a delivery that failed (or was delivered) now, its back-off started over, with the same',
        'webhook-id (POST /webhooks/{id}/deliveries/{delivery_id}/retry).',
      ],
      [TOKEN_NOTE],
    ],
    arguments: [
      ['ID', 'the endpoint id'],
      ['DELIVERY', 'the delivery id (`node-daemon webhooks deliveries ID`)'],
    ],
    kind: 'control',
    positionals: { min: 2, max: 2 },
    examples: ['node-daemon webhooks retry 1 42'],
    async run(ctx) {
      const id = endpointId(ctx.command, ctx.args[0]!);
      const delivery = smallId(ctx.command, ctx.args[1]!, 'DELIVERY');
      await show(ctx, await plainWrite(ctx, undefined, { params: { id, delivery } }), deliveryText);
    },
  },
];
