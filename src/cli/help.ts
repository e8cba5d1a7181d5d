import { CONNECTION_OPTIONS, type CommandSpec, type OptionSpec, sharedOptions } from './spec.ts';

/** The help texts of the client commands: an overview, each group (`dev`, `dev task`), each command. */

/** The commands help is written from (assembled in index.ts): all of them, and the overview's groups. */
export interface CommandTable {
  commands: readonly CommandSpec[];
  groups: {
    reads: readonly CommandSpec[];
    writes: readonly CommandSpec[];
    autopilot: readonly CommandSpec[];
    live: readonly CommandSpec[];
    webhooks: readonly CommandSpec[];
    dev: readonly CommandSpec[];
    access: readonly CommandSpec[];
  };
}

const EXIT_CODES = [
  'Exit codes: 0 ok; 1 unexpected failure; 2 usage (bad arguments or settings); 4 refused by the daemon',
  '(a 4xx problem, including a contract abort); 5 the daemon unreachable, too slow or failing (5xx).',
];

function optionLines(options: Record<string, OptionSpec>): string[] {
  const rows = Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : ''}--${name}${o.arg ? ` ${o.arg}` : ''}`;
    return [flag, o.describe + (o.multiple ? ' (repeatable)' : '')] as const;
  });
  const width = Math.max(...rows.map(([flag]) => flag.length));
  return rows.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`);
}

function usageLine(spec: CommandSpec): string {
  return `node-daemon ${spec.name}${spec.synopsis === '' ? '' : ` ${spec.synopsis}`}`;
}

function commandHelp(spec: CommandSpec): string {
  const lines = [`Usage: ${usageLine(spec)} [options]`, '', `${capitalize(spec.summary)}.`];
  for (const paragraph of spec.description) lines.push('', ...paragraph);
  if (spec.arguments && spec.arguments.length > 0) {
    const width = Math.max(...spec.arguments.map(([name]) => name.length));
    lines.push('', 'Arguments:', ...spec.arguments.map(([name, text]) => `  ${name.padEnd(width)}  ${text}`));
  }
  const own = { ...spec.options, ...sharedOptions(spec.kind) };
  if (Object.keys(own).length > 0) lines.push('', 'Options:', ...optionLines(own));
  lines.push('', 'Connection and output:', ...optionLines(CONNECTION_OPTIONS));
  lines.push('', 'Examples:', ...spec.examples.map((e) => `  ${e}`));
  lines.push('', ...EXIT_CODES);
  return lines.join('\n');
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function commandList(specs: readonly CommandSpec[]): string[] {
  const width = 44;
  return specs.flatMap((spec) => {
    const left = usageLine(spec).replace(/^node-daemon /, '');
    return left.length <= width
      ? [`  ${left.padEnd(width)}  ${spec.summary}`]
      : [`  ${left}`, `  ${''.padEnd(width)}  ${spec.summary}`];
  });
}

/** What each group of subcommands is, for its help. */
const GROUP_TEXT: Record<string, string[]> = {
  dev: [
    "The embedded dev network's other actors: an admin creating tasks, peer nodes, users buying stacks,",
    'epochs. Only on a daemon running --network dev (the default); elsewhere the daemon answers 404.',
  ],
  token: [
    'Named API tokens with a scope (read, usage, write, admin), kept hashed by the daemon: admin requests,',
    'sent with an admin token (the file token by default). `node-daemon token rotate [--grace D | --now]`',
    "replaces the data directory's file token (a daemon command, see node-daemon --help).",
  ],
};

function groupHelp(prefix: string, specs: readonly CommandSpec[]): string {
  return [
    `Usage: node-daemon ${prefix} COMMAND [arguments] [options]`,
    '',
    ...(GROUP_TEXT[prefix.split(' ')[0]!] ?? GROUP_TEXT.dev!),
    '',
    'Commands:',
    ...commandList(specs),
    '',
    'Examples:',
    ...specs.map((s) => `  ${s.examples[0]}`),
    '',
    `See \`node-daemon ${prefix} COMMAND --help\` for each; the connection options of \`node-daemon --help\` apply.`,
    ...EXIT_CODES,
  ].join('\n');
}

function overview(groups: CommandTable['groups']): string {
  const sections: [string, readonly CommandSpec[]][] = [
    ['Reads:', groups.reads],
    ["Writes (transactions signed with the daemon's key; usage is off-chain):", groups.writes],
    [
      "The autopilot (settles, attests and claims by itself with the daemon's --autopilot on):",
      groups.autopilot,
    ],
    ['Live (what happens to the node, as it happens):', groups.live],
    ["Webhooks (the node's events POSTed, signed, to your endpoints):", groups.webhooks],
    ['Dev network actors (a daemon on --network dev only):', groups.dev],
    [
      'Access (admin: named tokens with a scope, the audit trail; `token rotate` replaces the file token):',
      groups.access,
    ],
  ];
  return [
    'Client commands: the same binary drives a running daemon through its HTTP API. It finds the daemon',
    "and its API token from the daemon's own settings (below); `node-daemon COMMAND --help` for each.",
    '',
    ...sections.flatMap(([title, specs]) => [title, ...commandList(specs), '']),
    "[node] defaults to the operator's own node: the first configured node id (--node-small-ids, or",
    "node_small_ids of atoma-node's config.toml), else the first NodeBadge of `node-daemon badges`.",
    'Prices and amounts are in USDC (6 decimals) in tables; --json prints the raw integers.',
    '',
    'Connection and output (every client command):',
    ...optionLines(CONNECTION_OPTIONS),
    '',
    'The daemon is --url, else NODE_DAEMON_URL, else http://HOST:PORT from --host/--port,',
    'NODE_DAEMON_HOST/NODE_DAEMON_PORT, the config file (--config, NODE_DAEMON_CONFIG) or 127.0.0.1:3001.',
    'The API token is --token, else NODE_DAEMON_TOKEN, else the file <data dir>/api-token if it exists;',
    'it is sent as "Authorization: Bearer" and never printed.',
    '',
    'Examples:',
    '  node-daemon status',
    '  node-daemon register && node-daemon subscribe 1 --price 1usdc',
    '  node-daemon stacks --min-fill 90%',
    '  node-daemon usage 10 950',
    '  node-daemon settle 10 11 12',
    '  node-daemon dev epoch && node-daemon claim 10 11 12',
    '  node-daemon earnings',
    '  node-daemon autopilot',
    '  node-daemon tasks --json --url http://127.0.0.1:3002',
    '',
    ...EXIT_CODES,
  ].join('\n');
}

/** The help of a command, of a group of commands, or (no name) the overview: see clientHelp in index.ts. */
export function helpText(table: CommandTable, command?: string): string {
  const name = (command ?? '').trim().split(/\s+/).filter(Boolean).join(' ');
  if (name === '') return overview(table.groups);
  const spec = table.commands.find((c) => c.name === name);
  if (spec) return commandHelp(spec);
  const group = table.commands.filter((c) => c.name.startsWith(`${name} `));
  if (group.length > 0) return groupHelp(name, group);
  return overview(table.groups);
}
