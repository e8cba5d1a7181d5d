import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OPENAPI_FILE } from '../scripts/export-openapi.ts';
import type { App } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { buildDaemonApp, openServices } from '../src/daemon.ts';
import { FileEventSource } from '../src/indexer/file-source.ts';
import { catchUp } from '../src/indexer/run.ts';
import { createLogger } from '../src/internal/logger.ts';
import { openStore } from '../src/store/open.ts';
import type { Store, UsageOutcome } from '../src/store/store.ts';
import { createTestDatabase, postgresAvailable } from './helpers/postgres.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * Every read route's answer, byte for byte, on the shipped fixture: what the daemon answers today, kept in
 * test/fixtures/routes.golden.json, so that a change meant to keep behaviour (issue 47 restructures the
 * store) shows any answer it changed. The same recording is expected on SQLite and PostgreSQL, with the
 * response cache and without it: the golden is one for all four. NODE_DAEMON_UPDATE_GOLDEN=1 writes it
 * from what the daemon answers now.
 *
 * Three rounds of reads: after the first part of the fixture, after the rest, and after usage written by
 * another store on the same database. In the second and third the store's kept stack lists and the cached
 * answers of the rounds before are brought up to date (stacks added, used, settled, claimed) rather than
 * built fresh, by this process's own changes and then by another's.
 */

const FIXTURE = fileURLToPath(new URL('./fixtures/events.jsonl', import.meta.url));
const GOLDEN = fileURLToPath(new URL('./fixtures/routes.golden.json', import.meta.url));
const UPDATE = process.env.NODE_DAEMON_UPDATE_GOLDEN === '1';

const LINES = readFileSync(FIXTURE, 'utf8').trimEnd().split('\n');
/** The first round reads after about 60 % of the fixture, cut on a line boundary. */
const CUT = Math.round(LINES.length * 0.6);

/** Every node the fixture names (as selected, attesting, original or registered node), in order. */
const NODES = [
  ...new Set(
    LINES.flatMap((line) =>
      Object.entries((JSON.parse(line) as { parsedJson: Record<string, unknown> }).parsedJson)
        .filter(([field]) => /node(_small)?_id$/.test(field))
        .map(([, value]) => Number((value as { inner: string }).inner)),
    ),
  ),
].sort((a, b) => a - b);
/** How many stacks the fixture creates (their small ids are 1 to STACKS). */
const STACKS = LINES.filter((line) => line.includes('::StackCreatedEvent"')).length;
/** A node the fixture never names: every list answers [] for it, /network/nodes/{id} 404. */
const UNKNOWN = NODES.at(-1)! + 1;

/** Bodies up to this size are kept whole in the golden; longer ones by their sha256 and length. */
const WHOLE_BODY_BYTES = 512;
/** Sent with every request, so that the request_id of a problem body is the same on every run. */
const REQUEST_ID = 'golden-routes';
/** Following Link headers stops here: a next page that never ends is a failure, not a hang. */
const MAX_PAGES = 200;

/** What the golden keeps of one answer: no ETag or Date (the ETag names the store's random identity). */
interface Answer {
  get: string;
  status: number;
  type: string | null;
  link?: string;
  body: string | { sha256: string; bytes: number };
  /** The status of the same request with the answer's ETag in If-None-Match (when it had one). */
  if_none_match?: number;
}

type Recording = Record<string, Answer[]>;

class Recorder {
  readonly answers: Answer[] = [];
  readonly #app: App;

  constructor(app: App) {
    this.#app = app;
  }

  async get(url: string): Promise<Answer> {
    const headers = { 'x-request-id': REQUEST_ID };
    const res = await this.#app.inject({ url, headers });
    const raw = res.rawPayload;
    const answer: Answer = {
      get: url,
      status: res.statusCode,
      type: res.headers['content-type'] === undefined ? null : String(res.headers['content-type']),
      ...(res.headers.link === undefined ? {} : { link: String(res.headers.link) }),
      body:
        raw.length <= WHOLE_BODY_BYTES
          ? raw.toString('utf8')
          : { sha256: createHash('sha256').update(raw).digest('hex'), bytes: raw.length },
    };
    const etag = res.headers.etag;
    if (etag !== undefined) {
      const again = await this.#app.inject({ url, headers: { ...headers, 'if-none-match': String(etag) } });
      if (again.statusCode === 304) assert.equal(again.rawPayload.length, 0, `${url}: a 304 has no body`);
      answer.if_none_match = again.statusCode;
    }
    this.answers.push(answer);
    return answer;
  }

