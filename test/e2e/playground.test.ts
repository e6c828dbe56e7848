// The playground in the system Chromium against the real server (`node server/main.ts`, embedded PGlite,
// the offline local model), with every request off this machine refused: a person signs in with the
// link a development server shows, makes an agent with a client-side tool, chats (the answer streams in),
// answers the tool's request in the page, sees the final answer and replays the run. Each step leaves a
// screenshot in test/e2e/output/playground/.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../generated/openapi.gen.ts';
import { freePort } from '../../server/testing/processes.ts';
import { expectNoTrouble, launchChromium, offlineContext, type Trouble } from './browser.ts';
import { runScript, startServerProcess, type ServerProcess } from './server-process.ts';

const output = fileURLToPath(new URL('./output/playground/', import.meta.url));
const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-playground-'));

let server: ServerProcess;
let browser: Browser;
let context: BrowserContext;
let trouble: Trouble;
let page: Page;
let shot = 0;

/** A screenshot of the page as it is now, numbered in the order of the steps. */
async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(output, `${String(++shot).padStart(2, '0')}-${name}.png`) });
}

beforeAll(async () => {
  rmSync(output, { recursive: true, force: true });
  mkdirSync(output, { recursive: true });
  // The database is made (initdb, migrations) by a first process, as the conformance suite does: the
  // server's own start then stays well within its time limit on a busy machine. The key goes unused: the
  // person in this test signs in by link.
  await runScript('scripts/create-key.ts', ['--email', 'seed@example.com'], { DATA_DIR: dataDir });
  const port = await freePort();
  // PUBLIC_URL is the page's own origin, so that the sign-in link may come back to it. Slow tokens make
  // the streaming visible to the test (and to its screenshots).
  server = await startServerProcess({ PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, DATA_DIR: dataDir, LOCAL_MODEL_TOKEN_DELAY_MS: '25' });
  browser = await launchChromium();
  ({ context, trouble } = await offlineContext(browser, { viewport: { width: 1280, height: 800 } }));
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
});

