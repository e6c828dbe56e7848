// Mail that cannot be sent: an SMTP server that refuses connections used to answer 500 at once, and one
// that accepts and never answers, 500 after 30 s. Both are 503 with the envelope now, within the SMTP
// deadline, logged as a mail failure. And a sign-in cannot be locked out by someone else asking for links
// to the same address: the per-address limit counts each requester apart.
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.ts';

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function capture() {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      done();
    },
  });
  return { lines, logger: pino({ level: 'warn' }, stream) };
}

const requestLink = (server: TestServer, email: string, from = '203.0.113.1') =>
  fetch(`${server.url}/v1/auth/magic-link`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': from },
    body: JSON.stringify({ email }),
  });

describe('mail that cannot be sent', () => {
  const sockets = new Set<Socket>();
  let silent: Server;
  let refusing: TestServer;
  let hanging: TestServer;
  const refusingLog = capture();
  const hangingLog = capture();

  beforeAll(async () => {
    // A port that was just free: nothing listens there, so connections are refused.
    const probe = createServer();
    const closedPort = await listen(probe);
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.resume();
    });
    const silentPort = await listen(silent);
    const env = { NODE_ENV: 'production', SMTP_TIMEOUT_MS: '300', TRUST_PROXY: 'true' };
    refusing = await startTestServer({ env: { ...env, SMTP_URL: `smtp://127.0.0.1:${closedPort}` }, logger: refusingLog.logger });
    hanging = await startTestServer({ env: { ...env, SMTP_URL: `smtp://127.0.0.1:${silentPort}` }, logger: hangingLog.logger });
  });
  afterAll(async () => {
    await refusing?.close();
    await hanging?.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent?.close(() => resolve()));
  });

  it.each([
    ['refuses connections', () => refusing, refusingLog],
    ['never answers', () => hanging, hangingLog],
  ])('answers 503 when the SMTP server %s, and logs what failed', async (_what, server, log) => {
    const answer = await requestLink(server(), 'someone@example.com');
    const body = (await answer.json()) as { error: { code: string; message: string } };
    expect(answer.status).toBe(503);
    expect(body.error.code).toBe('service_unavailable');
    expect(body.error.message).toMatch(/mail/i);
    expect(log.lines.some((line) => line.level >= 50 && /mail/i.test(line.msg))).toBe(true);
  });
});

describe('magic-link limits', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ env: { TRUST_PROXY: 'true' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('limits the requester: five requests for an address from elsewhere do not lock its owner out', async () => {
    for (let i = 0; i < 5; i++) expect((await requestLink(server, 'victim@example.com', '198.51.100.7')).status).toBe(202);
    const attacker = await requestLink(server, 'victim@example.com', '198.51.100.7');
    expect(attacker.status).toBe(429);
    expect((await requestLink(server, 'victim@example.com', '192.0.2.44')).status).toBe(202);
  });
});
