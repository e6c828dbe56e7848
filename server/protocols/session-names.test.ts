// AgentScope clients name their sessions with `session_id`. Found by the contract fuzzer: an empty name
// was stored, so the second request with one failed on the unique index (500); two first turns naming
// the same new session at once hit it too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

describe.each(await availableEngines())('AgentScope session names on %s', (engine) => {
  let server: TestServer;
  let user: TestUser;
  let agentId: string;

  beforeAll(async () => {
    server = await startTestServer({ engine, env: unlimitedPlanEnv() });
    user = await server.signUp();
    agentId = (await user.client.POST('/v1/agents', { body: { name: 'Named', model: 'local' } })).data!.id;
  });
  afterAll(async () => {
    await server?.close();
  });

  const process = (sessionId: string) =>
    fetch(`${server.url}/v1/agents/${agentId}/process`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: [{ role: 'user', type: 'message', content: [{ type: 'text', text: 'hello' }] }], session_id: sessionId, stream: false }),
    });

  it('treats an empty session_id as none: each request starts its own session', async () => {
    const first = await process('');
    const second = await process('');
    expect([first.status, second.status]).toEqual([200, 200]);
    const [a, b] = [(await first.json()) as { session_id: string }, (await second.json()) as { session_id: string }];
    expect(a.session_id).toMatch(/^ses_/);
    expect(b.session_id).toMatch(/^ses_/);
    expect(a.session_id).not.toBe(b.session_id);
  });

  it('answers 409, not 500, when a first turn names a session another request has just started', async () => {
    // The window between looking the name up and storing the session, made certain: the store is asked
    // to start a named session that exists by now.
    const target = { agentId, teamId: null };
    const messages = [{ role: 'user' as const, content: 'hello' }];
    await server.services.chatSessions.create(user.userId, target, messages, {}, 'race-1');
    const second = server.services.chatSessions.create(user.userId, target, messages, {}, 'race-1');
    await expect(second).rejects.toMatchObject({ code: 'conflict', status: 409 });
    const sessions = await server.services.db.query('SELECT id FROM sessions WHERE agent_id = $1 AND external_id = $2', [agentId, 'race-1']);
    expect(sessions).toHaveLength(1);
  });
});
