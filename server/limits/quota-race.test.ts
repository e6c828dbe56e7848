// Quotas hold under concurrency: the count and the insert are one step in the database, so many
// concurrent creations on the free plan (agents 5, teams 2, documents 50) make exactly the limit, on PGlite, on
// PostgreSQL, and across two servers sharing one PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';

for (const engine of await availableEngines()) {
  describe(`quotas under concurrency on ${engine}`, () => {
    let server: TestServer;
    let second: TestServer | undefined;

    beforeAll(async () => {
      server = await startTestServer({ engine });
      if (engine === 'postgres') second = await startTestServer({ shareDatabaseWith: server });
    });
    afterAll(async () => {
      await second?.close();
      await server?.close();
    });

    const create = (url: string, user: TestUser, path: string, body: unknown) =>
      fetch(`${url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

    async function statuses(user: TestUser, count: number, path: string, body: unknown): Promise<number[]> {
      const urls = second ? [server.url, second.url] : [server.url];
      const answers = await Promise.all(Array.from({ length: count }, (_, i) => create(urls[i % urls.length]!, user, path, body)));
      return answers.map((answer) => answer.status);
    }

    it('creates exactly 5 agents of 40 concurrent requests', async () => {
      const user = await server.signUp();
      const answered = await statuses(user, 40, '/v1/agents', { name: 'A', model: 'local' });
      expect(answered.filter((status) => status === 201)).toHaveLength(5);
      expect(answered.filter((status) => status !== 201).every((status) => status === 402)).toBe(true);
      expect((await user.client.GET('/v1/agents', { params: { query: { limit: 100 } } })).data!.data).toHaveLength(5);
    });

    it('creates exactly 2 teams of 40 concurrent requests', async () => {
      const user = await server.signUp();
      const agent = (await user.client.POST('/v1/agents', { body: { name: 'Member', model: 'local' } })).data!;
      const answered = await statuses(user, 40, '/v1/teams', { name: 'T', members: [{ agent_id: agent.id }] });
      expect(answered.filter((status) => status === 201)).toHaveLength(2);
      expect(answered.filter((status) => status !== 201).every((status) => status === 402)).toBe(true);
    });

    it('stores exactly 50 knowledge documents of 60 concurrent requests', async () => {
      const user = await server.signUp();
      const urls = second ? [server.url, second.url] : [server.url];
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => create(urls[i % urls.length]!, user, '/v1/knowledge/documents', { text: `Document number ${i} about topic ${i}.` })),
      );
      const answered = answers.map((answer) => answer.status);
      expect(answered.filter((status) => status === 201)).toHaveLength(50);
      expect(answered.filter((status) => status !== 201).every((status) => status === 402)).toBe(true);
    });
  });
}
