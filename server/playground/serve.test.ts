// The playground as the server serves it: one page and its two assets at /playground/, exactly the
// build of playground/src, under a CSP that allows nothing inline and nothing from elsewhere.
import { get } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPlayground, sizeReport } from '../../scripts/build-playground.ts';
import { startTestServer, type TestServer } from '../testing/harness.ts';
import { playgroundCsp } from './serve.ts';

describe('the playground', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  const rawStatus = (path: string) =>
    new Promise<number>((resolve, reject) => {
      const { hostname, port } = new URL(server.url);
      get({ hostname, port, path }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });

  it('serves the page at /playground/ (and sends /playground there) under its own CSP', async () => {
    const bare = await fetch(`${server.url}/playground?x=1`, { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe('/playground/?x=1');

    const page = await fetch(`${server.url}/playground/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe(playgroundCsp);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const html = await page.text();
    expect(html).toMatch(/<script type="module" src="\.\/app\.js\?v=[0-9a-f]{12}"><\/script>/);
    expect(html).toMatch(/<link rel="stylesheet" href="\.\/app\.css\?v=[0-9a-f]{12}">/);
    // Nothing inline for the CSP to refuse, and nothing from another origin.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|\son[a-z]+=|https?:\/\//i);
  });

  it('serves exactly what scripts/build-playground.ts builds from playground/src', async () => {
    for (const file of await buildPlayground()) {
      const served = await fetch(`${server.url}/playground/${file.name}`);
      expect(served.status, file.name).toBe(200);
      expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(file.contents)), `${file.name} is stale: run npm run playground`).toBe(true);
    }
    expect((await fetch(`${server.url}/playground/app.js`)).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await fetch(`${server.url}/playground/app.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('reports the bundle size, raw and gzipped', async () => {
    const report = sizeReport(await buildPlayground());
    expect(report).toMatch(/^ {2}app\.js +[\d.]+ KiB +[\d.]+ KiB gzipped$/m);
    expect(report).toMatch(/^playground: [\d.]+ KiB \([\d.]+ KiB gzipped\)$/m);
  });

  it('answers the API error envelope for a file it does not have, and leaves the rest of the server alone', async () => {
    const missing = await fetch(`${server.url}/playground/nothing.js`);
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.code).toBe('not_found');
    // Sent as written (fetch would fold the dot-segments first): nothing outside playground/dist comes out.
    for (const path of ['/playground/../package.json', '/playground/%2e%2e/package.json', '/playground/..%2fpackage.json', '/playground/%2e%2e%2f%2e%2e%2fpackage.json', '/playground/.gitignore']) {
      expect(await rawStatus(path), path).toBe(404);
    }
    // Helmet's CSP still covers everything else.
    expect((await fetch(`${server.url}/health`)).headers.get('content-security-policy')).toContain('upgrade-insecure-requests');
  });
});
