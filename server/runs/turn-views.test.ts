// One truth for a turn: for an agent and each team mode, with and without a client-side tool, the JSON
// answer is the fold of the very events the run stored, the same request streamed folds to the same turn,
// and the typed client's fold of a stream agrees. A team turn's messages are a valid OpenAI history that
// holds the team's own work, not its members'.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldTurn } from '../../client/turn.ts';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { unansweredCalls } from './rules.ts';

type Schemas = components['schemas'];
type RunEvent = Schemas['RunEvent'];
type ChatTurn = Schemas['ChatTurn'];
type ChatRequest = Schemas['ChatRequest'];

const lookup: Schemas['FunctionTool'] = {
  type: 'function',
  function: { name: 'lookup', description: 'Looks a thing up.', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
};

/** Ids differ between two runs of the same request; their pattern of reuse may not. */
function normalized(value: unknown): unknown {
  const seen = new Map<string, string>();
  const text = JSON.stringify(value).replace(/\b(run|ses|msg|call)_[A-Za-z0-9_-]+/g, (id, kind: string) => {
    if (!seen.has(id)) seen.set(id, `${kind}#${seen.size}`);
    return seen.get(id)!;
  });
  return JSON.parse(text);
}

interface Scenario {
  name: string;
  kind: 'agents' | 'teams';
  id: string;
  request: ChatRequest;
  /** The tool result that answers a halted turn. */
  result?: string;
}

describe('a turn is the fold of its events', () => {
  let server: TestServer;
  let user: TestUser;
  const scenarios: Scenario[] = [];

  beforeAll(async () => {
    server = await startTestServer({ env: unlimitedPlanEnv() });
    user = await server.signUp();
    const agent = async (body: Schemas['AgentCreate']) => (await user.client.POST('/v1/agents', { body })).data!.id;
    const team = async (body: Schemas['TeamCreate']) => {
      const created = await user.client.POST('/v1/teams', { body });
      expect(created.response.status).toBe(201);
      return created.data!.id;
    };
    const helper = await agent({ name: 'Helper', server_tools: ['calculator'], tools: [lookup] });
    const researcher = await agent({ name: 'Researcher' });
    const searcher = await agent({ name: 'Researcher', tools: [lookup] });
    const support = await agent({ name: 'Support', tools: [lookup] });
    const second = await agent({ name: 'Second opinion' });
    const ask = (content: string): ChatRequest => ({ messages: [{ role: 'user', content }] });
    scenarios.push(
      { name: 'agent, server tool', kind: 'agents', id: helper, request: ask('calculator {"expression": "6 * 7"}') },
      { name: 'agent, client tool', kind: 'agents', id: helper, request: ask('lookup {"q": "otters"}'), result: '42 otters' },
      { name: 'coordinate', kind: 'teams', id: await team({ name: 'Desk', members: [{ agent_id: researcher }] }), request: ask('ask_researcher {"task": "facts on otters"}') },
      {
        name: 'coordinate, client tool',
        kind: 'teams',
        id: await team({ name: 'Desk', members: [{ agent_id: searcher }] }),
        request: ask('ask_researcher {"task": "lookup {\\"q\\": \\"otters\\"}"}'),
        result: '42 otters',
      },
      { name: 'route', kind: 'teams', id: await team({ name: 'Help', mode: 'route', members: [{ agent_id: researcher }] }), request: ask('route_to_researcher my screen is blank') },
      {
        name: 'route, client tool',
        kind: 'teams',
        id: await team({ name: 'Help', mode: 'route', members: [{ agent_id: support }] }),
        request: ask('route_to_support lookup {"q": "blank screen"}'),
        result: 'reboot',
      },
      { name: 'broadcast', kind: 'teams', id: await team({ name: 'Panel', mode: 'broadcast', members: [{ agent_id: researcher }, { agent_id: second }] }), request: ask('Will it rain?') },
      {
        name: 'broadcast, client tool',
        kind: 'teams',
        id: await team({ name: 'Panel', mode: 'broadcast', members: [{ agent_id: support }, { agent_id: second }] }),
        request: ask('lookup {"q": "rain"}'),
        result: 'sunny',
      },
    );
  });
  afterAll(() => server?.close());

  const post = (scenario: Scenario, body: ChatRequest, stream: boolean) =>
    fetch(`${server.url}/v1/${scenario.kind}/${scenario.id}/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: stream ? 'text/event-stream' : 'application/json' },
      body: JSON.stringify({ ...body, stream }),
    });

  const json = async (scenario: Scenario, body: ChatRequest): Promise<ChatTurn> => {
    const response = await post(scenario, body, false);
    expect(response.status).toBe(200);
    return (await response.json()) as ChatTurn;
  };

  const streamed = async (scenario: Scenario, body: ChatRequest): Promise<RunEvent[]> => {
    const response = await post(scenario, body, true);
    expect(response.status).toBe(200);
    const events: RunEvent[] = [];
    for await (const event of readEventStream<RunEvent>(response.body!)) events.push(event.data);
    return events;
  };

  /** The run's stored events of one turn: those after the previous turn's last. */
  const stored = async (runId: string, after: number): Promise<RunEvent[]> => {
    const page = await user.client.GET('/v1/runs/{runId}/events', { params: { path: { runId }, query: { after: String(after), limit: 100 } }, headers: { Accept: 'application/json' } });
    expect(page.data?.has_more).toBe(false);
    return page.data!.data;
  };

  const answer = (turn: ChatTurn, result: string): ChatRequest => ({
    session_id: turn.session_id,
    messages: turn.required_action!.tool_calls.map((call) => ({ role: 'tool' as const, tool_call_id: call.id, content: result })),
  });

  function expectValidTeamHistory(turn: ChatTurn, halted: boolean) {
    // Every call is answered before anything else is said; a halted turn's last calls wait for the client.
    expect(unansweredCalls(turn.messages)).toEqual([]);
    const last = turn.messages.at(-1);
    if (!halted && last?.role === 'assistant') expect(last.tool_calls ?? []).toEqual([]);
  }

  it.each([0, 1, 2, 3, 4, 5, 6, 7])('scenario %i: JSON = fold(stored events) = fold(stream) = the client’s fold', async (index) => {
    const scenario = scenarios[index]!;
    // Blocking, then the run's stored events folded.
    const first = await json(scenario, scenario.request);
    const firstEvents = await stored(first.run_id, 0);
    expect(foldTurn(firstEvents).turn).toEqual(first);
    expect(first.status).toBe(scenario.result ? 'requires_action' : 'completed');
    let last = first;
    if (scenario.result) {
      const resumedFrom = firstEvents.at(-1)!.sequence_number;
      last = await json(scenario, answer(first, scenario.result));
      expect(last.run_id).toBe(first.run_id);
      expect(foldTurn(await stored(last.run_id, resumedFrom)).turn).toEqual(last);
      expect(last.status).toBe('completed');
    }

    // The same requests streamed, folded.
    const events = await streamed(scenario, scenario.request);
    const streamedFirst = foldTurn(events);
    expect(streamedFirst.ended).toBe(true);
    expect(normalized(streamedFirst.turn)).toEqual(normalized(first));
    let streamedLast = streamedFirst.turn;
    if (scenario.result) streamedLast = foldTurn(await streamed(scenario, answer(streamedFirst.turn, scenario.result))).turn;
    expect(normalized(streamedLast)).toEqual(normalized(last));

    // The typed client streams the turns and folds them itself.
    const client = user.client[scenario.kind];
    const seen: RunEvent['type'][] = [];
    const byClient = await client.runWithTools(scenario.id, scenario.request, { lookup: () => scenario.result }, { onEvent: (event) => seen.push(event.type) });
    expect(seen[0]).toBe('RunStarted');
    expect(normalized(byClient)).toEqual(normalized(last));

    if (scenario.kind === 'teams') {
      expectValidTeamHistory(first, first.status === 'requires_action');
      expectValidTeamHistory(last, false);
    }
  });

  it('keeps a member’s own work out of the team turn: relayed with member_run_id, not in messages', async () => {
    const coordinate = scenarios.find((scenario) => scenario.name === 'coordinate')!;
    const events = await streamed(coordinate, coordinate.request);
    const relayed = events.filter((event) => 'member_run_id' in event && event.member_run_id);
    expect(relayed.length).toBeGreaterThan(0);
    expect(relayed.every((event) => 'from' in event && event.from?.is_leader === false)).toBe(true);
    const turn = foldTurn(events).turn;
    // The leader's delegation, the member's answer as its result, the leader's answer: nothing else.
    expect(turn.messages.map((message) => message.role)).toEqual(['assistant', 'tool', 'assistant']);
    expect(turn.messages[1]).toMatchObject({ role: 'tool', content: 'facts on otters' });
    expect(turn.message).toMatchObject({ content: 'ask_researcher returned: facts on otters.' });
  });

  it('shows the routed member’s answer as the team’s, under the member’s name and message id', async () => {
    const route = scenarios.find((scenario) => scenario.name === 'route')!;
    const events = await streamed(route, route.request);
    const adopted = events.find((event) => event.type === 'RunResponse' && event.message && event.from?.is_leader === false && !event.member_run_id);
    const relayed = events.find((event) => event.type === 'RunResponse' && event.message && event.member_run_id);
    expect(adopted).toMatchObject({ from: { name: 'Researcher', is_leader: false }, message: { content: 'route_to_researcher my screen is blank' } });
    expect(adopted!.type === 'RunResponse' && relayed!.type === 'RunResponse' && adopted!.message_id === relayed!.message_id).toBe(true);
    expect(foldTurn(events).turn.messages.filter((message) => message.role === 'assistant')).toHaveLength(2);
  });
});