  async all(urls: string[]): Promise<void> {
    for (const url of urls) await this.get(url);
  }

  /** The pages from url on, following each answer's rel="next" Link to the last. */
  async follow(url: string): Promise<void> {
    let next: string | undefined = url;
    for (let pages = 0; next !== undefined; pages++) {
      assert.ok(pages < MAX_PAGES, `${url}: more than ${MAX_PAGES} pages`);
      const { link } = await this.get(next);
      next = link === undefined ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
      assert.ok(link === undefined || next !== undefined, `${url}: a Link of another form: ${link}`);
    }
  }
}

/** `url` with one more query parameter. */
const and = (url: string, query: string) => `${url}${url.includes('?') ? '&' : '?'}${query}`;

/** The paged variants of a list: its first row, its first three, and every page of `size` in turn. */
async function pages(r: Recorder, list: string, size = 2): Promise<void> {
  await r.get(and(list, 'limit=1'));
  await r.get(and(list, 'limit=3'));
  await r.follow(and(list, `limit=${size}`));
}

const FRACTIONS = ['0', '0.5', '0.9', '1', '1.5'];

/**
 * A node's stacks, every way they are asked for: pages before the whole list (which the store then reads
 * without a kept list, or with one not up to date), the whole list and its filters, and pages again (from
 * the list now kept); with the earnings, which they make.
 */
async function readStacks(r: Recorder, node: number): Promise<void> {
  const stacks = `/stacks/nodes/${node}`;
  await pages(r, stacks);
  await pages(r, `${stacks}?min_fill_fraction=0.5`);
  await r.all([
    stacks,
    `${stacks}/`,
    ...FRACTIONS.map((fraction) => `${stacks}?min_fill_fraction=${fraction}`),
    `/stacks/stacks/nodes/${node}`,
    `/earnings/nodes/${node}`,
  ]);
  // Pages of 5 from here on: every page boundary was crossed above, and the test runs on every push.
  await pages(r, stacks, 5);
  await pages(r, `${stacks}?min_fill_fraction=0.9`, 5);
  await r.follow(`/stacks/stacks/nodes/${node}?limit=5`);
}

/** One round: every read route, for every node. */
async function readEverything(r: Recorder): Promise<void> {
  await r.all(['/tasks', '/tasks/', '/tasks?limit=1', '/tasks?limit=3']);
  await r.follow('/tasks?limit=2');
  for (const node of [...NODES, UNKNOWN]) {
    const lists = [
      `/subscriptions/nodes/${node}`,
      `/claimed-stacks/nodes/${node}`,
      `/attestation_disputes/against/nodes/${node}`,
      `/attestation_disputes/own/nodes/${node}`,
    ];
    for (const list of lists) await pages(r, list);
    await r.all([...lists, `/claimed-stacks/claimed_stacks/nodes/${node}`, `/network/nodes/${node}`]);
    await r.follow(`/claimed-stacks/claimed_stacks/nodes/${node}?limit=5`);
    await readStacks(r, node);
  }
  // Bad input: 400 problems, whatever the store holds.
  await r.all([
    '/stacks/nodes/one',
    '/subscriptions/nodes/one',
    '/claimed-stacks/nodes/one',
    '/attestation_disputes/against/nodes/one',
    '/attestation_disputes/own/nodes/one',
    '/earnings/nodes/one',
    '/network/nodes/one',
    '/stacks/stacks/nodes/-1',
    '/stacks/nodes/1?min_fill_fraction=x',
    '/stacks/nodes/1?min_fill_fraction=-0.5',
    '/stacks/nodes/1?limit=0',
    '/tasks?limit=0',
    '/subscriptions/nodes/1?limit=x',
    '/claimed-stacks/nodes/1?limit=0',
    '/attestation_disputes/own/nodes/1?after=x',
    '/tasks?after=18446744073709551616',
    '/stacks/nodes/1?other=1',
    '/stacks/nodes/18446744073709551616',
  ]);
  // The other reads whose answers depend on neither time nor the store's identity (not /status, /metrics,
  // /events). The console's files and /docs (Swagger UI) are files served as they are.
  await r.all([
    '/health',
    '/ready',
    '/autopilot',
    '/nodes/badges',
    '/openapi.json',
    '/docs/json',
    '/no/such/path',
  ]);
}

