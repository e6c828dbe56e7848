// GET /metrics through the real app: the exposition format, each family's figures as requests, upstream
// calls, streams and runs happen, one registry per app instance, and the switch and token operators use.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import { loadConfig } from '../config.ts';
import { newId } from '../store/ids.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

type RunEvent = components['schemas']['RunEvent'];

/** The value of one sample of the exposition, or undefined when it is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = (match[2] ?? '').split(/,(?=[a-zA-Z_]+=")/);
    if (wanted.every((pair) => present.includes(pair))) return Number(match[3]);
  }
  return undefined;
}

describe('GET /metrics', () => {
  let upstream: FakeOpenAI;
  let server: TestServer;
  /** A second app in this process, whose figures must not mix with the first's. */
  let other: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ models: ['scripted'] });
    [server, other] = await Promise.all([startTestServer({ env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url } }), startTestServer()]);
    user = await server.signUp();
  });
  afterAll(async () => {
    await server?.close();
    await other?.close();
    await upstream?.close();
  });

  const scrape = async (target: TestServer = server, headers: Record<string, string> = {}) => {
    // What Prometheus itself sends.
    const response = await fetch(`${target.url}/metrics`, {
      headers: { Accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1', ...headers },
    });
    return { response, text: await response.text() };
  };

  it('answers the Prometheus text format without a credential, with the process metrics', async () => {
    const { response, text } = await scrape();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(text).toContain('# TYPE model_upstream_duration_seconds histogram');
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    // The embedded database's WebAssembly memory, apart from the process's (PGlite here).
    expect(sample(text, 'database_embedded_memory_bytes')).toBeGreaterThan(16 * 1024 * 1024);
  });

  it('counts requests by operation, method and status, and times them', async () => {
    const before = (await scrape()).text;
    for (let i = 0; i < 3; i++) expect((await user.client.GET('/v1/agents')).response.status).toBe(200);
    expect((await user.client.GET('/v1/agents/{agentId}', { params: { path: { agentId: newId('agt') } } })).response.status).toBe(404);
    expect((await fetch(`${server.url}/v1/agents`)).status).toBe(401);
    expect((await fetch(`${server.url}/no/such/path`)).status).toBe(404);
    const after = (await scrape()).text;
    const delta = (name: string, labels: Record<string, string>) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    expect(delta('http_requests_total', { operation: 'listAgents', method: 'GET', status: '200' })).toBe(3);
    expect(delta('http_requests_total', { operation: 'listAgents', method: 'GET', status: '401' })).toBe(1);
    expect(delta('http_requests_total', { operation: 'getAgent', method: 'GET', status: '404' })).toBe(1);
    expect(delta('http_requests_total', { operation: 'none', method: 'GET', status: '404' })).toBe(1);
    expect(delta('http_request_duration_seconds_count', { operation: 'listAgents' })).toBe(4);
    expect(delta('http_request_duration_seconds_bucket', { operation: 'listAgents', le: '+Inf' })).toBe(4);
  });

  it('times upstream model calls by provider, model and outcome', async () => {
    const before = (await scrape()).text;
    const ok = await user.client.POST('/v1/chat/completions', { body: { model: 'scripted', messages: [{ role: 'user', content: 'hi' }] } });
    expect(ok.response.status).toBe(200);
    upstream.enqueue({ error: { status: 400, message: 'no' } });
    const refused = await user.client.POST('/v1/chat/completions', { body: { model: 'scripted', messages: [{ role: 'user', content: 'hi' }] } });
    expect(refused.response.status).toBe(400);
    const after = (await scrape()).text;
    const delta = (outcome: string) =>
      (sample(after, 'model_upstream_duration_seconds_count', { provider: 'openai', model: 'scripted', outcome }) ?? 0) -
      (sample(before, 'model_upstream_duration_seconds_count', { provider: 'openai', model: 'scripted', outcome }) ?? 0);
    expect(delta('ok')).toBe(1);
    expect(delta('refused')).toBe(1);
  });

  it('counts open event streams and live runs while a run streams, and finished runs by status', async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Slow', model: 'scripted' } })).data!;
    const before = (await scrape()).text;
    upstream.enqueue({ hang: true });
    const requests = upstream.requests.length;
    const response = await fetch(`${server.url}/v1/agents/${agent.id}/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'wait' }] }),
    });
    const events = readEventStream<RunEvent>(response.body!)[Symbol.asyncIterator]();
    const started = (await events.next()).value!.data;
    expect(started.type).toBe('RunStarted');
    await upstream.waitForRequest(requests + 1);
    const during = (await scrape()).text;
    expect(sample(during, 'http_sse_streams_open')).toBe(1);
    expect(sample(during, 'runs_live')).toBe(1);

    expect((await user.client.POST('/v1/runs/{runId}/cancel', { params: { path: { runId: started.run_id } } })).response.status).toBe(200);
    const rest: RunEvent[] = [];
    for (let next = await events.next(); !next.done; next = await events.next()) rest.push(next.value.data);
    expect(rest.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'canceled' });
    const completed = await user.client.POST('/v1/agents/{agentId}/chat', { params: { path: { agentId: agent.id } }, body: { messages: [{ role: 'user', content: 'now' }] } });
    expect(completed.data?.status).toBe('completed');

    const after = (await scrape()).text;
    expect(sample(after, 'http_sse_streams_open')).toBe(0);
    expect(sample(after, 'runs_live')).toBe(0);
    const finished = (status: string) => (sample(after, 'runs_finished_total', { status }) ?? 0) - (sample(before, 'runs_finished_total', { status }) ?? 0);
    expect(finished('canceled')).toBe(1);
    expect(finished('completed')).toBe(1);
    expect(finished('failed')).toBe(0);
  });

  it('stops counting a stream when its client leaves, though its run goes on', async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Left', model: 'scripted' } })).data!;
    upstream.enqueue({ hang: true });
    const client = new AbortController();
    const response = await fetch(`${server.url}/v1/agents/${agent.id}/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'wait' }] }),
      signal: client.signal,
    });
    const started = (await readEventStream<RunEvent>(response.body!)[Symbol.asyncIterator]().next()).value!.data;
    expect(sample((await scrape()).text, 'http_sse_streams_open')).toBe(1);
    client.abort();
    let open: number | undefined = 1;
    for (let attempt = 0; attempt < 100 && open !== 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      open = sample((await scrape()).text, 'http_sse_streams_open');
    }
    expect(open).toBe(0);
    expect(sample((await scrape()).text, 'runs_live')).toBe(1);
    await user.client.POST('/v1/runs/{runId}/cancel', { params: { path: { runId: started.run_id } } });
    expect(sample((await scrape()).text, 'runs_live')).toBe(0);
  });

  it('keeps each app instance’s figures apart', async () => {
    const mine = sample((await scrape()).text, 'http_requests_total', { operation: 'getMetrics', method: 'GET', status: '200' }) ?? 0;
    const theirs = sample((await scrape(other)).text, 'http_requests_total', { operation: 'getMetrics', method: 'GET', status: '200' });
    expect(mine).toBeGreaterThan(1);
    expect(theirs).toBeUndefined();
  });

  it('answers 404 when turned off', async () => {
    const off = await startTestServer({ env: { METRICS_ENABLED: 'false' } });
    try {
      const { response, text } = await scrape(off);
      expect(response.status).toBe(404);
      expect(JSON.parse(text)).toMatchObject({ error: { code: 'not_found' } });
    } finally {
      await off.close();
    }
  });

  it('requires the configured bearer token', async () => {
    const token = 'scrape-token-0123456789';
    const guarded = await startTestServer({ env: { METRICS_TOKEN: token } });
    try {
      const missing = await scrape(guarded);
      expect(missing.response.status).toBe(401);
      expect(missing.response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      const wrong = await scrape(guarded, { Authorization: `Bearer ${token}x` });
      expect(wrong.response.status).toBe(401);
      expect(wrong.response.headers.get('www-authenticate')).toContain('error="invalid_token"');
      const right = await scrape(guarded, { Authorization: `Bearer ${token}` });
      expect(right.response.status).toBe(200);
      expect(right.text).toContain('http_requests_total');
    } finally {
      await guarded.close();
    }
  });

  it('refuses a short token at start-up', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be at least 16 bytes/);
    expect(() => loadConfig({ METRICS_ENABLED: 'maybe' })).toThrow(/METRICS_ENABLED must be true or false/);
  });
});
