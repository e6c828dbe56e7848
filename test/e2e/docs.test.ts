// Builds the offline docs, serves them with scripts/serve-docs.ts and drives both pages in the system
// Chromium with every request outside localhost refused, proving the pages need nothing from the internet.
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildDocs } from '../../scripts/build-docs.ts';
import { listOperations } from '../../scripts/contract.ts';
import { startDocsServer } from '../../scripts/serve-docs.ts';
import { expectNoTrouble, launchChromium, offlineContext, type Trouble } from './browser.ts';

let tempDir: string;
let server: Server;
let base: string;
let browser: Browser;
let context: BrowserContext;
let trouble: Trouble;

const operations = listOperations();
// ReDoc takes a few seconds to lay out a contract this size; vitest's poll default of one second is too short.
const patiently = { timeout: 30_000 };

beforeAll(async () => {
  tempDir = await mkdtemp(join(tmpdir(), 'oaa-docs-'));
  const docsRoot = join(tempDir, 'docs');
  await buildDocs({ outDir: docsRoot });
  // Something worth stealing just outside the served folder, and a link inside it that points there.
  await writeFile(join(tempDir, 'secret.txt'), 'not for the web\n');
  await symlink(join(tempDir, 'secret.txt'), join(docsRoot, 'redoc', 'leak.txt'));
  server = await startDocsServer(0, { root: docsRoot });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  if (server) {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
});

async function newContext(): Promise<void> {
  ({ context, trouble } = await offlineContext(browser));
}

afterEach(async () => {
  await context?.close();
});

async function open(path: string): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  const response = await page.goto(base + path);
  expect(response?.status()).toBe(200);
  return page;
}

/** How far the top of a ReDoc section is from the top of the viewport, once the deep link has scrolled. */
async function sectionOffset(page: Page, sectionId: string): Promise<number> {
  const section = page.locator(`[data-section-id="${sectionId}"]`).first();
  await section.waitFor({ state: 'attached' });
  // ReDoc scrolls after it renders; poll until the jump has happened.
  await expect.poll(async () => page.evaluate(() => window.scrollY), patiently).toBeGreaterThan(0);
  const box = await section.boundingBox();
  return box?.y ?? Number.POSITIVE_INFINITY;
}

describe('ReDoc page', () => {
  it('renders every operation from the contract without leaving localhost', async () => {
    await newContext();
    const page = await open('/redoc/index.html');
    await page.locator('h2', { hasText: 'Create an agent' }).first().waitFor({ state: 'attached' });
    expect(await page.title()).toBe('Open Agent API 0.1.0 — API reference');

    await expect.poll(() => page.locator('h2', { hasText: 'Chat with an agent' }).count(), patiently).toBeGreaterThan(0);
    const headings = (await page.locator('h2').allTextContents()).map((text) => text.trim());
    const missing = operations.filter((op) => !headings.some((h) => h.includes(op.summary))).map((op) => op.operationId);
    expect(missing, 'operations without a heading').toEqual([]);

    // The attribution keeps its text, but its logo must not come from cdn.redoc.ly.
    await expect.poll(() => page.getByText('API docs by Redocly').count(), patiently).toBe(1);
    expect(await page.locator('img[src^="http"]').count()).toBe(0);

    // Search runs in a blob: worker, which the page's CSP has to allow.
    await page.getByPlaceholder('Search...').fill('chat with');
    const results = page.locator('[data-role="search:results"]');
    await expect.poll(() => results.getByText('Chat with an agent').count(), patiently).toBeGreaterThan(0);

    expectNoTrouble(trouble);
  });

  // Each link loads the page afresh (ReDoc reads the fragment once it has rendered), so this one is slow.
  it('follows operation, tag, section and schema deep links', { timeout: 240_000 }, async () => {
    await newContext();
    for (const fragment of ['#tag/Agents/operation/createAgent', '#tag/API-Keys', '#section/Authentication', '#schema/Agent']) {
      const page = await open(`/redoc/index.html${fragment}`);
      const offset = await sectionOffset(page, fragment.slice(1));
      expect(Math.abs(offset), `${fragment} scrolled into view`).toBeLessThan(100);
      await page.close();
    }
    // The short form is accepted and rewritten to the canonical one.
    const page = await open('/redoc/index.html#operation/createAgent');
    await expect.poll(() => page.evaluate(() => location.hash), patiently).toBe('#tag/Agents/operation/createAgent');
    expectNoTrouble(trouble);
  });
});