/** When the usage reports below were served: fixed, so that what the store writes with them is the same. */
const USAGE_AT_MS = 1_747_040_400_000;

/**
 * Usage reports, as POST /stacks/{id}/usage records them (the route needs a chain; the store's own call is
 * the same write): without them no stack is filled and every list filtered by fill is empty. Round 1 fills
 * two stacks in three to a quarter, half, nine tenths or all of their units; round 2 adds half of what is
 * left to every other stack, the new ones and those already kept in a list among them; round 3 fills one
 * stack in five.
 */
async function reportUsage(store: Store, round: 1 | 2 | 3): Promise<void> {
  const reports: Promise<UsageOutcome>[] = [];
  for (let id = 1; id <= STACKS; id++) {
    const stack = await store.getStack(id);
    if (stack === undefined) continue;
    const units = Number(stack.num_compute_units);
    const left = units - Number(stack.already_computed_units);
    let report = 0;
    if (round === 1 && id % 3 !== 0) report = Math.max(1, Math.floor(units * [0.25, 0.5, 0.9, 1][id % 4]!));
    if (round === 2 && id % 2 === 0) report = Math.floor(left / 2);
    if (round === 3 && id % 5 === 1) report = left;
    if (report > 0) reports.push(store.addStackUsage(id, report, undefined, USAGE_AT_MS));
  }
  const outcomes = await Promise.all(reports);
  assert.ok(outcomes.filter((o) => o.status === 'recorded').length > 10, 'usage was recorded');
}

/**
 * The recording of one daemon on one store, three rounds: after the first part of the fixture, after the
 * rest, and after usage written through another store on the same database.
 */
async function record(flags: Record<string, string>): Promise<Recording> {
  const dir = tempDir();
  const logger = createLogger('silent');
  const config = loadConfig({ 'data-dir': dir.dir, network: 'none', ...flags }, {});
  const services = await openServices(config, logger);
  const app = await buildDaemonApp(config, services, logger);
  // The fixture arrives as a file that grows: the second replay goes on from the first one's cursor.
  const file = join(dir.dir, 'events.jsonl');
  const replay = async (lines: string[]) => {
    appendFileSync(file, `${lines.join('\n')}\n`);
    const source = new FileEventSource(file);
    try {
      const { totals } = await catchUp(services.store, source, logger);
      assert.equal(totals.applied + totals.ignored, lines.length, 'every line applied or ignored');
    } finally {
      await source.close();
    }
  };
  try {
    const recording: Recording = {};
    await replay(LINES.slice(0, CUT));
    await reportUsage(services.store, 1);
    const first = new Recorder(app);
    await readEverything(first);
    recording[`after lines 1-${CUT}`] = first.answers;
    await replay(LINES.slice(CUT));
    await reportUsage(services.store, 2);
    const second = new Recorder(app);
    await readEverything(second);
    recording[`after lines ${CUT + 1}-${LINES.length}`] = second.answers;
    // Usage written by another store on the same database, as another process would: the kept lists and
    // the cache learn of it from the database alone.
    const other = await openStore(config);
    try {
      await reportUsage(other, 3);
    } finally {
      await other.close();
    }
    // A request that follows another process's commit arrives in a later event-loop turn, and the SQLite
    // store reads its data version at most once a turn (SqliteStore.dataVersion); the second store here
    // wrote without the loop turning since the last request read it.
    await new Promise((resolve) => setImmediate(resolve));
    const third = new Recorder(app);
    for (const node of [...NODES, UNKNOWN]) await readStacks(third, node);
    recording['after usage reported through another store'] = third.answers;
    await servesTheCommittedDocument(app);
    return recording;
  } finally {
    await app.close();
    await services.close();
    await dir.remove();
  }
}

