import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { CONSOLE_CSP, CONSOLE_DIR } from '../src/http/routes/console.ts';
import { TOKEN_FILE } from '../src/http/security.ts';
import { browserAvailable, launchBrowser } from './helpers/browser.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';

/**
 * The operator console (docs/CONSOLE.md): how the daemon serves it, then the console itself driven in
 * real headless Chromium against a real dev daemon with the demo world, listening on a real port.
 */

type Json = Record<string, unknown>;

function ok(res: LightMyRequestResponse): Json {
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as Json;
}

describe('the console, as the daemon serves it', () => {
  let d: DevDaemon;
  before(async () => {
    d = await devDaemon();
  });
  after(() => d.close());

  it('serves the page at / with a strict Content-Security-Policy, an ETag and no-cache', async () => {
    const res = await d.app.inject({ url: '/' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.headers['content-security-policy'], CONSOLE_CSP);
    assert.equal(
      CONSOLE_CSP,
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.match(String(res.headers.etag), /^"[\w-]+"$/);
    // No inline script or style the CSP would block: every script and stylesheet is a file.
    assert.doesNotMatch(res.body, /<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son\w+=/i);
    const again = await d.app.inject({ url: '/', headers: { 'if-none-match': String(res.headers.etag) } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    assert.equal((await d.app.inject({ method: 'HEAD', url: '/' })).statusCode, 200);
  });

  it('serves every file of src/console with its content type, and nothing else', async () => {
    const types: Record<string, RegExp> = {
      js: /^text\/javascript; charset=utf-8$/,
      css: /^text\/css; charset=utf-8$/,
      svg: /^image\/svg\+xml$/,
    };
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)).map((f) => `${e.name}/${f}`) : [e.name],
      );
    const served = files(CONSOLE_DIR).filter((f) => /\.(js|css|svg)$/.test(f));
    assert.ok(served.includes('app.js') && served.includes('views/stacks.js'), served.join());
    for (const file of served) {
      const res = await d.app.inject({ url: `/console/${file}` });
      assert.equal(res.statusCode, 200, file);
      assert.match(String(res.headers['content-type']), types[file.split('.').pop()!]!, file);
      assert.equal(res.headers['content-security-policy'], CONSOLE_CSP, file);
      assert.equal(res.body, readFileSync(join(CONSOLE_DIR, file), 'utf8'), file);
    }
    for (const url of [
      '/console/tsconfig.json',
      '/console/nope.js',
      '/console/%2e%2e/http/routes/console.ts',
      '/console/../../package.json',
    ]) {
      const res = await d.app.inject({ url });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().code, 'not_found', url);
    }
  });

  it('leaves the API, /docs, /openapi.json and /health as they were', async () => {
    assert.equal((await d.app.inject({ url: '/health' })).statusCode, 200);
    assert.equal((await d.app.inject({ url: '/docs/' })).statusCode, 200);
    const spec = ok(await d.app.inject({ url: '/openapi.json' })) as { paths: Record<string, unknown> };
    assert.ok(!('/' in spec.paths) && !Object.keys(spec.paths).some((p) => p.startsWith('/console')));
    assert.equal((await d.app.inject({ url: '/tasks' })).statusCode, 200);
    assert.equal((await d.post('/')).statusCode, 405);
  });

  it('loads without the token under --auth all, while the API it calls still needs it', async () => {
    const all = await devDaemon({ auth: 'all' });
    try {
      for (const url of ['/', '/console/app.js']) {
        assert.equal((await all.app.inject({ url })).statusCode, 200, url);
      }
      assert.equal((await all.app.inject({ url: '/status' })).statusCode, 401);
      // A path that only starts like the console's reaches the console's 404, never another route.
      const base = await all.app.listen({ port: 0, host: '127.0.0.1' });
      for (const path of ['/console/../status', '/console/%2e%2e/status', '/console/..%2fstatus']) {
        assert.equal(await rawStatus(base, path), 404, path);
      }
      assert.equal((await all.app.inject({ url: '/', headers: { host: 'evil.example' } })).statusCode, 403);
    } finally {
      await all.close();
    }
  });
});

