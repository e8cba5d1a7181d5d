import { randomUUID } from 'node:crypto';
import { CliError } from '../internal/exit-codes.ts';
import { parseJson } from '../internal/json.ts';
import {
  fillFraction,
  hash32,
  objectId,
  priceArg,
  smallEnum,
  smallId,
  stackIds,
  type U64,
  u64,
  usageError,
} from './args.ts';
import { type Daemon, DaemonProblem, type Reply } from './connection.ts';
import { ClientExitCode } from './exit-codes.ts';
import {
  amount,
  bytesHex,
  type Column,
  digits,
  duration,
  fractionPercent,
  keyValues,
  percent,
  plural,
  price,
  shortId,
  sui,
  table,
  yesNo,
} from './format.ts';

/** One option of a command, as node:util parseArgs takes it, with its help line. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** The value's placeholder in the help, e.g. F for --min-fill F. */
  arg?: string;
  describe: string;
}

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

/** What a command runs with: its parsed arguments, the daemon, and the output streams. */
export interface Context {
  /** The command's full name, e.g. `stacks` or `dev stack buy`. */
  command: string;
  values: OptionValues;
  args: string[];
  json: boolean;
  /** --timeout in milliseconds, when given. */
  timeoutMs: number | undefined;
  daemon(): Daemon;
  out(text: string): Promise<void>;
  err(text: string): Promise<void>;
}

/** Which shared options a command takes besides the connection and output ones. */
export type Kind = 'read' | 'chain-write' | 'usage-write' | 'dev';

export interface CommandSpec {
  /** The full command name: `stacks`, `dev stack buy`. */
  name: string;
  /** The synopsis after the name, e.g. `[node] [--min-fill F]`. */
  synopsis: string;
  summary: string;
  /** Paragraphs of the help, each a list of lines. */
  description: string[][];
  arguments?: [string, string][];
  options?: Record<string, OptionSpec>;
  kind: Kind;
  positionals: { min: number; max: number };
  examples: string[];
  run(ctx: Context): Promise<void>;
}

export const READ_TIMEOUT_MS = 10_000;
export const WRITE_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------------------------------------------
// Shared option groups

export const CONNECTION_OPTIONS: Record<string, OptionSpec> = {
  json: { type: 'boolean', describe: "print the daemon's JSON answer as is (exact digits), one document" },
  url: {
    type: 'string',
    arg: 'URL',
    describe: 'the daemon to talk to (env NODE_DAEMON_URL); default: from its settings',
  },
  token: {
    type: 'string',
    arg: 'TOKEN',
    describe: 'API token (env NODE_DAEMON_TOKEN); default: the file <data dir>/api-token, if any',
  },
  host: {
    type: 'string',
    arg: 'HOST',
    describe: "the daemon's --host setting (env NODE_DAEMON_HOST), default 127.0.0.1",
  },
  port: {
    type: 'string',
    arg: 'PORT',
    describe: "the daemon's --port setting (env NODE_DAEMON_PORT), default 3001",
  },
  'data-dir': {
    type: 'string',
    arg: 'DIR',
    describe: "the daemon's data dir, where its api-token is (env NODE_DAEMON_DATA_DIR)",
  },
  config: { type: 'string', arg: 'FILE', describe: "the daemon's JSON config file (env NODE_DAEMON_CONFIG)" },
  timeout: {
    type: 'string',
    arg: 'SECONDS',
    describe: 'give up waiting for the daemon after this long (default 10 for reads, 30 for writes)',
  },
  help: { type: 'boolean', short: 'h', describe: 'this help' },
};

const IDEMPOTENCY_OPTION: Record<string, OptionSpec> = {
  'idempotency-key': {
    type: 'string',
    arg: 'KEY',
    describe: 'makes a retry safe; default: a fresh key, named when the outcome is unknown',
  },
};

const GAS_OPTIONS: Record<string, OptionSpec> = {
  'gas-budget': {
    type: 'string',
    arg: 'MIST',
    describe: 'gas budget of the transaction; default: the daemon chooses',
  },
  'gas-price': { type: 'string', arg: 'MIST', describe: 'gas price; default: the reference price' },
  gas: { type: 'string', arg: 'COIN', describe: 'the gas coin object id to pay with' },
};

const BADGE_OPTION: Record<string, OptionSpec> = {
  badge: {
    type: 'string',
    arg: 'BADGE_ID',
    describe: "act for this NodeBadge (0x...); default: the signer's badge with the lowest node id",
  },
};

export function sharedOptions(kind: Kind): Record<string, OptionSpec> {
  switch (kind) {
    case 'chain-write':
      return { ...IDEMPOTENCY_OPTION, ...GAS_OPTIONS };
    case 'usage-write':
      return IDEMPOTENCY_OPTION;
    default:
      return {};
  }
}

// ---------------------------------------------------------------------------------------------------
// Talking to the daemon

type Json = Record<string, unknown>;

function str(ctx: Context, name: string): string | undefined {
  const value = ctx.values[name];
  return typeof value === 'string' ? value : undefined;
}

function list(ctx: Context, name: string): string[] {
  const value = ctx.values[name];
  return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
}

async function read(ctx: Context, path: string): Promise<Reply> {
  return ctx.daemon().request('GET', path, { timeoutMs: ctx.timeoutMs ?? READ_TIMEOUT_MS });
}

/** A write of the operator's node: with an Idempotency-Key (the given one or a fresh one) and gas options. */
async function write(
  ctx: Context,
  method: 'POST' | 'DELETE',
  path: string,
  body: Json,
  stacks = 1,
): Promise<Reply> {
  const given = str(ctx, 'idempotency-key');
  if (given !== undefined && !/^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/.test(given)) {
    throw usageError(ctx.command, '--idempotency-key must be 1 to 255 printable ASCII characters');
  }
  const key = given ?? `node-daemon-cli-${randomUUID()}`;
  const gas: Json = {};
  const budget = str(ctx, 'gas-budget');
  const gasPrice = str(ctx, 'gas-price');
  const coin = str(ctx, 'gas');
  if (budget !== undefined) gas.gas_budget = u64(ctx.command, budget, '--gas-budget');
  if (gasPrice !== undefined) gas.gas_price = u64(ctx.command, gasPrice, '--gas-price');
  if (coin !== undefined) gas.gas = objectId(ctx.command, coin, '--gas');
  const reply = await ctx.daemon().request(method, path, {
    body: { ...body, ...gas },
    idempotencyKey: key,
    // One transaction per stack: allow a second for each beyond the first.
    timeoutMs: ctx.timeoutMs ?? WRITE_TIMEOUT_MS + (stacks - 1) * 1000,
  });
  if (!ctx.json && reply.headers.get('idempotent-replayed') === 'true') {
    await ctx.err(`the first result for Idempotency-Key ${key}; nothing was submitted again`);
  }
  return reply;
}

