// The Connexity agent contract as the platform calls it: a bare HTTP client that can only carry the
// agent's URL, so the credential rides in the URL's userinfo (HTTP Basic), and a model whose tool messages
// may lack their tool_call_id.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

/** A POST to a URL whose userinfo carries the credential, as an HTTP client turns `https://KEY@host/…` into Basic. */
function postWithUserinfo(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (response) => {
      let text = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, json: JSON.parse(text) as Record<string, unknown> }));
    });
    sent.on('error', reject);
    sent.end(JSON.stringify(body));
  });
}

describe('Connexity /respond', () => {
  let server: TestServer;
  let user: TestUser;
  let agentId: string;

  beforeAll(async () => {
    server = await startTestServer({ env: unlimitedPlanEnv() });
    user = await server.signUp();
    agentId = (await user.client.POST('/v1/agents', { body: { name: 'Evaluated', server_tools: ['calculator'] } })).data!.id;
  });
  afterAll(() => server?.close());

  const at = (userinfo: string) => `${server.url.replace('://', `://${userinfo}@`)}/v1/agents/${agentId}/respond`;

  it('takes the API key from the URL, as user name or as password, on this and every other operation', async () => {
    const asUser = await postWithUserinfo(at(user.apiKey), { messages: [{ role: 'user', content: 'hello' }], metadata: { test_case_id: 'tc-1', turn_index: 0 } });
    expect(asUser.status).toBe(200);
    expect(asUser.json).toMatchObject({ messages: [{ role: 'assistant', content: 'hello' }], metadata: { test_case_id: 'tc-1', turn_index: 0 } });
    const asPassword = await postWithUserinfo(at(`:${user.apiKey}`), { messages: [{ role: 'user', content: 'again' }] });
    expect(asPassword.status).toBe(200);
    const basic = `Basic ${Buffer.from(`${user.apiKey}:`).toString('base64')}`;
    expect((await fetch(`${server.url}/v1/agents/${agentId}`, { headers: { Authorization: basic } })).status).toBe(200);
  });

  it('refuses a wrong key in the URL like any wrong credential, and another user’s agent like a missing one', async () => {
    const wrong = await postWithUserinfo(at('oaa_not-a-key'), { messages: [{ role: 'user', content: 'hello' }] });
    expect(wrong.status).toBe(401);
    const stranger = await server.signUp();
    const foreign = await postWithUserinfo(at(stranger.apiKey), { messages: [{ role: 'user', content: 'hello' }] });
    const missing = await postWithUserinfo(`${server.url.replace('://', `://${stranger.apiKey}@`)}/v1/agents/agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D/respond`, { messages: [{ role: 'user', content: 'x' }] });
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect((foreign.json.error as { code: string }).code).toBe((missing.json.error as { code: string }).code);
  });

  it('pairs a tool message without tool_call_id with the call it answers, and keeps an unpaired one as context', async () => {
    const paired = await postWithUserinfo(at(user.apiKey), {
      messages: [
        { role: 'user', content: 'what is 6*7?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'calculator', arguments: '{"expression":"6*7"}' } }] },
        { role: 'tool', content: '42', tool_call_id: null, name: 'calculator' },
      ],
    });
    expect(paired.status).toBe(200);
    expect((paired.json.messages as { role: string; content: string }[]).at(-1)).toMatchObject({ role: 'assistant', content: 'calculator returned: 42.' });
    const unpaired = await postWithUserinfo(at(user.apiKey), { messages: [{ role: 'tool', content: 'a note', tool_call_id: null }] });
    expect(unpaired.status).toBe(200);
    expect((unpaired.json.messages as { content: string }[]).at(-1)!.content).toBe('Tool result: a note');
  });
});
