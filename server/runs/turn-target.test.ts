// A turn whose request names its agent or team: as a model (chat completions' `agent:<id>` and
// `team:<id>`, the Responses API's `model`) or as the receiver of an A2A message. The agent (or team) is
// read once, beside the day's runs where the handler checks them, and the turn runs with that read; an
// agent the caller does not own is an unknown model before any quota, as a missing one is.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { planEnv } from '../testing/plans.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: planEnv({ runs_per_day: 2 }) });
});
afterAll(() => server?.close());

async function agentOf(user: TestUser): Promise<string> {
  const { data } = await user.client.POST('/v1/agents', { body: { name: 'helper', model: 'local' } });
  return data!.id;
}

const surfaces = {
  'chat completions': (user: TestUser, model: string) =>
    fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }] }),
    }),
  responses: (user: TestUser, model: string) =>
    fetch(`${server.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, input: 'hello' }),
    }),
};

describe.each(Object.entries(surfaces))('an agent named as the model of %s', (_name, post) => {
  it('is read once for its turn, and a team once for its own', async () => {
    const user = await server.signUp();
    const agentId = await agentOf(user);
    const reads = vi.spyOn(server.services.agents, 'get');
    try {
      const response = await post(user, `agent:${agentId}`);
      expect(response.status).toBe(200);
      expect(reads.mock.calls).toEqual([[user.userId, agentId]]);
    } finally {
      reads.mockRestore();
    }
    const { data: team } = await user.client.POST('/v1/teams', { body: { name: 'crew', members: [{ agent_id: agentId, is_leader: true }] } });
    const teamReads = vi.spyOn(server.services.teams, 'get');
    try {
      const response = await post(user, `team:${team!.id}`);
      expect(response.status).toBe(200);
      expect(teamReads.mock.calls).toEqual([[user.userId, team!.id]]);
    } finally {
      teamReads.mockRestore();
    }
  });

  it("answers another user's agent as a missing one, before the quota, and the caller's own with the quota", async () => {
    const owner = await server.signUp();
    const theirs = await agentOf(owner);
    const caller = await server.signUp();
    const own = await agentOf(caller);
    await server.services.usage.recordRun(caller.userId);
    await server.services.usage.recordRun(caller.userId);

    const missing = await post(caller, 'agent:agt_missing');
    const foreign = await post(caller, `agent:${theirs}`);
    expect(missing.status).toBe(404);
    expect(foreign.status).toBe(404);
    const [missingBody, foreignBody] = [await missing.json(), await foreign.json()];
    expect(foreignBody.error.code).toBe(missingBody.error.code);
    expect(foreignBody.error.message).toBe(missingBody.error.message.replace('agt_missing', theirs));
    expect(foreignBody.error.details).toEqual(missingBody.error.details);

    const limited = await post(caller, `agent:${own}`);
    expect(limited.status).toBe(402);
    expect((await limited.json()).error.details.map((detail: { metric: string }) => detail.metric)).toEqual(['runs_per_day']);
  });
});

describe('a streamed chat completion of an agent the caller does not own', () => {
  it('answers 404 before any stream, as for a missing agent', async () => {
    const owner = await server.signUp();
    const theirs = await agentOf(owner);
    const caller = await server.signUp();
    for (const model of [`agent:${theirs}`, 'agent:agt_missing']) {
      const response = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${caller.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'hello' }] }),
      });
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toContain('application/json');
      expect(await response.json()).toMatchObject({ error: { code: 'not_found', message: `The model ${model} does not exist.` } });
    }
  });
});

describe('an agent sent an A2A message', () => {
  it('is read once for its turn', async () => {
    const user = await server.signUp();
    const agentId = await agentOf(user);
    const reads = vi.spyOn(server.services.agents, 'get');
    try {
      const response = await fetch(`${server.url}/a2a/${agentId}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.apiKey}`, 'content-type': 'application/json', 'A2A-Version': '1.0' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hello' }] }, configuration: { blocking: true } } }),
      });
      const answer = (await response.json()) as { result?: { task?: { status: { state: string } } } };
      expect(answer.result?.task?.status.state).toBe('TASK_STATE_COMPLETED');
      expect(reads.mock.calls).toEqual([[user.userId, agentId]]);
    } finally {
      reads.mockRestore();
    }
  });
});