async function devWrite(ctx: Context, path: string, body?: Json): Promise<Reply> {
  return ctx.daemon().request('POST', path, {
    ...(body === undefined ? {} : { body }),
    timeoutMs: ctx.timeoutMs ?? WRITE_TIMEOUT_MS,
  });
}

/** Prints the answer: the daemon's JSON as is with --json, else what `render` makes of it. */
async function show(ctx: Context, reply: Reply, render: (body: never) => string): Promise<void> {
  await ctx.out(ctx.json ? reply.text.trim() : render(reply.body as never));
}

function badgeBody(ctx: Context): Json {
  const badge = str(ctx, 'badge');
  return badge === undefined ? {} : { node_badge_id: objectId(ctx.command, badge, '--badge') };
}

/** The node named on the command line, else the operator's own: the first badge of GET /nodes/badges. */
async function nodeArg(ctx: Context, raw: string | undefined): Promise<string> {
  if (raw !== undefined) return String(smallId(ctx.command, raw, 'node'));
  let reply: Reply;
  try {
    reply = await read(ctx, '/nodes/badges');
  } catch (error) {
    if (error instanceof DaemonProblem) {
      const exit = error.status >= 500 ? ClientExitCode.unavailable : ClientExitCode.refused;
      throw new CliError(
        `cannot find the operator's node: ${oneLine(error.message)}; name the node instead: node-daemon ${ctx.command} NODE`,
        exit,
      );
    }
    throw error;
  }
  const badges = ((reply.body as Json).badges ?? []) as Json[];
  if (badges.length === 0) {
    throw new CliError(
      'the signer owns no NodeBadge; run `node-daemon register` first',
      ClientExitCode.refused,
    );
  }
  return digits(badges[0]!.node_small_id);
}

export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

function empty(what: string): string {
  return `(no ${what})`;
}

// ---------------------------------------------------------------------------------------------------
// Rendering

interface GasUsed {
  computation_cost?: unknown;
  storage_cost?: unknown;
  storage_rebate?: unknown;
}

function gasLine(gas: GasUsed | undefined): string | undefined {
  if (!gas) return undefined;
  const n = (v: unknown) => (typeof v === 'number' || typeof v === 'bigint' ? BigInt(v) : 0n);
  const net = n(gas.computation_cost) + n(gas.storage_cost) - n(gas.storage_rebate);
  return `${net} MIST (computation ${digits(gas.computation_cost)}, storage ${digits(gas.storage_cost)}, rebate ${digits(gas.storage_rebate)})`;
}

/** A one-line outcome, then the transaction's digest(s), gas and whether reads reflect it yet. */
function txResult(headline: string, body: Json, extra: [string, string][] = []): string {
  const entries: [string, string][] = [...extra];
  if (typeof body.tx_digest === 'string') entries.push(['transaction', body.tx_digest]);
  else if (Array.isArray(body.tx_digests) && body.tx_digests.length > 0) {
    entries.push([body.tx_digests.length === 1 ? 'transaction' : 'transactions', body.tx_digests.join(', ')]);
  }
  const gas = gasLine(body.gas_used as GasUsed | undefined);
  if (gas !== undefined) entries.push(['gas', gas]);
  if (body.indexed === false) entries.push(['indexed', 'not yet: reads may not show it for a few seconds']);
  return entries.length === 0 ? headline : `${headline}\n${keyValues(entries)}`;
}

const ROLES: Record<string, number> = { chat: 0, embeddings: 1, image: 2 };
const SECURITY: Record<string, number> = {
  none: 0,
  confidential: 1,
  'confidential-compute': 1,
  sampling: 2,
  'sampling-consensus': 2,
};

function roleName(role: unknown): string {
  const name = Object.entries(ROLES).find(([, v]) => v === role)?.[0];
  return name === undefined ? digits(role) : `${name} (${digits(role)})`;
}

function securityName(level: unknown): string {
  const names = ['none', 'confidential', 'sampling'];
  return typeof level === 'number' && names[level] !== undefined
    ? `${names[level]} (${level})`
    : digits(level);
}

function taskState(task: Json): string {
  if (task.is_removed) return `removed (epoch ${digits(task.removed_at_epoch)})`;
  if (task.is_deprecated) return `deprecated (epoch ${digits(task.deprecated_at_epoch)})`;
  return task.valid_until_epoch === null || task.valid_until_epoch === undefined
    ? 'active'
    : `active until epoch ${digits(task.valid_until_epoch)}`;
}

function stackState(stack: Json): string {
  if (stack.is_claimed) return 'claimed';
  if (stack.is_locked_for_claim) return 'locked';
  if (stack.in_settle_period) return 'settling';
  return 'open';
}

/** requested_attestation_nodes and already_attested_nodes are JSON text ("[3, 5]") on the wire. */
function nodeList(value: unknown): string {
  let items: unknown = value;
  if (typeof value === 'string') {
    try {
      items = parseJson(value);
    } catch {
      return value;
    }
  }
  return Array.isArray(items) ? (items.length === 0 ? '-' : items.map(digits).join(', ')) : digits(value);
}

const right = 'right' as const;

interface StackResult {
  stack_small_id: unknown;
  status: 'success' | 'failed' | 'skipped';
  tx_digest?: string;
  num_claimed_compute_units?: unknown;
  error?: { code: string; detail: string; abort?: { name: string; code: unknown; module: string } };
}

function resultDetail(result: StackResult): string {
  const error = result.error;
  if (!error) return '';
  if (error.abort)
    return `${error.abort.name} (abort code ${digits(error.abort.code)} in ${error.abort.module})`;
  return `${error.code}: ${oneLine(error.detail)}`;
}

function resultsTable(results: StackResult[], done: string, units: boolean): string {
  const columns: Column<StackResult>[] = [
    { header: 'STACK', align: right, value: (r) => digits(r.stack_small_id) },
    { header: 'RESULT', value: (r) => (r.status === 'success' ? done : r.status) },
  ];
  if (units) {
    columns.push({
      header: 'CLAIMED UNITS',
      align: right,
      value: (r) => (r.num_claimed_compute_units === undefined ? '' : digits(r.num_claimed_compute_units)),
    });
  }
  columns.push(
    { header: 'TRANSACTION', value: (r) => (r.tx_digest === undefined ? '' : shortId(r.tx_digest)) },
    { header: 'DETAIL', value: resultDetail },
  );
  return table(results, columns);
}

