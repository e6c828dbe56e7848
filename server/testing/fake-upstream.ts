// What the fake model upstreams on loopback (fake-openai.ts, fake-anthropic.ts) share: a server on a free
// port, a queue of scripted replies, every request recorded with how its connection ended, and waiting
// for the n-th request. Each fake brings only its routes and its error shape.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Json = Record<string, unknown>;

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Json | undefined;
  /** `aborted` when the client closed the connection before the answer was complete. */
  outcome: Promise<'completed' | 'aborted'>;
}

export interface FakeUpstream<Reply> {
  url: string;
  requests: RecordedRequest[];
  enqueue(...replies: Reply[]): void;
  /** Resolves with the request numbered `count` (from 1) once it has arrived. */
  waitForRequest(count: number): Promise<RecordedRequest>;
  /** Forgets recorded requests and queued replies. */
  reset(): void;
  close(): Promise<void>;
}

export interface FakeUpstreamOptions<Reply> {
  /** The replies `enqueue` adds to; the fake takes them in order as requests come. */
  queue: Reply[];
  /** What follows the origin in `url`, such as `/v1`. */
  basePath?: string;
  keepAliveTimeout?: number;
  /** Whether `requests` keeps every request (the default); an upstream under benchmark load, which sees millions, does not. */
  keepRequests?: boolean;
  /** Answers a request once it is recorded. */
  handle(request: RecordedRequest, res: ServerResponse, req: IncomingMessage): Promise<void>;
  /** Answers a request whose `handle` threw before sending anything. */
  sendError(res: ServerResponse, error: unknown): void;
}

export function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** The body as JSON; undefined when it is empty or not JSON. */
export async function readJson(req: IncomingMessage): Promise<Json | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
  } catch {
    return undefined;
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export async function startFakeUpstream<Reply>(options: FakeUpstreamOptions<Reply>): Promise<FakeUpstream<Reply>> {
  const { queue } = options;
  const requests: RecordedRequest[] = [];
  const waiters = new Set<{ count: number; resolve: (request: RecordedRequest) => void }>();

  async function record(req: IncomingMessage, res: ServerResponse): Promise<RecordedRequest> {
    const path = (req.url ?? '/').split('?')[0]!;
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    let settle: (outcome: 'completed' | 'aborted') => void = () => undefined;
    const outcome = new Promise<'completed' | 'aborted'>((resolve) => (settle = resolve));
    res.on('close', () => settle(res.writableFinished ? 'completed' : 'aborted'));
    const recorded: RecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, body, outcome };
    if (options.keepRequests === false) return recorded;
    requests.push(recorded);
    for (const waiter of [...waiters]) if (requests.length >= waiter.count) waiter.resolve(requests[waiter.count - 1]!);
    return recorded;
  }

  const server: Server = createServer((req, res) => {
    record(req, res)
      .then((recorded) => options.handle(recorded, res, req))
      .catch((error: unknown) => {
        if (!res.headersSent) options.sendError(res, error);
        else res.destroy();
      });
  });
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${options.basePath ?? ''}`,
    requests,
    enqueue(...replies) {
      queue.push(...replies);
    },
    waitForRequest(count) {
      if (requests.length >= count) return Promise.resolve(requests[count - 1]!);
      return new Promise((resolve) => {
        const waiter = {
          count,
          resolve: (request: RecordedRequest) => {
            waiters.delete(waiter);
            resolve(request);
          },
        };
        waiters.add(waiter);
      });
    },
    reset() {
      queue.length = 0;
      requests.length = 0;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
