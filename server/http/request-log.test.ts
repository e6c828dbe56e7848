// One line per request in pino-http's shape, without query strings or headers, and `req.log` bound to the
// request when a handler logs.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../logger.ts';
import { requestLog } from './request-log.ts';

let close: (() => void) | undefined;
afterEach(() => close?.());

async function start() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const app = express();
  app.use((req, _res, next) => {
    req.id = 'req_test';
    next();
  });
  app.use(requestLog(app, logger));
  app.get('/ok', (req, res) => {
    req.log.warn({ detail: 1 }, 'from the handler');
    res.json({ ok: true });
  });
  app.get('/quiet', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/fail', (_req, res) => {
    res.status(502).json({});
  });
  app.get('/hang', () => undefined);
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  close = () => {
    server.closeAllConnections();
    server.close();
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, lines };
}

describe('requestLog', () => {
  it('logs each request once, by id, method and path, and binds req.log to it', async () => {
    const { url, lines } = await start();
    await (await fetch(`${url}/ok?key=sk-secret`, { headers: { authorization: 'Bearer sk-secret' } })).text();
    await expect.poll(() => lines.length).toBe(2);
    expect(lines[0]).toMatchObject({ level: 40, req: { id: 'req_test', method: 'GET', path: '/ok' }, detail: 1, msg: 'from the handler' });
    expect(lines[1]).toMatchObject({ level: 30, req: { id: 'req_test', method: 'GET', path: '/ok' }, res: { status: 200 }, msg: 'request completed' });
    expect(lines[1]!.responseTime).toBeTypeOf('number');
    expect(JSON.stringify(lines)).not.toContain('sk-secret');
  });

  it('says when a request failed or its client left', async () => {
    const { url, lines } = await start();
    await (await fetch(`${url}/quiet`)).text();
    await (await fetch(`${url}/fail`)).text();
    const controller = new AbortController();
    const hanging = fetch(`${url}/hang`, { signal: controller.signal }).catch(() => undefined);
    setTimeout(() => controller.abort(), 50);
    await hanging;
    await expect.poll(() => lines.length).toBe(3);
    expect(lines.map((line) => [line.msg, (line.res as { status: number }).status])).toEqual([
      ['request completed', 200],
      ['request errored', 502],
      ['request aborted', 200],
    ]);
    expect(lines[1]!.err).toMatchObject({ message: 'failed with status code 502' });
  });
});