/**
 * A multi-stack write: the progress line, the request, then one line per stack. When the daemon refuses
 * or a transaction fails, the per-stack lines it sent are printed before the error.
 */
async function multiStack(
  ctx: Context,
  verb: string,
  path: string,
  body: Json,
  render: (body: Json) => string | undefined,
): Promise<void> {
  const ids = body.stack_small_ids as number[];
  if (!ctx.json) await ctx.err(`${verb} ${plural(ids.length, 'stack')}…`);
  let reply: Reply;
  try {
    reply = await write(ctx, 'POST', path, body, ids.length);
  } catch (error) {
    if (error instanceof DaemonProblem && !ctx.json && error.problem) {
      const text = render(error.problem);
      if (text !== undefined) await ctx.out(text);
    }
    throw error;
  }
  await show(ctx, reply, (b: Json) => render(b) ?? '');
}

// ---------------------------------------------------------------------------------------------------
// The commands

const NODE_ARG: [string, string] = [
  'node',
  "a node small id; default: the operator's own node (the first badge of `node-daemon badges`)",
];

const READS: CommandSpec[] = [
  {
    name: 'tasks',
    synopsis: '',
    summary: 'every task of the network, deprecated and removed ones included',
    description: [
      [
        'Lists the tasks the daemon has indexed (GET /tasks): the task small id to subscribe to, its',
        'model, role, security level (none, confidential compute, sampling consensus), the minimum',
        'reputation it asks of nodes, and whether it is active.',
      ],
    ],
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon tasks', "node-daemon tasks --json | jq '.[] | select(.is_deprecated | not)'"],
    async run(ctx) {
      const reply = await read(ctx, '/tasks');
      await show(ctx, reply, (tasks: Json[]) =>
        tasks.length === 0
          ? empty('tasks yet')
          : table(tasks, [
              { header: 'TASK', align: right, value: (t) => digits(t.task_small_id) },
              { header: 'MODEL', value: (t) => (t.model_name === null ? '-' : String(t.model_name)) },
              { header: 'ROLE', value: (t) => roleName(t.role) },
              { header: 'SECURITY', value: (t) => securityName(t.security_level) },
              { header: 'MIN REPUTATION', align: right, value: (t) => digits(t.minimum_reputation_score) },
              { header: 'STATE', value: taskState },
              { header: 'TASK ID', value: (t) => shortId(t.task_id) },
            ]),
      );
    },
  },
  {
    name: 'subscriptions',
    synopsis: '[node]',
    summary: "a node's task subscriptions and prices",
    description: [
      [
        "Lists the node's task subscriptions (GET /subscriptions/nodes/{node}): the task, the price per",
        'one million compute units (in USDC, 6 decimals; the raw integer is in --json), the most compute',
        'units a stack may hold, and whether the subscription is valid.',
      ],
    ],
    arguments: [NODE_ARG],
    kind: 'read',
    positionals: { min: 0, max: 1 },
    examples: ['node-daemon subscriptions', 'node-daemon subscriptions 7 --json'],
    async run(ctx) {
      const node = await nodeArg(ctx, ctx.args[0]);
      const reply = await read(ctx, `/subscriptions/nodes/${node}`);
      await show(ctx, reply, (subs: Json[]) =>
        subs.length === 0
          ? empty(`subscriptions for node ${node}`)
          : table(subs, [
              { header: 'NODE', align: right, value: (s) => digits(s.node_small_id) },
              { header: 'TASK', align: right, value: (s) => digits(s.task_small_id) },
              { header: 'PRICE', align: right, value: (s) => price(s.price_per_one_million_compute_units) },
              { header: 'MAX UNITS', align: right, value: (s) => digits(s.max_num_compute_units) },
              { header: 'VALID', value: (s) => yesNo(s.valid) },
            ]),
      );
    },
  },
  {
    name: 'stacks',
    synopsis: '[node] [--min-fill F]',
    summary: 'stacks assigned to a node, with their fill and state',
    description: [
      [
        'Lists the stacks assigned to the node (GET /stacks/nodes/{node}): compute units used of the',
        "stack's total and the fill as a percentage, messages served, the buyer's price (USDC per",
        'million units), and the state: open, settling (try-settled, in its dispute period), locked or',
        'claimed; CC marks confidential-compute stacks.',
      ],
    ],
    arguments: [NODE_ARG],
    options: {
      'min-fill': {
        type: 'string',
        arg: 'F',
        describe: 'only stacks used to at least this fraction: 0 to 1 (0.9) or a percentage (90%)',
      },
    },
    kind: 'read',
    positionals: { min: 0, max: 1 },
    examples: [
      'node-daemon stacks',
      'node-daemon stacks --min-fill 90%',
      'node-daemon stacks 7 --min-fill 0.5 --json',
    ],
    async run(ctx) {
      const fill = str(ctx, 'min-fill');
      const query = fill === undefined ? '' : `?min_fill_fraction=${fillFraction(ctx.command, fill)}`;
      const node = await nodeArg(ctx, ctx.args[0]);
      const reply = await read(ctx, `/stacks/nodes/${node}${query}`);
      await show(ctx, reply, (stacks: Json[]) =>
        stacks.length === 0
          ? empty(`stacks for node ${node}${fill === undefined ? '' : ` filled to at least ${fill}`}`)
          : table(stacks, [
              { header: 'STACK', align: right, value: (s) => digits(s.stack_small_id) },
              { header: 'TASK', align: right, value: (s) => digits(s.task_small_id) },
              { header: 'USED', align: right, value: (s) => digits(s.already_computed_units) },
              { header: 'UNITS', align: right, value: (s) => digits(s.num_compute_units) },
              {
                header: 'FILL',
                align: right,
                value: (s) => percent(s.already_computed_units, s.num_compute_units),
              },
              { header: 'MESSAGES', align: right, value: (s) => digits(s.num_total_messages) },
              { header: 'PRICE', align: right, value: (s) => price(s.price_per_one_million_compute_units) },
              { header: 'STATE', value: stackState },
              { header: 'CC', value: (s) => (s.is_confidential ? 'yes' : '') },
              { header: 'REFUND', align: right, value: (s) => amount(s.user_refund_amount) },
              { header: 'STACK ID', value: (s) => shortId(s.stack_id) },
              { header: 'OWNER', value: (s) => shortId(s.owner_address) },
            ]),
      );
    },
  },
  {
    name: 'claimed-stacks',
    synopsis: '[node]',
    summary: 'stacks a node has claimed, with the units and the user refunds',
    description: [
      [
        'Lists the stacks the node claimed (GET /claimed-stacks/nodes/{node}): the compute units it was',
        "paid for, the user's refund (USDC), the claim path (settlement ticket or confidential compute),",
        'the nodes asked to attest and those that did, and whether it was disputed.',
      ],
    ],
    arguments: [NODE_ARG],
    kind: 'read',
    positionals: { min: 0, max: 1 },
    examples: ['node-daemon claimed-stacks', 'node-daemon claimed-stacks 7 --json'],
    async run(ctx) {
      const node = await nodeArg(ctx, ctx.args[0]);
      const reply = await read(ctx, `/claimed-stacks/nodes/${node}`);
      await show(ctx, reply, (stacks: Json[]) =>
        stacks.length === 0
          ? empty(`claimed stacks for node ${node}`)
          : table(stacks, [
              { header: 'STACK', align: right, value: (s) => digits(s.stack_small_id) },
              { header: 'NODE', align: right, value: (s) => digits(s.selected_node_id) },
              { header: 'CLAIMED UNITS', align: right, value: (s) => digits(s.num_claimed_compute_units) },
              { header: 'REFUND', align: right, value: (s) => amount(s.user_refund_amount) },
              {
                header: 'PATH',
                value: (s) =>
                  s.claim_path === 'settlement_ticket'
                    ? 'ticket'
                    : s.claim_path === 'confidential_compute'
                      ? 'confidential'
                      : digits(s.claim_path),
              },
              { header: 'ATTESTERS', value: (s) => nodeList(s.requested_attestation_nodes) },
              { header: 'ATTESTED', value: (s) => nodeList(s.already_attested_nodes) },
              { header: 'DISPUTED', value: (s) => yesNo(s.is_in_dispute) },
              { header: 'CLAIMED', value: (s) => yesNo(s.is_claimed) },
            ]),
      );
    },
  },
  {
    name: 'disputes',
    synopsis: 'against|own [node]',
    summary: "attestation disputes against a node's settlements, or raised by it",
    description: [
      [
        '`disputes against` lists the disputes raised against the node as the original (settling) node',
        '(GET /attestation_disputes/against/nodes/{node}); `disputes own` those it raised as an attester',
        '(GET /attestation_disputes/own/nodes/{node}). Commitments are 32-byte hashes, shortened in the',
        'table and complete in --json.',
      ],
    ],
    arguments: [['against|own', 'which side of the disputes'], NODE_ARG],
    kind: 'read',
    positionals: { min: 1, max: 2 },
    examples: ['node-daemon disputes against', 'node-daemon disputes own 7 --json'],
    async run(ctx) {
      const side = ctx.args[0]!;
      if (side !== 'against' && side !== 'own') {
        throw usageError(
          ctx.command,
          `the first argument must be "against" or "own"; got ${JSON.stringify(side)}`,
        );
      }
      const node = await nodeArg(ctx, ctx.args[1]);
      const reply = await read(ctx, `/attestation_disputes/${side}/nodes/${node}`);
      await show(ctx, reply, (disputes: Json[]) =>
        disputes.length === 0
          ? empty(`disputes ${side === 'own' ? 'raised by' : 'against'} node ${node}`)
          : table(disputes, [
              { header: 'STACK', align: right, value: (d) => digits(d.stack_small_id) },
              { header: 'ORIGINAL NODE', align: right, value: (d) => digits(d.original_node_id) },
              { header: 'ATTESTER', align: right, value: (d) => digits(d.attestation_node_id) },
              { header: 'ORIGINAL COMMITMENT', value: (d) => bytesHex(d.original_commitment) },
              { header: 'ATTESTER COMMITMENT', value: (d) => bytesHex(d.attestation_commitment) },
            ]),
      );
    },
  },
  {
    name: 'badges',
    synopsis: '',
    summary: "the signer's address and its NodeBadges",
    description: [
      [
        "Shows the daemon signer's address and the NodeBadges it owns (GET /nodes/badges). The first",
        "badge's node is the default [node] of the other commands.",
      ],
    ],
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon badges', "node-daemon badges --json | jq '.badges[0].node_small_id'"],
    async run(ctx) {
      const reply = await read(ctx, '/nodes/badges');
      await show(ctx, reply, (body: Json) => {
        const badges = (body.badges ?? []) as Json[];
        const head = keyValues([['signer', String(body.signer_address)]]);
        return badges.length === 0
          ? `${head}\n(no NodeBadge: run \`node-daemon register\`)`
          : `${head}\n${table(badges, [
              { header: 'NODE', align: right, value: (b) => digits(b.node_small_id) },
              { header: 'BADGE ID', value: (b) => shortId(b.badge_id) },
            ])}`;
      });
    },
  },
  {
    name: 'status',
    synopsis: '',
    summary: "the daemon's version, network, signer, store, indexer and balance",
    description: [
      [
        'Shows what GET /status reports, one "key: value" line each: the version, the network, the',
        "signer's address and badges, the store engine, the indexer's cursor and lag, the last error, the",
        'uptime and the balance. A daemon older than this command has no /status: it says so.',
      ],
    ],
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon status', 'node-daemon status --json'],
    async run(ctx) {
      let reply: Reply;
      try {
        reply = await read(ctx, '/status');
      } catch (error) {
        if (error instanceof DaemonProblem && error.status === 404) {
          if (ctx.json) await ctx.out(error.text.trim());
          const { url } = ctx.daemon().connection;
          throw new CliError(
            `the daemon at ${url} has no GET /status: it is older than this command; upgrade it, or use \`node-daemon badges\` and its /health`,
            ClientExitCode.refused,
          );
        }
        throw error;
      }
      await show(ctx, reply, (body: unknown) => keyValues(statusEntries(body)));
    },
  },
];

