// Approvals on the Responses API, through the official `openai` client: an agent's MCP tool that asks ends
// the response with an `mcp_approval_request` item; a response chained to it with an `mcp_approval_response`
// runs the call (approved) or tells the model it was denied (and never runs it), then goes on; a team's
// leader asks and goes on alike. Against
// real MCP servers on loopback built with the SDK, on PGlite and PostgreSQL.
import OpenAI from 'openai';
import type { ResponseOutputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { startMcpTestServers, type McpTestServers } from '../testing/mcp-servers.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

type ApprovalRequest = Extract<ResponseOutputItem, { type: 'mcp_approval_request' }>;

describe.each(await availableEngines())('approvals on the Responses API on %s', (engine) => {
  let server: TestServer;
  let user: TestUser;
  let stranger: TestUser;
  let mcp: McpTestServers;
  let model: string;

  beforeAll(async () => {
    mcp = await startMcpTestServers();
    server = await startTestServer({ engine, env: { ...unlimitedPlanEnv(), OUTBOUND_ALLOW: '127.0.0.1' } });
    user = await server.signUp();
    stranger = await server.signUp();
    const agent = await user.client.POST('/v1/agents', { body: { name: 'Careful', mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter` }] } });
    expect(agent.response.status).toBe(201);
    model = `agent:${agent.data!.id}`;
  }, 180_000);
  afterAll(async () => {
    await server?.close();
    await mcp?.close();
  });

  const openai = (who: TestUser = user) => new OpenAI({ apiKey: who.apiKey, baseURL: `${server.url}/v1`, maxRetries: 0 });

  /** A response that halts on the counter's increment, and its one approval request. */
  const ask = async () => {
    const halted = await openai().responses.create({ model, input: 'counter__increment now' });
    expect(halted.status).toBe('completed');
    const requests = halted.output.filter((item): item is ApprovalRequest => item.type === 'mcp_approval_request');
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ type: 'mcp_approval_request', server_label: 'open-agent-api', name: 'counter__increment', arguments: expect.any(String) });
    expect(halted.output.some((item) => item.type === 'mcp_call')).toBe(false);
    return { halted, request: requests[0]! };
  };

  it('ends with an mcp_approval_request; approved, the call runs once and the model reads its result', async () => {
    const before = mcp.count();
    const { halted, request } = await ask();
    expect(mcp.count()).toBe(before);

    const done = await openai().responses.create({
      model,
      previous_response_id: halted.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: true }],
    });
    expect(done.status).toBe('completed');
    expect(mcp.count()).toBe(before + 1);
    const call = done.output.find((item) => item.type === 'mcp_call');
    expect(call).toMatchObject({ type: 'mcp_call', name: 'counter__increment', output: `count is ${before + 1}`, error: null });
    expect(done.output_text).toContain(`count is ${before + 1}`);
    const inputs = await openai().responses.inputItems.list(done.id);
    expect(inputs.data).toEqual([expect.objectContaining({ type: 'mcp_approval_response', approval_request_id: request.id, approve: true })]);

    // The request is answered: a second answer on the same chain is refused, and nothing runs again.
    const again = await openai()
      .responses.create({ model, previous_response_id: done.id, input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: true }] })
      .catch((error: unknown) => error);
    expect(again).toBeInstanceOf(OpenAI.BadRequestError);
    expect(mcp.count()).toBe(before + 1);

    // The chain goes on with the call and its result in the transcript.
    const next = await openai().responses.create({ model, previous_response_id: done.id, input: 'thanks' });
    expect(next.status).toBe('completed');
    expect(mcp.count()).toBe(before + 1);
  });

  it('never runs a denied call, and the model reads the denial and its reason', async () => {
    const before = mcp.count();
    const { halted, request } = await ask();
    const done = await openai().responses.create({
      model,
      previous_response_id: halted.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: false, reason: 'not on a Sunday' }],
    });
    expect(done.status).toBe('completed');
    expect(mcp.count()).toBe(before);
    expect(done.output.find((item) => item.type === 'mcp_call')).toMatchObject({ name: 'counter__increment', output: null, error: expect.stringContaining('denied') });
    expect(done.output_text).toContain('denied');
    expect(done.output_text).toContain('not on a Sunday');
  });

  it('streams the approval request as an output item, added then done', async () => {
    const before = mcp.count();
    const stream = await openai().responses.create({ model, input: 'counter__increment now', stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const items = events.filter((event) => event.type === 'response.output_item.added' || event.type === 'response.output_item.done');
    const approval = items.filter((event) => 'item' in event && event.item.type === 'mcp_approval_request');
    expect(approval.map((event) => event.type)).toEqual(['response.output_item.added', 'response.output_item.done']);
    const last = events.at(-1);
    expect(last?.type).toBe('response.completed');
    const completed = last?.type === 'response.completed' ? last.response : undefined;
    const request = completed?.output.find((item): item is ApprovalRequest => item.type === 'mcp_approval_request');
    expect(request?.id).toBe((approval[0] as { item: { id: string } }).item.id);

    const retrieved = await openai().responses.retrieve(completed!.id);
    expect(retrieved.output).toEqual(completed!.output);
    const streamed = await openai().responses.create({
      model,
      previous_response_id: completed!.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }],
      stream: true,
    });
    const done: ResponseStreamEvent[] = [];
    for await (const event of streamed) done.push(event);
    expect(done.at(-1)?.type).toBe('response.completed');
    expect(mcp.count()).toBe(before + 1);
  });

  it("asks for a team leader's MCP tool too, and the team goes on with the answer", async () => {
    const member = (await user.client.POST('/v1/agents', { body: { name: 'Member' } })).data!;
    const team = await user.client.POST('/v1/teams', { body: { name: 'Crew', leader_model: 'local', members: [{ agent_id: member.id }], mcp_servers: [{ name: 'counter', url: `${mcp.url}/counter` }] } });
    expect(team.response.status).toBe(201);
    const teamModel = `team:${team.data!.id}`;
    const before = mcp.count();
    const halted = await openai().responses.create({ model: teamModel, input: 'counter__increment now' });
    const request = halted.output.find((item): item is ApprovalRequest => item.type === 'mcp_approval_request');
    expect(request).toMatchObject({ name: 'counter__increment' });
    expect(mcp.count()).toBe(before);
    // The answer goes to the team that asked, not to another model.
    const elsewhere = await openai()
      .responses.create({ model, previous_response_id: halted.id, input: [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }] })
      .catch((error: unknown) => error);
    expect(elsewhere).toBeInstanceOf(OpenAI.BadRequestError);
    const done = await openai().responses.create({
      model: teamModel,
      previous_response_id: halted.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request!.id, approve: true }],
    });
    expect(done.status).toBe('completed');
    expect(mcp.count()).toBe(before + 1);
    expect(done.output_text).toContain(`count is ${before + 1}`);
  });

  it('refuses an answer to no request, and another user cannot answer one', async () => {
    const before = mcp.count();
    const { halted, request } = await ask();
    const unknown = await openai()
      .responses.create({ model, previous_response_id: halted.id, input: [{ type: 'mcp_approval_response', approval_request_id: 'mcpr_nothing', approve: true }] })
      .catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
    const foreign = await openai(stranger)
      .responses.create({ model, previous_response_id: halted.id, input: [{ type: 'mcp_approval_response', approval_request_id: request.id, approve: true }] })
      .catch((error: unknown) => error);
    expect(foreign).toBeInstanceOf(OpenAI.NotFoundError);
    const twice = await openai()
      .responses.create({
        model,
        previous_response_id: halted.id,
        input: [
          { type: 'mcp_approval_response', approval_request_id: request.id, approve: true },
          { type: 'mcp_approval_response', approval_request_id: request.id, approve: true },
        ],
      })
      .catch((error: unknown) => error);
    expect(twice).toBeInstanceOf(OpenAI.BadRequestError);
    expect(mcp.count()).toBe(before);
  });
});