describe("the console's amounts", () => {
  // The browser modules are plain ES modules without DOM needs: Node loads them as they are.
  const load = async <T>(file: string): Promise<T> => (await import(join(CONSOLE_DIR, file))) as T;
  type JsonModule = {
    parseJson(t: string): unknown;
    parseExact(t: string): unknown;
    stringifyJson(v: unknown): string;
  };
  type FormatModule = {
    formatUsdc(v: unknown): string;
    formatUnits(v: unknown, d?: number): string;
    parseUnits(t: string, d?: number): bigint | null;
    formatFill(u: unknown, t: unknown): string;
  };

  it('parses u64 amounts above 2^53 exactly, with or without the reviver source text', async () => {
    const { parseJson, parseExact, stringifyJson } = await load<JsonModule>('json.js');
    const text =
      '{"claimed":18446744073709551615,"small":1900,"fill":0.95,"neg":-9007199254740993,"s":"a\\"\\u00e9","list":[9007199254740993,null,true,{}],"e":1e3}';
    const expected = {
      claimed: 18446744073709551615n,
      small: 1900,
      fill: 0.95,
      neg: -9007199254740993n,
      s: 'a"é',
      list: [9007199254740993n, null, true, {}],
      e: 1000,
    };
    assert.deepEqual(parseJson(text), expected);
    assert.deepEqual(parseExact(text), expected);
    assert.equal(
      stringifyJson({ stack_small_ids: [1, 2], price: 18446744073709551615n, skip: undefined }),
      '{"stack_small_ids":[1,2],"price":18446744073709551615}',
    );
    for (const bad of ['{"a":1,}', '[1 2]', '"\u0001"', '01', '']) {
      assert.throws(() => parseExact(bad), SyntaxError, bad);
    }
  });

  it('formats and reads USDC with integer arithmetic only', async () => {
    const f = await load<FormatModule>('format.js');
    assert.equal(f.formatUsdc(1101900), '1.101900 USDC');
    assert.equal(f.formatUsdc(18446744073709551615n), '18,446,744,073,709.551615 USDC');
    assert.equal(f.formatUsdc(0), '0.000000 USDC');
    assert.equal(f.formatUnits(4476000, 9), '0.004476000');
    assert.equal(f.parseUnits('1.5'), 1500000n);
    assert.equal(f.parseUnits('0.000001'), 1n);
    assert.equal(f.parseUnits('18446744073709.551615'), 18446744073709551615n);
    for (const bad of ['1.0000001', 'abc', '', '-1', '1e3']) assert.equal(f.parseUnits(bad), null, bad);
    assert.equal(f.formatFill(950, 1000), '95.0 %');
    assert.equal(f.formatFill(1, 3), '33.3 %');
    assert.equal(f.formatFill(0, 0), '100.0 %');
  });
});

/** The status of a GET whose path is sent exactly as given (fetch would resolve the dot segments). */
function rawStatus(base: string, path: string): Promise<number | undefined> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    request({ host: hostname, port, path }, (res) => {
      res.resume();
      resolve(res.statusCode);
    })
      .on('error', reject)
      .end();
  });
}

/** The console's console: errors and failed loads, as Chromium reports them. */
function watch(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => {
    // A stream the page closes itself (GET /events when the page goes away) is not a failure.
    if (new URL(request.url()).pathname !== '/events') errors.push(`request failed: ${request.url()}`);
  });
  return errors;
}

