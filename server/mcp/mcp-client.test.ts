// Agents using remote MCP servers' tools, end to end: real MCP servers on loopback built with the SDK, the
// built-in local model calling their tools, and the approval model (ask, allow, a condition, approve,
// deny) halting and resuming the same run, on PGlite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../generated/openapi.gen.ts';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { startMcpTestServers, type McpTestServers } from '../testing/mcp-servers.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

type AgentCreate = components['schemas']['AgentCreate'];
type ChatRequest = components['schemas']['ChatRequest'];
type RunEvent = components['schemas']['RunEvent'];

describe.each(await availableEngines())('agents with MCP servers on %s', (engine) => {
  let server: TestServer;
  let user: TestUser;
  let mcp: McpTestServers;

  beforeAll(async () => {
    mcp = await startMcpTestServers();
    server = await startTestServer({ engine, env: { ...unlimitedPlanEnv(), OUTBOUND_ALLOW: '127.0.0.1', MCP_TIMEOUT_SECONDS: '1' } });
    user = await server.signUp();
  }, 180_000);
  afterAll(async () => {
    await server?.close();
    await mcp?.close();
  });

  const createAgent = async (body: Partial<AgentCreate>) => {
    const created = await user.client.POST('/v1/agents', { body: { name: 'Tools', ...body } });
    expect(created.response.status).toBe(201);
    return created.data!;
  };
  const chat = async (agentId: string, body: ChatRequest) => {
    const answer = await user.client.POST('/v1/agents/{agentId}/chat', { params: { path: { agentId } }, body });
    expect(answer.response.status).toBe(200);
    return answer.data!;
  };
  const events = async (runId: string) => {
    const seen: RunEvent[] = [];
    const response = await fetch(`${server.url}/v1/runs/${runId}/events`, { headers: { Authorization: `Bearer ${user.apiKey}` } });
    const text = await response.text();
    for (const block of text.split('\n\n')) {
      const data = block.split('\n').find((line) => line.startsWith('data: '));
      if (data) seen.push(JSON.parse(data.slice(6)) as RunEvent);
    }
    return seen;
  };

  const teamChatWith = (teamId: string) => async (body: ChatRequest) => {
    const answer = await user.client.POST('/v1/teams/{teamId}/chat', { params: { path: { teamId } }, body });
    expect(answer.response.status).toBe(200);
    return answer.data!;
  };
  /** A team asked (by `prompt`) to increment the counter halts for approval; approved it runs once, denied never, on the same team run. */
  const approveThenDeny = async (teamChat: ReturnType<typeof teamChatWith>, prompt: string) => {
    for (const decision of ['approve', 'deny'] as const) {
      const before = mcp.count();
      const halted = await teamChat({ messages: [{ role: 'user', content: prompt }] });
      expect(halted.status).toBe('requires_action');
      const call = halted.required_action!.tool_calls[0]!;
      expect(halted.required_action!.approvals).toEqual([{ tool_call_id: call.id, name: 'counter__increment', mcp: { server: 'counter', tool: 'increment' } }]);
      expect(mcp.count()).toBe(before);
      const done = await teamChat({ session_id: halted.session_id, messages: [], approvals: [{ tool_call_id: call.id, decision, ...(decision === 'deny' ? { reason: 'not now' } : {}) }] });
      expect(done.status).toBe('completed');
      expect(done.run_id).toBe(halted.run_id);
      expect(mcp.count()).toBe(decision === 'approve' ? before + 1 : before);
      expect(done.message?.content).toContain(decision === 'approve' ? `count is ${before + 1}` : 'not now');
    }
  };

  it('stores MCP headers sealed and answers them masked', async () => {
    const agent = await createAgent({
      mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter`, headers: { Authorization: 'Bearer s3cret-token' } }],
    });
    expect(agent.mcp_servers).toEqual([
      { name: 'counter', url: `${mcp.url}/counter`, headers: { Authorization: '********' }, allowed_tools: null, approval: 'always_ask', tool_approvals: {} },
    ]);
    const [row] = await server.services.db.query<{ mcp_servers: unknown }>('SELECT mcp_servers FROM agents WHERE id = $1', [agent.id]);
    expect(JSON.stringify(row!.mcp_servers)).not.toContain('s3cret-token');
    // Sending the mask back keeps the stored secret: the server still receives it.
    const updated = await user.client.PATCH('/v1/agents/{agentId}', {
      params: { path: { agentId: agent.id } },
      body: { mcp_servers: [{ ...agent.mcp_servers[0]!, allowed_tools: ['peek'], approval: 'always_allow' }] },
    });
    expect(updated.response.status).toBe(200);
    const turn = await chat(agent.id, { messages: [{ role: 'user', content: 'counter__peek please' }] });
    expect(turn.status).toBe('completed');
    expect(turn.message?.content).toContain('counter__peek returned: count is');
    expect(mcp.authorizations).toContain('Bearer s3cret-token');
  });

  it('asks before an MCP tool runs; approved, the same run goes on and the tool runs once', async () => {
    const before = mcp.count();
    const agent = await createAgent({ mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter` }] });
    const halted = await chat(agent.id, { messages: [{ role: 'user', content: 'counter__increment now' }] });
    expect(halted.status).toBe('requires_action');
    const call = halted.required_action!.tool_calls[0]!;
    expect(call.function.name).toBe('counter__increment');
    expect(halted.required_action!.approvals).toEqual([{ tool_call_id: call.id, name: 'counter__increment', mcp: { server: 'counter', tool: 'increment' } }]);
    expect(mcp.count()).toBe(before);

    // Tool messages do not answer an approval.
    const wrong = await user.client.POST('/v1/agents/{agentId}/chat', {
      params: { path: { agentId: agent.id } },
      body: { session_id: halted.session_id, messages: [{ role: 'tool', tool_call_id: call.id, content: 'fine' }] },
    });
    expect(wrong.response.status).toBe(400);
    const silent = await user.client.POST('/v1/agents/{agentId}/chat', { params: { path: { agentId: agent.id } }, body: { session_id: halted.session_id, messages: [] } });
    expect(silent.response.status).toBe(400);

    const done = await chat(agent.id, { session_id: halted.session_id, messages: [], approvals: [{ tool_call_id: call.id, decision: 'approve' }] });
    expect(done.status).toBe('completed');
    expect(done.run_id).toBe(halted.run_id);
    expect(mcp.count()).toBe(before + 1);
    expect(done.message?.content).toContain(`count is ${before + 1}`);

    const stored = await events(halted.run_id);
    const request = stored.find((event) => event.type === 'ToolRequest');
    expect(request).toMatchObject({ approvals: [{ tool_call_id: call.id }] });
    const started = stored.find((event) => event.type === 'ToolCallStarted');
    expect(started).toMatchObject({ mcp: { server: 'counter', tool: 'increment' }, approval: { decision: 'approve' } });
    expect(stored.find((event) => event.type === 'ToolCallCompleted')).toMatchObject({ is_error: false, output: `count is ${before + 1}` });
  });

  it('never runs a denied call, and tells the model why', async () => {
    const before = mcp.count();
    const agent = await createAgent({ mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter`, approval: 'always_ask' }] });
    const halted = await chat(agent.id, { messages: [{ role: 'user', content: 'counter__increment now' }] });
    const call = halted.required_action!.tool_calls[0]!;
    const done = await chat(agent.id, {
      session_id: halted.session_id,
      messages: [],
      approvals: [{ tool_call_id: call.id, decision: 'deny', reason: 'not on a Sunday' }],
    });
    expect(done.status).toBe('completed');
    expect(mcp.count()).toBe(before);
    expect(done.message?.content).toContain('denied');
    expect(done.message?.content).toContain('not on a Sunday');
    const stored = await events(halted.run_id);
    expect(stored.find((event) => event.type === 'ToolCallStarted')).toMatchObject({ approval: { decision: 'deny', reason: 'not on a Sunday' } });
    expect(stored.find((event) => event.type === 'ToolCallCompleted')).toMatchObject({ is_error: true });
  });

  it('runs always_allow tools at once, and asks on a condition only when the arguments match', async () => {
    const allowed = await createAgent({ mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter`, approval: 'always_allow' }] });
    const before = mcp.count();
    const turn = await chat(allowed.id, { messages: [{ role: 'user', content: 'counter__increment now' }] });
    expect(turn.status).toBe('completed');
    expect(mcp.count()).toBe(before + 1);

    const conditional = await createAgent({
      mcp_servers: [
        {
          name: 'counter',
          url: `${mcp.url}/counter`,
          tool_approvals: { increment: { ask_if: { type: 'object', required: ['by'], properties: { by: { type: 'integer', minimum: 10 } } } } },
        },
      ],
    });
    const small = await chat(conditional.id, { messages: [{ role: 'user', content: 'counter__increment {"by": 2}' }] });
    expect(small.status).toBe('completed');
    expect(mcp.count()).toBe(before + 3);
    const large = await chat(conditional.id, { messages: [{ role: 'user', content: 'counter__increment {"by": 50}' }] });
    expect(large.status).toBe('requires_action');
    expect(mcp.count()).toBe(before + 3);
    // peek has no condition of its own: the server's default, always_ask.
    const peek = await chat(conditional.id, { messages: [{ role: 'user', content: 'counter__peek' }] });
    expect(peek.status).toBe('requires_action');
  });

  it('asks before a built-in tool when its policy says so', async () => {
    const agent = await createAgent({ server_tools: ['calculator'], server_tool_approvals: { calculator: 'always_ask' } });
    const halted = await chat(agent.id, { messages: [{ role: 'user', content: 'calculator {"expression": "6 * 7"}' }] });
    expect(halted.status).toBe('requires_action');
    expect(halted.required_action!.approvals).toMatchObject([{ name: 'calculator' }]);
    const done = await chat(agent.id, {
      session_id: halted.session_id,
      messages: [],
      approvals: [{ tool_call_id: halted.required_action!.tool_calls[0]!.id, decision: 'approve' }],
    });
    expect(done.message?.content).toContain('42');
  });

  it('turns a hanging tool, a failing tool and an unreachable server into tool errors, not failed runs', async () => {
    const agent = await createAgent({
      mcp_servers: [
        { name: 'hang', url: `${mcp.url}/hang`, approval: 'always_allow' },
        { name: 'broken', url: `${mcp.url}/broken`, approval: 'always_allow' },
        { name: 'gone', url: 'http://127.0.0.1:9/mcp', approval: 'always_allow' },
      ],
    });
    const hung = await chat(agent.id, { messages: [{ role: 'user', content: 'hang__wait' }] });
    expect(hung.status).toBe('completed');
    expect(hung.message?.content).toContain('did not answer');
    const failed = await chat(agent.id, { messages: [{ role: 'user', content: 'broken__fail' }] });
    expect(failed.message?.content).toContain('the disk is full');
    const crashed = await chat(agent.id, { messages: [{ role: 'user', content: 'broken__crash' }] });
    expect(crashed.status).toBe('completed');
    expect(crashed.message?.content).toContain('Error');
    const stored = await events(crashed.run_id);
    expect(stored.find((event) => event.type === 'ToolCallCompleted')).toMatchObject({ name: 'broken__crash', is_error: true });
    // The unreachable server's tools are simply not offered; the run still completes.
    const unreachable = await chat(agent.id, { messages: [{ role: 'user', content: 'gone__anything' }] });
    expect(unreachable.status).toBe('completed');
  });

  it('shows MCP calls as mcp_call / mcp_call_output in the AgentScope projection', async () => {
    const agent = await createAgent({ mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter`, approval: 'always_allow' }] });
    const response = await fetch(`${server.url}/v1/agents/${agent.id}/process`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: [{ role: 'user', type: 'message', content: [{ type: 'text', text: 'counter__peek' }] }], stream: false }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { status: string; output: { type: string; content: { data?: Record<string, unknown> }[] }[] };
    expect(body.status).toBe('completed');
    const call = body.output.find((message) => message.type === 'mcp_call');
    expect(call?.content[0]?.data).toMatchObject({ name: 'counter__peek', server_label: 'counter' });
    expect(body.output.find((message) => message.type === 'mcp_call_output')?.content[0]?.data?.output).toContain('count is');
  });

  it('asks on /process with an mcp_approval_request, and an mcp_approval_response goes on with the same run', async () => {
    type Message = { id: string; type: string; role: string | null; content: { type: string; data?: Record<string, unknown> }[] | null };
    type Answer = { status: string; session_id: string; output: Message[] };
    const agent = await createAgent({ mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter` }] });
    const process = async (body: Record<string, unknown>) => {
      const response = await fetch(`${server.url}/v1/agents/${agent.id}/process`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ stream: false, ...body }),
      });
      return { status: response.status, body: (await response.json()) as Answer };
    };
    const ask = { role: 'user', type: 'message', content: [{ type: 'text', text: 'counter__increment now' }] };
    const answer = (request: Message, approve: boolean, reason?: string) => ({
      role: 'user',
      type: 'mcp_approval_response',
      content: [{ type: 'data', data: { approval_request_id: request.content![0]!.data!.id, approve, ...(reason ? { reason } : {}) } }],
    });

    for (const [approve, session] of [
      [true, 'as-approve'],
      [false, 'as-deny'],
    ] as const) {
      const before = mcp.count();
      const halted = await process({ input: [ask], session_id: session });
      expect(halted.status).toBe(200);
      expect(halted.body.status).toBe('completed');
      const request = halted.body.output.find((message) => message.type === 'mcp_approval_request')!;
      // The runtime's McpApprovalRequest: id, arguments, name, server_label.
      expect(request).toMatchObject({ role: 'assistant', content: [{ type: 'data', data: { id: expect.any(String), name: 'counter__increment', arguments: expect.any(String), server_label: 'counter' } }] });
      expect(mcp.count()).toBe(before);
      const run = await server.services.db.query<{ id: string; status: string }>("SELECT id, status FROM runs WHERE session_id = (SELECT id FROM sessions WHERE external_id = $1)", [session]);
      expect(run).toEqual([{ id: expect.any(String), status: 'requires_action' }]);

      // The reference client echoes the history back with the answer after it.
      const done = await process({ input: [ask, request, answer(request, approve, approve ? undefined : 'not today')], session_id: session });
      expect(done.status).toBe(200);
      expect(done.body.status).toBe('completed');
      expect(mcp.count()).toBe(approve ? before + 1 : before);
      const output = done.body.output.find((message) => message.type === 'mcp_call_output')?.content?.[0]?.data?.output;
      expect(output).toContain(approve ? `count is ${before + 1}` : 'not today');
      const last = done.body.output.at(-1)!.content![0] as { text?: string };
      expect(last.text).toContain(approve ? `count is ${before + 1}` : 'denied');
      const runs = await server.services.db.query<{ id: string; status: string }>("SELECT id, status FROM runs WHERE session_id = (SELECT id FROM sessions WHERE external_id = $1)", [session]);
      expect(runs).toEqual([{ id: run[0]!.id, status: 'completed' }]);
    }

    // An answer to nothing pending is refused; so is one that is not an McpApprovalResponse.
    const stray = await process({ input: [{ role: 'user', type: 'mcp_approval_response', content: [{ type: 'data', data: { approval_request_id: 'call_nothing', approve: true } }] }], session_id: 'as-approve' });
    expect(stray.status).toBe(400);
    const malformed = await process({ input: [{ role: 'user', type: 'mcp_approval_response', content: [{ type: 'data', data: { approval_request_id: 'call_nothing', approve: 'yes' } }] }] });
    expect(malformed.status).toBe(400);
  });

  it("gives a team's leader the team's MCP servers, sealed at rest, under the same approvals", async () => {
    const member = await createAgent({ name: 'Helper' });
    const created = await user.client.POST('/v1/teams', {
      body: {
        name: 'Crew',
        leader_model: 'local',
        members: [{ agent_id: member.id }],
        mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter`, headers: { Authorization: 'Bearer team-s3cret' } }],
      },
    });
    expect(created.response.status).toBe(201);
    const team = created.data!;
    expect(team.mcp_servers).toEqual([
      { name: 'counter', url: `${mcp.url}/counter`, headers: { Authorization: '********' }, allowed_tools: null, approval: 'always_ask', tool_approvals: {} },
    ]);
    const [row] = await server.services.db.query<{ mcp_servers: unknown }>('SELECT mcp_servers FROM teams WHERE id = $1', [team.id]);
    expect(JSON.stringify(row!.mcp_servers)).not.toContain('team-s3cret');
    // Another user's team answers like a missing one.
    const other = await server.signUp();
    expect((await other.client.GET('/v1/teams/{teamId}', { params: { path: { teamId: team.id } } })).response.status).toBe(404);

    const teamChat = teamChatWith(team.id);
    await approveThenDeny(teamChat, 'counter__increment now');
    expect(mcp.authorizations).toContain('Bearer team-s3cret');

    // Sending the mask back keeps the secret; an empty list removes the servers.
    const kept = await user.client.PATCH('/v1/teams/{teamId}', { params: { path: { teamId: team.id } }, body: { mcp_servers: [{ ...team.mcp_servers[0]!, allowed_tools: ['peek'], approval: 'always_allow' }] } });
    expect(kept.response.status).toBe(200);
    const allowed = await teamChat({ messages: [{ role: 'user', content: 'counter__peek please' }] });
    expect(allowed.status).toBe('completed');
    expect(allowed.message?.content).toContain('count is');
    expect(mcp.authorizations.at(-1)).toBe('Bearer team-s3cret');
    const cleared = await user.client.PATCH('/v1/teams/{teamId}', { params: { path: { teamId: team.id } }, body: { mcp_servers: [] } });
    expect(cleared.data?.mcp_servers).toEqual([]);
    // A chat request's servers reach the leader too.
    const requested = await teamChat({
      messages: [{ role: 'user', content: 'lent__peek please' }],
      mcp_servers: [{ name: 'lent', url: `${mcp.url}/counter`, approval: 'always_allow' }],
    });
    expect(requested.status).toBe('completed');
    expect(requested.message?.content).toContain('lent__peek returned: count is');
  });

  it("keeps a member's own MCP servers in a team, under the member's approvals, answered on the team's run", async () => {
    const member = await createAgent({ name: 'Keeper', mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter` }] });
    const team = (await user.client.POST('/v1/teams', { body: { name: 'Keepers', leader_model: 'local', members: [{ agent_id: member.id }] } })).data!;
    await approveThenDeny(teamChatWith(team.id), 'ask_keeper {"task": "counter__increment now"}');
  });

  it('takes MCP servers on a chat request too', async () => {
    const agent = await createAgent({});
    const before = mcp.count();
    const turn = await chat(agent.id, {
      messages: [{ role: 'user', content: 'counter__increment' }],
      mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter`, approval: 'always_allow' }],
    });
    expect(turn.status).toBe('completed');
    expect(mcp.count()).toBe(before + 1);
  });

  it('refuses a private MCP server URL unless the operator allows it', { timeout: 180_000 }, async () => {
    const strict = await startTestServer({ env: unlimitedPlanEnv() });
    try {
      const other = await strict.signUp();
      const refused = await other.client.POST('/v1/agents', { body: { name: 'x', mcp_servers: [{ name: 'local', url: 'http://127.0.0.1:9/mcp' }] } });
      expect(refused.response.status).toBe(400);
      expect(refused.error?.error).toMatchObject({ code: 'invalid_request', param: 'mcp_servers[0].url' });
    } finally {
      await strict.close();
    }
  });
});