/** Flattens the status document into "key: value" lines: nested keys dotted, lists joined. */
export function statusEntries(value: unknown, prefix = ''): [string, string][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return [[prefix || 'status', statusValue(prefix, value)]];
  }
  const entries: [string, string][] = [];
  for (const [key, v] of Object.entries(value)) {
    const name = prefix === '' ? key : `${prefix}.${key}`;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) entries.push(...statusEntries(v, name));
    else entries.push([name, statusValue(name, v)]);
  }
  return entries;
}

function statusValue(key: string, value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (Array.isArray(value)) {
    if (value.length === 0) return 'none';
    return value
      .map((item) => {
        if (item === null || typeof item !== 'object') return statusValue(key, item);
        const o = item as Json;
        if ('node_small_id' in o && 'badge_id' in o)
          return `node ${digits(o.node_small_id)} (badge ${o.badge_id})`;
        return Object.entries(o)
          .map(([k, v]) => `${k}=${statusValue(k, v)}`)
          .join(' ');
      })
      .join(', ');
  }
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'number' && /uptime/.test(key)) {
    return value >= 60 ? `${value} s (${duration(value)})` : `${value} s`;
  }
  const currency = /(?:^|\.)balances?\.(usdc|sui)$/i.exec(key)?.[1]?.toLowerCase();
  if (currency === 'usdc' && (typeof value === 'number' || typeof value === 'bigint')) return amount(value);
  if (currency === 'sui' && (typeof value === 'number' || typeof value === 'bigint')) return sui(value);
  if (typeof value === 'string') return oneLine(value);
  return String(value);
}

