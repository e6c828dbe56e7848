// A receiver of A2A push notifications on loopback, for tests: it records every request it gets, and
// answers 503 to the first request of each path in `failFirst`, so a test can watch a retry.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PushDelivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: {
    task?: { id: string; status: { state: string } };
    statusUpdate?: { taskId: string; status: { state: string } };
    message?: unknown;
    artifactUpdate?: unknown;
  };
}

export interface PushReceiver {
  url: string;
  deliveries: PushDelivery[];
  attempts: Map<string, number>;
  close(): Promise<void>;
}

export async function startPushReceiver(failFirst: ReadonlySet<string> = new Set()): Promise<PushReceiver> {
  const deliveries: PushDelivery[] = [];
  const attempts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      const path = req.url ?? '/';
      const attempt = (attempts.get(path) ?? 0) + 1;
      attempts.set(path, attempt);
      if (failFirst.has(path) && attempt === 1) {
        res.writeHead(503).end();
        return;
      }
      deliveries.push({ path, headers: req.headers, body: JSON.parse(raw) as PushDelivery['body'] });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, deliveries, attempts, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