describe('Swagger UI page', () => {
  it('renders every operation from the contract without leaving localhost', async () => {
    await newContext();
    const page = await open('/swagger-ui/index.html');
    await page.locator('.opblock').first().waitFor();
    expect(await page.title()).toBe('Open Agent API 0.1.0 — Swagger UI');

    const ids = await page.locator('.opblock[id]').evaluateAll((blocks) => blocks.map((b) => b.id));
    const missing = operations.filter((op) => !ids.some((id) => id.endsWith(`-${op.operationId}`))).map((op) => op.operationId);
    expect(missing, 'operations without a block').toEqual([]);

    const createAgent = page.locator('#operations-Agents-createAgent');
    await expect.poll(() => createAgent.locator('.opblock-summary-path').textContent(), patiently).toBe('/v1/agents');
    await expect.poll(() => createAgent.locator('.opblock-summary-operation-id').textContent(), patiently).toBe('createAgent');

    expect(await page.locator('.errors-wrapper').count(), 'spec errors shown by Swagger UI').toBe(0);
    expect(await page.locator('img[src*="validator"]').count(), 'validator badge').toBe(0);
    expectNoTrouble(trouble);
  });

  it('opens the operation a deep link names', async () => {
    await newContext();
    const page = await open('/swagger-ui/index.html#/Agents/createAgent');
    const block = page.locator('#operations-Agents-createAgent');
    await block.locator('.opblock-body').waitFor();
    expect(await block.getAttribute('class')).toContain('is-open');
    expect(await page.locator('.opblock.is-open').count()).toBe(1);
    await expect.poll(async () => {
      const y = (await block.boundingBox())?.y;
      return y !== undefined && y > -5 && y < 100;
    }, { ...patiently, message: 'the opened operation is scrolled to the top' }).toBe(true);

    // Tags with spaces are written with %20.
    const keys = await open('/swagger-ui/index.html#/API%20Keys/createApiKey');
    await keys.locator('#operations-API_Keys-createApiKey .opblock-body').waitFor();
    expectNoTrouble(trouble);
  });
});

describe('docs server', () => {
  /** A GET with the path sent exactly as written; fetch would fold the dot-segments first. */
  function rawGet(path: string): Promise<{ status: number; type: string | undefined; location: string | undefined }> {
    return new Promise((done, fail) => {
      const { hostname, port } = new URL(base);
      get({ hostname, port, path }, (res) => {
        res.resume();
        done({ status: res.statusCode ?? 0, type: res.headers['content-type'], location: res.headers.location });
      }).on('error', fail);
    });
  }

  it('serves the pages and their assets with the right content types', async () => {
    expect(await rawGet('/redoc/index.html')).toMatchObject({ status: 200, type: 'text/html; charset=utf-8' });
    expect(await rawGet('/redoc/')).toMatchObject({ status: 200, type: 'text/html; charset=utf-8' });
    expect(await rawGet('/redoc/redoc.standalone.js')).toMatchObject({ status: 200, type: 'text/javascript; charset=utf-8' });
    expect(await rawGet('/swagger-ui/swagger-ui.css')).toMatchObject({ status: 200, type: 'text/css; charset=utf-8' });
    expect(await rawGet('/swagger-ui/openapi.json')).toMatchObject({ status: 200, type: 'application/json; charset=utf-8' });
    expect(await rawGet('/swagger-ui/favicon-32x32.png')).toMatchObject({ status: 200, type: 'image/png' });
    expect(await rawGet('/swagger-ui')).toMatchObject({ status: 301, location: '/swagger-ui/' });
    expect(await rawGet('//swagger-ui')).toMatchObject({ status: 301, location: '/swagger-ui/' });
  });

  it('answers 404 for missing files and for paths that leave the docs folder', async () => {
    for (const path of [
      '/redoc/missing.html',
      '/../secret.txt',
      '/redoc/../../secret.txt',
      '/..%2fsecret.txt',
      '/redoc/..%2f..%2fsecret.txt',
      '/%2e%2e%2fsecret.txt',
      '/redoc/leak.txt',
      '/redoc/%00index.html',
    ]) {
      expect((await rawGet(path)).status, path).toBe(404);
    }
  });
});