const WRITES: CommandSpec[] = [
  {
    name: 'register',
    synopsis: '',
    summary: 'register a new node: mints a NodeBadge to the signer',
    description: [
      [
        'Registers a node on the network (POST /nodes/register): the signer receives a NodeBadge, and',
        'the new node small id becomes the default [node] of the other commands if it is the first.',
      ],
    ],
    kind: 'chain-write',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon register', 'node-daemon register --json'],
    async run(ctx) {
      const reply = await write(ctx, 'POST', '/nodes/register', {});
      await show(ctx, reply, (b: Json) =>
        txResult(`registered node ${digits(b.node_small_id)}`, b, [['badge', digits(b.badge_id)]]),
      );
    },
  },
  {
    name: 'subscribe-model',
    synopsis: 'MODEL ECHELON',
    summary: 'subscribe the node to a model in an echelon',
    description: [
      [
        'Subscribes the node to a model in a hardware echelon (POST /nodes/model-subscribe). An unknown',
        "model or echelon is the contract's abort (exit 4 with the abort's name).",
      ],
    ],
    arguments: [
      ['MODEL', 'the model name, e.g. meta-llama/Llama-3.3-70B-Instruct'],
      ['ECHELON', 'the echelon id (an integer)'],
    ],
    options: BADGE_OPTION,
    kind: 'chain-write',
    positionals: { min: 2, max: 2 },
    examples: [
      'node-daemon subscribe-model meta-llama/Llama-3.3-70B-Instruct 1',
      'node-daemon subscribe-model Qwen/QwQ-32B 1 --json',
    ],
    async run(ctx) {
      const [model, echelon] = ctx.args as [string, string];
      if (model.trim() === '') throw usageError(ctx.command, 'MODEL must not be empty');
      const body = { model_name: model, echelon_id: u64(ctx.command, echelon, 'ECHELON'), ...badgeBody(ctx) };
      const reply = await write(ctx, 'POST', '/nodes/model-subscribe', body);
      await show(ctx, reply, (b: Json) => txResult(`subscribed to model ${model} in echelon ${echelon}`, b));
    },
  },
  {
    name: 'subscribe',
    synopsis: 'TASK --price P',
    summary: 'subscribe the node to a task at a price',
    description: [
      [
        'Subscribes the node to a task (POST /nodes/task-subscribe) at an asking price per one million',
        'compute units. The task must be active and the node must meet its minimum reputation.',
      ],
    ],
    arguments: [['TASK', 'the task small id (see `node-daemon tasks`)']],
    options: {
      price: {
        type: 'string',
        arg: 'P',
        describe: 'price per one million compute units: USDC smallest units (1000000) or 1usdc; required',
      },
      ...BADGE_OPTION,
    },
    kind: 'chain-write',
    positionals: { min: 1, max: 1 },
    examples: ['node-daemon subscribe 1 --price 1000000', 'node-daemon subscribe 3 --price 1.2usdc --json'],
    run: (ctx) =>
      subscription(ctx, '/nodes/task-subscribe', (task, p) => `subscribed to task ${task} at ${p}`),
  },
  {
    name: 'update-subscription',
    synopsis: 'TASK --price P',
    summary: "change the node's price for a task",
    description: [
      ["Changes the node's asking price for a task it subscribes to (POST /nodes/task-update-subscription)."],
    ],
    arguments: [['TASK', 'the task small id']],
    options: {
      price: {
        type: 'string',
        arg: 'P',
        describe: 'the new price per one million compute units (1000000 or 1usdc); required',
      },
      ...BADGE_OPTION,
    },
    kind: 'chain-write',
    positionals: { min: 1, max: 1 },
    examples: [
      'node-daemon update-subscription 1 --price 900000',
      'node-daemon update-subscription 1 --price 0.9usdc',
    ],
    run: (ctx) =>
      subscription(
        ctx,
        '/nodes/task-update-subscription',
        (task, p) => `changed the price for task ${task} to ${p}`,
      ),
  },
  {
    name: 'unsubscribe',
    synopsis: 'TASK',
    summary: 'unsubscribe the node from a task',
    description: [
      [
        'Unsubscribes the node from a task (DELETE /nodes/task-unsubscribe). The contract forbids',
        'leaving a deprecated task.',
      ],
    ],
    arguments: [['TASK', 'the task small id']],
    options: BADGE_OPTION,
    kind: 'chain-write',
    positionals: { min: 1, max: 1 },
    examples: ['node-daemon unsubscribe 1', 'node-daemon unsubscribe 1 --json'],
    async run(ctx) {
      const task = smallId(ctx.command, ctx.args[0]!, 'TASK');
      const reply = await write(ctx, 'DELETE', '/nodes/task-unsubscribe', {
        task_small_id: task,
        ...badgeBody(ctx),
      });
      await show(ctx, reply, (b: Json) => txResult(`unsubscribed from task ${task}`, b));
    },
  },
  {
    name: 'settle',
    synopsis: 'STACK... [--claimed U | --claimed STACK=U ...]',
    summary: 'try-settle stacks, one transaction each, claiming their recorded usage',
    description: [
      [
        'Try-settles each stack (POST /nodes/try-settle-stacks): one transaction per stack, claiming the',
        'usage the daemon recorded for it unless --claimed says otherwise. Prints one line per stack:',
        'settled with its transaction, failed with the abort, or skipped with the reason. A settled stack',
        'can be claimed once its dispute period (one epoch) is over.',
      ],
    ],
    arguments: [['STACK...', 'stack small ids (separate arguments or comma-separated)']],
    options: {
      claimed: {
        type: 'string',
        multiple: true,
        arg: 'U',
        describe: 'claim U units on every stack, or STACK=U for one stack',
      },
      ...BADGE_OPTION,
    },
    kind: 'chain-write',
    positionals: { min: 1, max: Number.POSITIVE_INFINITY },
    examples: [
      'node-daemon settle 10 11 12',
      'node-daemon settle 10,11 --claimed 11=500',
      "node-daemon settle $(node-daemon stacks --min-fill 90% --json | jq -r '.[].stack_small_id')",
    ],
    async run(ctx) {
      const ids = stackIds(ctx.command, ctx.args);
      const body: Json = { stack_small_ids: ids, ...badgeBody(ctx) };
      const byStack: Record<string, U64> = {};
      for (const claim of list(ctx, 'claimed')) {
        const one = /^([^=:]+)[=:](.+)$/.exec(claim);
        if (one) {
          const stack = smallId(ctx.command, one[1]!, '--claimed STACK');
          if (!ids.includes(stack)) {
            throw usageError(
              ctx.command,
              `--claimed ${claim} names stack ${stack}, which is not among the stacks to settle`,
            );
          }
          byStack[String(stack)] = u64(ctx.command, one[2]!, '--claimed units');
        } else {
          if (body.num_claimed_compute_units !== undefined) {
            throw usageError(ctx.command, '--claimed U (for every stack) is given twice');
          }
          body.num_claimed_compute_units = u64(ctx.command, claim, '--claimed');
        }
      }
      if (Object.keys(byStack).length > 0) body.num_claimed_compute_units_by_stack = byStack;
      await multiStack(ctx, 'settling', '/nodes/try-settle-stacks', body, (b) =>
        Array.isArray(b.results) ? resultsTable(b.results as StackResult[], 'settled', true) : undefined,
      );
    },
  },
  {
    name: 'attest',
    synopsis: 'STACK... [--node N]',
    summary: 'attest the stacks this node was asked to attest',
    description: [
      [
        'Submits the settlement attestations of the listed stacks (POST /nodes/submit-attestations), one',
        'transaction per stack. Prints one line per stack: attested with its transaction, failed with the',
        'abort, or skipped with the reason (not settled, not asked, already attested, no record).',
      ],
    ],
    arguments: [['STACK...', 'stack small ids (separate arguments or comma-separated)']],
    options: {
      node: {
        type: 'string',
        arg: 'N',
        describe: "attest as this node (one of the signer's); default: whichever was asked",
      },
    },
    kind: 'chain-write',
    positionals: { min: 1, max: Number.POSITIVE_INFINITY },
    examples: ['node-daemon attest 14', 'node-daemon attest 14 15 --node 4 --json'],
    async run(ctx) {
      const ids = stackIds(ctx.command, ctx.args);
      const node = str(ctx, 'node');
      const body: Json = {
        stack_small_ids: ids,
        ...(node === undefined ? {} : { node_small_id: smallId(ctx.command, node, '--node') }),
      };
      await multiStack(ctx, 'attesting', '/nodes/submit-attestations', body, (b) =>
        Array.isArray(b.results) ? resultsTable(b.results as StackResult[], 'attested', false) : undefined,
      );
    },
  },
  {
    name: 'claim',
    synopsis: 'STACK...',
    summary: 'claim the funds of settled stacks',
    description: [
      [
        'Claims the funds of the listed stacks (POST /nodes/claim-funds): settled stacks out of their',
        'dispute period, and confidential-compute stacks directly. Prints one line per stack: claimed,',
        'or not claimable with the reason and the epoch from which it will be. When none can be claimed',
        'nothing is submitted and the command exits 4.',
      ],
    ],
    arguments: [['STACK...', 'stack small ids (separate arguments or comma-separated)']],
    options: BADGE_OPTION,
    kind: 'chain-write',
    positionals: { min: 1, max: Number.POSITIVE_INFINITY },
    examples: ['node-daemon claim 10 11', 'node-daemon claim 10 --idempotency-key claim-10 --json'],
    async run(ctx) {
      const ids = stackIds(ctx.command, ctx.args);
      await multiStack(
        ctx,
        'claiming',
        '/nodes/claim-funds',
        { stack_small_ids: ids, ...badgeBody(ctx) },
        (b) => claimTable(ids, b),
      );
    },
  },
  {
    name: 'usage',
    synopsis: 'STACK UNITS [--request-hash H]',
    summary: "report compute units the node's inference server served on a stack",
    description: [
      [
        'Records work served on a stack (POST /stacks/{stack}/usage; off-chain, no transaction): the',
        "stack's used units grow by UNITS, within its capacity. Settling later claims the recorded total.",
      ],
    ],
    arguments: [
      ['STACK', 'the stack small id'],
      ['UNITS', 'compute units served'],
    ],
    options: {
      'request-hash': {
        type: 'string',
        arg: 'H',
        describe: "the request's 32-byte hash in hex; default: derived from the stack, units and message",
      },
    },
    kind: 'usage-write',
    positionals: { min: 2, max: 2 },
    examples: [
      'node-daemon usage 10 950',
      `node-daemon usage 10 50 --request-hash 0x${'ab'.repeat(32)} --json`,
    ],
    async run(ctx) {
      const stack = smallId(ctx.command, ctx.args[0]!, 'STACK');
      const body: Json = { compute_units: u64(ctx.command, ctx.args[1]!, 'UNITS') };
      const hash = str(ctx, 'request-hash');
      if (hash !== undefined) body.request_hash = hash32(ctx.command, hash, '--request-hash');
      const reply = await write(ctx, 'POST', `/stacks/${stack}/usage`, body);
      await show(
        ctx,
        reply,
        (b: Json) =>
          `stack ${digits(b.stack_small_id)}: ${digits(b.already_computed_units)} of ${digits(b.num_compute_units)} compute units used (${fractionPercent(b.fill_fraction)}), ${plural(Number(b.num_total_messages), 'message')}`,
      );
    },
  },
];

