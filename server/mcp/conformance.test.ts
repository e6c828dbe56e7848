// The official MCP conformance kit (@modelcontextprotocol/conformance) against /mcp. The kit's client sends
// no credential, so a loopback proxy adds the test user's API key. Scenarios that test an "everything"
// reference server's own fixtures (tools named test_*, resources, prompts, completion, logging, sampling,
// elicitation, SSE polling) do not apply to this server's tools and are not run; see docs in the note.
import { execFile } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConformance } from '../../conformance/suite.ts';
import { startTestServer, type TestServer } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
// The kit needs Node 22 or later: the project's pinned Node, whatever runs the tests.
const node = path.join(root, 'node_modules/.bin/node');
const kit = path.join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

describe('the MCP conformance kit against /mcp', () => {
  let server: TestServer;
  let proxy: Server;
  let url: string;
  let apiKey: string;

  beforeAll(async () => {
    server = await startTestServer({ env: unlimitedPlanEnv() });
    const user = await server.signUp();
    apiKey = user.apiKey;
    await user.client.POST('/v1/agents', { body: { name: 'Echo' } });
    const target = new URL(server.url);
    proxy = createServer((req, res) => {
      const upstream = request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host, authorization: `Bearer ${user.apiKey}` } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
  }, 180_000);
  afterAll(async () => {
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
    await server?.close();
  });

  it.each(['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'])('passes %s', { timeout: 120_000 }, async (scenario) => {
    const output = path.join(server.services.config.dataDir, 'conformance');
    const { stdout } = await run(node, [kit, 'server', '--url', url, '--scenario', scenario, '--output-dir', output], { encoding: 'utf8', timeout: 100_000 });
    expect(stdout).toMatch(/Passed: (\d+)\/\1, 0 failed/);
  });

  it("passes this project's own conformance kit on the MCP operations, credentials included", { timeout: 120_000 }, async () => {
    const mcp = ['sendMcpMessage', 'openMcpStream', 'deleteMcpSession', 'getProtectedResourceMetadata', 'getMcpProtectedResourceMetadata'];
    const report = await runConformance({ baseUrl: server.url, apiKey, only: mcp });
    expect(report.operations.map((operation) => [operation.operationId, operation.verdict, operation.reasons])).toEqual(
      report.operations.map((operation) => [operation.operationId, 'pass', operation.reasons]),
    );
    expect(report.operations.map((operation) => operation.operationId).sort()).toEqual([...mcp].sort());
  });
});
