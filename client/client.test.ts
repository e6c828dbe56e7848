// The typed client against the real server: blocking and streamed turns, the tool loop, replay, errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, type TestUser } from '../server/testing/harness.ts';
import { unlimitedPlanEnv } from '../server/testing/plans.ts';
import { createOpenAgentClient, OpenAgentError, type OpenAgentClient, type RunEvent } from './index.ts';

describe('the client', () => {
  let server: TestServer;
  let user: TestUser;
  let client: OpenAgentClient;
  let agentId: string;

  beforeAll(async () => {
    server = await startTestServer({ env: unlimitedPlanEnv() });
    user = await server.signUp();
    client = createOpenAgentClient({ baseUrl: server.url, apiKey: user.apiKey });
    const agent = await client.POST('/v1/agents', {
      body: {
        name: 'Client test',
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
      },
    });
    agentId = agent.data!.id;
  });
  afterAll(() => server?.close());

  it('chats blocking, and streamed as typed events', async () => {
    const turn = await client.agents.chat(agentId, { messages: [{ role: 'user', content: 'hi there' }] });
    expect(turn).toMatchObject({ status: 'completed', message: { content: 'hi there' } });
    const events: RunEvent[] = [];
    for await (const event of client.agents.chat(agentId, { session_id: turn.session_id, stream: true, messages: [{ role: 'user', content: 'again' }] })) {
      events.push(event);
    }
    expect(events[0]?.type).toBe('RunStarted');
    expect(events.at(-1)).toMatchObject({ type: 'RunCompleted', message: { content: 'again' } });
  });

  it('runs client-side tools until the run completes, blocking or streamed', async () => {
    const calls: unknown[] = [];
    const tools = {
      lookup: (args: Record<string, unknown>) => {
        calls.push(args);
        return { found: args.q };
      },
    };
    const turn = await client.agents.runWithTools(agentId, { messages: [{ role: 'user', content: 'lookup {"q": "otters"}' }] }, tools);
    expect(calls).toEqual([{ q: 'otters' }]);
    expect(turn).toMatchObject({ status: 'completed', message: { content: 'lookup returned: {"found":"otters"}.' } });

    const seen: string[] = [];
    const streamed = await client.agents.runWithTools(agentId, { messages: [{ role: 'user', content: 'lookup {"q": "seals"}' }] }, tools, {
      onEvent: (event) => seen.push(event.type),
    });
    expect(streamed.message?.content).toBe('lookup returned: {"found":"seals"}.');
    expect(seen.filter((type) => type === 'RunStarted')).toHaveLength(2);
    expect(seen).toContain('ToolRequest');
  });

  it('replays a run from a Last-Event-ID', async () => {
    const turn = await client.agents.chat(agentId, { messages: [{ role: 'user', content: 'one two' }] });
    const all: RunEvent[] = [];
    for await (const event of client.runs.events(turn.run_id)) all.push(event);
    const tail: RunEvent[] = [];
    for await (const event of client.runs.events(turn.run_id, String(all[1]!.sequence_number))) tail.push(event);
    expect(tail).toEqual(all.slice(2));
  });

  it('surfaces errors as the typed envelope', async () => {
    const missing = await client.GET('/v1/agents/{agentId}', { params: { path: { agentId: 'agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D' } } });
    expect(missing.error?.error.code).toBe('not_found');
    const error = await client.agents.chat('agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D', { messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAgentError);
    expect((error as OpenAgentError).code).toBe('not_found');
    const stream = client.agents.chat('agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D', { stream: true, messages: [{ role: 'user', content: 'x' }] });
    await expect(stream.next()).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });
});