async function subscription(
  ctx: Context,
  path: string,
  headline: (task: number, price: string) => string,
): Promise<void> {
  const task = smallId(ctx.command, ctx.args[0]!, 'TASK');
  const raw = str(ctx, 'price');
  if (raw === undefined) throw usageError(ctx.command, '--price P is required');
  const p = priceArg(ctx.command, raw);
  const body = { task_small_id: task, price_per_one_million_compute_units: p, ...badgeBody(ctx) };
  const reply = await write(ctx, 'POST', path, body);
  await show(ctx, reply, (b: Json) => txResult(headline(task, price(p)), b));
}

interface ClaimLine {
  stack_small_id: unknown;
  result: string;
  from: string;
  detail: string;
}

function claimTable(ids: number[], body: Json): string | undefined {
  const claimed = (Array.isArray(body.claimed) ? body.claimed : []) as Json[];
  const notClaimable = (Array.isArray(body.not_claimable) ? body.not_claimable : []) as Json[];
  if (claimed.length === 0 && notClaimable.length === 0) return undefined;
  const lines: ClaimLine[] = [
    ...claimed.map((c) => ({
      stack_small_id: c.stack_small_id,
      result: 'claimed',
      from: '',
      detail: `${c.path === 'confidential_compute' ? 'confidential compute' : 'settlement ticket'}${
        c.num_claimed_compute_units === undefined ? '' : `, ${digits(c.num_claimed_compute_units)} units`
      }`,
    })),
    ...notClaimable.map((n) => ({
      stack_small_id: n.stack_small_id,
      result: `not claimable (${String(n.reason)})`,
      from: n.claimable_from_epoch === undefined ? '' : `epoch ${digits(n.claimable_from_epoch)}`,
      detail: oneLine(String(n.detail ?? '')),
    })),
  ];
  const order = (id: unknown) => ids.indexOf(Number(id));
  lines.sort((a, b) => order(a.stack_small_id) - order(b.stack_small_id));
  const text = table(lines, [
    { header: 'STACK', align: right, value: (l) => digits(l.stack_small_id) },
    { header: 'RESULT', value: (l) => l.result },
    { header: 'CLAIMABLE FROM', value: (l) => l.from },
    { header: 'DETAIL', value: (l) => l.detail },
  ]);
  return claimed.length === 0 ? text : txResult(text, { tx_digests: body.tx_digests, indexed: body.indexed });
}

