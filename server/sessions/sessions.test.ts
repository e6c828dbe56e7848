// A session's runs (GET /v1/sessions/{id}/runs) on each store engine: one per turn, a halted and resumed
// turn still one, newest first and paged, a team's member runs left out, and nobody else's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../client/index.ts';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

describe.each(await availableEngines())("a session's runs on %s", (engine) => {
  let server: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    server = await startTestServer({ engine, env: unlimitedPlanEnv() });
    user = await server.signUp();
  });
  afterAll(() => server?.close());

  const runsOf = (sessionId: string, query: { limit?: number; after?: string } = {}, client = user.client) =>
    client.GET('/v1/sessions/{sessionId}/runs', { params: { path: { sessionId }, query } });

  it('lists one run per turn, newest first and paged; a turn that waited for a client-side tool is one run', async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Weather', tools: [weatherTool] } })).data!;
    const chat = (body: ChatRequest) => user.client.agents.chat(agent.id, { ...body, stream: false });
    const first = await chat({ messages: [{ role: 'user', content: 'hello' }] });
    const halted = await chat({ session_id: first.session_id, messages: [{ role: 'user', content: 'get_weather {"city": "Paris"}' }] });
    expect(halted.status).toBe('requires_action');
    const callId = halted.required_action!.tool_calls[0]!.id;
    const resumed = await chat({ session_id: first.session_id, messages: [{ role: 'tool', tool_call_id: callId, content: '{"temperature_c": 18}' }] });
    expect(resumed).toMatchObject({ run_id: halted.run_id, status: 'completed' });
    const third = await chat({ session_id: first.session_id, messages: [{ role: 'user', content: 'thanks' }] });

    const all = await runsOf(first.session_id);
    expect(all.response.status).toBe(200);
    expect(all.data!.data.map((run) => run.id)).toEqual([third.run_id, halted.run_id, first.run_id]);
    expect(all.data!.data[1]).toMatchObject({ object: 'run', session_id: first.session_id, agent_id: agent.id, status: 'completed', parent_run_id: null });
    expect(all.data!.has_more).toBe(false);

    const page = await runsOf(first.session_id, { limit: 2 });
    expect(page.data).toMatchObject({ has_more: true, next_cursor: halted.run_id });
    const rest = await runsOf(first.session_id, { limit: 2, after: page.data!.next_cursor! });
    expect(rest.data).toMatchObject({ data: [{ id: first.run_id }], has_more: false, next_cursor: null });

    const wrongCursor = await runsOf(first.session_id, { after: first.session_id });
    expect(wrongCursor.response.status).toBe(400);
    expect(wrongCursor.error?.error.param).toBe('after');
  });

  it("leaves out a team's member runs", async () => {
    const a = (await user.client.POST('/v1/agents', { body: { name: 'Alpha' } })).data!;
    const b = (await user.client.POST('/v1/agents', { body: { name: 'Beta' } })).data!;
    const team = (await user.client.POST('/v1/teams', { body: { name: 'Both', mode: 'broadcast', members: [{ agent_id: a.id }, { agent_id: b.id }] } })).data!;
    const turn = await user.client.teams.chat(team.id, { messages: [{ role: 'user', content: 'hello team' }], stream: false });
    const memberRuns = (turn.usage_breakdown ?? []).map((member) => member.run_id).filter((id) => id !== turn.run_id);
    expect(memberRuns.length).toBeGreaterThanOrEqual(2);
    for (const runId of memberRuns) {
      expect((await user.client.GET('/v1/runs/{runId}', { params: { path: { runId } } })).data?.parent_run_id).toBe(turn.run_id);
    }

    const listed = await runsOf(turn.session_id);
    expect(listed.data!.data.map((run) => run.id)).toEqual([turn.run_id]);
    expect(listed.data!.data[0]).toMatchObject({ team_id: team.id, agent_id: null });
  });

  it("deletes its runs' stored events with it, and an agent's with the agent", async () => {
    const eventsOf = async (runIds: string[]) =>
      (await server.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM run_events WHERE run_id = ANY($1::text[])', [runIds]))[0]!.n;
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Forgettable' } })).data!;
    const first = await user.client.agents.chat(agent.id, { messages: [{ role: 'user', content: 'hello' }], stream: false });
    const second = await user.client.agents.chat(agent.id, { session_id: first.session_id, messages: [{ role: 'user', content: 'again' }], stream: false });
    const other = await user.client.agents.chat(agent.id, { messages: [{ role: 'user', content: 'elsewhere' }], stream: false });
    expect(await eventsOf([first.run_id, second.run_id])).toBeGreaterThan(4);
    expect(await eventsOf([other.run_id])).toBeGreaterThan(2);

    const deleted = await user.client.DELETE('/v1/sessions/{sessionId}', { params: { path: { sessionId: first.session_id } } });
    expect(deleted.response.status).toBe(204);
    expect(await eventsOf([first.run_id, second.run_id])).toBe(0);
    expect(await eventsOf([other.run_id])).toBeGreaterThan(2);

    expect((await user.client.DELETE('/v1/agents/{agentId}', { params: { path: { agentId: agent.id } } })).response.status).toBe(204);
    expect(await eventsOf([other.run_id])).toBe(0);
  });

  it("answers 404 for another user's session and for one that does not exist", async () => {
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Mine' } })).data!;
    const turn = await user.client.agents.chat(agent.id, { messages: [{ role: 'user', content: 'hello' }], stream: false });
    const stranger = await server.signUp();
    const theirs = await runsOf(turn.session_id, {}, stranger.client);
    expect(theirs.response.status).toBe(404);
    expect(theirs.error?.error.code).toBe('not_found');
    expect((await runsOf('ses_01JD3V7R2N8Q4X6Y0Z1A2B3C4D')).response.status).toBe(404);
  });
});