/** The text of the earnings figure `key` on the overview (claimable, settling, claimed, ...). */
const figure = (page: Page, key: string) => page.locator(`[data-figure="${key}"] .amount`);

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the console in Chromium', () => {
  if (!browserAvailable('console in Chromium')) return;
  let browser: Browser;
  let d: DevDaemon;
  let url: string;
  let token: string;
  let node: number;
  let stack: number;
  let page: Page;
  let errors: string[];

  before(async () => {
    [browser, d] = await Promise.all([launchBrowser(), devDaemon({ demo: true })]);
    token = readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim();
    // The README's tour: a node, subscribed to task 1; demo users then buy three stacks from it.
    node = ok(await d.post('/nodes/register')).node_small_id as number;
    ok(
      await d.post('/nodes/task-subscribe', {
        task_small_id: 1,
        price_per_one_million_compute_units: 1_000_000,
      }),
    );
    let stacks: Json[] = [];
    await until('the demo stacks', async () => {
      stacks = ok(await d.get(`/stacks/nodes/${node}`)) as unknown as Json[];
      return stacks.length === 3;
    });
    stack = stacks.find((s) => s.num_compute_units === 1000)!.stack_small_id as number;
    url = await d.app.listen({ port: 0, host: '127.0.0.1' });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(5000);
    errors = watch(page);
  });
  after(async () => {
    await browser?.close();
    await d?.close();
  });

  it('shows the node and its earnings on the overview', async () => {
    await page.goto(url);
    await page.getByRole('heading', { name: `Node ${node}` }).waitFor();
    await page.locator('#network', { hasText: 'dev network · epoch 0' }).waitFor();
    await page.locator('#live', { hasText: 'live' }).waitFor();
    await page.locator('[data-testid="readiness"]', { hasText: 'Ready' }).waitFor();
    for (const key of ['claimable', 'settling', 'claimed', 'unsettled', 'disputed']) {
      assert.equal(await figure(page, key).textContent(), '0.000000 USDC', key);
    }
    // Three stacks open, none used yet: nothing is unsettled, and the card says so.
    assert.equal(
      await page.locator('[data-figure="unsettled"] .note').textContent(),
      '3 stacks open, no usage yet',
    );
    // A fresh tab shows what happened before it opened (the daemon keeps days of events), newest first.
    const latest = page.locator('#view-overview .feed li');
    await latest.filter({ hasText: 'A user bought stack' }).nth(2).waitFor();
    assert.match((await latest.first().textContent()) ?? '', /A user bought stack/);
    await page.keyboard.press('6');
    await page.locator('#view-activity .feed li[data-type="subscription_changed"]').waitFor();
    await page.keyboard.press('1');
  });

  it("moves a stack's fill bar when usage is reported through the API, without a reload", async () => {
    // The keyboard: 2 is the Stacks view, and the focus goes to its heading.
    await page.keyboard.press('2');
    await page.locator('#view-stacks').waitFor();
    assert.equal(await page.evaluate('document.activeElement?.id'), 'h-stacks');
    const bar = page.locator(`[data-testid="fill-${stack}"]`);
    assert.equal(await bar.getAttribute('aria-valuenow'), '0.0');
    // A mark on this document: a reload would lose it. (Page code is given as text: tsc knows no DOM here.)
    await page.evaluate('window.sameDocument = true');
    ok(await d.post(`/stacks/${stack}/usage`, { compute_units: 950 }));
    await page.locator(`[data-testid="fill-${stack}"][aria-valuenow="95.0"]`).waitFor({ timeout: 5000 });
    const row = page.locator(`tr[data-stack="${stack}"]`);
    assert.match((await row.textContent()) ?? '', /950 \/ 1,000 · 95\.0 %/);
    assert.equal(await row.getAttribute('class'), 'near-full', 'a near-full stack is highlighted');
    assert.equal(await page.evaluate('window.sameDocument'), true);
    // The live feed said why.
    await page.keyboard.press('6');
    await page.locator('.feed li[data-type="stack_filled"]', { hasText: 'passed 90 %' }).waitFor();
    await page.keyboard.press('2');
  });

  it('settles and claims from the console with the token, and the earnings change', async () => {
    await page.locator(`[data-key="settle-${stack}"]`).click();
    // The daemon estimates the settlement (a simulation: the token first, once), then the console asks,
    // with what it will pay and cost, since settling is for good.
    await page.locator('#token-dialog[open]').waitFor();
    await page.locator('#token-input').fill(token);
    await page.keyboard.press('Enter');
    await page.locator('#confirm-dialog[open]').waitFor();
    assert.equal(
      await page.locator('#confirm-text').textContent(),
      'It claims the 950 units used of 1,000 (95.0 %). The node is paid 0.001900 USDC when it is claimed, ' +
        'and the buyer gets 0.000100 USDC back. Gas: 0.003976000 SUI (simulated), paid by the signer. ' +
        'A stack settles once: the units not used go back to the buyer when it is claimed.',
    );
    await page.locator('#confirm-ok').click();
    await page.locator('#view-stacks .outcome.success', { hasText: 'Settled 1 of 1 stack' }).waitFor();
    // In its dispute period: its fee is known, and it says when it can be claimed instead of a Claim
    // that the daemon would refuse (409).
    const row = page.locator(`tr[data-stack="${stack}"][data-state="settling"]`);
    await row.filter({ hasText: '0.001900 USDC' }).waitFor();
    assert.equal(await row.locator(`[data-key="claim-${stack}"]`).count(), 0);
    assert.equal(
      await row.locator(`[data-key="claimable-from-${stack}"]`).textContent(),
      'claimable from epoch 1',
    );
    assert.equal(await page.locator('[data-key="claim-all"]').textContent(), 'Claim all claimable (0)');
    assert.equal(await page.locator('[data-key="claim-all"]').isDisabled(), true);
    await page.keyboard.press('1');
    await figure(page, 'settling').filter({ hasText: '0.001900 USDC' }).waitFor();

    // An epoch passes on the dev network: the stack becomes claimable, and the overview follows.
    ok(await d.post('/dev/epoch'));
    await figure(page, 'claimable').filter({ hasText: '0.001900 USDC' }).waitFor();
    await page.locator('#network', { hasText: 'epoch 1' }).waitFor();

    await page.keyboard.press('2');
    await page.locator('[data-key="claim-all"]', { hasText: 'Claim all claimable (1)' }).waitFor();
    await page.locator(`[data-key="claim-${stack}"]`).click();
    await page
      .locator('#view-stacks .outcome.success', { hasText: 'Claimed 0.001900 USDC for 1 stack' })
      .waitFor();
    assert.equal(await page.locator('#token-dialog[open]').count(), 0, 'the token was asked for once');
    await page
      .locator(`tr[data-stack="${stack}"][data-state="claimed"]`, { hasText: '0.001900 USDC' })
      .waitFor();
    await page.keyboard.press('1');
    await figure(page, 'claimed').filter({ hasText: '0.001900 USDC' }).waitFor();
    assert.equal(await figure(page, 'claimable').textContent(), '0.000000 USDC');
    const bars = page.locator('.chart-bar:not(.empty) title');
    assert.deepEqual(await bars.allTextContents(), ['epoch 1: 0.001900 USDC claimed, 1 stack']);
    const earnings = ok(await d.get(`/earnings/nodes/${node}`));
    assert.deepEqual([earnings.claimed, earnings.claimable], [1900, 0]);
  });

  it("shows the daemon's problem detail for a wrong token, and sends nothing", async () => {
    await page.locator('#token-button', { hasText: 'Forget the token' }).click();
    await page.keyboard.press('4');
    await page.locator('#sub-task').selectOption('1');
    await page.locator('#sub-price').fill('1.5');
    await page.locator('#sub-price').press('Enter');
    await page.locator('#token-dialog[open]').waitFor();
    await page.locator('#token-input').fill('not-the-token');
    await page.keyboard.press('Enter');
    const outcome = page.locator('#view-subscriptions .outcome.failure');
    await outcome.waitFor();
    const text = (await outcome.textContent()) ?? '';
    assert.match(text, /^Wrong token \(403 forbidden\): the API token is wrong; use the token in /);
    assert.ok(text.includes(join(d.dir, TOKEN_FILE)), text);
    // The refused token is forgotten: the next write asks again.
    await page.locator('#token-button', { hasText: 'Enter the token' }).waitFor();
    const subscriptions = ok(await d.get(`/subscriptions/nodes/${node}`)) as unknown as Json[];
    assert.equal(subscriptions[0]!.price_per_one_million_compute_units, 1_000_000);
  });

  it("switches between the signer's nodes from the header, without typing an id", async () => {
    const second = ok(await d.post('/nodes/register')).node_small_id as number;
    // (The last test left the focus in a field, where the keys are text.)
    await page.evaluate('document.activeElement?.blur()');
    await page.keyboard.press('1');
    await page.keyboard.press('r');
    const select = page.locator('#node-select');
    await select.locator(`option[value="${second}"]`).waitFor({ state: 'attached' });
    const options = await select.locator('option').allTextContents();
    assert.equal(options.length, 2, options.join());
    options.forEach((text, i) => {
      assert.match(text, new RegExp(`^${[node, second][i]} \\(badge 0x[0-9a-f]{4}…[0-9a-f]{4}\\)$`));
    });
    await select.selectOption(String(second));
    await page.getByRole('heading', { name: `Node ${second}` }).waitFor();
    await page.keyboard.press('2');
    await page.locator('#view-stacks p', { hasText: `0 of 0 stacks of node ${second}` }).waitFor();
    await select.selectOption(String(node));
    await page.locator(`#view-stacks tr[data-stack="${stack}"]`).waitFor();
  });

  it("shows another node's stacks read-only", async () => {
    await page.locator('#node-input').fill('1');
    await page.locator('#node-input').press('Enter');
    await page.getByRole('link', { name: 'Stacks' }).click();
    await page.locator('#view-stacks p', { hasText: 'not one of the signer’s nodes' }).waitFor();
    // The peer's stacks (the demo world's) are listed, with nothing to act on.
    await page.locator('#view-stacks tbody tr').first().waitFor();
    assert.equal(await page.locator('#view-stacks tbody button').count(), 0, 'nothing to settle or claim');
    assert.equal(await page.locator('#view-stacks .toolbar button:enabled').count(), 0);
    await page.locator('#node-input').fill(String(node));
    await page.locator('#node-input').press('Enter');
    await page.locator(`#view-stacks tr[data-stack="${stack}"]`).waitFor();
  });

  it('logged no error in the browser console', () => {
    // The expected entries: Chromium logs the 403s of the wrong token as failed loads (the write, and the
    // console's GET /whoami when the token is given).
    const expected = errors.filter((e) => /status of 403/.test(e));
    assert.equal(expected.length, 2, errors.join('\n'));
    assert.deepEqual(
      errors.filter((e) => !expected.includes(e)),
      [],
    );
  });

  // `NODE_DAEMON_CONSOLE_SCREENSHOT=docs/console.png node --test test/console.test.ts` redraws the README's
  // screenshot: a few epochs of a busy node, then the overview.
  const screenshot = process.env.NODE_DAEMON_CONSOLE_SCREENSHOT;
  it('draws the README screenshot', {
    skip: !screenshot && 'NODE_DAEMON_CONSOLE_SCREENSHOT is not set',
  }, async () => {
    const buy = async (units: number) =>
      ok(
        await d.post('/dev/stacks', {
          task_small_id: 1,
          num_compute_units: units,
          price_per_one_million_compute_units: 2_000_000,
          selected_node_id: node,
        }),
      ).stack_small_id as number;
    const serve = async (units: number, used: number) => {
      const id = await buy(units);
      ok(await d.post(`/stacks/${id}/usage`, { compute_units: used }));
      return id;
    };
    const days = [
      [400_000, 250_000],
      [900_000, 600_000, 120_000],
      [300_000],
      [820_000, 500_000],
      [700_000, 650_000, 90_000],
      [700_000, 400_000],
      [880_000, 610_000, 300_000],
    ];
    for (const served of days) {
      const ids = [];
      for (const used of served) ids.push(await serve(used + 50_000, used));
      ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: ids }));
      ok(await d.post('/dev/epoch'));
      ok(await d.post('/nodes/claim-funds', { stack_small_ids: ids }));
    }
    // Money in every state: claimable, settling, and open stacks, one of them near full.
    const claimable = await serve(500_000, 480_000);
    ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [claimable] }));
    ok(await d.post('/dev/epoch'));
    const settling = await serve(250_000, 240_000);
    ok(await d.post('/nodes/try-settle-stacks', { stack_small_ids: [settling] }));
    await serve(600_000, 570_000);
    await serve(200_000, 60_000);
    const earnings = ok(await d.get(`/earnings/nodes/${node}`));
    await page.getByRole('link', { name: 'Overview' }).click();
    const usdc = (v: unknown) =>
      `${(BigInt(v as number) / 1_000_000n).toLocaleString('en-US')}.${(BigInt(v as number) % 1_000_000n).toString().padStart(6, '0')} USDC`;
    await figure(page, 'claimed')
      .filter({ hasText: usdc(earnings.claimed) })
      .waitFor();
    await figure(page, 'unsettled')
      .filter({ hasText: usdc(earnings.unsettled) })
      .waitFor();
    await page.setViewportSize({ width: 1280, height: 1000 });
    await page.waitForTimeout(300);
    await page.screenshot({ path: screenshot!, fullPage: true });
  });

  it('shows a read token no write buttons and no admin views, and an admin token the Tokens and Audit views', async () => {
    const made = ok(
      await d.app.inject({
        method: 'POST',
        url: '/tokens',
        headers: { authorization: `Bearer ${token}` },
        payload: { name: 'dashboard', scope: 'read' },
      }),
    );
    const scoped = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    scoped.setDefaultTimeout(5000);
    const seen = watch(scoped);
    try {
      await scoped.goto(`${url}/?node=${node}#autopilot`);
      await scoped.locator('#token-button', { hasText: 'Enter the token' }).click();
      await scoped.locator('#token-input').fill(String(made.token));
      await scoped.keyboard.press('Enter');
      await scoped.locator('#whoami', { hasText: 'dashboard · read' }).waitFor();
      assert.equal(await scoped.locator('nav.views a[href="#tokens"]').isVisible(), false, 'no Tokens view');
      assert.equal(await scoped.locator('nav.views a[href="#audit"]').isVisible(), false, 'no Audit view');
      await scoped.locator('#view-autopilot h1').waitFor();
      assert.equal(
        await scoped.locator('[data-key="pilot-run"]:visible').count(),
        0,
        'no autopilot run button',
      );
      await scoped.getByRole('link', { name: 'Stacks' }).click();
      await scoped.locator(`#view-stacks tr[data-stack="${stack}"]`).waitFor();
      assert.equal(
        await scoped.locator('#view-stacks tbody button').count(),
        0,
        'nothing to settle or claim',
      );
      // The file token is admin: the Tokens and Audit views appear.
      await scoped.locator('#token-button', { hasText: 'Forget the token' }).click();
      await scoped.locator('#token-button', { hasText: 'Enter the token' }).click();
      await scoped.locator('#token-input').fill(token);
      await scoped.keyboard.press('Enter');
      await scoped.locator('#whoami', { hasText: 'api-token · admin' }).waitFor();
      await scoped.getByRole('link', { name: 'Tokens' }).click();
      await scoped.locator('#view-tokens tr[data-token="dashboard"]').waitFor();
      await scoped.locator('#new-token-name').fill('from-console');
      await scoped.locator('#new-token-scope').selectOption('usage');
      await scoped.locator('#view-tokens button[type="submit"]').click();
      const shown = await scoped.locator('[data-key="new-token"]').textContent();
      assert.match(String(shown), /^ndt_/);
      await scoped.locator('#view-tokens tr[data-token="from-console"]').waitFor();
      await scoped.getByRole('link', { name: 'Audit' }).click();
      await scoped.locator('#view-audit td', { hasText: 'POST /tokens' }).first().waitFor();
      assert.deepEqual(seen, [], 'no error in the browser console');
    } finally {
      await scoped.close();
    }
  });

  it('asks for the token first under --auth all, then shows the node, on a phone-width window', async () => {
    const all = await devDaemon({ auth: 'all' });
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 } });
    phone.setDefaultTimeout(5000);
    const seen = watch(phone);
    try {
      ok(await all.post('/nodes/register'));
      const allUrl = await all.app.listen({ port: 0, host: '127.0.0.1' });
      await phone.goto(allUrl);
      const banner = phone.locator('#banner', { hasText: 'this request needs the API token' });
      await banner.waitFor();
      await banner.getByRole('button', { name: 'Enter the API token' }).click();
      await phone.locator('#token-input').fill(readFileSync(join(all.dir, TOKEN_FILE), 'utf8').trim());
      await phone.keyboard.press('Enter');
      await phone.getByRole('heading', { name: 'Node 1' }).waitFor();
      await phone.locator('#live', { hasText: 'live' }).waitFor();
      assert.equal(await phone.locator('#banner').isHidden(), true);
      // Nothing wider than the window.
      const overflow = await phone.evaluate<number>(
        'document.documentElement.scrollWidth - window.innerWidth',
      );
      assert.ok(overflow <= 0, `the page is ${overflow} px wider than the window`);
      assert.deepEqual(
        seen.filter((e) => !/status of 401/.test(e)),
        [],
        'only the reads refused before the token was given',
      );
    } finally {
      await phone.close();
      await all.close();
    }
  });
});