// ---------------------------------------------------------------------------------------------------
// The dev network's actors

const DEV_NOTE = 'Only on a daemon running the embedded dev network (--network dev, the default).';

const DEV: CommandSpec[] = [
  {
    name: 'dev task create',
    synopsis: '--role R --security-level L [--model M] [--min-reputation N] [--private]',
    summary: 'the admin creates a task',
    description: [['The dev network admin creates a task (POST /dev/tasks).', DEV_NOTE]],
    options: {
      role: {
        type: 'string',
        arg: 'R',
        describe: 'the task role: 0 to 7, or chat (0), embeddings (1), image (2); required',
      },
      'security-level': {
        type: 'string',
        arg: 'L',
        describe: 'none (0), confidential (1) or sampling (2, sampling consensus); required',
      },
      model: { type: 'string', arg: 'M', describe: 'the model name' },
      'min-reputation': {
        type: 'string',
        arg: 'N',
        describe: 'minimum reputation score of subscribers (0 to 255)',
      },
      private: { type: 'boolean', describe: 'a private task (is_public false)' },
    },
    kind: 'dev',
    positionals: { min: 0, max: 0 },
    examples: [
      'node-daemon dev task create --role chat --security-level none --model meta-llama/Llama-3.3-70B-Instruct',
      'node-daemon dev task create --role 0 --security-level 2 --min-reputation 10 --json',
    ],
    async run(ctx) {
      const role = str(ctx, 'role');
      const level = str(ctx, 'security-level');
      if (role === undefined) throw usageError(ctx.command, '--role R is required');
      if (level === undefined) throw usageError(ctx.command, '--security-level L is required');
      const body: Json = {
        role: smallEnum(ctx.command, role, '--role', ROLES, 65535),
        security_level: smallEnum(ctx.command, level, '--security-level', SECURITY, 65535),
      };
      const model = str(ctx, 'model');
      if (model !== undefined) body.model_name = model;
      const rep = str(ctx, 'min-reputation');
      if (rep !== undefined)
        body.minimum_reputation_score = smallEnum(ctx.command, rep, '--min-reputation', {}, 255);
      if (ctx.values.private === true) body.is_public = false;
      const reply = await devWrite(ctx, '/dev/tasks', body);
      await show(ctx, reply, (b: Json) => txResult(`created task ${digits(b.task_small_id)}`, b));
    },
  },
  {
    name: 'dev task deprecate',
    synopsis: 'TASK',
    summary: "the task's badge holder deprecates it",
    description: [['Deprecates a task (POST /dev/tasks/{task}/deprecate).', DEV_NOTE]],
    arguments: [['TASK', 'the task small id']],
    kind: 'dev',
    positionals: { min: 1, max: 1 },
    examples: ['node-daemon dev task deprecate 4'],
    async run(ctx) {
      const task = smallId(ctx.command, ctx.args[0]!, 'TASK');
      const reply = await devWrite(ctx, `/dev/tasks/${task}/deprecate`);
      await show(ctx, reply, (b: Json) => txResult(`deprecated task ${task}`, b));
    },
  },
  {
    name: 'dev task remove',
    synopsis: 'TASK',
    summary: "the task's badge holder removes it (one epoch after deprecation)",
    description: [['Removes a deprecated task (POST /dev/tasks/{task}/remove).', DEV_NOTE]],
    arguments: [['TASK', 'the task small id']],
    kind: 'dev',
    positionals: { min: 1, max: 1 },
    examples: ['node-daemon dev task remove 4'],
    async run(ctx) {
      const task = smallId(ctx.command, ctx.args[0]!, 'TASK');
      const reply = await devWrite(ctx, `/dev/tasks/${task}/remove`);
      await show(ctx, reply, (b: Json) => txResult(`removed task ${task}`, b));
    },
  },
  {
    name: 'dev node create',
    synopsis: '[--subscribe TASK:PRICE ...]',
    summary: 'a simulated peer node registers and subscribes to tasks',
    description: [['A peer node registers and subscribes to the given tasks (POST /dev/nodes).', DEV_NOTE]],
    options: {
      subscribe: {
        type: 'string',
        multiple: true,
        arg: 'TASK:PRICE',
        describe: 'subscribe to TASK at PRICE per million units (1000000 or 1usdc)',
      },
    },
    kind: 'dev',
    positionals: { min: 0, max: 0 },
    examples: [
      'node-daemon dev node create',
      'node-daemon dev node create --subscribe 1:1000000 --subscribe 2:1.5usdc',
    ],
    async run(ctx) {
      const subscriptions = list(ctx, 'subscribe').map((s) => {
        const m = /^([^:=]+)[:=](.+)$/.exec(s);
        if (!m) throw usageError(ctx.command, `--subscribe must be TASK:PRICE; got ${JSON.stringify(s)}`);
        return {
          task_small_id: smallId(ctx.command, m[1]!, '--subscribe TASK'),
          price_per_one_million_compute_units: priceArg(ctx.command, m[2]!, '--subscribe PRICE'),
        };
      });
      const reply = await devWrite(ctx, '/dev/nodes', subscriptions.length === 0 ? {} : { subscriptions });
      await show(ctx, reply, (b: Json) =>
        txResult(
          `created peer node ${digits(b.node_small_id)}${subscriptions.length === 0 ? '' : `, subscribed to ${plural(subscriptions.length, 'task')}`}`,
          b,
        ),
      );
    },
  },
  {
    name: 'dev stack buy',
    synopsis: '--task T --units U --price P [--node N]',
    summary: 'a user buys a stack',
    description: [
      [
        'A user buys a stack of a task (POST /dev/stacks); the node is drawn among the eligible',
        'subscribers, or forced with --node (it must be eligible).',
        DEV_NOTE,
      ],
    ],
    options: {
      task: { type: 'string', arg: 'T', describe: 'the task small id; required' },
      units: { type: 'string', arg: 'U', describe: 'compute units of the stack; required' },
      price: {
        type: 'string',
        arg: 'P',
        describe: "the buyer's price cap per million units (1000000 or 1usdc); required",
      },
      node: {
        type: 'string',
        arg: 'N',
        describe: 'sell from this node (it must be subscribed at or below the price)',
      },
    },
    kind: 'dev',
    positionals: { min: 0, max: 0 },
    examples: [
      'node-daemon dev stack buy --task 1 --units 1000 --price 2000000',
      'node-daemon dev stack buy --task 1 --units 1000 --price 2usdc --node 4 --json',
    ],
    async run(ctx) {
      const task = str(ctx, 'task');
      const units = str(ctx, 'units');
      const p = str(ctx, 'price');
      if (task === undefined) throw usageError(ctx.command, '--task T is required');
      if (units === undefined) throw usageError(ctx.command, '--units U is required');
      if (p === undefined) throw usageError(ctx.command, '--price P is required');
      const body: Json = {
        task_small_id: smallId(ctx.command, task, '--task'),
        num_compute_units: u64(ctx.command, units, '--units'),
        price_per_one_million_compute_units: priceArg(ctx.command, p),
      };
      const node = str(ctx, 'node');
      if (node !== undefined) body.selected_node_id = smallId(ctx.command, node, '--node');
      const reply = await devWrite(ctx, '/dev/stacks', body);
      await show(ctx, reply, (b: Json) =>
        txResult(`bought stack ${digits(b.stack_small_id)} from node ${digits(b.selected_node_id)}`, b),
      );
    },
  },
  {
    name: 'dev stack settle',
    synopsis: 'STACK [--claimed U]',
    summary: "the stack's peer node try-settles it",
    description: [
      [
        'The peer node of the stack try-settles it (POST /dev/stacks/{stack}/try-settle), claiming all its',
        "units unless --claimed says otherwise. When the operator's node is asked to attest, its inference",
        'server is taken to have re-run the requests, so `node-daemon attest STACK` can attest.',
        DEV_NOTE,
      ],
    ],
    arguments: [['STACK', 'the stack small id (a stack of a peer node)']],
    options: {
      claimed: { type: 'string', arg: 'U', describe: 'claimed compute units; default: all of them' },
    },
    kind: 'dev',
    positionals: { min: 1, max: 1 },
    examples: ['node-daemon dev stack settle 13', 'node-daemon dev stack settle 13 --claimed 500 --json'],
    async run(ctx) {
      const stack = smallId(ctx.command, ctx.args[0]!, 'STACK');
      const claimed = str(ctx, 'claimed');
      const body =
        claimed === undefined ? {} : { num_claimed_compute_units: u64(ctx.command, claimed, '--claimed') };
      const reply = await devWrite(ctx, `/dev/stacks/${stack}/try-settle`, body);
      await show(ctx, reply, (b: Json) =>
        txResult(`the peer node settled stack ${stack}`, b, [
          ['attesters', nodeList(b.requested_attestation_nodes)],
        ]),
      );
    },
  },
  {
    name: 'dev stack attest',
    synopsis: 'STACK --node N',
    summary: "a peer asked to attest the operator's stack attests it",
    description: [
      [
        "A peer node asked to attest the operator's stack attests it, honestly (POST",
        '/dev/stacks/{stack}/attest).',
        DEV_NOTE,
      ],
    ],
    arguments: [['STACK', 'the stack small id']],
    options: { node: { type: 'string', arg: 'N', describe: 'the attesting peer node; required' } },
    kind: 'dev',
    positionals: { min: 1, max: 1 },
    examples: ['node-daemon dev stack attest 10 --node 1'],
    async run(ctx) {
      const stack = smallId(ctx.command, ctx.args[0]!, 'STACK');
      const node = str(ctx, 'node');
      if (node === undefined) throw usageError(ctx.command, '--node N is required');
      const id = smallId(ctx.command, node, '--node');
      const reply = await devWrite(ctx, `/dev/stacks/${stack}/attest`, { node_small_id: id });
      await show(ctx, reply, (b: Json) => txResult(`node ${id} attested stack ${stack}`, b));
    },
  },
  {
    name: 'dev dispute',
    synopsis: 'STACK --node N',
    summary: "a peer disputes a stack's settlement",
    description: [["A peer node disputes the stack's settlement (POST /dev/disputes).", DEV_NOTE]],
    arguments: [['STACK', 'the stack small id']],
    options: { node: { type: 'string', arg: 'N', describe: 'the disputing peer node; required' } },
    kind: 'dev',
    positionals: { min: 1, max: 1 },
    examples: ['node-daemon dev dispute 11 --node 1', 'node-daemon dev dispute 11 --node 1 --json'],
    async run(ctx) {
      const stack = smallId(ctx.command, ctx.args[0]!, 'STACK');
      const node = str(ctx, 'node');
      if (node === undefined) throw usageError(ctx.command, '--node N is required');
      const id = smallId(ctx.command, node, '--node');
      const reply = await devWrite(ctx, '/dev/disputes', { stack_small_id: stack, node_small_id: id });
      await show(ctx, reply, (b: Json) => txResult(`node ${id} disputed stack ${stack}`, b));
    },
  },
  {
    name: 'dev epoch',
    synopsis: '',
    summary: 'the dev network moves to the next epoch',
    description: [['Advances the dev network by one epoch (POST /dev/epoch).', DEV_NOTE]],
    kind: 'dev',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon dev epoch', 'node-daemon dev epoch --json'],
    async run(ctx) {
      const reply = await devWrite(ctx, '/dev/epoch');
      await show(ctx, reply, (b: Json) => `epoch ${digits(b.epoch)}`);
    },
  },
];

export const COMMANDS: readonly CommandSpec[] = [...READS, ...WRITES, ...DEV];
export const GROUPS = { reads: READS, writes: WRITES, dev: DEV } as const;
