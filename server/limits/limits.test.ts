// Rate limits and quotas through the real app on both limiter backends: the 429 and its headers, OpenAI's
// x-ratelimit-* headers on chat completions (streamed too), the 402 naming the limit, recovery after the
// window or period, the usage report, and two app instances sharing one limit through Redis.
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppHandlers } from '../http/operations.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { availableLimiterBackends, limiterEnv, uniqueRedisPrefix } from '../testing/redis.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'oaa-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A single free plan with small limits, so that tests reach them in a few requests. */
function plansFile(requestsPerMinute: number): string {
  const file = path.join(dir, `plans-${requestsPerMinute}.yaml`);
  writeFileSync(
    file,
    `plans:
  - id: free
    name: Free
    limits:
      requests_per_minute: ${requestsPerMinute}
      tokens_per_month: 1000
      runs_per_day: 2
      agents: 1
      teams: 1
      knowledge_documents: 1
      knowledge_bytes: 1000
`,
  );
  return file;
}

const completion = {
  id: 'chatcmpl-test',
  object: 'chat.completion',
  created: 1763632800,
  model: 'local',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null }, finish_reason: 'stop', logprobs: null }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
} as const;

// The gateway's own handler is another module's; a fixed answer keeps these tests about the guards.
const handlers: Partial<AppHandlers> = {
  async createChatCompletion({ body }) {
    if (body.stream) {
      return {
        status: 200,
        stream: (async function* () {
          yield { data: { id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1763632800, model: 'local', choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }] } };
        })(),
      } as never;
    }
    return { status: 200, body: completion } as never;
  },
};

const chat = (user: TestUser, stream = false) =>
  user.client.POST('/v1/chat/completions', { body: { model: 'local', messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream } : {}) } });

const NOVEMBER = Date.UTC(2026, 10, 15, 12);
const AGENT = 'agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D';

