import { CliError } from '../../internal/exit-codes.ts';
import { fillFraction, smallId, usageError } from '../args.ts';
import { DaemonProblem, type Reply } from '../connection.ts';
import { ClientExitCode } from '../exit-codes.ts';
import {
  amount,
  bytesHex,
  type Column,
  digits,
  duration,
  epochText,
  keyValues,
  oneLine,
  percent,
  price,
  shortId,
  sui,
  table,
  when,
  yesNo,
} from '../format.ts';
import { claimPath, nodeList, roleName, securityName } from '../render.ts';
import type { Earnings, Json, Status } from '../replies.ts';
import { READ_TIMEOUT_MS, read, show, str } from '../request.ts';
import type { CommandSpec, Context } from '../spec.ts';
import { didYouMean } from '../suggest.ts';

/** The read commands: tasks, subscriptions, stacks, claimed stacks, disputes, badges, status. */

/**
 * The node named on the command line, else the operator's own: the first of the configured node ids
 * (--node-small-ids, or node_small_ids of atoma-node's config.toml), else the signer's first badge, as
 * GET /nodes/badges tells them. When the chain cannot be asked for the badges, the configured ids still
 * name the node (GET /status tells them without the chain); a daemon older than the configured ids
 * tells none, and its first badge is the node.
 */
async function nodeArg(ctx: Context, raw: string | undefined): Promise<string> {
  if (raw !== undefined) return String(smallId(ctx.command, raw, 'node'));
  const timeoutMs = ctx.timeoutMs ?? READ_TIMEOUT_MS;
  let reply: Reply;
  try {
    reply = await ctx.daemon().request('GET', '/nodes/badges', { timeoutMs });
  } catch (error) {
    if (error instanceof DaemonProblem) {
      const configured =
        error.problem.code === 'chain_unavailable'
          ? await ctx
              .daemon()
              .request('GET', '/status', { timeoutMs })
              .then((status) => configuredNodes(status.body))
              .catch(() => undefined)
          : undefined;
      if (configured !== undefined) return configured;
      const exit = error.status >= 500 ? ClientExitCode.unavailable : ClientExitCode.refused;
      throw new CliError(
        `cannot find the operator's node: ${ctx.cliWords(error.message)}; name the node instead: node-daemon ${ctx.command} NODE`,
        exit,
      );
    }
    throw error;
  }
  const configured = configuredNodes(reply.body);
  if (configured !== undefined) return configured;
  const badges = ((reply.body as Json).badges ?? []) as Json[];
  if (badges.length === 0) {
    throw new CliError(
      'the signer owns no NodeBadge; run `node-daemon register` first',
      ClientExitCode.refused,
    );
  }
  return digits(badges[0]!.node_small_id);
}

/** The first configured node id of a /nodes/badges or /status answer, if the daemon has any. */
function configuredNodes(body: unknown): string | undefined {
  const ids = (body as Json | null)?.node_small_ids;
  return Array.isArray(ids) && ids.length > 0 ? digits(ids[0]) : undefined;
}

/**
 * Prints a list: a row per item, or `(no ...)` when there is none; with --json the answer as sent. An
 * empty list about a node named on the command line (`named`) is first checked: a node the daemon does
 * not know is an error (exit 4), not an empty list.
 */
async function showRows(
  ctx: Context,
  reply: Reply,
  none: string,
  columns: Column<Json>[],
  named?: string,
): Promise<void> {
  if (!Array.isArray(reply.body)) throw ctx.daemon().notNodeDaemon(reply.request, 'JSON that is not a list');
  if (reply.body.length === 0 && named !== undefined) await knownNode(ctx, named, reply);
  await show(ctx, reply, (rows: Json[]) => (rows.length === 0 ? `(no ${none})` : table(rows, columns)));
}

/**
 * Prints a list about a node: the one named on the command line (`named`), else the operator's own. `none`
 * says what the rows are, for the empty list (`claimed stacks for node 7`); `side` fills the route's {side}.
 */
