// Agent runs scripted through a real OpenAI-compatible upstream on loopback: multi-step server tools,
// parallel tool calls, malformed arguments, upstream failures, cancellation, client disconnects,
// keep-alives, timeouts, the step limit, and the recovery of runs whose server died.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { newId } from '../store/ids.ts';

type RunEvent = components['schemas']['RunEvent'];
type ChatMessage = components['schemas']['ChatMessage'];

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

describe('agent runs through an OpenAI-compatible upstream', () => {
  let upstream: FakeOpenAI;
  let server: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ apiKey: 'sk-upstream', models: ['scripted'] });
    server = await startTestServer({
      env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url, OPENAI_API_KEY: 'sk-upstream', SSE_KEEPALIVE_SECONDS: '1' },
    });
    user = await server.signUp();
  });
  afterAll(async () => {
    await server?.close();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  const agentWith = async (body: Partial<components['schemas']['AgentCreate']> = {}) =>
    (await user.client.POST('/v1/agents', { body: { name: 'Scripted', model: 'scripted', ...body } })).data!;

  const open = (agentId: string, body: Record<string, unknown>, init: RequestInit = {}) =>
    fetch(`${server.url}/v1/agents/${agentId}/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(body),
      ...init,
    });

  const collect = async (response: Response) => {
    const events: RunEvent[] = [];
    for await (const event of readEventStream<RunEvent>(response.body!)) events.push(event.data);
    return events;
  };

  const sentMessages = (index: number) => (upstream.requests[index]?.body?.messages ?? []) as ChatMessage[];

  it('runs several steps of server-side tools before answering', async () => {
    const agent = await agentWith({ server_tools: ['calculator', 'current_time'] });
    upstream.enqueue(
      { toolCalls: [{ name: 'calculator', arguments: { expression: '6 * 7' } }] },
      { toolCalls: [{ name: 'current_time', arguments: { timezone: 'Europe/Paris' } }] },
      { text: 'It is 42 o clock' },
    );
    const events = await collect(await open(agent.id, { messages: [{ role: 'user', content: 'compute' }] }));
    // Text deltas said while the store was busy arrive joined: their number varies, their text does not.
    const shape = events.map((e) => (e.type === 'RunResponse' ? (e.delta !== undefined ? 'delta' : 'message') : e.type));
    expect(shape.filter((type, index) => type !== 'delta' || shape[index - 1] !== 'delta')).toEqual([
      'RunStarted',
      'message',
      'ToolCallStarted',
      'ToolCallCompleted',
      'message',
      'ToolCallStarted',
      'ToolCallCompleted',
      'delta',
      'message',
      'RunCompleted',
    ]);
    expect(events.flatMap((e) => (e.type === 'RunResponse' && e.delta ? [e.delta] : [])).join('')).toBe('It is 42 o clock');
    expect(upstream.requests).toHaveLength(3);
    expect(sentMessages(1).at(-1)).toMatchObject({ role: 'tool', content: '42' });
    expect(sentMessages(2).at(-1)).toMatchObject({ role: 'tool', content: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0[12]:00$/) });
    expect((upstream.requests[0]!.body!.tools as { function: { name: string } }[]).map((t) => t.function.name).sort()).toEqual([
      'calculator',
      'current_time',
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'completed', message: { content: 'It is 42 o clock' } });
  });

  it('halts for parallel client-side calls, runs the server-side one of the same step, and resumes', async () => {
    const agent = await agentWith({ tools: [weatherTool], server_tools: ['calculator'] });
    upstream.enqueue({
      toolCalls: [
        { id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris' } },
        { id: 'call_sum', name: 'calculator', arguments: { expression: '1 + 1' } },
        { id: 'call_oslo', name: 'get_weather', arguments: { city: 'Oslo' } },
      ],
    });
    const halted = await collect(await open(agent.id, { messages: [{ role: 'user', content: 'weather in two cities' }] }));
    const request = halted.at(-1)!;
    expect(request.type).toBe('ToolRequest');
    if (request.type !== 'ToolRequest') return;
    expect(request.tool_calls.map((call) => call.id)).toEqual(['call_paris', 'call_oslo']);
    expect(halted.find((e) => e.type === 'ToolCallCompleted')).toMatchObject({ tool_call_id: 'call_sum', output: '2' });

    upstream.enqueue({ text: 'Sunny and snowy' });
    const resumed = await collect(
      await open(agent.id, {
        session_id: request.session_id,
        messages: [
          { role: 'tool', tool_call_id: 'call_oslo', content: 'snow' },
          { role: 'tool', tool_call_id: 'call_paris', content: 'sun' },
        ],
      }),
    );
    expect(resumed.at(-1)).toMatchObject({ type: 'RunCompleted', run_id: request.run_id });
    const toolMessages = sentMessages(1).filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.role === 'tool' && m.tool_call_id)).toEqual(['call_sum', 'call_oslo', 'call_paris']);
  });

  it('reports malformed tool arguments to the model instead of failing', async () => {
    const agent = await agentWith({ tools: [weatherTool] });
    upstream.enqueue({ toolCalls: [{ name: 'get_weather', arguments: '{"city": ' }] }, { text: 'Sorry about that' });
    const events = await collect(await open(agent.id, { messages: [{ role: 'user', content: 'weather' }] }));
    expect(events.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'completed' });
    expect(events.some((e) => e.type === 'ToolRequest')).toBe(false);
    expect(sentMessages(1).at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('not valid JSON') });
  });

  it('ends with RunError when the upstream fails mid-stream, and the session stays usable', async () => {
    const agent = await agentWith();
    upstream.enqueue({ text: 'this answer will be cut short here', dropAfterChunks: 3 });
    const events = await collect(await open(agent.id, { messages: [{ role: 'user', content: 'talk' }] }));
    const last = events.at(-1)!;
    expect(last).toMatchObject({ type: 'RunError', status: 'failed', error: { code: 'upstream_error' } });
    const run = await user.client.GET('/v1/runs/{runId}', { params: { path: { runId: last.run_id } } });
    expect(run.data).toMatchObject({ status: 'failed', error: { code: 'upstream_error' } });
    const session = (events[0] as Extract<RunEvent, { type: 'RunStarted' }>).session_id;
    upstream.enqueue({ text: 'back again' });
    const retry = await user.client.POST('/v1/agents/{agentId}/chat', {
      params: { path: { agentId: agent.id } },
      body: { session_id: session, messages: [{ role: 'user', content: 'again' }] },
    });
    expect(retry.data?.message?.content).toBe('back again');
  });

  it('answers a failed JSON turn with the error envelope naming the run', async () => {
    const agent = await agentWith();
    upstream.enqueue({ error: { status: 500, message: 'upstream exploded' } });
    const failed = await user.client.POST('/v1/agents/{agentId}/chat', {
      params: { path: { agentId: agent.id } },
      body: { messages: [{ role: 'user', content: 'x' }] },
    });
    expect(failed.response.status).toBe(502);
    expect(failed.error?.error.code).toBe('upstream_error');
    expect(failed.error?.error.details?.[0]?.run_id).toMatch(/^run_/);
  });

  it('cancels a live run: the stream ends with RunCompleted canceled and the upstream call is aborted', async () => {
    const agent = await agentWith();
    upstream.enqueue({ text: 'word '.repeat(200), chunkGapMs: 50 });
    const response = await open(agent.id, { messages: [{ role: 'user', content: 'long' }] });
    const events: RunEvent[] = [];
    for await (const { data } of readEventStream<RunEvent>(response.body!)) {
      events.push(data);
      if (data.type === 'RunResponse' && data.delta && events.filter((e) => e.type === 'RunResponse').length === 2) {
        const canceled = await user.client.POST('/v1/runs/{runId}/cancel', { params: { path: { runId: data.run_id } } });
        expect(canceled.data?.status).toBe('canceled');
      }
    }
    expect(events.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'canceled', finish_reason: 'canceled' });
    expect(await upstream.requests[0]!.outcome).toBe('aborted');
  });

  it('cancels the run when a blocking (JSON) client goes away, but not when a streaming one does', async () => {
    const agent = await agentWith();
    upstream.enqueue({ hang: true });
    const gone = new AbortController();
    const blocking = fetch(`${server.url}/v1/agents/${agent.id}/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'wait' }] }),
      signal: gone.signal,
    });
    while (upstream.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    gone.abort();
    await expect(blocking).rejects.toThrow();
    expect(await upstream.requests[0]!.outcome).toBe('aborted');
    const sessions = await user.client.GET('/v1/sessions', { params: { query: { agent_id: agent.id } } });
    const runs = await server.services.db.query<{ status: string }>('SELECT status FROM runs WHERE session_id = $1', [sessions.data!.data[0]!.id]);
    await expect.poll(async () => (await server.services.db.query<{ status: string }>('SELECT status FROM runs WHERE session_id = $1', [sessions.data!.data[0]!.id]))[0]?.status).toBe('canceled');
    expect(runs).toHaveLength(1);

    upstream.enqueue({ text: 'still here after you left', chunkGapMs: 20 });
    const streaming = new AbortController();
    const response = await open(agent.id, { messages: [{ role: 'user', content: 'stream' }] }, { signal: streaming.signal });
    const reader = readEventStream<RunEvent>(response.body!);
    const started = (await reader.next()).value!.data;
    streaming.abort();
    await reader.return(undefined);
    const replay = await fetch(`${server.url}/v1/runs/${started.run_id}/events`, {
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Last-Event-ID': String(started.sequence_number) },
    });
    const rest = await collect(replay);
    expect(rest[0]!.sequence_number).toBe(started.sequence_number + 1);
    expect(rest.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'completed', message: { content: 'still here after you left' } });
  });

  it('sends keep-alive comments during long silences', async () => {
    const agent = await agentWith();
    upstream.enqueue({ text: 'finally', latencyMs: 2500 });
    const response = await open(agent.id, { messages: [{ role: 'user', content: 'slow' }] });
    expect(await response.text()).toContain(': keep-alive');
  });

  it('fails a run that exceeds its timeout', async () => {
    const agent = await agentWith({ run_timeout_seconds: 1 });
    upstream.enqueue({ hang: true });
    const events = await collect(await open(agent.id, { messages: [{ role: 'user', content: 'never' }] }));
    expect(events.at(-1)).toMatchObject({ type: 'RunError', error: { code: 'upstream_timeout' } });
  });

  it('stops after max_steps model calls', async () => {
    const agent = await agentWith({ max_steps: 2, server_tools: ['calculator'] });
    upstream.enqueue(
      { toolCalls: [{ name: 'calculator', arguments: { expression: '1' } }] },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '2' } }] },
      { text: 'never asked' },
    );
    const events = await collect(await open(agent.id, { messages: [{ role: 'user', content: 'loop' }] }));
    expect(upstream.requests).toHaveLength(2);
    expect(events.at(-1)).toMatchObject({ type: 'RunCompleted', status: 'completed', finish_reason: 'length' });
  });
});