describe.each(await availableLimiterBackends())('limits with the %s limiter', (backend) => {
  let server: TestServer;
  let quick: TestServer;
  let now = NOVEMBER;
  beforeAll(async () => {
    server = await startTestServer({ env: { PLANS_FILE: plansFile(3), ...limiterEnv(backend) }, clock: () => now, handlers });
    // 120 a minute over a 1-second window: 2 requests a second.
    quick = await startTestServer({ env: { PLANS_FILE: plansFile(120), RATE_LIMIT_WINDOW_SECONDS: '1', ...limiterEnv(backend) } });
  });
  afterAll(async () => {
    await server?.close();
    await quick?.close();
  });

  it('limits each user to the plan rate, with RateLimit headers on every answer and a 429 past it', async () => {
    expect(server.services.limiter.backend).toBe(backend);
    const user = await server.signUp();
    for (const remaining of [2, 1, 0]) {
      const { response } = await user.client.GET('/v1/account');
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit-policy')).toBe('"requests";q=3;w=60');
      expect(response.headers.get('ratelimit')).toMatch(new RegExp(`^"requests";r=${remaining};t=\\d+$`));
    }
    const { response, error } = await user.client.GET('/v1/account');
    expect(response.status).toBe(429);
    expect(error?.error.code).toBe('rate_limited');
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(response.headers.get('ratelimit')).toMatch(/^"requests";r=0;t=\d+$/);

    // Someone else's count is their own; public operations carry no per-user limit.
    const other = await server.signUp();
    expect((await other.client.GET('/v1/account')).response.status).toBe(200);
    expect((await fetch(`${server.url}/health`)).headers.get('ratelimit')).toBeNull();
  });

  it('lets requests through again once the window has passed', async () => {
    const user = await quick.signUp();
    let refused: Response | undefined;
    // The window may turn over between requests, so allow a few more than the limit of 2 to see a 429.
    for (let attempt = 0; attempt < 6 && !refused; attempt++) {
      const { response } = await user.client.GET('/v1/account');
      if (response.status === 429) refused = response;
      else expect(response.status).toBe(200);
    }
    expect(refused?.headers.get('ratelimit-policy')).toBe('"requests";q=2;w=1');
    expect(refused?.headers.get('retry-after')).toBe('1');
    await sleep(1100);
    expect((await user.client.GET('/v1/account')).response.status).toBe(200);
  });

  it("sends OpenAI's x-ratelimit headers on chat completions, streamed or not", async () => {
    const user = await server.signUp();
    await server.services.usage.record({ userId: user.userId, apiKeyId: null, model: 'local', kind: 'chat', promptTokens: 200, completionTokens: 100 });
    const { response } = await chat(user);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('3');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('2');
    expect(response.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+m)?\d+s$/);
    expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('1000');
    expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe('700');

    const streamed = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ model: 'local', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(streamed.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect(streamed.headers.get('x-ratelimit-remaining-tokens')).toBe('700');
    expect(await streamed.text()).toContain('data: [DONE]');
    // Other operations carry only the IETF fields.
    const account = await user.client.GET('/v1/account');
    expect(account.response.headers.get('x-ratelimit-limit-requests')).toBeNull();
  });

  it('answers 402 quota_exceeded naming the token quota, and lets the user in again next month', async () => {
    const user = await server.signUp();
    await server.services.usage.record({ userId: user.userId, apiKeyId: null, model: 'local', kind: 'chat', promptTokens: 600, completionTokens: 400 });
    const { response, error } = await chat(user);
    expect(response.status).toBe(402);
    expect(error?.error.code).toBe('quota_exceeded');
    expect(error?.error.details).toEqual([
      { metric: 'tokens_per_month', limit: 1000, used: 1000, message: expect.stringContaining('allows 1000 tokens this month; 1000 are used') },
    ]);
    expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe('0');

    now = Date.UTC(2026, 11, 1, 0, 0, 1);
    try {
      const next = await chat(user);
      expect(next.response.status).toBe(200);
      expect(next.response.headers.get('x-ratelimit-remaining-tokens')).toBe('1000');
    } finally {
      now = NOVEMBER;
    }
  });

  it('answers 402 for runs per day before an agent runs, and not the next day', async () => {
    const user = await server.signUp();
    await server.services.usage.recordRun(user.userId);
    await server.services.usage.recordRun(user.userId);
    const { response, error } = await user.client.POST('/v1/agents/{agentId}/chat', {
      params: { path: { agentId: AGENT } },
      body: { messages: [{ role: 'user', content: 'hi' }], stream: false },
    });
    expect(response.status).toBe(402);
    expect(error?.error.details?.map((detail) => detail.metric)).toEqual(['runs_per_day']);
    expect(error?.error.message).toContain('until 2026-11-16T00:00:00.000Z');

    now = NOVEMBER + 24 * 3600 * 1000;
    try {
      // Past the guards the agent module answers; whatever it says, it is not the quota.
      const next = await user.client.POST('/v1/agents/{agentId}/chat', {
        params: { path: { agentId: AGENT } },
        body: { messages: [{ role: 'user', content: 'hi' }], stream: false },
      });
      expect(next.response.status).not.toBe(402);
    } finally {
      now = NOVEMBER;
    }
  });

  it('reports usage against the plan for the current month, leaving out what it cannot count', async () => {
    const user = await server.signUp();
    await server.services.usage.record({ userId: user.userId, apiKeyId: null, model: 'local', kind: 'chat', promptTokens: 10, completionTokens: 5 });
    await server.services.usage.record({ userId: user.userId, apiKeyId: null, model: 'local-embedding', kind: 'embedding', promptTokens: 7, completionTokens: 0 });
    await server.services.usage.recordRun(user.userId);
    const { data, response } = await user.client.GET('/v1/account/usage');
    expect(response.status).toBe(200);
    expect(data).toMatchObject({
      object: 'usage',
      plan_id: 'free',
      period: { start: '2026-11-01T00:00:00.000Z', end: '2026-12-01T00:00:00.000Z' },
      models: [
        { model: 'local', requests: 1, prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        { model: 'local-embedding', requests: 1, prompt_tokens: 7, completion_tokens: 0, total_tokens: 7 },
      ],
    });
    const byMetric = new Map(data!.limits.map((limit) => [limit.metric, limit]));
    expect(byMetric.get('requests_per_minute')).toMatchObject({ used: 1, limit: 3, remaining: 2 });
    expect(byMetric.get('tokens_per_month')).toEqual({ metric: 'tokens_per_month', used: 22, limit: 1000, remaining: 978, resets_at: '2026-12-01T00:00:00.000Z' });
    expect(byMetric.get('runs_per_day')).toEqual({ metric: 'runs_per_day', used: 1, limit: 2, remaining: 1, resets_at: '2026-11-16T00:00:00.000Z' });
    for (const metric of server.services.quotas.counted) expect(byMetric.has(metric)).toBe(true);
    const uncounted = (['agents', 'teams', 'knowledge_documents', 'knowledge_bytes'] as const).filter((metric) => !server.services.quotas.counted.includes(metric));
    for (const metric of uncounted) expect(byMetric.has(metric)).toBe(false);
  });
});

describe.each(await availableLimiterBackends())('two app instances on one database with the %s limiter', (backend) => {
  let first: TestServer;
  let second: TestServer;
  beforeAll(async () => {
    const env = { PLANS_FILE: plansFile(3), ...limiterEnv(backend, uniqueRedisPrefix()) };
    first = await startTestServer({ env });
    second = await startTestServer({ env, shareDatabaseWith: first });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it(backend === 'redis' ? 'share one limit through Redis' : 'each count on their own in memory', async () => {
    const user = await first.signUp();
    const onSecond = second.client(user.apiKey);
    const statuses: number[] = [];
    for (const client of [user.client, onSecond, user.client, onSecond, user.client, onSecond]) {
      statuses.push((await client.GET('/v1/account')).response.status);
    }
    // Three a minute: across both instances with Redis; on each instance without it.
    expect(statuses).toEqual(backend === 'redis' ? [200, 200, 200, 429, 429, 429] : [200, 200, 200, 200, 200, 200]);
  });
});
