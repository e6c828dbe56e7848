// Real MCP servers on loopback, built with the official SDK, for tests of agents that use MCP tools:
// `/counter` (a tool with a side effect to count), `/hang` (a tool that never answers) and `/broken` (a
// tool that reports an error, and one that throws).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, fromJsonSchema, McpServer } from '@modelcontextprotocol/server';

export interface McpTestServers {
  url: string;
  /** How many times `increment` ran. */
  count(): number;
  /** The Authorization headers the servers received. */
  authorizations: string[];
  close(): Promise<void>;
}

export async function startMcpTestServers(): Promise<McpTestServers> {
  let count = 0;
  const authorizations: string[] = [];
  const hanging = new Set<() => void>();
  const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
  const object = fromJsonSchema<Record<string, unknown>>({ type: 'object', properties: { by: { type: 'integer' } } });

  const counter = createMcpHandler(() => {
    const server = new McpServer({ name: 'counter', version: '1.0.0' });
    server.registerTool('increment', { description: 'Adds to the counter.', inputSchema: object }, async (args) => {
      count += typeof args.by === 'number' ? args.by : 1;
      return text(`count is ${count}`);
    });
    server.registerTool('peek', { description: 'Reads the counter.', inputSchema: object }, async () => text(`count is ${count}`));
    return server;
  });
  const hang = createMcpHandler(() => {
    const server = new McpServer({ name: 'hang', version: '1.0.0' });
    server.registerTool('wait', { description: 'Never answers.', inputSchema: object }, () => new Promise((resolve) => hanging.add(() => resolve(text('late')))));
    return server;
  });
  const broken = createMcpHandler(() => {
    const server = new McpServer({ name: 'broken', version: '1.0.0' });
    server.registerTool('fail', { description: 'Reports a failure.', inputSchema: object }, async () => ({ ...text('the disk is full'), isError: true }));
    server.registerTool('crash', { description: 'Throws.', inputSchema: object }, async () => {
      throw new Error('kaboom');
    });
    return server;
  });
  const routes = new Map([
    ['/counter', toNodeHandler(counter)],
    ['/hang', toNodeHandler(hang)],
    ['/broken', toNodeHandler(broken)],
  ]);

  const http: Server = createServer((req, res) => {
    if (req.headers.authorization) authorizations.push(req.headers.authorization);
    const route = routes.get(new URL(req.url ?? '/', 'http://x').pathname);
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    void route(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    count: () => count,
    authorizations,
    async close() {
      for (const release of hanging) release();
      await Promise.all([counter.close(), hang.close(), broken.close()]);
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
