// Replaying a run's events from a position past its last: ten digits pass the contract's pattern but
// not the store's 32-bit sequence numbers. Found by the contract fuzzer as a broken stream and a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

describe('run events after the last sequence number', () => {
  let server: TestServer;
  let user: TestUser;
  let runId: string;

  beforeAll(async () => {
    server = await startTestServer({ env: unlimitedPlanEnv() });
    user = await server.signUp();
    const agent = await user.client.POST('/v1/agents', { body: { name: 'Replayed', model: 'local' } });
    const turn = await user.client.POST('/v1/agents/{agentId}/chat', { params: { path: { agentId: agent.data!.id } }, body: { messages: [{ role: 'user', content: 'one two' }] } });
    runId = turn.data!.run_id;
  });
  afterAll(async () => {
    await server?.close();
  });

  const events = (headers: Record<string, string>, query = '') =>
    fetch(`${server.url}/v1/runs/${runId}/events${query}`, { headers: { Authorization: `Bearer ${user.apiKey}`, ...headers } });

  it('streams nothing after Last-Event-ID 9999999999, and ends the stream cleanly', async () => {
    const all = await (await events({ Accept: 'text/event-stream' })).text();
    expect(all).toContain('event: RunCompleted');
    const response = await events({ Accept: 'text/event-stream', 'Last-Event-ID': '9999999999' });
    expect(response.status).toBe(200);
    expect(await response.text()).not.toContain('data:');
  });

  it('lists no events after 9999999999', async () => {
    const response = await events({ Accept: 'application/json' }, '?after=9999999999');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ object: 'list', data: [], has_more: false, next_cursor: null });
  });
});
