// A turn that fails for any reason ends its run failed, never left in progress: here the upstream model
// answers text no store can keep (a lone surrogate, NUL), which fails when the run's output is stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

for (const engine of await availableEngines()) {
  describe(`a failing turn on ${engine}`, () => {
    let upstream: FakeOpenAI;
    let server: TestServer;
    let user: TestUser;
    let agentId: string;

    beforeAll(async () => {
      upstream = await startFakeOpenAI({ models: ['scripted'] });
      server = await startTestServer({ engine, env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url } });
      user = await server.signUp();
      agentId = (await user.client.POST('/v1/agents', { body: { name: 'Scripted', model: 'scripted' } })).data!.id;
    });
    afterAll(async () => {
      await server?.close();
      await upstream?.close();
    });

    it.each([['a lone surrogate', 'bad \ud800 text'], ['NUL', 'bad \u0000 text']])('ends the run when the model answers %s', async (_name, text) => {
      upstream.enqueue({ text });
      const answer = await fetch(`${server.url}/v1/agents/${agentId}/chat`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }] }),
      });
      const body = (await answer.json()) as { run_id?: string; status?: string; error?: { code: string } };
      expect(answer.status, JSON.stringify(body)).toBe(200);
      expect(body.status).toBe('completed');
      const sessions = (await user.client.GET('/v1/sessions')).data!.data;
      const runs = await Promise.all(sessions.map(async (session) => (await user.client.GET('/v1/sessions/{sessionId}/runs', { params: { path: { sessionId: session.id } } })).data!.data));
      const statuses = runs.flat().map((run) => run.status);
      expect(statuses).not.toContain('in_progress');
      expect(statuses.length).toBeGreaterThan(0);
    });
  });
}
