import { parseDuration } from '../../internal/duration.ts';
import type {
  AuditPageView as AuditPage,
  TokenCreatedView as Created,
  TokenView,
} from '../../schemas/access.ts';
import { usageError } from '../args.ts';
import { table, timestamp, when } from '../format.ts';
import { plainWrite, read, required, show, str } from '../request.ts';
import type { CommandSpec } from '../spec.ts';

/** The named API tokens (create, list, revoke) and the audit trail: admin requests, sent with an admin token. */

const SCOPES = ['read', 'usage', 'write', 'admin'];

function tokensTable(tokens: readonly TokenView[]): string {
  if (tokens.length === 0) return '(no named tokens; the file token api-token is admin)';
  return table(tokens, [
    { header: 'NAME', value: (t) => t.name },
    { header: 'SCOPE', value: (t) => t.scope },
    { header: 'STATE', value: (t) => t.state },
    { header: 'CREATED', value: (t) => timestamp(t.created_at) },
    { header: 'EXPIRES', value: (t) => (t.expires_at === null ? 'never' : timestamp(t.expires_at)) },
    { header: 'LAST USED', value: (t) => (t.last_used_at === null ? 'never' : when(t.last_used_at)) },
  ]);
}

function auditTable(page: AuditPage): string {
  if (page.entries.length === 0) return '(no entries)';
  const rows = table(page.entries, [
    { header: 'TIME', value: (e) => timestamp(e.at) },
    { header: 'TOKEN', value: (e) => e.token ?? '-' },
    { header: 'REQUEST', value: (e) => `${e.method} ${e.route}` },
    { header: 'STATUS', align: 'right', value: (e) => String(e.status) },
    { header: 'CODE', value: (e) => e.problem_code ?? '' },
    {
      header: 'TRANSACTION',
      value: (e) => `${e.tx_digest ?? ''}${e.idempotent_replay ? ' (replayed)' : ''}`,
    },
    { header: 'REQUEST ID', value: (e) => e.request_id },
  ]);
  return page.next_before === null ? rows : `${rows}\n(older entries: --before ${page.next_before})`;
}

