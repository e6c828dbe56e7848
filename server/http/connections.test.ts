// Silent connections are dropped; a connection that speaks is left to Node's own limits, however long
// its request takes.
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerClientErrors, dropSilentConnections } from './connections.ts';

describe('silent connections', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((req, res) => {
      // Answers after longer than the silence deadline, as a blocking chat would.
      setTimeout(() => res.end('done'), 600);
    });
    dropSilentConnections(server, 200);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const open = () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket));
      socket.once('error', reject);
    });
  const closed = (socket: Socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));

  it('closes a connection that never sends a byte', async () => {
    const socket = await open();
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    await closed(socket);
    expect(received).toBe('');
    expect(socket.destroyed).toBe(true);
  });

  it('closes a connection that starts a request and never finishes its headers', async () => {
    const socket = await open();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
    await closed(socket);
    expect(socket.destroyed).toBe(true);
  });

  it('leaves a connection that sent its request open until the answer, past the deadline', async () => {
    const socket = await open();
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await closed(socket);
    expect(received).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(received).toMatch(/done$/);
  });
});

describe('requests Node refuses before the app', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((_req, res) => res.end('ok'));
    answerClientErrors(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const exchange = (text: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(text));
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
  const parsed = (answer: string) => {
    const [head, body] = answer.split('\r\n\r\n');
    return { statusLine: head!.split('\r\n')[0], head: head!, body: JSON.parse(body!) as { error: { code: string; type: string; request_id: string } } };
  };

  it('answers headers past the limit with 431 and the envelope', async () => {
    const answer = parsed(await exchange(`GET /v1/agents?after=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
    expect(answer.statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(answer.head).toMatch(/content-type: application\/json/i);
    expect(answer.body.error).toMatchObject({ code: 'headers_too_large', type: 'invalid_request_error', request_id: expect.stringMatching(/^req_/) });
  });

  it('answers a request line that does not parse with 400 and the envelope', async () => {
    const answer = parsed(await exchange('NOT HTTP AT ALL\r\n\r\n'));
    expect(answer.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(answer.body.error.code).toBe('invalid_request');
  });
});
