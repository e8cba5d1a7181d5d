import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { type AtomaStateDatabase, createAtomaState } from './helpers/atoma-state.ts';
import { browserAvailable, launchBrowser } from './helpers/browser.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';
import { postgresAvailable } from './helpers/postgres.ts';

/**
 * The console beside a real atoma-node, in real headless Chromium: the operator's configured node first,
 * and where usage comes from (atoma-state, a real PostgreSQL database laid out like atoma-node's).
 */
describe('the console beside atoma-node', () => {
  if (!browserAvailable('console beside atoma-node')) return;
  let browser: Browser;
  let d: DevDaemon;
  let url: string;
  let atoma: AtomaStateDatabase | undefined;

  before(async () => {
    atoma = (await postgresAvailable()) ? await createAtomaState() : undefined;
    const source: Record<string, string> = atoma
      ? { 'usage-source': 'atoma-state', 'atoma-state-url': atoma.url, 'usage-poll-interval': '0.1' }
      : {};
    [browser, d] = await Promise.all([launchBrowser(), devDaemon({ 'node-small-ids': '9,4', ...source })]);
    // The signer owns a badge too (node 1): the configured nodes still come first.
    const registered = await d.post('/nodes/register');
    if (registered.statusCode !== 200) throw new Error(registered.body);
    url = await d.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await browser?.close();
    await d?.close();
    await atoma?.drop();
  });

  it('opens on the first configured node, and lists the configured ones, then the badges', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(5000);
    await page.goto(url);
    await page.getByRole('heading', { name: 'Node 9' }).waitFor();
    const options = await page
      .locator('#node-select option')
      .evaluateAll((all) => all.map((o) => `${o.getAttribute('value')}: ${o.textContent}`));
    if (
      options.length !== 3 ||
      options[0] !== '9: 9 (configured)' ||
      options[1] !== '4: 4 (configured)' ||
      !/^1: 1 \(badge 0x[0-9a-f]+…?[0-9a-f]*\)$/.test(options[2] ?? '')
    ) {
      throw new Error(`unexpected node choices: ${JSON.stringify(options)}`);
    }
    // A node asked for in the address still wins.
    const other = await browser.newPage();
    await other.goto(`${url}/?node=4`);
    await other.getByRole('heading', { name: 'Node 4' }).waitFor();
  });

  it('names the usage source and its state on the overview', async (t) => {
    if (!atoma) return t.skip('PostgreSQL is not reachable: no atoma-state database');
    const page = await browser.newPage();
    page.setDefaultTimeout(5000);
    await page.goto(url);
    await page.getByTestId('usage-source').getByText('atoma-state: connected').waitFor();
    const card = page.getByRole('article', { name: 'Indexer' });
    await card.getByText('Stacks followed').waitFor();
    const location = await card.locator('code').first().textContent();
    if (!location?.includes(new URL(atoma.url).pathname)) {
      throw new Error(`the usage source's database is not named: ${location}`);
    }
  });
});