async function showNodeRows(
  ctx: Context,
  named: string | undefined,
  none: (node: string) => string,
  columns: Column<Json>[],
  { side, query }: { side?: string; query?: string } = {},
): Promise<void> {
  const node = await nodeArg(ctx, named);
  const reply = await read(ctx, side === undefined ? { node } : { side, node }, query);
  await showRows(ctx, reply, none(node), columns, named === undefined ? undefined : node);
}

/**
 * Whether the daemon knows the node an empty answer is about (GET /network/nodes/{node}): the lists answer
 * [] for any id, so `stacks 999` would otherwise say only that node 999 has no stacks. With --json the
 * answer is still printed as sent. A daemon without that route, or any trouble asking, leaves the answer
 * as it is.
 */
async function knownNode(ctx: Context, node: string, reply: Reply): Promise<void> {
  try {
    await ctx.daemon().request('GET', `/network/nodes/${node}`, {
      timeoutMs: ctx.timeoutMs ?? READ_TIMEOUT_MS,
    });
  } catch (error) {
    if (error instanceof DaemonProblem && error.problem.code === 'node_not_found') {
      if (ctx.json) await ctx.out(reply.text.trim());
      throw new CliError(
        `${ctx.cliWords(error.problem.detail)}; the signer's own nodes are in \`node-daemon badges\``,
        ClientExitCode.refused,
      );
    }
    if (error instanceof DaemonProblem || error instanceof CliError) return;
    throw error;
  }
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

const NODE_ARG: [string, string] = [
  'node',
  "a node small id; default: the operator's own node (the first configured node id, else the first badge, of `node-daemon badges`)",
];

export const READS: CommandSpec[] = [
  {
    name: 'tasks',
    route: 'GET /tasks',
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
      const reply = await read(ctx);
      await showRows(ctx, reply, 'tasks yet', [
        { header: 'TASK', align: 'right', value: (t) => digits(t.task_small_id) },
        { header: 'MODEL', value: (t) => (t.model_name === null ? '-' : String(t.model_name)) },
        { header: 'ROLE', value: (t) => roleName(t.role) },
        { header: 'SECURITY', value: (t) => securityName(t.security_level) },
        { header: 'MIN REPUTATION', align: 'right', value: (t) => digits(t.minimum_reputation_score) },
        { header: 'STATE', value: taskState },
        { header: 'TASK ID', value: (t) => shortId(t.task_id) },
      ]);
    },
  },
  {
    name: 'subscriptions',
    route: 'GET /subscriptions/nodes/{node}',
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
      await showNodeRows(ctx, ctx.args[0], (node) => `subscriptions for node ${node}`, [
        { header: 'NODE', align: 'right', value: (s) => digits(s.node_small_id) },
        { header: 'TASK', align: 'right', value: (s) => digits(s.task_small_id) },
        { header: 'PRICE', align: 'right', value: (s) => price(s.price_per_one_million_compute_units) },
        { header: 'MAX UNITS', align: 'right', value: (s) => digits(s.max_num_compute_units) },
        { header: 'VALID', value: (s) => yesNo(s.valid) },
      ]);
    },
  },
  {
    name: 'stacks',
    route: 'GET /stacks/nodes/{node}',
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
      await showNodeRows(
        ctx,
        ctx.args[0],
        (node) => `stacks for node ${node}${fill === undefined ? '' : ` filled to at least ${fill}`}`,
        [
          { header: 'STACK', align: 'right', value: (s) => digits(s.stack_small_id) },
          { header: 'TASK', align: 'right', value: (s) => digits(s.task_small_id) },
          { header: 'USED', align: 'right', value: (s) => digits(s.already_computed_units) },
          { header: 'UNITS', align: 'right', value: (s) => digits(s.num_compute_units) },
          {
            header: 'FILL',
            align: 'right',
            value: (s) => percent(s.already_computed_units, s.num_compute_units),
          },
          { header: 'MESSAGES', align: 'right', value: (s) => digits(s.num_total_messages) },
          { header: 'PRICE', align: 'right', value: (s) => price(s.price_per_one_million_compute_units) },
          { header: 'STATE', value: stackState },
          { header: 'CC', value: (s) => (s.is_confidential ? 'yes' : '') },
          { header: 'REFUND', align: 'right', value: (s) => amount(s.user_refund_amount) },
          { header: 'STACK ID', value: (s) => shortId(s.stack_id) },
          { header: 'OWNER', value: (s) => shortId(s.owner_address) },
        ],
        { query },
      );
    },
  },
  {
    name: 'claimed-stacks',
    route: 'GET /claimed-stacks/nodes/{node}',
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
      await showNodeRows(ctx, ctx.args[0], (node) => `claimed stacks for node ${node}`, [
        { header: 'STACK', align: 'right', value: (s) => digits(s.stack_small_id) },
        { header: 'NODE', align: 'right', value: (s) => digits(s.selected_node_id) },
        { header: 'CLAIMED UNITS', align: 'right', value: (s) => digits(s.num_claimed_compute_units) },
        { header: 'REFUND', align: 'right', value: (s) => amount(s.user_refund_amount) },
        { header: 'PATH', value: (s) => claimPath(s.claim_path) },
        { header: 'ATTESTERS', value: (s) => nodeList(s.requested_attestation_nodes) },
        { header: 'ATTESTED', value: (s) => nodeList(s.already_attested_nodes) },
        { header: 'DISPUTED', value: (s) => yesNo(s.is_in_dispute) },
        { header: 'CLAIMED', value: (s) => yesNo(s.is_claimed) },
      ]);
    },
  },
  {
    name: 'earnings',
    route: 'GET /earnings/nodes/{node}',
    synopsis: '[node]',
    summary: 'what a node earned and can claim, in USDC, with its stacks by state',
    description: [
      [
        "Sums up the node's fees (GET /earnings/nodes/{node}) in USDC (6 decimals, exact; --json has the",
        'raw integers), with its stacks in each state: open (usage reported, not settled yet: its fee is',
        'unsettled), settling (settled, in the dispute period: claimable from the next epoch), claimable,',
        'claimed, and disputed (locked: the contract has no resolution). Then the rewards for attesting',
        "other nodes' stacks, the refunds its claims paid to the buyers, and the fees claimed in each epoch.",
      ],
      [
        "A fee is the contract's: floor(units x price / 1000000), 1.2x on sampling-consensus tasks. A stack",
        'whose price or task the daemon never saw (first seen mid-history) is counted as unpriced and left',
        'out of the amounts, never guessed.',
      ],
    ],
    arguments: [NODE_ARG],
    kind: 'read',
    positionals: { min: 0, max: 1 },
    examples: [
      'node-daemon earnings',
      'node-daemon earnings 7 --json',
      "node-daemon earnings --json | jq '.claimable'",
    ],
    async run(ctx) {
      const node = await nodeArg(ctx, ctx.args[0]);
      const reply = await read(ctx, { node });
      const earnings = reply.body as Earnings;
      const stacks = Object.values(earnings?.stacks ?? {}).reduce((n: number, v) => n + Number(v), 0);
      if (ctx.args[0] !== undefined && stacks === 0 && Number(earnings?.attester_rewards) === 0) {
        await knownNode(ctx, node, reply);
      }
      await show(ctx, reply, earningsText);
    },
  },
  {
    name: 'disputes',
    route: 'GET /attestation_disputes/{side}/nodes/{node}',
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
          `the first argument must be "against" or "own"; got ${JSON.stringify(side)}${didYouMean(side, ['against', 'own'])}`,
        );
      }
      await showNodeRows(
        ctx,
        ctx.args[1],
        (node) => `disputes ${side === 'own' ? 'raised by' : 'against'} node ${node}`,
        [
          { header: 'STACK', align: 'right', value: (d) => digits(d.stack_small_id) },
          { header: 'ORIGINAL NODE', align: 'right', value: (d) => digits(d.original_node_id) },
          { header: 'ATTESTER', align: 'right', value: (d) => digits(d.attestation_node_id) },
          { header: 'ORIGINAL COMMITMENT', value: (d) => bytesHex(d.original_commitment) },
          { header: 'ATTESTER COMMITMENT', value: (d) => bytesHex(d.attestation_commitment) },
        ],
        { side },
      );
    },
  },
  {
    name: 'badges',
    route: 'GET /nodes/badges',
    synopsis: '',
    summary: "the signer's address and its NodeBadges",
    description: [
      [
        "Shows the daemon signer's address and the NodeBadges it owns (GET /nodes/badges), and the",
        "operator's node ids as configured (--node-small-ids, or node_small_ids of atoma-node's config.toml).",
        "The first configured node, else the first badge's node, is the default [node] of the other commands.",
      ],
    ],
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon badges', "node-daemon badges --json | jq '.badges[0].node_small_id'"],
    async run(ctx) {
      const reply = await read(ctx);
      await show(ctx, reply, (body: Json) => {
        const badges = (body.badges ?? []) as Json[];
        const configured = Array.isArray(body.node_small_ids) ? (body.node_small_ids as unknown[]) : [];
        const head = keyValues([
          ['signer', String(body.signer_address)],
          ...(configured.length > 0
            ? [['configured nodes', configured.map(digits).join(', ')] as [string, string]]
            : []),
        ]);
        return badges.length === 0
          ? `${head}\n(no NodeBadge: run \`node-daemon register\`)`
          : `${head}\n${table(badges, [
              { header: 'NODE', align: 'right', value: (b) => digits(b.node_small_id) },
              { header: 'BADGE ID', value: (b) => shortId(b.badge_id) },
            ])}`;
      });
    },
  },
  {
    name: 'status',
    route: 'GET /status',
    synopsis: '',
    summary: "the daemon's version, network, signer, store, indexer and balance",
    description: [
      [
        'Shows what GET /status reports, one "key: value" line each: the version, the network, the',
        "signer's address and badges, the store engine, the indexer's cursor and lag, the last error, the",
        'uptime and the balance. A daemon older than this command has no /status: it says so, as it says',
        'when the server at the address does not look like node-daemon at all.',
      ],
    ],
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon status', 'node-daemon status --json'],
    async run(ctx) {
      let reply: Reply;
      try {
        reply = await read(ctx);
      } catch (error) {
        // node-daemon answers an unknown path with its not_found problem; another server at the
        // address does not answer with a node-daemon problem at all, and request() says so.
        if (error instanceof DaemonProblem && error.problem.code === 'not_found') {
          if (ctx.json) await ctx.out(error.text.trim());
          const daemon = ctx.daemon();
          const { url } = daemon.connection;
          const underPath = daemon.underPath();
          if (underPath !== undefined) {
            throw new CliError(
              `the daemon at ${url} has no GET /status: ${underPath}`,
              ClientExitCode.unavailable,
            );
          }
          throw new CliError(
            `the daemon at ${url} has no GET /status: it is older than this command; upgrade it, or use \`node-daemon badges\` and its /health`,
            ClientExitCode.refused,
          );
        }
        throw error;
      }
      const body = reply.body as Json | null;
      if (typeof body?.version !== 'string' || typeof body.network !== 'string') {
        throw ctx
          .daemon()
          .notNodeDaemon('GET /status', "JSON without the version and network of node-daemon's status");
      }
      await show(ctx, reply, (status: Json) => keyValues(statusEntries(status)));
    },
  },
];

