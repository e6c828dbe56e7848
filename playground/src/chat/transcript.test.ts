// The chat view's fold, over the events a real server streams with the local model: what a person sees
// for a plain answer, a client-side tool answered in the page, a server-side tool, a team, a cancelled
// run, a replay of stored events and a reopened session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, RunEvent } from '../../../client/index.ts';
import { startTestServer, type TestServer, type TestUser } from '../../../server/testing/harness.ts';
import { unlimitedPlanEnv } from '../../../server/testing/plans.ts';
import { addUserMessage, answerAction, applyEvent, emptyTranscript, fromMessages, withPendingRun, type Item, type Transcript } from './transcript.ts';

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

describe('the chat transcript, folded from real run events', () => {
  let server: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    // Slow tokens, so that a cancel lands while the answer is still streaming.
    server = await startTestServer({ env: { ...unlimitedPlanEnv(), LOCAL_MODEL_TOKEN_DELAY_MS: '20' } });
    user = await server.signUp();
  });
  afterAll(() => server?.close());

  /** One streamed turn folded into `state`, as the chat view does it; answers the events too. */
  async function turn(kind: 'agent' | 'team', id: string, state: Transcript, body: ChatRequest, onEvent?: (event: RunEvent) => Promise<void>) {
    const events: RunEvent[] = [];
    const stream = kind === 'agent' ? user.client.agents.chat(id, { ...body, stream: true }) : user.client.teams.chat(id, { ...body, stream: true });
    for await (const event of stream) {
      events.push(event);
      state = applyEvent(state, event);
      await onEvent?.(event);
    }
    return { state, events };
  }

  const kinds = (state: Transcript) => state.items.map((item) => item.kind);
  const only = <K extends Item['kind']>(state: Transcript, kind: K) => state.items.filter((item): item is Extract<Item, { kind: K }> => item.kind === kind);

  it("streams an answer into one message whose text is the run's final message", async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Echo' } })).data!;
    const started = addUserMessage(emptyTranscript, 'hello there playground', 'u1');
    const { state, events } = await turn('agent', agent.id, started, { messages: [{ role: 'user', content: 'hello there playground' }] });
    expect(events.filter((event) => event.type === 'RunResponse' && event.delta !== undefined).length).toBeGreaterThan(1);
    expect(kinds(state)).toEqual(['user', 'assistant']);
    const completed = events.at(-1) as Extract<RunEvent, { type: 'RunCompleted' }>;
    expect(only(state, 'assistant')[0]).toMatchObject({ text: completed.message!.content, streaming: false });
    const first = events[0] as Extract<RunEvent, { type: 'RunStarted' }>;
    expect(state).toMatchObject({ status: 'completed', runId: completed.run_id, sessionId: first.session_id, usage: completed.usage, model: 'local' });
  });

  it('halts on a client-side tool with a card and a request, and goes on with the answer given in the page', async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Weather', tools: [weatherTool] } })).data!;
    const asked = await turn('agent', agent.id, emptyTranscript, { messages: [{ role: 'user', content: 'get_weather {"city": "Paris"}' }] });
    expect(asked.state.status).toBe('requires_action');
    const [card] = only(asked.state, 'tool_call');
    expect(card).toMatchObject({ name: 'get_weather', side: 'client', state: 'requested' });
    expect(JSON.parse(card!.arguments)).toEqual({ city: 'Paris' });
    const [action] = only(asked.state, 'action');
    expect(action).toMatchObject({ answered: false, action: { type: 'client_tools', runId: asked.state.runId, sessionId: asked.state.sessionId } });
    expect(action!.action.calls.map((call) => call.id)).toEqual([card!.callId]);

    const answered = answerAction(asked.state, action!.key, { results: [{ callId: card!.callId, output: '{"temperature_c":18}' }], approvals: [] });
    expect(only(answered, 'tool_call')[0]).toMatchObject({ state: 'done', output: '{"temperature_c":18}' });
    const resumed = await turn('agent', agent.id, answered, {
      session_id: asked.state.sessionId!,
      messages: [{ role: 'tool', tool_call_id: card!.callId, content: '{"temperature_c":18}' }],
    });
    expect(resumed.state).toMatchObject({ status: 'completed', runId: asked.state.runId });
    expect(only(resumed.state, 'action')[0]?.answered).toBe(true);
    expect(only(resumed.state, 'assistant').at(-1)?.text).toContain('get_weather returned');
  });

  it('halts on a call that needs approval with a server-side card and an approval request, and goes on when approved', async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Careful', server_tools: ['calculator'], server_tool_approvals: { calculator: 'always_ask' } } })).data!;
    const asked = await turn('agent', agent.id, emptyTranscript, { messages: [{ role: 'user', content: 'calculator {"expression": "6*7"}' }] });
    expect(asked.state.status).toBe('requires_action');
    const [card] = only(asked.state, 'tool_call');
    expect(card).toMatchObject({ name: 'calculator', side: 'server', state: 'requested' });
    const [action] = only(asked.state, 'action');
    expect(action!.action.approvals).toMatchObject([{ tool_call_id: card!.callId, name: 'calculator' }]);

    const answered = answerAction(asked.state, action!.key, { results: [], approvals: [{ tool_call_id: card!.callId, decision: 'approve' }] });
    const resumed = await turn('agent', agent.id, answered, { session_id: asked.state.sessionId!, messages: [], approvals: [{ tool_call_id: card!.callId, decision: 'approve' }] });
    expect(resumed.state).toMatchObject({ status: 'completed', runId: asked.state.runId });
    expect(only(resumed.state, 'tool_call')[0]).toMatchObject({ callId: card!.callId, side: 'server', state: 'done', output: '42' });
    expect(only(resumed.state, 'assistant').at(-1)?.text).toContain('42');
  });

  it('shows a server-side tool as a card with its arguments and result', async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Maths', server_tools: ['calculator'] } })).data!;
    const { state } = await turn('agent', agent.id, emptyTranscript, { messages: [{ role: 'user', content: 'calculator {"expression": "6 * 7"}' }] });
    expect(only(state, 'tool_call')).toEqual([expect.objectContaining({ name: 'calculator', side: 'server', state: 'done', isError: false })]);
    expect(only(state, 'tool_call')[0]!.output).toContain('42');
    expect(state.status).toBe('completed');
  });

  it("says who speaks in a team, and keeps a member's relayed work apart", async () => {
    const a = (await user.client.POST('/v1/agents', { body: { name: 'Alpha' } })).data!;
    const b = (await user.client.POST('/v1/agents', { body: { name: 'Beta' } })).data!;
    const team = (await user.client.POST('/v1/teams', { body: { name: 'Pair', mode: 'broadcast', members: [{ agent_id: a.id }, { agent_id: b.id }] } })).data!;
    const { state } = await turn('team', team.id, emptyTranscript, { messages: [{ role: 'user', content: 'hello team' }] });
    const speakers = only(state, 'assistant').map((item) => item.from?.name);
    expect(speakers).toContain('Alpha');
    expect(speakers).toContain('Beta');
    expect(speakers.at(-1)).toBe('Pair leader');
    expect(state.status).toBe('completed');
    // Relayed member work (member_run_id) is the member's conversation: its own message, never merged
    // into the team's message with the same id.
    const relayed = applyEvent(state, { type: 'RunResponse', run_id: state.runId!, sequence_number: 99, created_at: new Date().toISOString(), message_id: 'msg_same', member_run_id: 'run_member', from: { agent_id: a.id, name: 'Alpha', role: null, is_leader: false }, delta: 'drafting' });
    const withTeam = applyEvent(relayed, { type: 'RunResponse', run_id: state.runId!, sequence_number: 100, created_at: new Date().toISOString(), message_id: 'msg_same', delta: 'final' });
    expect(only(withTeam, 'assistant').slice(-2).map((item) => [item.text, item.memberRunId])).toEqual([['drafting', 'run_member'], ['final', undefined]]);
  });

  it('ends a cancelled run with a notice, keeping what had streamed', async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Slow' } })).data!;
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    let cancelled = false;
    const { state } = await turn('agent', agent.id, emptyTranscript, { messages: [{ role: 'user', content: words }] }, async (event) => {
      if (!cancelled && event.type === 'RunResponse' && event.delta !== undefined) {
        cancelled = true;
        await user.client.POST('/v1/runs/{runId}/cancel', { params: { path: { runId: event.run_id } } });
      }
    });
    expect(state.status).toBe('canceled');
    expect(state.items.at(-1)).toMatchObject({ kind: 'notice', tone: 'info', text: 'The run was cancelled.' });
    expect(only(state, 'assistant')[0]?.streaming).toBe(false);
    expect(only(state, 'assistant')[0]!.text.length).toBeLessThan(words.length);
  });

  it('replays stored events into the same transcript, and reopens a session with its pending request', async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Replay', tools: [weatherTool], server_tools: ['calculator'] } })).data!;
    const live = await turn('agent', agent.id, emptyTranscript, { messages: [{ role: 'user', content: 'calculator {"expression": "1 + 1"}' }] });
    const stored = await user.client.GET('/v1/runs/{runId}/events', { params: { path: { runId: live.state.runId! } }, headers: { Accept: 'application/json' } });
    expect(stored.data!.data.reduce(applyEvent, emptyTranscript).items).toEqual(live.state.items);

    const waiting = await turn('agent', agent.id, emptyTranscript, { session_id: live.state.sessionId!, messages: [{ role: 'user', content: 'get_weather {"city": "Oslo"}' }] });
    const session = (await user.client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId: live.state.sessionId! } } })).data!;
    const runs = (await user.client.GET('/v1/sessions/{sessionId}/runs', { params: { path: { sessionId: session.id }, query: { limit: 1 } } })).data!;
    const reopened = withPendingRun(fromMessages(session.messages, session.id), runs.data[0]!);
    expect(kinds(reopened)).toEqual(['user', 'tool_call', 'assistant', 'user', 'tool_call', 'action']);
    expect(only(reopened, 'tool_call')[0]).toMatchObject({ name: 'calculator', state: 'done' });
    expect(only(reopened, 'tool_call')[1]).toMatchObject({ name: 'get_weather', side: 'client', state: 'requested' });
    expect(only(reopened, 'action')[0]!.action).toEqual(only(waiting.state, 'action')[0]!.action);
    expect(reopened.status).toBe('requires_action');
  });
});
