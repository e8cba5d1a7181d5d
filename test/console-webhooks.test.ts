import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { TOKEN_FILE } from '../src/http/security.ts';
import { browserAvailable, launchBrowser } from './helpers/browser.ts';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';
import { Receiver } from './helpers/webhook-receiver.ts';

/** The console's Webhooks view in real headless Chromium, against a dev daemon and a local receiver. */
describe('the console: webhooks', () => {
  if (!browserAvailable('console webhooks in Chromium')) return;
  let browser: Browser;
  let d: DevDaemon;
  let page: Page;
  let url: string;
  const receiver = new Receiver();
  const errors: string[] = [];

  before(async () => {
    [browser, d] = await Promise.all([launchBrowser(), devDaemon()]);
    await receiver.listen();
    url = await d.app.listen({ port: 0, host: '127.0.0.1' });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(5000);
    page.on('pageerror', (error) => errors.push(String(error)));
  });
  after(async () => {
    await browser?.close();
    await d?.close();
    await receiver.down();
  });

  it('asks for the token, adds an endpoint showing its secret once, tests it and shows the delivery', async () => {
    await page.goto(`${url}/#webhooks`);
    // GET /webhooks needs the token even under --auth writes: the view asks for it first.
    await page.locator('#token-dialog[open]').waitFor();
    await page.locator('#token-input').fill(readFileSync(join(d.dir, TOKEN_FILE), 'utf8').trim());
    await page.keyboard.press('Enter');
    await page.locator('#view-webhooks', { hasText: 'No endpoint yet' }).waitFor();

    await page.locator('#hook-url').fill(receiver.url);
    await page.locator('#hook-types').fill('dispute_opened, task_added');
    await page.locator('#hook-description').fill('phone');
    await page.locator('[data-key="hook-add"]').click();
    const secret = (await page.locator('[data-key="hook-secret"]').textContent()) ?? '';
    assert.match(secret, /^whsec_/);
    receiver.secret = secret;
    const row = page.locator('#view-webhooks tr', { hasText: receiver.url });
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /enabled.*dispute_opened, task_added.*phone/);

    await page.locator('[data-key="hook-test-1"]').click();
    const [got] = await receiver.waitFor(1);
    assert.ok(got!.verified, got!.problem);
    assert.equal(got!.json.type, 'webhook.test');
    // The deliveries table shows the answer once it is recorded.
    for (let i = 0; i < 50; i++) {
      await page.locator('[data-key="hook-deliveries-1"]').click();
      if ((await page.locator('#view-webhooks', { hasText: 'delivered' }).count()) > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const delivery = page.locator('#view-webhooks tr', { hasText: 'webhook.test' });
    assert.match((await delivery.textContent()) ?? '', /testwebhook\.testdelivered1200/);

    // Reloaded, the list never shows the secret again.
    await page.reload();
    await row.waitFor();
    assert.equal(await page.locator('#view-webhooks', { hasText: secret }).count(), 0);
    assert.deepEqual(errors, []);
  });
});
