// A bare node:http pass-through proxy: no validation, no auth, no logic, just bytes both ways over a
// keep-alive pool. It is the floor any gateway pays for an extra HTTP hop, against which the server's
// throughput is judged. Prints `{"url": …}` once listening; runs until killed.
//   node bench/passthrough-proxy.ts http://127.0.0.1:PORT
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

const target = new URL(process.argv[2] ?? '');
const agent = new Agent({ keepAlive: true, maxSockets: 1024 });

const server = createServer((req, res) => {
  const upstream = request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host }, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => res.destroy());
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
});
process.on('SIGTERM', () => process.exit(0));
