// The local model reads tool arguments out of the user's text. That search used to cost the square of
// the text's length (200 KB of `{` held the event loop for 34 s); it is bounded now.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { firstJsonObject, JSON_OBJECT_TRIES } from './local.ts';

const BRACES = `t ${'{'.repeat(200_000)}`;

describe('firstJsonObject', () => {
  it('finds the arguments after braces that never close, and inside an open one', () => {
    expect(firstJsonObject('get_weather {"city": "Paris"}')).toEqual({ city: 'Paris' });
    expect(firstJsonObject('{ get_weather {"city": "Paris"}')).toEqual({ city: 'Paris' });
    expect(firstJsonObject('{not json} then {"a": 1}')).toEqual({ a: 1 });
    expect(firstJsonObject('no braces')).toBeUndefined();
  });

  it('reads a bounded multiple of the text, however many braces it holds', () => {
    const steps = { count: 0 };
    expect(firstJsonObject(BRACES, steps)).toBeUndefined();
    expect(steps.count).toBeLessThanOrEqual(JSON_OBJECT_TRIES * BRACES.length);
    // Before the bound, every one of the 200,000 braces read to the end: about 2 * 10^10 characters.
    expect(steps.count).toBeLessThan(BRACES.length * 100);
  });
});

describe('the local model on hostile text', () => {
  let server: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    server = await startTestServer({ env: { ...unlimitedPlanEnv(), BODY_LIMIT_BYTES: String(1024 * 1024) } });
    user = await server.signUp();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers a chat completion with a tool and 200 KB of braces, and /health meanwhile', async () => {
    const chat = fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        model: 'local',
        max_tokens: 100_000,
        tools: [{ type: 'function', function: { name: 't', parameters: { type: 'object' } } }],
        messages: [{ role: 'user', content: BRACES }],
      }),
    });
    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    const answer = await chat;
    const body = (await answer.json()) as { choices: { message: { tool_calls?: { function: { name: string; arguments: string } }[] } }[] };
    expect(answer.status, JSON.stringify(body).slice(0, 300)).toBe(200);
    expect(body.choices[0]!.message.tool_calls?.[0]?.function).toEqual({ name: 't', arguments: '{}' });
  });

  it('cuts a long reply at max_tokens', async () => {
    const words = Array.from({ length: 20_000 }, (_, i) => `w${i}`).join(' ');
    const answer = await user.client.POST('/v1/chat/completions', {
      body: { model: 'local', max_tokens: 19_999, messages: [{ role: 'user', content: words }] },
    });
    expect(answer.response.status).toBe(200);
    expect(answer.data!.choices[0]!.finish_reason).toBe('length');
    expect(answer.data!.usage?.completion_tokens).toBe(19_999);
  });
});
