// A Redis that accepts connections and never answers (or sits behind a partition) used to hang every
// authenticated request, as each waited on the rate limiter. Every Redis command has a deadline now, and
// the limiter fails open: each server limits on its own, logs a warning and counts the failure.
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';

describe('a Redis that never answers', () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  let server: TestServer;
  let user: TestUser;
  const lines: { level: number; msg: string }[] = [];

  beforeAll(async () => {
    silent = createServer((socket) => {
      // Reads and never writes: connections succeed, commands never get an answer.
      sockets.add(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
        done();
      },
    });
    server = await startTestServer({ env: { REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_COMMAND_TIMEOUT_MS: '200' }, logger: pino({ level: 'warn' }, stream) });
    user = await server.signUp();
  });
  afterAll(async () => {
    await server?.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent?.close(() => resolve()));
  });

  it('answers authenticated requests, rate-limited per server, and says so in the log and the metrics', async () => {
    for (let i = 0; i < 3; i++) {
      const answer = await fetch(`${server.url}/v1/agents`, { headers: { Authorization: `Bearer ${user.apiKey}` } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('ratelimit')).toBeTruthy();
    }
    expect(lines.some((line) => line.level === 40 && /Redis/.test(line.msg))).toBe(true);
    const metrics = await server.services.metrics.render();
    expect(metrics).toMatch(/^rate_limit_store_failures_total [1-9]/m);
  });
});
