// Agent runs end to end with the built-in local model, through the generated client and raw SSE:
// JSON and streamed turns, client-side tools that halt and resume a run, sessions, server-side tools,
// cancellation, replay with Last-Event-ID, and ownership.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

type RunEvent = components['schemas']['RunEvent'];

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather for a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

/** Posts a chat turn as SSE and collects its events. */
async function streamChat(server: TestServer, user: TestUser, agentId: string, body: Record<string, unknown>) {
  const response = await fetch(`${server.url}/v1/agents/${agentId}/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const events: { id: string | undefined; event: string | undefined; data: RunEvent }[] = [];
  for await (const event of readEventStream<RunEvent>(response.body!)) events.push(event);
  return events;
}

function checkSequence(events: { data: RunEvent }[]) {
  const numbers = events.map((event) => event.data.sequence_number);
  for (let i = 1; i < numbers.length; i++) expect(numbers[i]).toBeGreaterThan(numbers[i - 1]!);
}

describe('agent runs on the local model', () => {
  let server: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    server = await startTestServer({ env: unlimitedPlanEnv() });
    user = await server.signUp();
  });
  afterAll(() => server?.close());

  const chat = (agentId: string, body: components['schemas']['ChatRequest']) => user.client.POST('/v1/agents/{agentId}/chat', { params: { path: { agentId } }, body });

  /** The run's stored events, replayed as SSE; after `lastEventId` when given. */
  const replay = async (runId: string, lastEventId?: string) => {
    const response = await fetch(`${server.url}/v1/runs/${runId}/events`, {
      headers: { Authorization: `Bearer ${user.apiKey}`, ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}) },
    });
    const seen: RunEvent[] = [];
    for await (const event of readEventStream<RunEvent>(response.body!)) seen.push(event.data);
    return seen;
  };

  const createAgent = async (body: Partial<components['schemas']['AgentCreate']> = {}) => {
    const created = await user.client.POST('/v1/agents', { body: { name: 'Helper', instructions: 'Be brief.', ...body } });
    expect(created.response.status).toBe(201);
    return created.data!;
  };

  it('answers a JSON turn with the whole turn and keeps the session', async () => {
    const agent = await createAgent();
    const first = await chat(agent.id, { messages: [{ role: 'user', content: 'Hello there' }] });
    expect(first.response.status).toBe(200);
    expect(first.data).toMatchObject({
      object: 'chat.turn',
      status: 'completed',
      agent_id: agent.id,
      finish_reason: 'stop',
      message: { role: 'assistant', content: 'Hello there' },
      required_action: null,
    });
    expect(first.data!.usage.total_tokens).toBeGreaterThan(0);

    const second = await chat(agent.id, { session_id: first.data!.session_id, messages: [{ role: 'user', content: 'And again' }] });
    expect(second.data?.session_id).toBe(first.data!.session_id);
    expect(second.data?.run_id).not.toBe(first.data!.run_id);

    const session = await user.client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId: first.data!.session_id } } });
    expect(session.data).toMatchObject({ status: 'idle', message_count: 4, title: 'Hello there', agent_id: agent.id });
    expect(session.data!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);

    const run = await user.client.GET('/v1/runs/{runId}', { params: { path: { runId: first.data!.run_id } } });
    expect(run.data).toMatchObject({ status: 'completed', session_id: first.data!.session_id, error: null });
    expect(run.data!.completed_at).not.toBeNull();
  });

  it('streams RunStarted, text deltas that add up to the message, and RunCompleted', async () => {
    const agent = await createAgent();
    const events = await streamChat(server, user, agent.id, { messages: [{ role: 'user', content: 'one two three four' }] });
    const types = events.map((event) => event.data.type);
    expect(types[0]).toBe('RunStarted');
    expect(types.at(-1)).toBe('RunCompleted');
    expect(events.every((event) => event.event === event.data.type && event.id === String(event.data.sequence_number))).toBe(true);
    checkSequence(events);
    const deltas = events.flatMap((event) => (event.data.type === 'RunResponse' && event.data.delta ? [event.data.delta] : []));
    // One delta per word, unless several were said while the store was busy and arrive joined.
    expect(deltas.length).toBeGreaterThanOrEqual(1);
    const whole = events.find((event) => event.data.type === 'RunResponse' && event.data.message)?.data;
    expect(whole && whole.type === 'RunResponse' && whole.message?.content).toBe(deltas.join(''));
    const completed = events.at(-1)!.data;
    expect(completed.type === 'RunCompleted' && completed.message?.content).toBe('one two three four');
  });

  it('halts on a client-side tool with ToolRequest and resumes the same run with the result', async () => {
    const agent = await createAgent({ tools: [weatherTool] });
    const events = await streamChat(server, user, agent.id, {
      messages: [{ role: 'user', content: 'Weather please: get_weather {"city": "Paris"}' }],
    });
    const last = events.at(-1)!.data;
    expect(last.type).toBe('ToolRequest');
    if (last.type !== 'ToolRequest') return;
    expect(last.tool_calls).toEqual([{ id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
    const run = await user.client.GET('/v1/runs/{runId}', { params: { path: { runId: last.run_id } } });
    expect(run.data?.status).toBe('requires_action');
    expect(run.data?.required_action?.tool_calls[0]?.id).toBe(last.tool_calls[0]!.id);

    const resumed = await streamChat(server, user, agent.id, {
      session_id: last.session_id,
      messages: [{ role: 'tool', tool_call_id: last.tool_calls[0]!.id, content: '{"temperature_c": 18}' }],
    });
    expect(resumed[0]!.data).toMatchObject({ type: 'RunStarted', run_id: last.run_id, resumed: true });
    expect(resumed[0]!.data.sequence_number).toBe(last.sequence_number + 1);
    const done = resumed.at(-1)!.data;
    expect(done.type === 'RunCompleted' && done.message?.content).toBe('get_weather returned: {"temperature_c": 18}.');
  });

  it('refuses to resume without every pending result, and refuses tool messages with nothing pending', async () => {
    const agent = await createAgent({ tools: [weatherTool] });
    const halted = await chat(agent.id, { messages: [{ role: 'user', content: 'get_weather {"city": "Oslo"}' }] });
    expect(halted.data).toMatchObject({ status: 'requires_action', finish_reason: 'tool_calls' });
    const sessionId = halted.data!.session_id;
    const callId = halted.data!.required_action!.tool_calls[0]!.id;

    const userInstead = await chat(agent.id, { session_id: sessionId, messages: [{ role: 'user', content: 'never mind' }] });
    expect(userInstead.response.status).toBe(400);
    const wrongId = await chat(agent.id, { session_id: sessionId, messages: [{ role: 'tool', tool_call_id: 'call_other', content: 'x' }] });
    expect(wrongId.response.status).toBe(400);

    const answered = await chat(agent.id, { session_id: sessionId, messages: [{ role: 'tool', tool_call_id: callId, content: 'rain' }] });
    expect(answered.data).toMatchObject({ status: 'completed', run_id: halted.data!.run_id });

    const stray = await chat(agent.id, { messages: [{ role: 'tool', tool_call_id: callId, content: 'rain' }] });
    expect(stray.response.status).toBe(400);
  });

  it('runs server-side tools itself, with ToolCallStarted and ToolCallCompleted', async () => {
    const agent = await createAgent({ server_tools: ['calculator'] });
    const events = await streamChat(server, user, agent.id, { messages: [{ role: 'user', content: 'calculator {"expression": "(2 + 3) * 4"}' }] });
    const types = events.map((event) => event.data.type);
    expect(types).toContain('ToolCallStarted');
    const completedTool = events.find((event) => event.data.type === 'ToolCallCompleted')!.data;
    expect(completedTool).toMatchObject({ name: 'calculator', output: '20', is_error: false });
    const done = events.at(-1)!.data;
    expect(done.type === 'RunCompleted' && done.message?.content).toBe('calculator returned: 20.');

    const bad = await streamChat(server, user, agent.id, { messages: [{ role: 'user', content: 'calculator {"expression": "2 +"}' }] });
    expect(bad.find((event) => event.data.type === 'ToolCallCompleted')!.data).toMatchObject({ is_error: true });
    expect(bad.at(-1)!.data.type).toBe('RunCompleted');
  });

  it('gives agents with knowledge collections the knowledge_search tool, and lists the sources used', async () => {
    const doc = await user.client.POST('/v1/knowledge/documents', {
      body: { text: 'Otters hold hands while they sleep so that they do not drift apart.', title: 'Otter facts', source: 'https://example.org/otters', collection: 'animals' },
    });
    expect(doc.response.status).toBe(201);
    const unknown = await user.client.POST('/v1/agents', { body: { name: 'x', knowledge_collections: ['nope'] } });
    expect(unknown.response.status).toBe(400);
    const agent = await createAgent({ knowledge_collections: ['animals'] });
    const events = await streamChat(server, user, agent.id, { messages: [{ role: 'user', content: 'knowledge_search {"query": "why do otters hold hands"}' }] });
    expect(events.find((e) => e.data.type === 'ToolCallStarted')?.data).toMatchObject({ tool_call: { function: { name: 'knowledge_search' } } });
    const found = events.find((e) => e.data.type === 'ToolCallCompleted')!.data;
    expect(found.type === 'ToolCallCompleted' && JSON.parse(found.output)[0]).toMatchObject({ document_id: doc.data!.id, title: 'Otter facts' });
    const done = events.at(-1)!.data;
    expect(done).toMatchObject({ type: 'RunCompleted', sources: [{ document_id: doc.data!.id, title: 'Otter facts', source: 'https://example.org/otters' }] });
    expect(done.type === 'RunCompleted' && done.message?.content).toMatch(/Sources: Otter facts \(https:\/\/example\.org\/otters\)$/);
  });

  it('cancels a run that waits for tools, ending it with RunCompleted canceled', async () => {
    const agent = await createAgent({ tools: [weatherTool] });
    const halted = await chat(agent.id, { messages: [{ role: 'user', content: 'get_weather {}' }] });
    const runId = halted.data!.run_id;
    const canceled = await user.client.POST('/v1/runs/{runId}/cancel', { params: { path: { runId } } });
    expect(canceled.data).toMatchObject({ status: 'canceled', required_action: null });
    expect((await replay(runId)).at(-1)).toMatchObject({ type: 'RunCompleted', status: 'canceled', finish_reason: 'canceled' });
    const session = await user.client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId: halted.data!.session_id } } });
    expect(session.data?.status).toBe('idle');
  });

  it('replays stored events, and resumes after Last-Event-ID', async () => {
    const agent = await createAgent();
    const events = await streamChat(server, user, agent.id, { messages: [{ role: 'user', content: 'alpha beta gamma' }] });
    const runId = events[0]!.data.run_id;
    expect(await replay(runId)).toEqual(events.map((event) => event.data));
    expect(await replay(runId, events[2]!.id)).toEqual(events.slice(3).map((event) => event.data));

    const page = await user.client.GET('/v1/runs/{runId}/events', {
      params: { path: { runId }, query: { limit: 2 } },
      headers: { Accept: 'application/json' },
    });
    expect(page.data).toMatchObject({ object: 'list', has_more: true, next_cursor: '2' });
    expect(page.data!.data.map((event) => event.sequence_number)).toEqual([1, 2]);
  });

  it('refuses a second turn on a session while one is running (409)', async () => {
    const agent = await createAgent({ tools: [weatherTool] });
    const first = await chat(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
    const sessionId = first.data!.session_id;
    await server.services.chatSessions.setStatus(sessionId, 'running');
    const busy = await chat(agent.id, { session_id: sessionId, messages: [{ role: 'user', content: 'hi again' }] });
    expect(busy.response.status).toBe(409);
    expect(busy.error?.error.code).toBe('conflict');
  });

  it('validates agents: unknown model, reserved or duplicate tool names', async () => {
    const unknown = await user.client.POST('/v1/agents', { body: { name: 'x', model: 'nope' } });
    expect(unknown.response.status).toBe(400);
    expect(unknown.error?.error.details?.[0]?.path).toBe('/body/model');
    const reserved = await user.client.POST('/v1/agents', {
      body: { name: 'x', tools: [{ type: 'function', function: { name: 'calculator' } }] },
    });
    expect(reserved.response.status).toBe(400);
    const duplicate = await user.client.POST('/v1/agents', { body: { name: 'x', tools: [weatherTool, weatherTool] } });
    expect(duplicate.response.status).toBe(400);
    const tooLong = await user.client.POST('/v1/agents', { body: { name: 'x'.repeat(101) } });
    expect(tooLong.response.status).toBe(400);
  });

  it('lists, updates and deletes agents; deleting removes their sessions', async () => {
    const agent = await createAgent({ name: 'Short-lived' });
    const updated = await user.client.PATCH('/v1/agents/{agentId}', {
      params: { path: { agentId: agent.id } },
      body: { instructions: null, model_settings: { temperature: 0.1 }, metadata: { k: 'v' } },
    });
    expect(updated.data).toMatchObject({ instructions: null, model_settings: { temperature: 0.1 }, metadata: { k: 'v' }, name: 'Short-lived' });
    const turn = await chat(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
    const list = await user.client.GET('/v1/agents', { params: { query: { limit: 100 } } });
    expect(list.data?.data.map((a) => a.id)).toContain(agent.id);
    const sessions = await user.client.GET('/v1/sessions', { params: { query: { agent_id: agent.id } } });
    expect(sessions.data?.data.map((s) => s.id)).toEqual([turn.data!.session_id]);
    expect((await user.client.DELETE('/v1/agents/{agentId}', { params: { path: { agentId: agent.id } } })).response.status).toBe(204);
    expect((await user.client.GET('/v1/agents/{agentId}', { params: { path: { agentId: agent.id } } })).response.status).toBe(404);
    expect((await user.client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId: turn.data!.session_id } } })).response.status).toBe(404);
  });

  it("hides another user's agents, sessions and runs (404)", async () => {
    const agent = await createAgent();
    const turn = await chat(agent.id, { messages: [{ role: 'user', content: 'mine' }] });
    const other = await server.signUp();
    const agentPath = { params: { path: { agentId: agent.id } } };
    expect((await other.client.GET('/v1/agents/{agentId}', agentPath)).response.status).toBe(404);
    expect((await other.client.PATCH('/v1/agents/{agentId}', { ...agentPath, body: { name: 'stolen' } })).response.status).toBe(404);
    expect((await other.client.DELETE('/v1/agents/{agentId}', agentPath)).response.status).toBe(404);
    expect((await other.client.POST('/v1/agents/{agentId}/chat', { ...agentPath, body: { messages: [{ role: 'user', content: 'x' }] } })).response.status).toBe(404);
    const sessionPath = { params: { path: { sessionId: turn.data!.session_id } } };
    expect((await other.client.GET('/v1/sessions/{sessionId}', sessionPath)).response.status).toBe(404);
    expect((await other.client.DELETE('/v1/sessions/{sessionId}', sessionPath)).response.status).toBe(404);
    const runPath = { params: { path: { runId: turn.data!.run_id } } };
    expect((await other.client.GET('/v1/runs/{runId}', runPath)).response.status).toBe(404);
    expect((await other.client.POST('/v1/runs/{runId}/cancel', runPath)).response.status).toBe(404);
    const events = await fetch(`${server.url}/v1/runs/${turn.data!.run_id}/events`, { headers: { Authorization: `Bearer ${other.apiKey}` } });
    expect(events.status).toBe(404);
    const ownSession = await user.client.POST('/v1/agents/{agentId}/chat', {
      params: { path: { agentId: (await other.client.POST('/v1/agents', { body: { name: 'theirs' } })).data!.id } },
      body: { messages: [{ role: 'user', content: 'x' }] },
    });
    expect(ownSession.response.status).toBe(404);
    expect((await other.client.GET('/v1/agents')).data?.data.map((a) => a.name)).toEqual(['theirs']);
    expect((await other.client.GET('/v1/sessions')).data?.data).toEqual([]);
  });
});
