// Runs that start at once share their opening statements (store/group-commit.ts): on each engine, a burst
// of turns from two users gets every turn its own session and run with the right agent, a turn naming the
// other user's agent gets the 404 a missing agent gets, and the day's run count counts every run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

describe.each(await availableEngines())('runs that start at once on %s', (engine) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ engine, env: unlimitedPlanEnv() });
  });
  afterAll(() => server?.close());

  it('get their own agent, session and run each, and nobody else’s agent', async () => {
    const alice = await server.signUp();
    const bob = await server.signUp();
    const aliceAgents = await Promise.all(['A1', 'A2'].map(async (name) => (await alice.client.POST('/v1/agents', { body: { name, instructions: `I am ${name}.` } })).data!));
    const bobAgent = (await bob.client.POST('/v1/agents', { body: { name: 'B1' } })).data!;

    const turns = Array.from({ length: 24 }, (_, i) => ({ user: i % 3 === 2 ? bob : alice, agentId: i % 3 === 2 ? bobAgent.id : aliceAgents[i % 2]!.id, text: `turn ${i}` }));
    const [results, stranger] = await Promise.all([
      Promise.all(turns.map((turn) => turn.user.client.agents.chat(turn.agentId, { messages: [{ role: 'user', content: turn.text }], stream: false }))),
      alice.client.POST('/v1/agents/{agentId}/chat', { params: { path: { agentId: bobAgent.id } }, body: { messages: [{ role: 'user', content: 'not mine' }] } }),
    ]);

    expect(stranger.response.status).toBe(404);
    expect(stranger.error?.error.code).toBe('not_found');
    expect(new Set(results.map((turn) => turn.session_id)).size).toBe(turns.length);
    expect(new Set(results.map((turn) => turn.run_id)).size).toBe(turns.length);
    for (const [index, turn] of results.entries()) {
      expect(turn.status).toBe('completed');
      const run = await turns[index]!.user.client.GET('/v1/runs/{runId}', { params: { path: { runId: turn.run_id } } });
      expect(run.data).toMatchObject({ id: turn.run_id, session_id: turn.session_id, agent_id: turns[index]!.agentId, status: 'completed' });
      const session = await turns[index]!.user.client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId: turn.session_id } } });
      expect(session.data).toMatchObject({ agent_id: turns[index]!.agentId, title: turns[index]!.text, message_count: 2 });
    }
    const runsToday = async (userId: string) => server.services.usage.runsToday(userId);
    expect(await runsToday(alice.userId)).toBe(16);
    expect(await runsToday(bob.userId)).toBe(8);
  });
});