afterAll(async () => {
  await browser?.close();
  await server?.kill();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the playground', () => {
  it('is served with its assets and says where it is', async () => {
    expect(server.logs.some((line) => line.includes(`"playground":"${server.url}/playground/"`))).toBe(true);
    const response = await page.goto(`${server.url}/playground`);
    expect(response?.status()).toBe(200);
    expect(page.url()).toBe(`${server.url}/playground/`);
    await page.getByRole('heading', { name: 'Open Agent API playground' }).waitFor();
    await screenshot('sign-in');
  });

  it("shows the API's error message for a key it refuses", async () => {
    const refused = (await (await fetch(`${server.url}/v1/account`, { headers: { Authorization: 'Bearer oaa_not_a_key' } })).json()) as components['schemas']['Error'];
    await page.getByLabel('API key', { exact: true }).fill('oaa_not_a_key');
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('alert').filter({ hasText: refused.error.message }).waitFor();
    await screenshot('refused-key');
  });

  it('signs in with the link a development server shows', async () => {
    await page.getByLabel('Email', { exact: true }).fill('ada@example.com');
    await page.getByLabel('Email', { exact: true }).press('Enter');
    const link = page.getByRole('link', { name: 'Open the sign-in link' });
    await link.waitFor();
    expect(await link.getAttribute('href')).toMatch(new RegExp(`^${server.url}/v1/auth/magic-link/verify\\?token=mlt_`));
    await screenshot('dev-link');
    await link.click();
    await page.getByRole('heading', { name: 'Chat', exact: true }).waitFor();
    // The token came in the fragment, was kept, and left the address bar.
    expect(page.url()).toBe(`${server.url}/playground/#/chat`);
    await page.getByText('ada@example.com').waitFor();
  });

  it('creates an agent with a client-side tool', async () => {
    await page.getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('link', { name: 'New agent' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Weather');
    await page.getByLabel('Model', { exact: true }).selectOption('local');
    await page.getByLabel('Instructions', { exact: true }).fill('Answer about the weather.');
    await page.getByRole('button', { name: 'Add a client tool' }).click();
    await page.getByLabel('Tool 1 name').fill('get_weather');
    await page.getByLabel('Tool 1 description').fill('Current weather for a city.');
    // The editor starts the parameters with a schema of one required string, `city`.
    expect(JSON.parse(await page.getByLabel('Tool 1 parameters (JSON Schema)').inputValue())).toMatchObject({ properties: { city: { type: 'string' } }, required: ['city'] });
    await screenshot('new-agent');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('heading', { name: 'Edit Weather' }).waitFor();
  });

  it('chats: the answer streams in, token by token', async () => {
    await page.getByRole('main').getByRole('link', { name: 'Chat', exact: true }).click();
    const composer = page.getByLabel('Message Weather');
    await composer.waitFor();
    // Every text the answer shows, as the page renders it.
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      new MutationObserver(() => {
        const text = document.querySelector('.message.assistant .text')?.textContent;
        if (text && seen.at(-1) !== text) seen.push(text);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    const words = 'the quick brown fox jumps over the lazy dog while the playground watches every token arrive';
    await composer.fill(words);
    await composer.press('Enter');
    await page.locator('.message.assistant[aria-busy="true"]').waitFor();
    await screenshot('streaming');
    await page.getByRole('link', { name: 'Replay this run' }).waitFor();
    await expect.poll(() => page.locator('.message.assistant .text').first().textContent()).toBe(words);
    const seen = await page.evaluate(() => (window as unknown as { seen: string[] }).seen);
    // The answer grew in place: some partial texts, each a start of the next, before the whole.
    expect(seen.at(-1)).toBe(words);
    expect(seen.length).toBeGreaterThan(2);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.startsWith(seen[i - 1]!)).toBe(true);
    await screenshot('answered');
  });

  it('answers the tool request in the page, with a form built from its parameters', async () => {
    const composer = page.getByLabel('Message Weather');
    await composer.fill('get_weather {"city": "Paris"}');
    await composer.press('Enter');
    const result = page.getByLabel('Result of get_weather');
    await result.waitFor();
    // The call's arguments as the form's fields, read-only; the result field has the focus.
    const city = page.getByRole('form', { name: 'Client-side tool request' }).getByLabel(/^city/);
    expect(await city.inputValue()).toBe('Paris');
    expect(await city.getAttribute('readonly')).not.toBeNull();
    await expect.poll(() => result.evaluate((element) => element === document.activeElement)).toBe(true);
    expect(await page.getByRole('button', { name: 'Send', exact: true }).isDisabled()).toBe(true);
    await screenshot('tool-request');

    await page.keyboard.type('{"temperature_c": 18, "sky": "clear"}');
    await page.getByRole('button', { name: 'Send the result' }).click();
    const answer = page.locator('.message.assistant .text').filter({ hasText: 'get_weather returned' });
    await answer.waitFor();
    await page.getByRole('link', { name: 'Replay this run' }).waitFor();
    expect(await answer.textContent()).toBe('get_weather returned: {"temperature_c":18,"sky":"clear"}.');
    const card = page.locator('.tool-card').filter({ hasText: 'get_weather' });
    expect(await card.locator('.tool-state').textContent()).toBe('done');
    await screenshot('tool-answered');
  });

  it("replays the run's events on a timeline", async () => {
    await page.getByRole('link', { name: 'Replay this run' }).click();
    await page.getByRole('heading', { name: /^Replay of run_/ }).waitFor();
    const runId = decodeURIComponent(page.url().split('#/runs/')[1]!);
    const stored = await page.evaluate(async (id) => {
      const credential = JSON.parse(localStorage.getItem('open-agent-api.playground.credential')!) as { token: string };
      const response = await fetch(`/v1/runs/${id}/events?limit=100`, { headers: { Authorization: `Bearer ${credential.token}`, Accept: 'application/json' } });
      return ((await response.json()) as { data: { type: string }[] }).data.map((event) => event.type);
    }, runId);
    const timeline = page.getByRole('list', { name: 'Events' }).locator('.type');
    expect(await timeline.allTextContents()).toEqual(stored);
    expect(stored).toEqual(expect.arrayContaining(['RunStarted', 'ToolRequest', 'RunCompleted']));

    await page.getByRole('button', { name: 'Start', exact: true }).click();
    expect(await page.locator('.replay .transcript').getByText('get_weather returned').count()).toBe(0);
    await page.getByRole('button', { name: 'Play', exact: true }).click();
    await page.locator('.replay .transcript').getByText('get_weather returned: {"temperature_c":18,"sky":"clear"}.').waitFor();
    await page.getByText(`Event ${stored.length} of ${stored.length}`).waitFor();
    await screenshot('replay');
  });

  it('lists the session with its runs', async () => {
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('link', { name: 'the quick brown fox jumps over the lazy dog' }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    expect(await page.getByRole('link', { name: /^Replay run run_/ }).count()).toBe(2);
    await screenshot('session');
  });

  it('fits a phone-sized window, with the navigation behind a menu', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.url}/playground/#/chat`);
    await page.getByRole('link', { name: 'Weather' }).click();
    const composer = page.getByLabel('Message Weather');
    await composer.fill('hello from a phone');
    await composer.press('Enter');
    await page.getByRole('link', { name: 'Replay this run' }).waitFor();
    // The composer stays in the window, under the answer.
    const box = await composer.boundingBox();
    expect(box!.y + box!.height).toBeLessThanOrEqual(844);
    await page.getByText('hello from a phone').last().waitFor();
    await screenshot('phone-chat');
    const menu = page.getByRole('button', { name: 'Menu' });
    expect(await page.getByRole('navigation', { name: 'Playground' }).isVisible()).toBe(false);
    await menu.click();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await page.getByRole('navigation', { name: 'Playground' }).getByRole('link', { name: 'Usage' }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, 'the page scrolls sideways').toBe(0);
    await screenshot('phone-menu');
  });

  it('ran into no trouble: nothing left localhost, nothing failed, no console errors or CSP refusals', () => {
    // The refused key's 401 is the only error the console may show: Chromium logs failed fetches.
    trouble.errors = trouble.errors.filter((error) => !/401 \(Unauthorized\)/.test(error));
    expectNoTrouble(trouble);
  });
});