describe.each(await availableEngines())('run recovery on %s', (engine) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ engine, env: unlimitedPlanEnv() });
  });
  afterAll(() => server?.close());

  it('fails runs left in progress by a server that stopped, with a final RunError event', async () => {
    const { userId, client } = await server.signUp();
    const agent = (await client.POST('/v1/agents', { body: { name: 'Orphan' } })).data!;
    const { db, chatSessions, runs } = server.services;
    const session = await chatSessions.create(userId, { agentId: agent.id, teamId: null }, []);
    // A server that is gone: no process holds its liveness lock.
    const run = await runs.create({ userId, sessionId: session.id, agentId: agent.id, teamId: null, parentRunId: null, model: 'local', owner: newId('inst') });
    expect(await server.services.engine.sweep()).toBe(1);
    const stored = await client.GET('/v1/runs/{runId}', { params: { path: { runId: run.id } } });
    expect(stored.data).toMatchObject({ status: 'failed', error: { code: 'internal_error' } });
    const events = await client.GET('/v1/runs/{runId}/events', { params: { path: { runId: run.id } }, headers: { Accept: 'application/json' } });
    expect(events.data?.data.at(-1)).toMatchObject({ type: 'RunError', status: 'failed' });
    const [row] = await db.query<{ status: string }>('SELECT status FROM sessions WHERE id = $1', [session.id]);
    expect(row?.status).toBe('idle');
  });

  it.runIf(engine === 'postgres')('leaves the runs of a live server alone', async () => {
    const { userId } = await server.signUp();
    const { chatSessions, runs, engine: runEngine } = server.services;
    const agent = await server.services.agents.create(userId, { name: 'Alive' });
    const session = await chatSessions.create(userId, { agentId: agent.id, teamId: null }, []);
    const other = newId('inst');
    // Another live server holds its lock on its own connection.
    let release!: () => void;
    const held = new Promise<void>((ready) => {
      void server.services.db.withAdvisoryLock(other, () => {
        ready();
        return new Promise<void>((done) => (release = done));
      });
    });
    await held;
    const run = await runs.create({ userId, sessionId: session.id, agentId: agent.id, teamId: null, parentRunId: null, model: 'local', owner: other });
    expect(await runEngine.sweep()).toBe(0);
    expect((await runs.get(userId, run.id)).status).toBe('in_progress');
    release();
  });
});
