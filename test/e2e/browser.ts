// The system Chromium, headless, for the suites that drive pages (docs, playground): every request that
// leaves localhost is refused, and what went wrong on the page (refused or failed requests, console
// errors, uncaught exceptions, CSP violations) is collected for the test to assert on.
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const chromiumPath = '/usr/bin/chromium';
const localHosts = new Set(['127.0.0.1', 'localhost', '[::1]']);

export interface Trouble {
  /** Requests the route refused because they were headed off this machine. */
  blocked: string[];
  /** Requests that failed for any other reason (refused ones show up here too, so they are filtered out). */
  failed: string[];
  /** Console errors and uncaught exceptions. CSP refusals land here as well. */
  errors: string[];
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `${chromiumPath} is missing; this test drives the system Chromium. Install it with \`apt-get install -y chromium\` (CI does).`,
    );
  }
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A fresh context whose requests may only reach this machine, and the trouble it runs into. */
export async function offlineContext(browser: Browser, options: { viewport?: { width: number; height: number } } = {}): Promise<{ context: BrowserContext; trouble: Trouble }> {
  const trouble: Trouble = { blocked: [], failed: [], errors: [] };
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1400, height: 900 } });
  await context.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'data:' || url.protocol === 'blob:' || localHosts.has(url.host.replace(/:\d+$/, ''))) {
      await route.continue();
      return;
    }
    trouble.blocked.push(url.href);
    await route.abort('blockedbyclient');
  });
  context.on('page', (page) => watch(page, trouble));
  return { context, trouble };
}

function watch(page: Page, trouble: Trouble): void {
  page.on('console', (message) => {
    // Warnings are noise (ReDoc's sample generator musing about allOf); only errors mean something broke.
    if (message.type() === 'error') trouble.errors.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => trouble.errors.push(`uncaught: ${error.message}`));
  page.on('requestfailed', (request) => {
    if (!trouble.blocked.includes(request.url())) {
      trouble.failed.push(`${request.url()}: ${request.failure()?.errorText ?? 'unknown'}`);
    }
  });
}

export function expectNoTrouble(trouble: Trouble): void {
  expect(trouble.blocked, 'requests that tried to leave localhost').toEqual([]);
  expect(trouble.failed, 'failed requests').toEqual([]);
  expect(trouble.errors, 'console errors').toEqual([]);
}