/** A stack state of the earnings: its count, its fee field, and what it means for the operator. */
interface EarningState {
  state: keyof Earnings['stacks'];
  fee: 'unsettled' | 'settling' | 'claimable' | 'claimed' | 'disputed';
  meaning: string;
}

const EARNING_STATES: EarningState[] = [
  { state: 'open', fee: 'unsettled', meaning: 'usage reported, not settled yet' },
  { state: 'settling', fee: 'settling', meaning: 'settled, in the dispute period' },
  { state: 'claimable', fee: 'claimable', meaning: 'claim it with `node-daemon claim`' },
  { state: 'claimed', fee: 'claimed', meaning: 'received' },
  { state: 'disputed', fee: 'disputed', meaning: 'locked: the contract has no resolution' },
];

function earningsText(e: Earnings): string {
  const unpriced = EARNING_STATES.some((s) => e.unpriced[s.state] > 0);
  const columns: Column<EarningState>[] = [
    { header: 'STATE', value: (s) => s.state },
    { header: 'STACKS', align: 'right', value: (s) => digits(e.stacks[s.state]) },
  ];
  if (unpriced)
    columns.push({ header: 'UNPRICED', align: 'right', value: (s) => digits(e.unpriced[s.state]) });
  columns.push(
    { header: 'NODE FEES', align: 'right', value: (s) => amount(e[s.fee]) },
    { header: '', value: (s) => s.meaning },
  );
  const states = table(EARNING_STATES, columns);
  const byEpoch =
    e.by_epoch.length === 0
      ? '(no claims yet)'
      : table(e.by_epoch, [
          { header: 'CLAIMED IN EPOCH', align: 'right', value: (b) => digits(b.epoch) },
          { header: 'STACKS', align: 'right', value: (b) => digits(b.stacks_claimed) },
          { header: 'NODE FEES', align: 'right', value: (b) => amount(b.claimed) },
        ]);
  return [
    keyValues([
      ['node', digits(e.node_small_id)],
      ['epoch', epochText(e.epoch)],
    ]),
    states,
    ...(unpriced ? ['unpriced: stacks whose price the daemon never saw, left out of the fees'] : []),
    keyValues([
      ['attester rewards', amount(e.attester_rewards)],
      ['refunded to users', amount(e.refunded_to_users)],
    ]),
    byEpoch,
  ].join('\n\n');
}

