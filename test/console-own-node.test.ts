import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserAvailable, launchBrowser } from './helpers/browser.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';

/** The console's default node, in real headless Chromium: the operator's configured node first. */
describe("the console's default node", () => {
  if (!browserAvailable("console's default node")) return;
  let browser: Browser;
  let d: DevDaemon;
  let url: string;

  before(async () => {
    [browser, d] = await Promise.all([launchBrowser(), devDaemon({ 'node-small-ids': '9,4' })]);
    // The signer owns a badge too (node 1): the configured node still comes first.
    const registered = await d.post('/nodes/register');
    if (registered.statusCode !== 200) throw new Error(registered.body);
    url = await d.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await browser?.close();
    await d?.close();
  });

  it('opens on the first configured node, and offers the configured ones beside the badges', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(5000);
    await page.goto(url);
    await page.getByRole('heading', { name: 'Node 9' }).waitFor();
    const options = await page
      .locator('#node-badges option')
      .evaluateAll((all) => all.map((o) => `${o.getAttribute('value')} ${o.textContent}`));
    if (options.length !== 3 || options[0] !== '9 configured node' || options[1] !== '4 configured node') {
      throw new Error(`unexpected node choices: ${JSON.stringify(options)}`);
    }
    // A node asked for in the address still wins.
    const other = await browser.newPage();
    await other.goto(`${url}/?node=4`);
    await other.getByRole('heading', { name: 'Node 4' }).waitFor();
  });
});
