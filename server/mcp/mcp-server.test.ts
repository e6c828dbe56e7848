// This server as an MCP server, end to end: the official SDK's client (2026-07-28 negotiated, and the
// 2025 initialize handshake) calling /mcp with our API keys, one tool per agent and team, knowledge
// search, runs, ownership, and the 401 challenge with RFC 9728 metadata, on PGlite and PostgreSQL.
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