/** Not assert.equal on two documents: its message would be both, 120 kB each. */
function same(actual: string, expected: string): void {
  let at = 0;
  while (at < actual.length && actual[at] === expected[at]) at++;
  const differ = at < actual.length || actual.length !== expected.length;
  assert.ok(!differ, `the documents differ at ${JSON.stringify(actual.slice(at, at + 200))}`);
}

/**
 * /openapi.json is docs/openapi.json, byte for byte (scripts/export-openapi.ts renders the file from an app
 * with what every daemon serves, GET /events included). The served bytes themselves are in the golden.
 */
async function servesTheCommittedDocument(app: App): Promise<void> {
  const res = await app.inject({ url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  const served = res.json() as { paths: Record<string, unknown> };
  same(res.body, JSON.stringify(served));
  assert.ok(served.paths['/events'], 'a daemon serves GET /events and documents it');
  const committed = readFileSync(OPENAPI_FILE, 'utf8');
  const compact = JSON.stringify(JSON.parse(committed));
  same(JSON.stringify(served), compact);
  same(`${JSON.stringify(served, null, 2)}\n`, committed);
}

/** One answer a line: a change shows as the lines of the answers it changed. */
function format(recording: Recording): string {
  const rounds = Object.entries(recording).map(
    ([round, answers]) =>
      `  ${JSON.stringify(round)}: [\n${answers.map((a) => `    ${JSON.stringify(a)}`).join(',\n')}\n  ]`,
  );
  return `{\n${rounds.join(',\n')}\n}\n`;
}

/** The golden, written first by whichever recording comes first when NODE_DAEMON_UPDATE_GOLDEN=1. */
let updated = false;

function compareWithGolden(recording: Recording): void {
  if (UPDATE && !updated) {
    writeFileSync(GOLDEN, format(recording));
    updated = true;
  }
  const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')) as Recording;
  assert.deepEqual(Object.keys(recording), Object.keys(golden), 'the rounds (was the fixture changed?)');
  const hint = 'if the change is meant, run this test with NODE_DAEMON_UPDATE_GOLDEN=1 and review the diff';
  for (const [round, answers] of Object.entries(recording)) {
    const expected = golden[round]!;
    for (let i = 0; i < Math.max(answers.length, expected.length); i++) {
      const get = answers[i]?.get ?? expected[i]?.get;
      assert.deepEqual(answers[i], expected[i], `${round}, request ${i + 1} (GET ${get}): ${hint}`);
    }
  }
}

/** The store of one recording: the flags that name it, and what removes it afterwards. */
type OpenStore = () => Promise<{ flags: Record<string, string>; drop: () => Promise<void> }>;

function variants(engine: string, open: OpenStore): void {
  for (const [cache, more] of [
    ['with the response cache', {}],
    ['without it (--cache-mb 0)', { 'cache-mb': '0' }],
  ] as const) {
    it(`on ${engine}, ${cache}`, async () => {
      const store = await open();
      try {
        compareWithGolden(await record({ ...store.flags, ...more }));
      } finally {
        await store.drop();
      }
    });
  }
}

describe('every read route answers the bytes of test/fixtures/routes.golden.json', () => {
  // record() makes a temporary data directory for each run, and with it a fresh SQLite store.
  variants('SQLite', async () => ({ flags: {}, drop: async () => undefined }));
});

describe('every read route answers the golden bytes on PostgreSQL', async () => {
  if (!(await postgresAvailable('the golden routes on PostgreSQL'))) return;
  // A fresh database for each run: the replay starts from an empty store, as on SQLite.
  variants('PostgreSQL', async () => {
    const db = await createTestDatabase();
    assert.ok(db, 'PostgreSQL went away during the run');
    return { flags: { 'database-url': db.url }, drop: db.drop };
  });
});