/** Flattens the status document into "key: value" lines: nested keys dotted, lists joined. */
function statusEntries(value: unknown, prefix = ''): [string, string][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return [[prefix || 'status', statusValue(prefix, value)]];
  }
  const entries: [string, string][] = [];
  for (const [key, v] of Object.entries(value)) {
    const name = prefix === '' ? key : `${prefix}.${key}`;
    if (name === 'autopilot') {
      entries.push([name, autopilotSummary(v as Status['autopilot'])]);
      continue;
    }
    if (name === 'usage_source') {
      entries.push(['usage source', usageSourceSummary(v as Status['usage_source'])]);
      continue;
    }
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) entries.push(...statusEntries(v, name));
    else entries.push([name, statusValue(name, v)]);
  }
  return entries;
}

/** Where usage comes from, on one line: the source, its state, how far behind, what it follows. */
function usageSourceSummary(source: Status['usage_source']): string {
  if (source === null || source === undefined) return 'none (usage comes from POST /stacks/{id}/usage)';
  const polled =
    source.last_poll_at === null ? 'no poll answered yet' : `last poll ${when(source.last_poll_at)}`;
  const behind = source.behind_seconds === null ? '' : `, ${source.behind_seconds} s behind`;
  const locked =
    source.stacks_locked_by_node > 0
      ? ` (${source.stacks_locked_by_node} locked by atoma-node to claim)`
      : '';
  const state = source.state === 'lost' ? `lost: ${oneLine(source.error ?? 'unknown')}` : source.state;
  return `${source.kind} at ${source.location}: ${state}; ${polled}${behind}; ${source.stacks_followed} stacks followed${locked}`;
}

/** The autopilot of the status on one line: its mode, its last pass, and why it halted if it did. */
function autopilotSummary(autopilot: Status['autopilot']): string {
  if (autopilot === null) return 'none (the daemon has no chain network: it serves reads only)';
  const mode = autopilot.mode === 'dry-run' ? 'dry-run (plans only)' : autopilot.mode;
  const last = autopilot.last_pass_at === null ? 'no pass yet' : `last pass ${when(autopilot.last_pass_at)}`;
  const halted =
    autopilot.halted === null
      ? ''
      : `; halted: ${oneLine(autopilot.halted)} (\`node-daemon autopilot resume\` lets it act again)`;
  return `${mode}, ${last}${halted}`;
}

function statusValue(key: string, value: unknown): string {
  if (key === 'epoch') return epochText(value);
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