export const ACCESS: CommandSpec[] = [
  {
    name: 'token create',
    route: 'POST /tokens',
    synopsis: '--name NAME --scope read|usage|write|admin [--expires D]',
    summary: 'create a named token with a scope; prints the token once',
    description: [
      [
        'Creates a named token (POST /tokens, an admin request) and prints it once: the daemon keeps only',
        'its hash. read: every GET, the event stream, /metrics (Grafana, Prometheus); usage: only the usage',
        "reports (the inference server); write: the node's writes, the autopilot, and reads (a claim",
        'script); admin: everything. --expires takes 90s, 10m, 12h or 30d; without it the token lasts',
        'until `node-daemon token revoke NAME`.',
      ],
    ],
    options: {
      name: { type: 'string', arg: 'NAME', describe: 'its name, e.g. grafana (letters, digits, . _ -)' },
      scope: { type: 'string', arg: 'SCOPE', describe: 'read, usage, write or admin' },
      expires: { type: 'string', arg: 'D', describe: 'how long it lasts: 90s, 10m, 12h, 30d' },
    },
    kind: 'control',
    positionals: { min: 0, max: 0 },
    examples: [
      'node-daemon token create --name grafana --scope read',
      'node-daemon token create --name inference --scope usage --expires 365d',
    ],
    async run(ctx) {
      const name = required(ctx, 'name', 'NAME');
      const scope = required(ctx, 'scope', 'SCOPE');
      if (!SCOPES.includes(scope)) {
        throw usageError(
          ctx.command,
          `--scope must be read, usage, write or admin; got ${JSON.stringify(scope)}`,
        );
      }
      const expires = str(ctx, 'expires');
      let expiresIn: number | undefined;
      if (expires !== undefined) {
        const ms = parseDuration(expires);
        if (ms === undefined || ms < 60_000) {
          throw usageError(
            ctx.command,
            `--expires must be a duration of a minute or more (90s, 10m, 12h, 30d); got ${JSON.stringify(expires)}`,
          );
        }
        expiresIn = Math.floor(ms / 1000);
      }
      const reply = await plainWrite(ctx, {
        name,
        scope,
        ...(expiresIn === undefined ? {} : { expires_in: expiresIn }),
      });
      await show(ctx, reply, (t: Created) =>
        [
          `created the ${t.scope} token ${t.name}${t.expires_at === null ? '' : `, valid until ${timestamp(t.expires_at)}`}:`,
          t.token,
          'It is shown this once: the daemon keeps only its hash. Send it as Authorization: Bearer <token>.',
        ].join('\n'),
      );
    },
  },
  {
    name: 'token list',
    route: 'GET /tokens',
    synopsis: '',
    summary: 'the named tokens: name, scope, state, created, expires, last used',
    description: [
      [
        'Lists the named tokens (GET /tokens, an admin request): name, scope, state (active, expired,',
        'revoked), when created, when it expires, and when last used (to the minute). Never a token.',
      ],
    ],
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: ['node-daemon token list', 'node-daemon token list --json'],
    async run(ctx) {
      const reply = await read(ctx);
      await show(ctx, reply, (b: { tokens: TokenView[] }) => tokensTable(b.tokens));
    },
  },
  {
    name: 'token revoke',
    route: 'DELETE /tokens/{name}',
    synopsis: 'NAME',
    summary: 'revoke a named token: refused at once by every daemon on the store',
    description: [
      [
        'Revokes a named token (DELETE /tokens/{name}, an admin request). Every daemon that shares the',
        'store refuses it from the next request on. The file token is replaced with `node-daemon token rotate`.',
      ],
    ],
    arguments: [['NAME', "the token's name (node-daemon token list)"]],
    kind: 'control',
    positionals: { min: 1, max: 1 },
    examples: ['node-daemon token revoke grafana'],
    async run(ctx) {
      const name = ctx.args[0]!;
      const reply = await plainWrite(ctx, undefined, { params: { name } });
      await show(ctx, reply, (b: { tokens: TokenView[] }) => `revoked ${name}\n\n${tokensTable(b.tokens)}`);
    },
  },
  {
    name: 'audit',
    route: 'GET /audit',
    synopsis: '[--token-name NAME] [--route R] [--outcome ok|denied|failed] [--since T] [--until T]',
    summary: 'the audit trail: every write and admin request, refused ones too, newest first',
    description: [
      [
        'Shows the audit trail (GET /audit, an admin request), newest first: when, which token (its name),',
        'the request, the status and problem code, the transaction and whether an Idempotency-Key replayed',
        'an earlier answer. --outcome denied: 401 and 403; failed: other errors; ok: the rest. --since and',
        '--until take ISO 8601 times; --limit (100) and --before ID page back.',
      ],
    ],
    options: {
      'token-name': { type: 'string', arg: 'NAME', describe: "a token's name (api-token: the file token)" },
      route: {
        type: 'string',
        arg: 'R',
        describe: 'a route as GET /audit shows it, e.g. /nodes/claim-funds',
      },
      outcome: { type: 'string', arg: 'O', describe: 'ok, denied or failed' },
      since: { type: 'string', arg: 'T', describe: 'at or after this time (ISO 8601)' },
      until: { type: 'string', arg: 'T', describe: 'before this time (ISO 8601)' },
      limit: { type: 'string', arg: 'N', describe: 'entries on a page (100; at most 1000)' },
      before: { type: 'string', arg: 'ID', describe: 'entries older than this id (the next page)' },
    },
    kind: 'read',
    positionals: { min: 0, max: 0 },
    examples: [
      'node-daemon audit',
      'node-daemon audit --outcome denied',
      'node-daemon audit --token-name grafana --since 2026-12-01T00:00:00Z',
    ],
    async run(ctx) {
      const query = new URLSearchParams();
      for (const name of ['token-name', 'route', 'outcome', 'since', 'until', 'limit', 'before']) {
        const value = str(ctx, name);
        if (value !== undefined) query.set(name.replace('-', '_'), value);
      }
      const text = query.toString();
      const reply = await read(ctx, {}, text === '' ? '' : `?${text}`);
      await show(ctx, reply, auditTable);
    },
  },
];
