// The conformance kit against our own server, run as an operator runs it, and against a deliberately
// wrong server, to prove that the kit notices drift.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContract } from '../../conformance/contract.ts';
import { runConformance } from '../../conformance/suite.ts';
import { unlimitedPlanEnv } from '../../server/testing/plans.ts';
import { runScript, startServerProcess, type ServerProcess } from './server-process.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SUMMARY = /^conformance: (\d+) passed, (\d+) failed, (\d+) not implemented, (\d+) skipped \((\d+) operations\)$/m;

/** Runs `npm run conformance`'s script as a child process and answers its exit code and output. */
async function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['conformance/run.ts', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

describe('the conformance kit against our server', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-conformance-'));
  const env = { DATA_DIR: dataDir, ...unlimitedPlanEnv() };
  let server: ServerProcess;
  let keys: [string, string];

  beforeAll(async () => {
    // PGlite has one writer: the keys are made before the server opens the data directory.
    keys = [
      await runScript('scripts/create-key.ts', ['--email', 'conformance-one@example.com'], env),
      await runScript('scripts/create-key.ts', ['--email', 'conformance-two@example.com'], env),
    ];
    server = await startServerProcess(env);
  });
  afterAll(async () => {
    await server?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('passes every operation it can exercise, with nothing failed or missing', async () => {
    const report = await runConformance({ baseUrl: server.url, apiKey: keys[0], apiKey2: keys[1] });
    expect(report.operations.filter((operation) => operation.verdict === 'fail')).toEqual([]);
    expect(report.operations.filter((operation) => operation.verdict === 'not_implemented')).toEqual([]);
    expect(report.general.filter((check) => check.verdict !== 'pass')).toEqual([]);
    expect(report.summary.operations).toBe(loadContract().operations.length);
    // Only what this server's configuration turns off may be skipped: billing without Stripe, and metrics.
    const skipped = report.operations.filter((operation) => operation.verdict === 'skipped').map((operation) => operation.operationId);
    expect(skipped.filter((id) => !['createCheckoutSession', 'createPortalSession', 'getMetrics'].includes(id))).toEqual([]);
    // The A2A operations are checked by the kit like every other, none passing for want of a request.
    const a2a = report.operations.filter((operation) => operation.path.startsWith('/a2a/'));
    expect(a2a.length).toBeGreaterThan(10);
    expect(a2a.filter((operation) => operation.verdict !== 'pass' || operation.requests === 0)).toEqual([]);
    expect(report.model).toBe('local');
    expect(report.ok).toBe(true);
  });

  it('notices an A2A surface off the specification: a card without ETag, a wrong status, a wrong JSON-RPC code', async () => {
    // A proxy in front of the server that breaks three A2A answers and passes everything else through.
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', async () => {
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !['host', 'content-length', 'connection'].includes(name))) as Record<string, string>;
        const upstream = await fetch(`${server.url}${req.url}`, { method: req.method, headers, ...(chunks.length ? { body: Buffer.concat(chunks) } : {}) });
        let body = await upstream.text();
        let status = upstream.status;
        const out = Object.fromEntries([...upstream.headers].filter(([name]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name)));
        if (req.url?.endsWith('/.well-known/agent-card.json')) delete out.etag;
        if (/\/tasks\/[^/]+:cancel$/.test(req.url ?? '') && status === 409) status = 400;
        if (/^\/a2a\/[^/]+$/.test(req.url ?? '')) body = body.replaceAll('"code":-32001', '"code":-32000');
        res.writeHead(status, out).end(body);
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const only = ['getA2aAgentCard', 'cancelA2aTask', 'callA2aJsonRpc', 'getA2aTask', 'listA2aTasks'];
      const report = await runConformance({ baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, apiKey: keys[0], apiKey2: keys[1], only });
      const byId = Object.fromEntries(report.operations.map((operation) => [operation.operationId, operation]));
      expect(byId.getA2aAgentCard?.verdict).toBe('fail');
      expect(byId.getA2aAgentCard?.reasons.join('\n')).toMatch(/without an ETag/);
      expect(byId.cancelA2aTask?.verdict).toBe('fail');
      expect(byId.cancelA2aTask?.reasons.join('\n')).toMatch(/answered 400.*expected 409/);
      expect(byId.callA2aJsonRpc?.verdict).toBe('fail');
      expect(byId.callA2aJsonRpc?.reasons.join('\n')).toMatch(/not -32001 TASK_NOT_FOUND/);
      expect([byId.getA2aTask?.verdict, byId.listA2aTasks?.verdict]).toEqual(['pass', 'pass']);
      expect(report.ok).toBe(false);
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it('runs from the command line and exits 0 with the summary line', async () => {
    const { code, stdout, stderr } = await runCli(['--base-url', server.url, '--api-key', keys[0], '--api-key-2', keys[1]]);
    expect(code, stderr + stdout).toBe(0);
    const summary = SUMMARY.exec(stdout);
    expect(summary?.slice(2, 4)).toEqual(['0', '0']);
    expect(Number(summary?.[5])).toBe(loadContract().operations.length);
  });

  it('answers a machine-readable report with --json and narrows to --only', async () => {
    const { code, stdout } = await runCli(['--base-url', server.url, '--api-key', keys[0], '--only', 'getHealth,createAgent', '--json']);
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as Awaited<ReturnType<typeof runConformance>>;
    expect(report.operations.map((operation) => [operation.operationId, operation.verdict])).toEqual([
      ['getHealth', 'pass'],
      ['createAgent', 'pass'],
    ]);
  });

  it('refuses an operation the contract does not have', async () => {
    const { code, stderr } = await runCli(['--base-url', server.url, '--api-key', keys[0], '--only', 'getNothing']);
    expect(code).toBe(2);
    expect(stderr).toContain('getNothing');
  });
});

describe('the conformance kit against a server off the contract', () => {
  let wrong: Server;
  let url: string;

  beforeAll(async () => {
    wrong = createServer((req, res) => {
      if (req.url === '/health') {
        // A body off the Health schema, and no X-Request-Id.
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ status: 'fine' }));
      } else if (req.url === '/ready') {
        res
          .writeHead(501, { 'Content-Type': 'application/json', 'X-Request-Id': 'req_1' })
          .end(JSON.stringify({ error: { code: 'not_implemented', type: 'server_error', message: 'Not yet.', param: null, request_id: 'req_1' } }));
      } else {
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('whatever you asked for');
      }
    });
    await new Promise<void>((resolve) => wrong.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(wrong.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => wrong.close(() => resolve())));

  it('reports the body off the schema, the missing request id, the route that is not there and the unknown route', async () => {
    const report = await runConformance({ baseUrl: url, apiKey: 'oaa_unused', only: ['getHealth', 'getReadiness'] });
    const byId = Object.fromEntries(report.operations.map((operation) => [operation.operationId, operation]));
    expect(byId.getHealth?.verdict).toBe('fail');
    expect(byId.getHealth?.reasons.join('\n')).toMatch(/body is off the contract/);
    expect(byId.getHealth?.reasons.join('\n')).toMatch(/without an X-Request-Id header/);
    expect(byId.getReadiness?.verdict).toBe('not_implemented');
    const unknownRoute = report.general.find((check) => check.name.startsWith('an unknown route'));
    expect(unknownRoute?.verdict).toBe('fail');
    expect(unknownRoute?.reasons.join('\n')).toMatch(/answered 200; expected 404/);
    expect(report.ok).toBe(false);
  });

  it('exits non-zero from the command line', async () => {
    const { code, stdout } = await runCli(['--base-url', url, '--api-key', 'oaa_unused', '--only', 'getHealth']);
    expect(code).toBe(1);
    expect(SUMMARY.exec(stdout)?.slice(1, 6)).toEqual(['0', '1', '0', '0', '1']);
  });
});
