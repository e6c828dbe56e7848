// AG-UI end to end with the official client: `@ag-ui/client`'s HttpAgent runs an agent and a team against
// /ag-ui; every event passes `@ag-ui/core`'s schemas and the client's own sequence verifier; a client-side
// tool round trip continues the same run; a team member's work is a step and a subagent.
import { HttpAgent, verifyEvents, type BaseEvent } from '@ag-ui/client';
import { EventSchemas } from '@ag-ui/core/schemas';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

type Event = BaseEvent & Record<string, unknown>;

describe('AG-UI', () => {
  let server: TestServer;
  let user: TestUser;
  let upstream: FakeOpenAI;
  beforeAll(async () => {
    upstream = await startFakeOpenAI({ models: ['scripted'] });
    server = await startTestServer({ env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url } });
    user = await server.signUp();
  });
  afterAll(async () => {
    await server?.close();
    await upstream?.close();
  });

  const create = async (path: '/v1/agents' | '/v1/teams', body: Record<string, unknown>) => {
    const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  };

  const agentFor = (path: string, apiKey = user.apiKey) => new HttpAgent({ url: `${server.url}${path}`, headers: { Authorization: `Bearer ${apiKey}` } });

  /** Runs the agent, checking every event against AG-UI's schemas and its verifier, and that the run ended. */
  async function run(agent: HttpAgent, parameters: Parameters<HttpAgent['runAgent']>[0] = {}) {
    const events: Event[] = [];
    const result = await agent.runAgent(parameters, { onEvent: ({ event }) => void events.push(event as Event) });
    for (const event of events) expect(() => EventSchemas.parse(event), JSON.stringify(event)).not.toThrow();
    await expect(lastValueFrom(from(events).pipe(verifyEvents(), toArray()))).resolves.toHaveLength(events.length);
    expect(events[0]?.type).toBe('RUN_STARTED');
    expect(['RUN_FINISHED', 'RUN_ERROR']).toContain(events.at(-1)?.type);
    return { events, result };
  }

  it('streams text, runs server tools as tool calls with results, and ends with usage', async () => {
    const id = await create('/v1/agents', { name: 'Calc', server_tools: ['calculator'] });
    const agent = agentFor(`/v1/agents/${id}/ag-ui`);
    agent.messages = [{ id: 'u1', role: 'user', content: 'calculator {"expression": "6*7"}' }];
    const { events, result } = await run(agent);
    const types = events.map((event) => event.type);
    expect(types).toEqual(expect.arrayContaining(['TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END']));
    expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({ content: '42', role: 'tool' });
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', threadId: agent.threadId, outcome: { type: 'success' }, usage: [{ model: 'local', inputTokens: expect.any(Number) }] });
    const said = result.newMessages.filter((message) => message.role === 'assistant' && typeof message.content === 'string');
    expect(said.at(-1)?.content).toBe('calculator returned: 42.');
  });

  it('ends on a client-side tool with pendingToolCallIds and continues the same run with the tool message', async () => {
    const id = await create('/v1/agents', { name: 'Asker' });
    const agent = agentFor(`/v1/agents/${id}/ag-ui`);
    const tools = [{ name: 'lookup', description: 'Looks things up.', parameters: { type: 'object', properties: { q: { type: 'string' } } } }];
    agent.messages = [{ id: 'u1', role: 'user', content: 'lookup {"q": "otters"}' }];
    const first = await run(agent, { tools });
    const finished = first.events.at(-1)!;
    expect(finished).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success', pendingToolCallIds: [expect.any(String)] } });
    const callId = (finished.outcome as { pendingToolCallIds: string[] }).pendingToolCallIds[0]!;
    expect(first.events.find((event) => event.type === 'TOOL_CALL_START')).toMatchObject({ toolCallId: callId, toolCallName: 'lookup' });
    const runId = (first.events[0]!.metadata as { run_id: string }).run_id;

    agent.addMessage({ id: 't1', role: 'tool', toolCallId: callId, content: '42 otters' });
    const second = await run(agent, { tools });
    expect((second.events[0]!.metadata as { run_id: string }).run_id).toBe(runId);
    expect(second.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(second.events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').map((event) => event.delta).join('')).toBe('lookup returned: 42 otters.');
  });

  it('ends on a tool that needs approval with an interrupt, and a resume approves or denies it on the same run', async () => {
    const id = await create('/v1/agents', { name: 'Careful', server_tools: ['calculator'], server_tool_approvals: { calculator: 'always_ask' } });
    const ask = async () => {
      const agent = agentFor(`/v1/agents/${id}/ag-ui`);
      agent.messages = [{ id: 'u1', role: 'user', content: 'calculator {"expression": "6*7"}' }];
      const first = await run(agent);
      const finished = first.events.at(-1)!;
      expect(finished).toMatchObject({
        type: 'RUN_FINISHED',
        outcome: { type: 'interrupt', interrupts: [{ id: expect.any(String), reason: 'tool_approval', toolCallId: expect.any(String), message: expect.stringContaining('calculator') }] },
      });
      const interrupt = (finished.outcome as { interrupts: { id: string; toolCallId: string }[] }).interrupts[0]!;
      expect(first.events.find((event) => event.type === 'TOOL_CALL_START')).toMatchObject({ toolCallId: interrupt.toolCallId, toolCallName: 'calculator' });
      expect(first.events.some((event) => event.type === 'TOOL_CALL_RESULT')).toBe(false);
      return { agent, interrupt, runId: (first.events[0]!.metadata as { run_id: string }).run_id };
    };

    const approved = await ask();
    const done = await run(approved.agent, { resume: [{ interruptId: approved.interrupt.id, status: 'resolved', payload: { approved: true } }] });
    expect((done.events[0]!.metadata as { run_id: string }).run_id).toBe(approved.runId);
    expect(done.events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({ toolCallId: approved.interrupt.toolCallId, content: '42' });
    expect(done.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });

    const denied = await ask();
    const refused = await run(denied.agent, { resume: [{ interruptId: denied.interrupt.id, status: 'resolved', payload: { approved: false, reason: 'not today' } }] });
    expect((refused.events[0]!.metadata as { run_id: string }).run_id).toBe(denied.runId);
    const result = refused.events.find((event) => event.type === 'TOOL_CALL_RESULT');
    expect(result?.content).toContain('not today');
    expect(String(result?.content)).not.toContain('42');
    expect(refused.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });

    // Answering an interrupt the run does not wait for is refused, before anything runs.
    const stale = await approved.agent.runAgent({ resume: [{ interruptId: approved.interrupt.id, status: 'resolved', payload: { approved: true } }] }).catch((error: unknown) => error);
    expect(stale).toMatchObject({ status: 400 });
  });

  it('shows a team member’s work as a step and a subagent, its events tagged with the member run', async () => {
    const member = await create('/v1/agents', { name: 'Counter', server_tools: ['calculator'] });
    const team = await create('/v1/teams', { name: 'Desk', members: [{ agent_id: member }] });
    const agent = agentFor(`/v1/teams/${team}/ag-ui`);
    agent.messages = [{ id: 'u1', role: 'user', content: 'ask_counter {"task": "calculator {\\"expression\\": \\"2+3\\"}"}' }];
    const { events } = await run(agent);
    const started = events.find((event) => event.type === 'SUBAGENT_STARTED')!;
    expect(started).toMatchObject({ name: 'Counter', subagentRunId: expect.stringMatching(/^run_/), parentToolCallId: expect.any(String) });
    const memberEvents = events.filter((event) => event.subagentRunId === started.subagentRunId);
    expect(memberEvents.map((event) => event.type)).toEqual(expect.arrayContaining(['TOOL_CALL_START', 'TOOL_CALL_RESULT', 'TEXT_MESSAGE_START', 'SUBAGENT_FINISHED']));
    const order: string[] = events.map((event) => event.type);
    expect(order.indexOf('STEP_STARTED')).toBeLessThan(order.indexOf('SUBAGENT_STARTED'));
    expect(order.indexOf('STEP_FINISHED')).toBeGreaterThan(order.indexOf('SUBAGENT_FINISHED'));
    // The leader's delegation is answered by the member's reply, then the leader speaks.
    expect(events.filter((event) => event.type === 'TOOL_CALL_RESULT' && !event.subagentRunId)).toEqual([expect.objectContaining({ content: 'calculator returned: 5.' })]);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
  });

  it('gives context and state to the model, and refuses a resume with nothing to resume', async () => {
    const id = await create('/v1/agents', { name: 'Reader', model: 'scripted', instructions: 'Be kind.' });
    const agent = agentFor(`/v1/agents/${id}/ag-ui`);
    agent.messages = [{ id: 'u1', role: 'user', content: 'hello' }];
    agent.state = { cart: ['apple'] };
    upstream.enqueue({ text: 'You are on the checkout page.' });
    await run(agent, { context: [{ description: 'page', value: 'checkout' }] });
    const system = (upstream.requests.at(-1)!.body as { messages: { role: string; content: string }[] }).messages[0]!;
    expect(system.role).toBe('system');
    expect(system.content).toContain('Be kind.');
    expect(system.content).toContain('- page: checkout');
    expect(system.content).toContain('{"cart":["apple"]}');
    const refused = await agent.runAgent({ resume: [{ interruptId: 'nope', status: 'resolved', payload: { approved: true } }] }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 400 });
  });

  it('answers another user’s agent as it answers a missing one', async () => {
    const id = await create('/v1/agents', { name: 'Private' });
    const stranger = await server.signUp();
    const theirs = await agentFor(`/v1/agents/${id}/ag-ui`, stranger.apiKey).runAgent().catch((error: unknown) => error);
    const missing = await agentFor('/v1/agents/agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D/ag-ui', stranger.apiKey).runAgent().catch((error: unknown) => error);
    expect(theirs).toMatchObject({ status: 404 });
    expect(missing).toMatchObject({ status: 404 });
  });
});
