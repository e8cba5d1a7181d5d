import { CliError } from '../../internal/exit-codes.ts';
import type { U64 } from '../../internal/u64.ts';
import { hash32, objectId, priceArg, smallId, stackIds, u64, usageError } from '../args.ts';
import { DaemonProblem, type Reply } from '../connection.ts';
import { ClientExitCode } from '../exit-codes.ts';
import { amount, type Column, digits, fractionPercent, plural, price, shortId, table } from '../format.ts';
import { claimPath, txResult } from '../render.ts';
import type { ClaimResult, Json, NotClaimable, StackResult } from '../replies.ts';
import { list, READ_TIMEOUT_MS, required, show, str, write } from '../request.ts';
import { BADGE_OPTION, type CommandSpec, type Context } from '../spec.ts';

/** The write commands: register, subscriptions, settle, attest, claim (on chain) and usage (off chain). */

function badgeBody(ctx: Context): Json {
  const badge = str(ctx, 'badge');
  return badge === undefined ? {} : { node_badge_id: objectId(ctx.command, badge, '--badge') };
}

/** How a multi-stack write shows its stacks: its words for done and for skipped, and its own columns. */
interface StackLines {
  /** A stack done: settled, attested, claimed. */
  done: string;
  /** A stack left out, before its reason's code: `skipped (no_usage)`, `not claimable (dispute_period)`. */
  skipped: string;
  /** The columns between RESULT and DETAIL. */
  columns: Column<StackResult>[];
}

function resultWord(result: StackResult, lines: StackLines): string {
  if (result.status === 'success') return lines.done;
  const word = result.status === 'skipped' ? lines.skipped : 'failed';
  return result.error ? `${word} (${result.error.code})` : word;
}

function resultDetail(result: StackResult, words: (text: string) => string): string {
  const error = result.error;
  if (!error) return '';
  if (error.abort)
    return `${error.abort.name} (abort code ${digits(error.abort.code)} in ${error.abort.module})`;
  return words(error.detail);
}

/** A column that only a stack done fills. */
function whenDone(header: string, value: (r: StackResult) => string): Column<StackResult> {
  return { header, align: 'right', value: (r) => (r.status === 'success' ? value(r) : '') };
}

/**
 * One line per stack of a multi-stack write, in the order listed (the results of the reply, or of the
 * problem when the daemon refused them all), then the transactions; undefined when there are no results.
 */
function stackLines(
  ctx: Context,
  body: Json,
  lines: StackLines,
  extra: [string, string][] = [],
): string | undefined {
  if (!Array.isArray(body.results)) return undefined;
  const results = body.results as StackResult[];
  // A column no stack fills (the fees when none was claimed) is left out.
  const filled = lines.columns.filter((c) => results.some((r) => c.value(r) !== ''));
  const text = table(results, [
    { header: 'STACK', align: 'right', value: (r) => digits(r.stack_small_id) },
    { header: 'RESULT', value: (r) => resultWord(r, lines) },
    ...filled,
    { header: 'DETAIL', value: (r) => resultDetail(r, ctx.cliWords) },
  ]);
  return txResult(text, { tx_digests: body.tx_digests, indexed: body.indexed }, extra);
}

const TRANSACTION: Column<StackResult> = {
  header: 'TRANSACTION',
  value: (r) => (r.tx_digest === undefined ? '' : shortId(r.tx_digest)),
};

/** settle: the units each settled stack claims, and its transaction. */
const SETTLED: StackLines = {
  done: 'settled',
  skipped: 'skipped',
  columns: [
    {
      header: 'CLAIMED UNITS',
      align: 'right',
      value: (r) => (r.num_claimed_compute_units === undefined ? '' : digits(r.num_claimed_compute_units)),
    },
    TRANSACTION,
  ],
};

const ATTESTED: StackLines = { done: 'attested', skipped: 'skipped', columns: [TRANSACTION] };

/**
 * claim: each claimed stack's path, units, node fee and the buyer's refund; each stack not claimable now
 * the epoch from which it will be (in the dispute period); then the totals.
 */
