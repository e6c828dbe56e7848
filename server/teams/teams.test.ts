// Teams: the resource, each mode end to end offline with the local model, a member's client-side tool
// halting and resuming the team, cancellation, scripted delegation through a loopback upstream, a member
// failing, the protocol adapters, and ownership.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import type { FakeOpenAI } from '../testing/fake-openai.ts';
import { startScriptedServer, type TestServer, type TestUser } from '../testing/harness.ts';

type RunEvent = components['schemas']['RunEvent'];
type AgentCreate = components['schemas']['AgentCreate'];

describe('teams', () => {
  let server: TestServer;
  let user: TestUser;
  let upstream: FakeOpenAI;

  beforeAll(async () => {
    const started = await startScriptedServer();
    ({ server, user, upstream } = started);
    return started.close;
  });
  beforeEach(() => upstream.reset());

  const agent = async (body: Partial<AgentCreate> & { name: string }) => (await user.client.POST('/v1/agents', { body })).data!;

  const team = async (body: components['schemas']['TeamCreate']) => {
    const created = await user.client.POST('/v1/teams', { body });
    expect(created.response.status).toBe(201);
    return created.data!;
  };

  const stream = async (teamId: string, body: Record<string, unknown>) => {
    const response = await fetch(`${server.url}/v1/teams/${teamId}/chat`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    const events: RunEvent[] = [];
    for await (const event of readEventStream<RunEvent>(response.body!)) events.push(event.data);
    return events;
  };

  describe('the resource', () => {
    it('shows members with their agent names, roles and who leads', async () => {
      const a = await agent({ name: 'Researcher' });
      const b = await agent({ name: 'Writer' });
      const built = await team({ name: 'Desk', instructions: 'Answer well.', members: [{ agent_id: a.id, role: 'Finds facts' }, { agent_id: b.id, role: 'Writes' }] });
      expect(built).toMatchObject({
        mode: 'coordinate',
        leader: { type: 'orchestrator', agent_id: null, name: 'Desk leader', model: 'local' },
        members: [
          { agent_id: a.id, name: 'Researcher', role: 'Finds facts', is_leader: false },
          { agent_id: b.id, name: 'Writer', role: 'Writes', is_leader: false },
        ],
      });
      const led = await user.client.PATCH('/v1/teams/{teamId}', {
        params: { path: { teamId: built.id } },
        body: { mode: 'route', members: [{ agent_id: b.id, role: 'Leads', is_leader: true }, { agent_id: a.id, role: null }] },
      });
      expect(led.data).toMatchObject({ mode: 'route', leader: { type: 'member', agent_id: b.id, name: 'Writer' }, members: [{ agent_id: b.id, is_leader: true }, { agent_id: a.id, is_leader: false }] });
      const listed = await user.client.GET('/v1/teams');
      expect(listed.data?.data.map((t) => t.id)).toContain(built.id);
    });

    it('refuses bad members: duplicates, two leaders, unknown models, other users’ agents (404)', async () => {
      const a = await agent({ name: 'Solo' });
      const dup = await user.client.POST('/v1/teams', { body: { name: 't', members: [{ agent_id: a.id }, { agent_id: a.id }] } });
      expect(dup.response.status).toBe(400);
      const b = await agent({ name: 'Other' });
      const leaders = await user.client.POST('/v1/teams', { body: { name: 't', members: [{ agent_id: a.id, is_leader: true }, { agent_id: b.id, is_leader: true }] } });
      expect(leaders.response.status).toBe(400);
      const model = await user.client.POST('/v1/teams', { body: { name: 't', leader_model: 'nope', members: [{ agent_id: a.id }] } });
      expect(model.response.status).toBe(400);
      const empty = await user.client.POST('/v1/teams', { body: { name: 't', members: [] } });
      expect(empty.response.status).toBe(400);
      const stranger = await server.signUp();
      const theirs = (await stranger.client.POST('/v1/agents', { body: { name: 'Theirs' } })).data!;
      const foreign = await user.client.POST('/v1/teams', { body: { name: 't', members: [{ agent_id: theirs.id }] } });
      expect(foreign.response.status).toBe(404);
    });

    it('answers 409 when a member agent is deleted, until the team lets it go', async () => {
      const a = await agent({ name: 'Kept' });
      const b = await agent({ name: 'Busy' });
      const built = await team({ name: 'Pair', members: [{ agent_id: a.id }, { agent_id: b.id }] });
      const refused = await user.client.DELETE('/v1/agents/{agentId}', { params: { path: { agentId: b.id } } });
      expect(refused.response.status).toBe(409);
      await user.client.PATCH('/v1/teams/{teamId}', { params: { path: { teamId: built.id } }, body: { members: [{ agent_id: a.id }] } });
      expect((await user.client.DELETE('/v1/agents/{agentId}', { params: { path: { agentId: b.id } } })).response.status).toBe(204);
    });

    it("hides another user's team (404)", async () => {
      const a = await agent({ name: 'Private' });
      const built = await team({ name: 'Mine', members: [{ agent_id: a.id }] });
      const stranger = await server.signUp();
      const path = { params: { path: { teamId: built.id } } };
      expect((await stranger.client.GET('/v1/teams/{teamId}', path)).response.status).toBe(404);
      expect((await stranger.client.PATCH('/v1/teams/{teamId}', { ...path, body: { name: 'x' } })).response.status).toBe(404);
      expect((await stranger.client.DELETE('/v1/teams/{teamId}', path)).response.status).toBe(404);
      expect((await stranger.client.POST('/v1/teams/{teamId}/chat', { ...path, body: { messages: [{ role: 'user', content: 'x' }] } })).response.status).toBe(404);
      expect((await stranger.client.GET('/v1/teams')).data?.data).toEqual([]);
    });
  });

  describe('runs offline with the local model', () => {
    it('coordinate: the leader delegates to a member and answers from its result', async () => {
      const researcher = await agent({ name: 'Researcher', instructions: 'Find facts.' });
      const writer = await agent({ name: 'Writer' });
      const desk = await team({ name: 'Desk', members: [{ agent_id: researcher.id, role: 'Finds facts' }, { agent_id: writer.id, role: 'Writes' }] });
      const events = await stream(desk.id, { messages: [{ role: 'user', content: 'ask_researcher {"task": "facts on otters"}' }] });
      expect(events[0]).toMatchObject({ type: 'RunStarted', team_id: desk.id, agent_id: null });
      const speakers = events.filter((e) => e.type === 'RunResponse' && e.delta).map((e) => e.from?.name);
      expect(speakers).toContain('Researcher');
      expect(speakers).toContain('Desk leader');
      const delegation = events.find((e) => e.type === 'ToolCallCompleted')!;
      expect(delegation).toMatchObject({ name: 'ask_researcher', output: 'facts on otters', from: { name: 'Desk leader', is_leader: true } });
      const done = events.at(-1)!;
      expect(done).toMatchObject({ type: 'RunCompleted', status: 'completed', message: { content: 'ask_researcher returned: facts on otters.' } });
      if (done.type !== 'RunCompleted') return;
      const parts = done.usage_breakdown!;
      expect(parts.map((p) => p.name).sort()).toEqual(['Desk leader', 'Researcher']);
      expect(parts.reduce((sum, p) => sum + p.usage.total_tokens, 0)).toBe(done.usage.total_tokens);
      const memberRun = parts.find((p) => p.name === 'Researcher')!.run_id;
      const run = await user.client.GET('/v1/runs/{runId}', { params: { path: { runId: memberRun } } });
      expect(run.data).toMatchObject({ parent_run_id: done.run_id, agent_id: researcher.id, team_id: desk.id, status: 'completed' });
      const session = await user.client.GET('/v1/sessions/{sessionId}', {
        params: { path: { sessionId: (events[0] as Extract<RunEvent, { type: 'RunStarted' }>).session_id } },
      });
      expect(session.data?.team_id).toBe(desk.id);
      expect(session.data?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    });

    it("route: the chosen member's answer is the team's", async () => {
      const a = await agent({ name: 'Billing' });
      const b = await agent({ name: 'Support' });
      const desk = await team({ name: 'Front', mode: 'route', members: [{ agent_id: a.id, role: 'Invoices' }, { agent_id: b.id, role: 'Problems' }] });
      const turn = await user.client.POST('/v1/teams/{teamId}/chat', {
        params: { path: { teamId: desk.id } },
        body: { messages: [{ role: 'user', content: 'route_to_support my screen is blank' }] },
      });
      expect(turn.data).toMatchObject({ status: 'completed', team_id: desk.id, message: { content: 'route_to_support my screen is blank' } });
      expect(turn.data!.usage_breakdown!.map((p) => p.name)).toContain('Support');
      expect(turn.data!.usage_breakdown!.map((p) => p.name)).not.toContain('Billing');
    });

    it('broadcast: every member answers and the leader synthesizes', async () => {
      const a = await agent({ name: 'Optimist' });
      const b = await agent({ name: 'Pessimist' });
      const desk = await team({ name: 'Panel', mode: 'broadcast', members: [{ agent_id: a.id }, { agent_id: b.id }] });
      const events = await stream(desk.id, { messages: [{ role: 'user', content: 'Will it rain?' }] });
      const done = events.at(-1)!;
      expect(done.type).toBe('RunCompleted');
      if (done.type !== 'RunCompleted') return;
      expect(done.message?.content).toContain('Optimist: Will it rain?');
      expect(done.message?.content).toContain('Pessimist: Will it rain?');
      expect(done.usage_breakdown!.map((p) => p.name).sort()).toEqual(['Optimist', 'Panel leader', 'Pessimist']);
    });

    it("halts the whole team on a member's client-side tool, and resumes the member, then the leader", async () => {
      const lookup = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } };
      const researcher = await agent({ name: 'Researcher', tools: [lookup] });
      const desk = await team({ name: 'Lab', members: [{ agent_id: researcher.id, role: 'Looks things up' }] });
      const halted = await stream(desk.id, { messages: [{ role: 'user', content: 'ask_researcher {"task": "lookup {\\"q\\": \\"otters\\"}"}' }] });
      const request = halted.at(-1)!;
      expect(request).toMatchObject({ type: 'ToolRequest', from: { agent_id: researcher.id, name: 'Researcher' } });
      if (request.type !== 'ToolRequest') return;
      expect(request.tool_calls[0]!.function).toEqual({ name: 'lookup', arguments: '{"q":"otters"}' });
      const run = await user.client.GET('/v1/runs/{runId}', { params: { path: { runId: request.run_id } } });
      expect(run.data?.required_action?.from?.name).toBe('Researcher');

      const resumed = await stream(desk.id, {
        session_id: request.session_id,
        messages: [{ role: 'tool', tool_call_id: request.tool_calls[0]!.id, content: '42 otters' }],
      });
      expect(resumed[0]).toMatchObject({ type: 'RunStarted', run_id: request.run_id, resumed: true });
      expect(resumed.at(-1)).toMatchObject({ type: 'RunCompleted', message: { content: 'ask_researcher returned: lookup returned: 42 otters..' } });
    });

    it('cancels the member runs of a cancelled team run', async () => {
      const lookup = { type: 'function' as const, function: { name: 'lookup' } };
      const researcher = await agent({ name: 'Waiter', tools: [lookup] });
      const desk = await team({ name: 'Hold', members: [{ agent_id: researcher.id }] });
      const halted = await stream(desk.id, { messages: [{ role: 'user', content: 'ask_waiter {"task": "lookup"}' }] });
      const teamRunId = halted.at(-1)!.run_id;
      const canceled = await user.client.POST('/v1/runs/{runId}/cancel', { params: { path: { runId: teamRunId } } });
      expect(canceled.data?.status).toBe('canceled');
      const members = await server.services.runs.children(teamRunId);
      expect(members.map((m) => m.status)).toEqual(['canceled']);
    });
  });

  describe('scripted through a loopback upstream', () => {
    it('delegates to two members in one step, and reports a failing member to the leader', async () => {
      const alpha = await agent({ name: 'Alpha', model: 'scripted' });
      const beta = await agent({ name: 'Beta', model: 'scripted' });
      const desk = await team({ name: 'Duo', leader_model: 'scripted', members: [{ agent_id: alpha.id, role: 'First' }, { agent_id: beta.id, role: 'Second' }] });
      upstream.enqueue(
        { toolCalls: [{ id: 'call_a', name: 'ask_alpha', arguments: { task: 'part one' } }, { id: 'call_b', name: 'ask_beta', arguments: { task: 'part two' } }] },
        { text: 'alpha done' },
        { error: { status: 500, message: 'beta broke' } },
        { text: 'Combined: alpha done, beta failed' },
      );
      const events = await stream(desk.id, { messages: [{ role: 'user', content: 'split this' }] });
      expect(events.at(-1)).toMatchObject({ type: 'RunCompleted', message: { content: 'Combined: alpha done, beta failed' } });
      const results = events.filter((e) => e.type === 'ToolCallCompleted');
      expect(results).toEqual([
        expect.objectContaining({ tool_call_id: 'call_a', output: 'alpha done' }),
        expect.objectContaining({ tool_call_id: 'call_b', output: expect.stringContaining('Beta could not do it') }),
      ]);
      expect(upstream.requests).toHaveLength(4);
      expect((upstream.requests[1]!.body!.messages as { content: string }[]).at(-1)).toMatchObject({ content: 'part one' });
      expect((upstream.requests[0]!.body!.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(['ask_alpha', 'ask_beta']);
      const runs = await server.services.runs.children(events[0]!.run_id);
      expect(runs.map((r) => r.status)).toEqual(['completed', 'failed']);
    });
  });

  describe('protocol adapters', () => {
    it('speaks AgentScope and Connexity for teams too', async () => {
      const a = await agent({ name: 'Echo' });
      const desk = await team({ name: 'Relay', mode: 'route', members: [{ agent_id: a.id }] });
      const scope = await fetch(`${server.url}/v1/teams/${desk.id}/process`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ input: [{ role: 'user', content: [{ type: 'text', text: 'hello team' }] }], stream: false }),
      });
      const response = (await scope.json()) as { status: string; output: { content: { text?: string }[] }[] };
      expect(response.status).toBe('completed');
      expect(response.output.at(-1)!.content[0]!.text).toBe('hello team');
      const connexity = await fetch(`${server.url}/v1/teams/${desk.id}/respond`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi team', tool_calls: null, tool_call_id: null, name: null }], metadata: null }),
      });
      const body = (await connexity.json()) as { messages: { role: string; content: string }[] };
      expect(body.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'hi team' });
    });
  });
});
