import { existsSync } from 'node:fs';
import { it } from 'node:test';
import { type Browser, chromium } from 'playwright-core';

/**
 * Real headless Chromium for the console's tests: Debian's chromium package (apt-get install chromium),
 * driven by playwright-core, which downloads no browser of its own. NODE_DAEMON_CHROMIUM names another
 * executable.
 */
export const CHROMIUM = process.env.NODE_DAEMON_CHROMIUM || '/usr/bin/chromium';
/** CI sets it, so a browser suite that cannot run fails instead of skipping. */
const REQUIRED = process.env.NODE_DAEMON_REQUIRE_BROWSER === '1';

/**
 * Whether the browser suite can run. Without Chromium it says so plainly and registers a skipped test,
 * or, with NODE_DAEMON_REQUIRE_BROWSER=1, a failing one; the caller then registers nothing.
 */
export function browserAvailable(suite = 'browser suite'): boolean {
  if (existsSync(CHROMIUM)) return true;
  const message = `Chromium not found at ${CHROMIUM} (apt-get install chromium): skipping the ${suite}`;
  if (REQUIRED) {
    it(suite, () => {
      throw new Error(`${message} is not allowed: NODE_DAEMON_REQUIRE_BROWSER=1`);
    });
  } else {
    console.log(message);
    it(suite, { skip: message }, () => undefined);
  }
  return false;
}

/** Launches headless Chromium with a fresh profile, nothing in the background, no sandbox (CI runs as root). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}