function claimLines(ctx: Context, body: Json): string | undefined {
  const from = new Map(
    ((body.not_claimable ?? []) as NotClaimable[])
      .filter((n) => n.claimable_from_epoch !== undefined)
      .map((n) => [n.stack_small_id, `epoch ${digits(n.claimable_from_epoch)}`]),
  );
  const lines: StackLines = {
    done: 'claimed',
    skipped: 'not claimable',
    columns: [
      { ...whenDone('PATH', (r) => claimPath(r.path)), align: 'left' },
      whenDone('UNITS', (r) => digits(r.num_claimed_compute_units)),
      whenDone('NODE FEE', (r) => (r.node_fee_amount === null ? 'unknown' : amount(r.node_fee_amount))),
      whenDone('REFUND', (r) => amount(r.user_refund_amount)),
      { header: 'CLAIMABLE FROM', value: (r) => from.get(r.stack_small_id) ?? '' },
    ],
  };
  return stackLines(ctx, body, lines, claimTotal(body));
}

/** The total line of a claim: what the claimed stacks paid the node and refunded to their buyers. */
function claimTotal(body: Json): [string, string][] {
  const total = body.total as ClaimResult['total'] | undefined;
  if (total === undefined) return [];
  const claimed = Array.isArray(body.claimed) ? body.claimed.length : 0;
  const unpriced =
    total.unpriced_stacks > 0
      ? `; ${plural(total.unpriced_stacks, 'stack')} of unknown price left out of the fees`
      : '';
  return [
    [
      'total',
      `${plural(claimed, 'stack')} claimed: node fees ${amount(total.node_fee_amount)}, refunds ${amount(total.user_refund_amount)}${unpriced}`,
    ],
  ];
}

/**
 * A multi-stack write: the progress line, the request, then one line per stack. When the daemon refuses
 * or a transaction fails, the per-stack lines it sent are printed before the error.
 */
async function multiStack(
  ctx: Context,
  verb: string,
  body: Json,
  render: (body: Json) => string | undefined,
): Promise<void> {
  const ids = body.stack_small_ids as number[];
  if (!ctx.json) await ctx.err(`${verb} ${plural(ids.length, 'stack')}…`);
  let reply: Reply;
  try {
    reply = await write(ctx, body, { stacks: ids.length });
  } catch (error) {
    if (error instanceof DaemonProblem && !ctx.json) {
      const text = render(error.problem);
      if (text !== undefined) await ctx.out(text);
    }
    throw error;
  }
  await show(ctx, reply, (b: Json) => render(b) ?? '');
}

