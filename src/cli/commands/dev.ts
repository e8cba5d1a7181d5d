import { priceArg, smallEnum, smallId, u64, usageError } from '../args.ts';
import { digits, plural, sui } from '../format.ts';
import { nodeList, ROLES, SECURITY, txResult } from '../render.ts';
import type { Json } from '../replies.ts';
import { list, plainWrite, required, show, str } from '../request.ts';
import type { CommandSpec } from '../spec.ts';

/** The dev network's other actors: an admin creating tasks, peer nodes, users buying stacks, epochs. */

const DEV_NOTE = 'Only on a daemon running the embedded dev network (--network dev, the default).';

/** `dev task deprecate` and `dev task remove`: the two steps of a task's end, alike but for the verb. */
function taskStep(step: 'deprecate' | 'remove', summary: string, does: string, done: string): CommandSpec {
  return {
    name: `dev task ${step}`,
    route: `POST /dev/tasks/{task}/${step}`,
    synopsis: 'TASK',
    summary,
    description: [[`${does} (POST /dev/tasks/{task}/${step}).`, DEV_NOTE]],
    arguments: [['TASK', 'the task small id']],
    kind: 'dev',
    positionals: { min: 1, max: 1 },
    examples: [`node-daemon dev task ${step} 4`],
    async run(ctx) {
      const task = smallId(ctx.command, ctx.args[0]!, 'TASK');
      const reply = await plainWrite(ctx, undefined, { params: { task } });
      await show(ctx, reply, (b: Json) => txResult(`${done} task ${task}`, b));
    },
  };
}

export const DEV: CommandSpec[] = [
  {
    name: 'dev task create',
    route: 'POST /dev/tasks',
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
      const role = required(ctx, 'role', 'R');
      const level = required(ctx, 'security-level', 'L');
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
      const reply = await plainWrite(ctx, body);
      await show(ctx, reply, (b: Json) => txResult(`created task ${digits(b.task_small_id)}`, b));
    },
  },
  taskStep('deprecate', "the task's badge holder deprecates it", 'Deprecates a task', 'deprecated'),
  taskStep(
    'remove',
    "the task's badge holder removes it (one epoch after deprecation)",
    'Removes a deprecated task',
    'removed',
  ),
  {
    name: 'dev node create',
    route: 'POST /dev/nodes',
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
      const reply = await plainWrite(ctx, subscriptions.length === 0 ? {} : { subscriptions });
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
    route: 'POST /dev/stacks',
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
      const task = required(ctx, 'task', 'T');
      const units = required(ctx, 'units', 'U');
      const p = required(ctx, 'price', 'P');
      const body: Json = {
        task_small_id: smallId(ctx.command, task, '--task'),
        num_compute_units: u64(ctx.command, units, '--units'),
        price_per_one_million_compute_units: priceArg(ctx.command, p),
      };
      const node = str(ctx, 'node');
      if (node !== undefined) body.selected_node_id = smallId(ctx.command, node, '--node');
      const reply = await plainWrite(ctx, body);
      await show(ctx, reply, (b: Json) =>
        txResult(`bought stack ${digits(b.stack_small_id)} from node ${digits(b.selected_node_id)}`, b),
      );
    },
  },
  {
    name: 'dev stack settle',
    route: 'POST /dev/stacks/{stack}/try-settle',
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
      const reply = await plainWrite(ctx, body, { params: { stack } });
      await show(ctx, reply, (b: Json) =>
        txResult(`the peer node settled stack ${stack}`, b, [
          ['attesters', nodeList(b.requested_attestation_nodes)],
        ]),
      );
    },
  },
  {
    name: 'dev stack attest',
    route: 'POST /dev/stacks/{stack}/attest',
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
      const id = smallId(ctx.command, required(ctx, 'node', 'N'), '--node');
      const reply = await plainWrite(ctx, { node_small_id: id }, { params: { stack } });
      await show(ctx, reply, (b: Json) => txResult(`node ${id} attested stack ${stack}`, b));
    },
  },
  {
    name: 'dev dispute',
    route: 'POST /dev/disputes',
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
      const id = smallId(ctx.command, required(ctx, 'node', 'N'), '--node');
      const reply = await plainWrite(ctx, { stack_small_id: stack, node_small_id: id });
      await show(ctx, reply, (b: Json) => txResult(`node ${id} disputed stack ${stack}`, b));
    },
  },
  {
    name: 'dev epoch',
    route: 'POST /dev/epoch',
    synopsis: '',
    summary: 'the dev network moves to the next epoch',
    description: [['Advances the dev network by one epoch (POST /dev/epoch).', DEV_NOTE]],
    kind: 'dev',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon dev epoch', 'node-daemon dev epoch --json'],
    async run(ctx) {
      const reply = await plainWrite(ctx);
      await show(ctx, reply, (b: Json) => `epoch ${digits(b.epoch)}`);
    },
  },
  {
    name: 'dev gas',
    route: 'POST /dev/gas',
    synopsis: 'MIST',
    summary: "sets the signer's SUI for gas (a faucet, or a drain to try --gas-warning-mist)",
    description: [["Sets the signer's SUI for gas to MIST (1000000000 is 1 SUI) (POST /dev/gas).", DEV_NOTE]],
    arguments: [['MIST', "the signer's SUI from now on, in MIST"]],
    kind: 'dev',
    positionals: { min: 1, max: 1 },
    examples: ['node-daemon dev gas 10000000000'],
    async run(ctx) {
      const reply = await plainWrite(ctx, { balance_mist: u64(ctx.command, ctx.args[0]!, 'MIST') });
      await show(
        ctx,
        reply,
        (b: Json) => `the signer ${String(b.address)} has ${sui(b.balance_mist)} for gas`,
      );
    },
  },
];
