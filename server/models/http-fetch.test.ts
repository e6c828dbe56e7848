// The SDKs' transport against real HTTP servers on loopback: what reaches the server, what comes back,
// streamed bodies, aborts at every stage (the upstream connection must close), failures, compression and
// redirects; and the official SDK on top of it, with its timeout.
import { once } from 'node:events';
import { Agent, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import OpenAI, { APIConnectionTimeoutError, APIUserAbortError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpFetch } from './http-fetch.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** The client's port: the same for requests over one connection. */
  remotePort: number | undefined;
  /** Resolves when the server's side of the connection closes. */
  closed: Promise<void>;
}

interface Loopback {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

const servers: Server[] = [];

async function serve(handle: (req: IncomingMessage, res: ServerResponse, seen: Seen) => void | Promise<void>): Promise<Loopback> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      let body = '';
      for await (const chunk of req) body += String(chunk);
      const entry: Seen = { method: req.method!, url: req.url!, headers: req.headers, body, remotePort: req.socket.remotePort, closed: once(req.socket, 'close').then(() => undefined) };
      seen.push(entry);
      await handle(req, res, entry);
    })();
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

const httpFetch = createHttpFetch();

describe('createHttpFetch', () => {
  it('sends the method, headers and body, and answers with a Response', async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'req_1' });
      res.end(JSON.stringify({ ok: true }));
    });
    const headers = new Headers({ authorization: 'Bearer sk-test', 'content-type': 'application/json' });
    const response = await httpFetch(`${upstream.url}/v1/chat/completions?x=1`, { method: 'post', headers, body: '{"model":"m"}' });

    expect(response).toBeInstanceOf(Response);
    expect(response.status).toBe(201);
    expect(response.ok).toBe(true);
    expect(response.headers.get('x-request-id')).toBe('req_1');
    expect(response.url).toBe(`${upstream.url}/v1/chat/completions?x=1`);
    expect(await response.json()).toEqual({ ok: true });
    const [request] = upstream.seen;
    expect(request).toMatchObject({ method: 'POST', url: '/v1/chat/completions?x=1', body: '{"model":"m"}' });
    expect(request!.headers).toMatchObject({
      authorization: 'Bearer sk-test',
      'content-type': 'application/json',
      'content-length': '13',
      'accept-encoding': 'gzip, deflate',
    });
  });

  it('keeps the connection alive between requests', async () => {
    const upstream = await serve((_req, res) => {
      res.end('{}');
    });
    await (await httpFetch(`${upstream.url}/a`)).text();
    await (await httpFetch(`${upstream.url}/b`)).text();
    expect(upstream.seen.map((request) => request.headers.connection)).toEqual(['keep-alive', 'keep-alive']);
    expect(upstream.seen[1]!.remotePort).toBe(upstream.seen[0]!.remotePort);
  });

  it('closes idle connections after the agent’s timeout, but not busy ones', async () => {
    const upstream = await serve((_req, res) => {
      setTimeout(() => res.end('{"late":true}'), 300);
    });
    const agent = new Agent({ keepAlive: true, timeout: 100 });
    const slow = createHttpFetch({ httpAgent: agent });
    expect(await (await slow(`${upstream.url}/slow`)).json()).toEqual({ late: true });
    await upstream.seen[0]!.closed;
    agent.destroy();
  });

  it('streams a body as it arrives', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const upstream = await serve(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      await released;
      res.end('data: two\n\n');
    });
    const response = await httpFetch(`${upstream.url}/stream`, { method: 'POST', body: '{}' });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    // The first event arrives while the server still holds back the rest.
    expect(decoder.decode((await reader.read()).value)).toBe('data: one\n\n');
    release();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += decoder.decode(chunk.value);
    expect(rest).toBe('data: two\n\n');
  });

  it('aborts a request that has no answer yet, with the signal’s reason, and closes the connection', async () => {
    const upstream = await serve(() => undefined);
    const controller = new AbortController();
    const pending = httpFetch(`${upstream.url}/slow`, { method: 'POST', body: '{}', signal: controller.signal });
    await expect.poll(() => upstream.seen.length).toBe(1);
    const reason = new Error('the client left');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await upstream.seen[0]!.closed;
  });

  it('rejects with an AbortError when aborted without a reason, and before sending when already aborted', async () => {
    const upstream = await serve(() => undefined);
    const controller = new AbortController();
    const pending = httpFetch(`${upstream.url}/slow`, { signal: controller.signal });
    await expect.poll(() => upstream.seen.length).toBe(1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await expect(httpFetch(`${upstream.url}/never`, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    expect(upstream.seen).toHaveLength(1);
  });

  it('aborts a streamed body midway and closes the connection', async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
    });
    const controller = new AbortController();
    const response = await httpFetch(`${upstream.url}/stream`, { signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    const reason = new Error('the client left');
    controller.abort(reason);
    await expect(reader.read()).rejects.toBe(reason);
    await upstream.seen[0]!.closed;
  });

  it('closes the connection when the reader cancels the body', async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
    });
    const response = await httpFetch(`${upstream.url}/stream`);
    const reader = response.body!.getReader();
    await reader.read();
    await reader.cancel();
    await upstream.seen[0]!.closed;
  });

  it('aborts a JSON body that has not fully arrived', async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":');
    });
    const controller = new AbortController();
    const pending = httpFetch(`${upstream.url}/json`, { signal: controller.signal });
    await expect.poll(() => upstream.seen.length).toBe(1);
    const reason = new Error('timed out');
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
    await upstream.seen[0]!.closed;
  });

  it('fails as fetch does when the server cannot be reached or cuts a body short', async () => {
    const gone = await serve(() => undefined);
    await gone.close();
    const refused = await httpFetch(`${gone.url}/x`).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TypeError);
    expect(refused).toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });

    const cut = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n', () => res.destroy());
    });
    const response = await httpFetch(`${cut.url}/stream`);
    const reader = response.body!.getReader();
    await reader.read();
    await expect(reader.read()).rejects.toMatchObject({ name: 'TypeError', message: 'terminated' });
  });

  it('decodes gzip bodies', async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(JSON.stringify({ text: 'squeezed' })));
    });
    expect(await (await httpFetch(`${upstream.url}/gz`)).json()).toEqual({ text: 'squeezed' });
  });

  it('answers statuses that carry no body with none', async () => {
    const upstream = await serve((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    const response = await httpFetch(`${upstream.url}/empty`, { method: 'DELETE' });
    expect(response.status).toBe(204);
    expect(response.body).toBeNull();
  });

  it('follows redirects as fetch does, and keeps credentials to their origin', async () => {
    const elsewhere = await serve((_req, res) => {
      res.end('{}');
    });
    const upstream = await serve((req, res) => {
      const to: Record<string, string> = { '/moved': '/here', '/see-other': '/here', '/away': `${elsewhere.url}/there` };
      const status: Record<string, number> = { '/moved': 307, '/see-other': 303, '/away': 308 };
      if (req.url! in to) {
        res.writeHead(status[req.url!]!, { location: to[req.url!] });
        res.end();
        return;
      }
      res.end('{}');
    });
    const init = { method: 'POST', body: '{"a":1}', headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' } };

    const kept = await httpFetch(`${upstream.url}/moved`, init);
    expect(kept.redirected).toBe(true);
    expect(kept.url).toBe(`${upstream.url}/here`);
    expect(upstream.seen[1]).toMatchObject({ method: 'POST', url: '/here', body: '{"a":1}' });

    await httpFetch(`${upstream.url}/see-other`, init);
    expect(upstream.seen[3]).toMatchObject({ method: 'GET', url: '/here', body: '' });
    expect(upstream.seen[3]!.headers['content-type']).toBeUndefined();

    await httpFetch(`${upstream.url}/away`, init);
    expect(upstream.seen[4]!.headers.authorization).toBe('Bearer sk-test');
    expect(elsewhere.seen[0]).toMatchObject({ method: 'POST', body: '{"a":1}' });
    expect(elsewhere.seen[0]!.headers.authorization).toBeUndefined();
  });

  it('hands what it does not handle to the fallback', async () => {
    const calls: unknown[] = [];
    const withFallback = createHttpFetch({
      fallback: async (input) => {
        calls.push(input);
        return new Response('fallback');
      },
    });
    const form = new FormData();
    form.set('file', 'x');
    expect(await (await withFallback('http://127.0.0.1:1/upload', { method: 'POST', body: form })).text()).toBe('fallback');
    expect(await (await withFallback(new Request('http://127.0.0.1:1/r'))).text()).toBe('fallback');
    expect(calls).toHaveLength(2);
  });
});

// The same expectations of the built-in fetch, so that a difference between the two shows as a failure here.
describe.each([
  ['createHttpFetch', createHttpFetch()],
  ['the built-in fetch', fetch],
])('the openai SDK over %s', (_name, transport) => {
  const chunk = (content: string | null, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }] })}\n\n`;

  it('completes, streams, and aborts the upstream call when the caller does', async () => {
    let hold = false;
    const upstream = await serve((_req, res, seen) => {
      const body = JSON.parse(seen.body) as { stream?: boolean };
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }] }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk('a', null));
      if (hold) return;
      res.write(chunk('b', 'stop'));
      res.end('data: [DONE]\n\n');
    });
    const client = new OpenAI({ baseURL: `${upstream.url}/v1`, apiKey: 'sk-test', maxRetries: 0, fetch: transport });
    const messages = [{ role: 'user' as const, content: 'hello' }];

    const completion = await client.chat.completions.create({ model: 'm', messages });
    expect(completion.choices[0]!.message.content).toBe('hi');

    let text = '';
    for await (const part of await client.chat.completions.create({ model: 'm', messages, stream: true })) text += part.choices[0]?.delta.content ?? '';
    expect(text).toBe('ab');

    hold = true;
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: 'm', messages, stream: true }, { signal: controller.signal });
    const parts: string[] = [];
    // The SDK ends an aborted stream quietly (the providers turn that into the abort it is).
    for await (const part of stream) {
      parts.push(part.choices[0]?.delta.content ?? '');
      controller.abort();
    }
    expect(parts).toEqual(['a']);
    await expect(client.chat.completions.create({ model: 'm', messages }, { signal: controller.signal })).rejects.toBeInstanceOf(APIUserAbortError);
    await upstream.seen.at(-1)!.closed;
  });

  it('times out an upstream that does not answer, and closes the connection', async () => {
    const upstream = await serve(() => undefined);
    const client = new OpenAI({ baseURL: `${upstream.url}/v1`, apiKey: 'sk-test', maxRetries: 0, timeout: 100, fetch: transport });
    await expect(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hello' }] })).rejects.toBeInstanceOf(APIConnectionTimeoutError);
    await upstream.seen[0]!.closed;
  });
});