export const WRITES: CommandSpec[] = [
  {
    name: 'register',
    route: 'POST /nodes/register',
    synopsis: '',
    summary: 'register a new node: mints a NodeBadge to the signer',
    description: [
      [
        'Registers a node on the network (POST /nodes/register): the signer receives a NodeBadge, and',
        'the new node small id becomes the default [node] of the other commands if it is the first.',
      ],
      [
        'A signer that already holds a badge is refused (exit 4): a second node costs gas and is rarely',
        'meant; --another registers one all the same. The HTTP route itself registers without asking.',
      ],
    ],
    options: {
      another: { type: 'boolean', describe: 'register although the signer already holds a NodeBadge' },
    },
    kind: 'chain-write',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon register', 'node-daemon register --json', 'node-daemon register --another'],
    async run(ctx) {
      if (ctx.values.another !== true) {
        const held = await ctx
          .daemon()
          .request('GET', '/nodes/badges', { timeoutMs: ctx.timeoutMs ?? READ_TIMEOUT_MS });
        const badges = ((held.body as Json).badges ?? []) as Json[];
        if (badges.length > 0) {
          const nodes = badges.map((b) => digits(b.node_small_id)).join(', ');
          throw new CliError(
            `the signer already holds a NodeBadge (node ${nodes}); registering mints another node, which costs gas: run \`node-daemon register --another\` if that is what you want`,
            ClientExitCode.refused,
          );
        }
      }
      const reply = await write(ctx, {});
      await show(ctx, reply, (b: Json) =>
        txResult(`registered node ${digits(b.node_small_id)}`, b, [['badge', digits(b.badge_id)]]),
      );
    },
  },
  {
    name: 'subscribe-model',
    route: 'POST /nodes/model-subscribe',
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
      const reply = await write(ctx, body);
      await show(ctx, reply, (b: Json) => txResult(`subscribed to model ${model} in echelon ${echelon}`, b));
    },
  },
  {
    name: 'subscribe',
    route: 'POST /nodes/task-subscribe',
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
    run: (ctx) => subscription(ctx, (task, p) => `subscribed to task ${task} at ${p}`),
  },
  {
    name: 'update-subscription',
    route: 'POST /nodes/task-update-subscription',
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
    run: (ctx) => subscription(ctx, (task, p) => `changed the price for task ${task} to ${p}`),
  },
  {
    name: 'unsubscribe',
    route: 'DELETE /nodes/task-unsubscribe',
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
      const reply = await write(ctx, {
        task_small_id: task,
        ...badgeBody(ctx),
      });
      await show(ctx, reply, (b: Json) => txResult(`unsubscribed from task ${task}`, b));
    },
  },
  {
    name: 'settle',
    route: 'POST /nodes/try-settle-stacks',
    synopsis: 'STACK... [--claimed U | --claimed STACK=U ...]',
    summary: 'try-settle stacks, one transaction each, claiming their recorded usage',
    description: [
      [
        'Try-settles each stack (POST /nodes/try-settle-stacks): one transaction per stack, claiming the',
        'usage the daemon recorded for it unless --claimed says otherwise. Prints one line per stack: settled',
        'with the units it claims and its transaction, failed with the abort, or skipped with the reason',
        '(no_usage, already_settled, stack_not_ours, ...); then the transactions in full. A settled stack',
        'can be claimed once its dispute period (one epoch) is over. When no stack can be settled nothing',
        'is submitted: the lines still say why for each, and the command exits 4.',
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
    fields: { num_claimed_compute_units: 'claimed' },
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
      await multiStack(ctx, 'settling', body, (b) => stackLines(ctx, b, SETTLED));
    },
  },
  {
    name: 'attest',
    route: 'POST /nodes/submit-attestations',
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
      await multiStack(ctx, 'attesting', body, (b) => stackLines(ctx, b, ATTESTED));
    },
  },
  {
    name: 'claim',
    route: 'POST /nodes/claim-funds',
    synopsis: 'STACK...',
    summary: 'claim the funds of settled stacks',
    description: [
      [
        'Claims the funds of the listed stacks (POST /nodes/claim-funds): settled stacks out of their',
        'dispute period, and confidential-compute stacks directly. Prints one line per stack: claimed, with',
        "its path (ticket or confidential), units, the node's fee and the buyer's refund in USDC; or not",
        'claimable with the reason and, in the dispute period, the epoch from which it will be. Then the',
        'total (node fees, refunds, stacks of unknown price) and the transactions. When none can be claimed',
        'nothing is submitted and the command exits 4.',
      ],
      [
        "The node's fee is the contract's: floor(units x price / 1000000), 1.2x on sampling-consensus tasks;",
        "unknown when the daemon never saw the stack's price.",
      ],
    ],
    arguments: [['STACK...', 'stack small ids (separate arguments or comma-separated)']],
    options: BADGE_OPTION,
    kind: 'chain-write',
    positionals: { min: 1, max: Number.POSITIVE_INFINITY },
    examples: ['node-daemon claim 10 11', 'node-daemon claim 10 --idempotency-key claim-10 --json'],
    async run(ctx) {
      const ids = stackIds(ctx.command, ctx.args);
      await multiStack(ctx, 'claiming', { stack_small_ids: ids, ...badgeBody(ctx) }, (b) =>
        claimLines(ctx, b),
      );
    },
  },
  {
    name: 'usage',
    route: 'POST /stacks/{stack}/usage',
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
      const reply = await write(ctx, body, { params: { stack } });
      await show(
        ctx,
        reply,
        (b: Json) =>
          `stack ${digits(b.stack_small_id)}: ${digits(b.already_computed_units)} of ${digits(b.num_compute_units)} compute units used (${fractionPercent(b.fill_fraction)}), ${plural(Number(b.num_total_messages), 'message')}`,
      );
    },
  },
];

async function subscription(ctx: Context, headline: (task: number, price: string) => string): Promise<void> {
  const task = smallId(ctx.command, ctx.args[0]!, 'TASK');
  const p = priceArg(ctx.command, required(ctx, 'price', 'P'));
  const body = { task_small_id: task, price_per_one_million_compute_units: p, ...badgeBody(ctx) };
  const reply = await write(ctx, body);
  await show(ctx, reply, (b: Json) => txResult(headline(task, price(p)), b));
}
