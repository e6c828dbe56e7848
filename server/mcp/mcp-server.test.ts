// This server as an MCP server, end to end: the official SDK's client (2026-07-28 negotiated, and the
// 2025 initialize handshake) calling /mcp with our API keys, one tool per agent and team, knowledge
// search, runs, ownership, and the 401 challenge with RFC 9728 metadata, on PGlite and PostgreSQL; requests
// checked against the contract and errors as JSON-RPC; agent calls metered and held to the plan as chat is.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

describe.each(await availableEngines())('the /mcp endpoint on %s', (engine) => {
  let server: TestServer;
  let owner: TestUser;
  let stranger: TestUser;
  const clients: Client[] = [];

  beforeAll(async () => {
    server = await startTestServer({ engine, env: unlimitedPlanEnv() });
    owner = await server.signUp();
    stranger = await server.signUp();
  }, 180_000);
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await server?.close();
  });

  const connect = async (user: TestUser, mode: 'auto' | 'legacy') => {
    const client = new Client({ name: 'test', version: '1.0.0' }, { versionNegotiation: { mode } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${user.apiKey}` } } }));
    clients.push(client);
    return client;
  };
  const agent = async (user: TestUser, name: string) => {
    const created = await user.client.POST('/v1/agents', { body: { name, description: `${name} helps.` } });
    expect(created.response.status).toBe(201);
    return created.data!;
  };
  type ToolResult = { content: { type: string; text?: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

  it('answers 401 with a challenge naming the resource metadata, which it publishes', async () => {
    const response = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(response.status).toBe(401);
    const challenge = response.headers.get('www-authenticate');
    expect(challenge).toBe(`Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp"`);
    const bad = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { Authorization: 'Bearer nope', 'Content-Type': 'application/json' }, body: '{}' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toContain('error="invalid_token"');
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const metadata = await fetch(`${server.url}${path}`);
      expect(metadata.status).toBe(200);
      expect(await metadata.json()).toMatchObject({ resource: `${server.url}/mcp`, authorization_servers: [`${server.url}/`], bearer_methods_supported: ['header'] });
    }
  });

  it('validates requests against the contract before the SDK sees them, and answers every error as JSON-RPC', async () => {
    const mcp = (init: { method?: string; headers?: Record<string, string>; body?: string }) =>
      fetch(`${server.url}/mcp`, {
        method: init.method ?? 'POST',
        headers: { Authorization: `Bearer ${owner.apiKey}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...init.headers },
        ...(init.body !== undefined ? { body: init.body } : {}),
      });
    type RpcError = { jsonrpc: string; id: unknown; error: { code: number; message: string; data?: { code?: string; request_id?: string; details?: { field?: string }[] } } };

    // Not JSON: a parse error. Not a JSON-RPC message: an invalid request, with the id when it can be read,
    // and our request id and the offending field, which only the contract's validation adds.
    const garbled = await mcp({ body: '{"jsonrpc": ' });
    expect(garbled.status).toBe(400);
    expect((await garbled.json()) as RpcError).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700, data: { code: 'invalid_json' } } });
    for (const body of [{ jsonrpc: '2.0', id: 7 }, { jsonrpc: '1.0', id: 7, method: 'ping' }, { jsonrpc: '2.0', id: 7, method: 'ping', params: 'nope' }]) {
      const invalid = await mcp({ body: JSON.stringify(body) });
      expect(invalid.status).toBe(400);
      const answer = (await invalid.json()) as RpcError;
      expect(answer).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32600, data: { code: 'validation_error' } } });
      expect(answer.error.data?.request_id).toBe(invalid.headers.get('x-request-id'));
    }
    const plain = await mcp({ headers: { 'Content-Type': 'text/plain' }, body: 'ping' });
    expect(plain.status).toBe(415);
    expect(((await plain.json()) as RpcError).error).toMatchObject({ code: -32000, data: { code: 'unsupported_media_type' } });
    const empty = await mcp({ body: '[]' });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as RpcError).error.code).toBe(-32600);

    // What the SDK's transport answers itself passes through: GET and DELETE on a server without sessions,
    // and a client that does not accept both JSON and event streams.
    for (const method of ['GET', 'DELETE']) {
      const refused = await mcp({ method, headers: { Accept: 'text/event-stream' } });
      expect(refused.status).toBe(405);
      expect(refused.headers.get('allow')).toBe('POST');
      expect((await refused.json()) as RpcError).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
    }
    const picky = await mcp({ headers: { Accept: 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    expect(picky.status).toBe(406);
    expect(((await picky.json()) as RpcError).error.code).toBe(-32000);

    // A notification is accepted without a body; a request is answered with its response.
    const notified = await mcp({ body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    expect(notified.status).toBe(202);
    const pinged = await mcp({
      headers: { 'MCP-Protocol-Version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'p1', method: 'ping' }),
    });
    expect(pinged.status).toBe(200);
    expect(await pinged.text()).toContain('"id":"p1"');

    // A page elsewhere is refused, in JSON-RPC terms; so is a request without a credential.
    const foreign = await mcp({ headers: { Origin: 'https://evil.example' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }) });
    expect(foreign.status).toBe(403);
    expect((await foreign.json()) as RpcError).toMatchObject({ id: 2, error: { code: -32000, data: { code: 'forbidden' } } });
    const anonymous = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }) });
    expect(anonymous.status).toBe(401);
    expect((await anonymous.json()) as RpcError).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, data: { code: 'unauthorized' } } });
  });

  it("offers the caller's agents and teams as tools, in a stable order, and never another user's", async () => {
    const first = await agent(owner, 'Alpha');
    const second = await agent(owner, 'Beta');
    const foreign = await agent(stranger, 'Secret');
    const team = await owner.client.POST('/v1/teams', { body: { name: 'Crew', members: [{ agent_id: first.id }, { agent_id: second.id }] } });
    expect(team.response.status).toBe(201);

    for (const mode of ['auto', 'legacy'] as const) {
      const client = await connect(owner, mode);
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(['list_agents', 'get_run', 'knowledge_search', ...[first.id, second.id].sort().map((id) => `agent_${id}`), `team_${team.data!.id}`]);
      expect(names).not.toContain(`agent_${foreign.id}`);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(names);
    }

    const client = await connect(owner, 'auto');
    const listing = (await client.callTool({ name: 'list_agents', arguments: {} })) as ToolResult;
    expect(JSON.stringify(listing.structuredContent)).toContain(first.id);
    expect(JSON.stringify(listing.structuredContent)).not.toContain(foreign.id);
    const stolen = (await client.callTool({ name: `agent_${foreign.id}`, arguments: { message: 'hi' } }).catch((error: unknown) => ({ isError: true, content: [{ type: 'text', text: String(error) }] }))) as ToolResult;
    expect(stolen.isError).toBe(true);
  });

  it('talks to an agent and continues its session; reads the run, not another user’s', async () => {
    const helper = await agent(owner, 'Echo');
    for (const mode of ['auto', 'legacy'] as const) {
      const client = await connect(owner, mode);
      const reply = (await client.callTool({ name: `agent_${helper.id}`, arguments: { message: 'Hello from MCP' } })) as ToolResult;
      expect(reply.isError).toBeFalsy();
      expect(reply.content[0]?.text).toBe('Hello from MCP');
      const { run_id: runId, session_id: sessionId } = reply.structuredContent as { run_id: string; session_id: string };
      const next = (await client.callTool({ name: `agent_${helper.id}`, arguments: { message: 'Again', session_id: sessionId } })) as ToolResult;
      expect(next.structuredContent).toMatchObject({ session_id: sessionId, status: 'completed', reply: 'Again' });
      const session = await owner.client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId } } });
      expect(session.data?.message_count).toBe(4);

      const run = (await client.callTool({ name: 'get_run', arguments: { run_id: runId } })) as ToolResult;
      expect(run.structuredContent).toMatchObject({ id: runId, status: 'completed', agent_id: helper.id });
      const other = await connect(stranger, mode);
      const hidden = (await other.callTool({ name: 'get_run', arguments: { run_id: runId } })) as ToolResult;
      expect(hidden.isError).toBe(true);
      expect(hidden.content[0]?.text).toContain('not_found');
    }
  });

  it('asks for approval through the tool result, and the same run goes on when the caller answers in a second call', async () => {
    const careful = await owner.client.POST('/v1/agents', { body: { name: 'Careful', server_tools: ['calculator'], server_tool_approvals: { calculator: 'always_ask' } } });
    expect(careful.response.status).toBe(201);
    const tool = `agent_${careful.data!.id}`;
    const client = await connect(owner, 'auto');
    type Structured = { status: string; run_id: string; session_id: string; reply: string | null; approvals?: { tool_call_id: string; name: string; arguments: string }[] };
    for (const decision of ['approve', 'deny'] as const) {
      const halted = (await client.callTool({ name: tool, arguments: { message: 'calculator {"expression": "6*7"}' } })) as ToolResult;
      expect(halted.isError).toBeFalsy();
      const asked = halted.structuredContent as Structured;
      expect(asked.status).toBe('requires_action');
      expect(asked.approvals).toEqual([{ tool_call_id: expect.any(String), name: 'calculator', arguments: '{"expression":"6*7"}' }]);
      expect(halted.content[0]?.text).toContain(asked.approvals![0]!.tool_call_id);
      const answered = (await client.callTool({
        name: tool,
        arguments: { session_id: asked.session_id, approvals: [{ tool_call_id: asked.approvals![0]!.tool_call_id, decision, ...(decision === 'deny' ? { reason: 'no maths today' } : {}) }] },
      })) as ToolResult;
      expect(answered.isError).toBeFalsy();
      expect(answered.structuredContent).toMatchObject({ status: 'completed', run_id: asked.run_id, session_id: asked.session_id });
      expect((answered.structuredContent as Structured).reply).toContain(decision === 'approve' ? '42' : 'no maths today');
    }
    // Nothing to say and nothing to answer is the chat's own refusal, as a tool error.
    const empty = (await client.callTool({ name: tool, arguments: {} })) as ToolResult;
    expect(empty.isError).toBe(true);
    expect(empty.content[0]?.text).toContain('invalid_request');
  });

  it('searches knowledge as the REST search does', async () => {
    const uploaded = await owner.client.POST('/v1/knowledge/documents', { body: { title: 'Cats', text: 'Cats purr when they are content and sleep most of the day.' } });
    expect(uploaded.response.status).toBe(201);
    const client = await connect(owner, 'auto');
    const found = (await client.callTool({ name: 'knowledge_search', arguments: { query: 'why do cats purr' } })) as ToolResult;
    expect(found.isError).toBeFalsy();
    expect(JSON.stringify((found.structuredContent as { results: unknown[] }).results)).toContain('Cats purr');
    const empty = (await (await connect(stranger, 'auto')).callTool({ name: 'knowledge_search', arguments: { query: 'why do cats purr' } })) as ToolResult;
    expect(empty.structuredContent).toMatchObject({ results: [] });
  });
});

describe('/mcp tool calls against the plan', () => {
  let server: TestServer;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'oaa-mcp-plans-'));
    const plans = path.join(dir, 'plans.yaml');
    // Two runs a day, and requests enough for the handshake and the calls.
    writeFileSync(
      plans,
      `plans:\n  - id: free\n    name: Free\n    limits:\n      requests_per_minute: 100\n      tokens_per_month: 100000\n      runs_per_day: 2\n      agents: 5\n      teams: 5\n      knowledge_documents: 5\n      knowledge_bytes: 100000\n`,
    );
    server = await startTestServer({ env: { PLANS_FILE: plans } });
  }, 180_000);
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('meters an agent called through /mcp as a run with its tokens, and holds it to the run quota as chat does', async () => {
    const user = await server.signUp();
    const agent = (await user.client.POST('/v1/agents', { body: { name: 'Metered' } })).data!;
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${user.apiKey}` } } }));
    const usage = async () => {
      const report = (await user.client.GET('/v1/account/usage')).data!;
      const used = (metric: string) => report.limits.find((limit) => limit.metric === metric)?.used;
      return { runs: used('runs_per_day'), tokens: used('tokens_per_month') };
    };
    const before = await usage();
    const first = (await client.callTool({ name: `agent_${agent.id}`, arguments: { message: 'count me' } })) as { isError?: boolean };
    expect(first.isError).toBeFalsy();
    const after = await usage();
    expect(after.runs).toBe(before.runs! + 1);
    expect(after.tokens).toBeGreaterThan(before.tokens!);

    // The plan allows two runs a day: the REST chat spends the second, and /mcp is then refused as chat is.
    const chat = await user.client.POST('/v1/agents/{agentId}/chat', { params: { path: { agentId: agent.id } }, body: { messages: [{ role: 'user', content: 'once more' }] } });
    expect(chat.response.status).toBe(200);
    const refused = (await client.callTool({ name: `agent_${agent.id}`, arguments: { message: 'too many' } })) as { isError?: boolean; content: { text?: string }[] };
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toContain('quota_exceeded');
    const rest = await user.client.POST('/v1/agents/{agentId}/chat', { params: { path: { agentId: agent.id } }, body: { messages: [{ role: 'user', content: 'and again' }] } });
    expect(rest.response.status).toBe(402);
    expect((await usage()).runs).toBe(before.runs! + 2);
    await client.close();
  });
});
