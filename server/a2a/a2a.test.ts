// A2A 1.0 end to end with the official client: `@a2a-js/sdk` reads an agent's and a team's card and talks
// to them over JSON-RPC and over HTTP+JSON (send, stream, get, list, cancel, subscribe, the INPUT_REQUIRED
// round trip of a client-side tool); raw requests check the errors; another user's task answers exactly as
// a missing one; a second server on the same database follows a task the first one runs.
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Part, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

type Binding = 'JSONRPC' | 'HTTP+JSON';

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });
const data = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });

function userMessage(parts: Part[], ids: { taskId?: string; contextId?: string } = {}) {
  return {
    message: { messageId: randomUUID(), contextId: ids.contextId ?? '', taskId: ids.taskId ?? '', role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] },
    configuration: undefined,
    metadata: undefined,
    tenant: '',
  };
}

const artifactText = (task: Task) => task.artifacts.flatMap((artifact) => artifact.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : ''))).join('');

async function collect(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe.each(await availableEngines())('A2A (%s)', (engine) => {
  let server: TestServer;
  let second: TestServer;
  let user: TestUser;
  let stranger: TestUser;
  let upstream: FakeOpenAI;
  let agentId: string;
  let toolAgentId: string;
  let slowAgentId: string;
  let carefulAgentId: string;
  let teamId: string;

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ models: ['scripted'] });
    const env = { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url };
    server = await startTestServer({ engine, env });
    second = await startTestServer({ env, shareDatabaseWith: server });
    user = await server.signUp();
    stranger = await server.signUp();
    agentId = await create('/v1/agents', { name: 'Echo', description: 'Says what it hears.', instructions: 'SECRET-INSTRUCTIONS', server_tools: ['calculator'] });
    toolAgentId = await create('/v1/agents', {
      name: 'Asker',
      tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks things up.', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
    });
    slowAgentId = await create('/v1/agents', { name: 'Slow', model: 'scripted' });
    carefulAgentId = await create('/v1/agents', { name: 'Careful', server_tools: ['calculator'], server_tool_approvals: { calculator: 'always_ask' } });
    teamId = await create('/v1/teams', { name: 'Desk', members: [{ agent_id: agentId }] });
  });
  afterAll(async () => {
    await second?.close();
    await server?.close();
    await upstream?.close();
  });

  async function create(path: '/v1/agents' | '/v1/teams', body: Record<string, unknown>): Promise<string> {
    const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  }

  /** A client from the card at `/a2a/{id}`, over one binding, with the given API key. */
  async function clientFor(id: string, binding: Binding, apiKey = user.apiKey, base = server.url): Promise<Client> {
    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('Authorization', `Bearer ${apiKey}`);
      return fetch(input, { ...init, headers });
    };
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      preferredTransports: [binding],
    });
    const card = await (await fetch(`${base}/a2a/${id}/.well-known/agent-card.json`)).json();
    // The card names this server's public URL; a second server's client goes to that server instead.
    const rebased = JSON.parse(JSON.stringify(card).replaceAll(server.url, base));
    return factory.createFromAgentCard(rebased);
  }

  describe('agent cards', () => {
    it('serves an agent’s card without a credential, with its bindings, skills and credentials, and no secrets', async () => {
      const response = await fetch(`${server.url}/a2a/${agentId}/.well-known/agent-card.json`);
      expect(response.status).toBe(200);
      const card = (await response.json()) as Record<string, unknown>;
      expect(card).toMatchObject({
        name: 'Echo',
        description: 'Says what it hears.',
        supportedInterfaces: [
          { url: `${server.url}/a2a/${agentId}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          { url: `${server.url}/a2a/${agentId}`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
          { url: `${server.url}/a2a/${agentId}`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
          { url: `${server.url}/a2a/${agentId}`, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3' },
        ],
        url: `${server.url}/a2a/${agentId}`,
        preferredTransport: 'JSONRPC',
        capabilities: { streaming: true },
        securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } }, apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } } },
        defaultInputModes: expect.arrayContaining(['text/plain']),
      });
      expect(card.skills).toEqual(expect.arrayContaining([expect.objectContaining({ id: 'tool:calculator', name: 'calculator' })]));
      expect(JSON.stringify(card)).not.toContain('SECRET-INSTRUCTIONS');
      expect(JSON.stringify(card)).not.toContain(user.userId);
      expect(response.headers.get('cache-control')).toMatch(/max-age=\d+/);
      const etag = response.headers.get('etag');
      expect(etag).toMatch(/^".+"$/);
      const again = await fetch(`${server.url}/a2a/${agentId}/.well-known/agent-card.json`, { headers: { 'If-None-Match': etag! } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
    });

    it('lets the SDK find the agent from its URL alone, as the README shows', async () => {
      const fetchImpl: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), Authorization: `Bearer ${user.apiKey}` } });
      const client = await new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })] }).createFromUrl(`${server.url}/a2a/${agentId}/`);
      const task = (await client.sendMessage(userMessage([text('found you')]))) as Task;
      expect(artifactText(task)).toBe('found you');
    });

    it('serves a team’s card naming its members, and 404 for an id that is neither', async () => {
      const card = (await (await fetch(`${server.url}/a2a/${teamId}/.well-known/agent-card.json`)).json()) as { name: string; skills: { id: string }[] };
      expect(card.name).toBe('Desk');
      expect(card.skills.map((skill) => skill.id)).toContain('member:Echo');
      expect((await fetch(`${server.url}/a2a/agt_0000000000000000000000000/.well-known/agent-card.json`)).status).toBe(404);
    });
  });

  describe.each(['JSONRPC', 'HTTP+JSON'] as const)('over %s', (binding) => {
    it('sends a message and answers the completed task, which GetTask and ListTasks show too', async () => {
      const client = await clientFor(agentId, binding);
      const result = await client.sendMessage(userMessage([text('hello there')]));
      const task = result as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(task.id).toMatch(/^run_/);
      expect(task.contextId).toMatch(/^ses_/);
      expect(artifactText(task)).toBe('hello there');
      expect(task.history.map((message) => message.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);

      const read = await client.getTask({ id: task.id, historyLength: 0, tenant: '' });
      expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(read)).toBe('hello there');
      expect(read.history).toEqual([]);

      const listed = await client.listTasks({ tenant: '', contextId: task.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 10, pageToken: '', historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: true });
      expect(listed.tasks.map((item) => item.id)).toEqual([task.id]);
      expect(artifactText(listed.tasks[0]!)).toBe('hello there');
    });

    it('continues a context with a new task, and pages through the tasks newest first', async () => {
      const client = await clientFor(agentId, binding);
      const first = (await client.sendMessage(userMessage([text('one')]))) as Task;
      const second = (await client.sendMessage(userMessage([text('two')], { contextId: first.contextId }))) as Task;
      expect(second.contextId).toBe(first.contextId);
      expect(second.id).not.toBe(first.id);
      const page1 = await client.listTasks({ tenant: '', contextId: first.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 1, pageToken: '', historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
      expect(page1.tasks.map((task) => task.id)).toEqual([second.id]);
      expect(page1.totalSize).toBe(2);
      expect(page1.nextPageToken).not.toBe('');
      const page2 = await client.listTasks({ tenant: '', contextId: first.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 1, pageToken: page1.nextPageToken, historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
      expect(page2.tasks.map((task) => task.id)).toEqual([first.id]);
      expect(page2.nextPageToken).toBe('');
    });

    it('streams the task first, then the text as artifact updates, then the completed status', async () => {
      const client = await clientFor(agentId, binding);
      const events = await collect(client.sendMessageStream(userMessage([text('stream me please')])));
      expect(events[0]?.payload?.$case).toBe('task');
      const task = events[0]!.payload!.value as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_WORKING);
      const updates = events.slice(1).map((event) => event.payload!);
      const streamed = updates.flatMap((update) => (update.$case === 'artifactUpdate' ? update.value.artifact!.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')) : [])).join('');
      expect(streamed).toBe('stream me please');
      const last = updates.at(-1)!;
      expect(last.$case).toBe('statusUpdate');
      expect(last.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(await client.getTask({ id: task.id, historyLength: undefined, tenant: '' }))).toBe(streamed);
    });

    it('asks for a client-side tool’s result as INPUT_REQUIRED and continues the same task with it', async () => {
      const client = await clientFor(toolAgentId, binding);
      const asked = (await client.sendMessage(userMessage([text('lookup {"q": "otters"}')]))) as Task;
      expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const request = asked.status!.message!.parts[0]!.content;
      expect(request?.$case).toBe('data');
      const call = (request as { value: { toolCallId: string; name: string; arguments: unknown } }).value;
      expect(call).toMatchObject({ name: 'lookup', arguments: { q: 'otters' } });

      const events = await collect(client.sendMessageStream(userMessage([data({ toolCallId: call.toolCallId, output: '42 otters' })], { taskId: asked.id, contextId: asked.contextId })));
      expect(events[0]?.payload?.$case).toBe('task');
      expect((events[0]!.payload!.value as Task).id).toBe(asked.id);
      const done = await client.getTask({ id: asked.id, historyLength: undefined, tenant: '' });
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(done)).toBe('lookup returned: 42 otters.');
      await expect(client.sendMessage(userMessage([text('more')], { taskId: asked.id }))).rejects.toBeInstanceOf(UnsupportedOperationError);
    });

    it('asks for approval of a server-side call as INPUT_REQUIRED, and a decision runs or refuses it in the same task', async () => {
      const client = await clientFor(carefulAgentId, binding);
      const ask = async () => {
        const asked = (await client.sendMessage(userMessage([text('calculator {"expression": "6*7"}')]))) as Task;
        expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
        const request = asked.status!.message!.parts[0]!.content as { value: { toolCallId: string; name: string; approvalRequired?: boolean } };
        expect(request.value).toMatchObject({ name: 'calculator', approvalRequired: true });
        return { asked, callId: request.value.toolCallId };
      };

      const approved = await ask();
      await client.sendMessage(userMessage([data({ toolCallId: approved.callId, approve: true })], { taskId: approved.asked.id, contextId: approved.asked.contextId }));
      const ran = await client.getTask({ id: approved.asked.id, historyLength: undefined, tenant: '' });
      expect(ran.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(ran)).toBe('calculator returned: 42.');

      const denied = await ask();
      await client.sendMessage(userMessage([data({ toolCallId: denied.callId, approve: false, reason: 'not today' })], { taskId: denied.asked.id, contextId: denied.asked.contextId }));
      const refused = artifactText(await client.getTask({ id: denied.asked.id, historyLength: undefined, tenant: '' }));
      expect(refused).toContain('not today');
      expect(refused).not.toContain('42');

      // A result in place of a decision does not stand in for the server-side tool.
      const third = await ask();
      const refusal = await client.sendMessage(userMessage([data({ toolCallId: third.callId, output: '42' })], { taskId: third.asked.id, contextId: third.asked.contextId })).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(Error);
      expect((refusal as Error).message).toMatch(/waits for tool results/);
      expect((await client.getTask({ id: third.asked.id, historyLength: undefined, tenant: '' })).status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    });

    it('cancels a working task, and a finished one is not cancelable', async () => {
      upstream.enqueue({ hang: true });
      const client = await clientFor(slowAgentId, binding);
      const started = (await client.sendMessage({ ...userMessage([text('wait for it')]), configuration: { returnImmediately: true, acceptedOutputModes: [], historyLength: undefined, taskPushNotificationConfig: undefined } })) as Task;
      expect(started.status?.state).toBe(TaskState.TASK_STATE_WORKING);
      const canceled = await client.cancelTask({ id: started.id, tenant: '', metadata: undefined });
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      await expect(client.cancelTask({ id: started.id, tenant: '', metadata: undefined })).rejects.toBeInstanceOf(TaskNotCancelableError);
    });

    it('subscribes to a working task from a second server: the task first, then its end', async () => {
      upstream.enqueue({ hang: true });
      const client = await clientFor(slowAgentId, binding);
      const started = (await client.sendMessage({ ...userMessage([text('follow me')]), configuration: { returnImmediately: true, acceptedOutputModes: [], historyLength: undefined, taskPushNotificationConfig: undefined } })) as Task;
      const elsewhere = await clientFor(slowAgentId, binding, user.apiKey, second.url);
      const stream = elsewhere.resubscribeTask({ id: started.id, tenant: '' });
      const first = await stream.next();
      expect(first.value?.payload?.$case).toBe('task');
      expect((first.value!.payload!.value as Task).status?.state).toBe(TaskState.TASK_STATE_WORKING);
      await client.cancelTask({ id: started.id, tenant: '', metadata: undefined });
      const rest: StreamResponse[] = [];
      for (let next = await stream.next(); !next.done; next = await stream.next()) rest.push(next.value);
      const last = rest.at(-1)?.payload;
      expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      await expect(collect(elsewhere.resubscribeTask({ id: started.id, tenant: '' }))).rejects.toBeInstanceOf(UnsupportedOperationError);
    });

    it('answers another user’s task exactly as a missing one', async () => {
      const mine = (await (await clientFor(agentId, binding)).sendMessage(userMessage([text('private')]))) as Task;
      const theirs = await stranger.client.POST('/v1/agents', { body: { name: 'Theirs' } });
      const strangerClient = await clientFor(theirs.data!.id, binding, stranger.apiKey);
      const missing = 'run_00000000000000000000000000';
      const errorOf = async (id: string) => strangerClient.getTask({ id, historyLength: undefined, tenant: '' }).then(() => undefined, (error: unknown) => error);
      const [other, absent] = [await errorOf(mine.id), await errorOf(missing)];
      expect(other).toBeInstanceOf(TaskNotFoundError);
      expect(absent).toBeInstanceOf(TaskNotFoundError);
      expect((other as Error).message.replace(mine.id, 'ID')).toBe((absent as Error).message.replace(missing, 'ID'));
      // The owner's agent itself is not reachable with the stranger's key either.
      const intruder = await clientFor(agentId, binding, stranger.apiKey);
      await expect(intruder.getTask({ id: mine.id, historyLength: undefined, tenant: '' })).rejects.toThrow();
    });

    it('gives the owner the extended card, which says more than the public one; another user gets what a missing agent gets', async () => {
      const publicCard = (await (await fetch(`${server.url}/a2a/${toolAgentId}/.well-known/agent-card.json`)).json()) as { capabilities: { extendedAgentCard?: boolean }; skills: { id: string; description: string; tags: string[] }[] };
      expect(publicCard.capabilities.extendedAgentCard).toBe(true);
      expect(JSON.stringify(publicCard)).not.toContain('Parameters:');
      const extended = await (await clientFor(toolAgentId, binding)).getAgentCard();
      const lookup = extended.skills.find((skill) => skill.id === 'tool:lookup');
      expect(lookup?.description).toContain('Parameters: q? (string).');
      expect(extended.skills.find((skill) => skill.id === 'conversation')?.tags).toEqual(expect.arrayContaining([expect.stringMatching(/^model:/)]));
      expect(extended.skills.map((skill) => skill.id)).toEqual(publicCard.skills.map((skill) => skill.id));
      const teamCard = await (await clientFor(teamId, binding)).getAgentCard();
      expect(teamCard.skills.find((skill) => skill.id === 'member:Echo')?.tags).toEqual(expect.arrayContaining(['tool:calculator']));
      const secret = await (await clientFor(agentId, binding)).getAgentCard();
      expect(JSON.stringify(secret)).not.toContain('SECRET-INSTRUCTIONS');
      expect(JSON.stringify(secret)).not.toContain(user.userId);

      // Another user's valid credential on this agent, and the owner's on an id that is no agent: the same answer.
      const strangerCall = (id: string) =>
        binding === 'JSONRPC'
          ? fetch(`${server.url}/a2a/${id}`, { method: 'POST', headers: { Authorization: `Bearer ${stranger.apiKey}`, 'A2A-Version': '1.0', 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard' }) })
          : fetch(`${server.url}/a2a/${id}/extendedAgentCard`, { headers: { Authorization: `Bearer ${stranger.apiKey}`, 'A2A-Version': '1.0' } });
      const missing = 'agt_00000000000000000000000000';
      const [other, absent] = [await strangerCall(toolAgentId), await strangerCall(missing)];
      expect(other.status).toBe(404);
      expect(absent.status).toBe(other.status);
      expect(JSON.stringify(await other.json()).replaceAll(toolAgentId, 'ID')).toBe(JSON.stringify(await absent.json()).replaceAll(missing, 'ID'));
      const anonymous = await fetch(`${server.url}/a2a/${toolAgentId}/extendedAgentCard`, { headers: { 'A2A-Version': '1.0' } });
      expect(anonymous.status).toBe(401);
    });

    it('talks to a team as to an agent', async () => {
      const client = await clientFor(teamId, binding);
      const task = (await client.sendMessage(userMessage([text('hello team')]))) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(task).length).toBeGreaterThan(0);
      expect((await client.getTask({ id: task.id, historyLength: undefined, tenant: '' })).id).toBe(task.id);
    });
  });

  describe('raw JSON-RPC', () => {
    const rpc = async (body: unknown, headers: Record<string, string> = { 'A2A-Version': '1.0' }) => {
      const response = await fetch(`${server.url}/a2a/${agentId}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as { id: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data: unknown[] } } };
    };

    it('answers JSON-RPC errors: unknown method, invalid params, an unsupported version, a missing task', async () => {
      expect((await rpc({ jsonrpc: '2.0', id: 7, method: 'Nope', params: {} })).body).toMatchObject({ id: 7, error: { code: -32601 } });
      expect((await rpc({ jsonrpc: '2.0', id: 8, method: 'SendMessage', params: { message: { role: 'ROLE_USER' } } })).body).toMatchObject({ id: 8, error: { code: -32602 } });
      const version = await rpc({ jsonrpc: '2.0', id: 9, method: 'GetTask', params: { id: 'run_x' } }, { 'A2A-Version': '0.5' });
      expect(version.body).toMatchObject({ id: 9, error: { code: -32009, data: [expect.objectContaining({ reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org' })] } });
      const missing = await rpc({ jsonrpc: '2.0', id: 'a', method: 'GetTask', params: { id: 'run_x' } });
      expect(missing).toMatchObject({ status: 200, body: { id: 'a', error: { code: -32001 } } });
      const unauthenticated = await fetch(`${server.url}/a2a/${agentId}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'run_x' } }) });
      expect(unauthenticated.status).toBe(401);
      // Refused before the body is read, so the id is unknown: null, as JSON-RPC has it.
      expect(await unauthenticated.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    });

    it('answers push config methods and the extended card as A2A asks, in 1.0 and 0.3', async () => {
      // 1.0's push configs are offered (push.test.ts): a missing task is TaskNotFound; 0.3's are not.
      expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'CreateTaskPushNotificationConfig', params: { taskId: 'run_x', url: 'https://example.com/hook' } })).body.error?.code).toBe(-32001);
      expect((await rpc({ jsonrpc: '2.0', id: 2, method: 'GetExtendedAgentCard' })).body.result).toMatchObject({ name: 'Echo', capabilities: { extendedAgentCard: true } });
      expect((await rpc({ jsonrpc: '2.0', id: 2, method: 'agent/getAuthenticatedExtendedCard' }, {})).body.result).toMatchObject({ name: 'Echo', supportsAuthenticatedExtendedCard: true });
      // 0.3's push configs are offered too (push.test.ts); params off 0.3's shape are invalid params.
      expect((await rpc({ jsonrpc: '2.0', id: 3, method: 'tasks/pushNotificationConfig/set', params: {} }, {})).body.error?.code).toBe(-32602);
      expect((await rpc({ jsonrpc: '2.0', id: 4, method: 'tasks/pushNotificationConfig/list', params: { id: 'run_x' } }, {})).body.error?.code).toBe(-32001);
    });

    it('refuses bytes the agent cannot read as ContentTypeNotSupported', async () => {
      const answer = await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ raw: 'AAEC', mediaType: 'application/octet-stream' }] } } });
      expect(answer.body.error?.code).toBe(-32005);
    });
  });

  describe('A2A 0.3 (no A2A-Version header)', () => {
    const rpc03 = async (id: string, body: Record<string, unknown>) => {
      const response = await fetch(`${server.url}/a2a/${id}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...body }),
      });
      expect(response.status).toBe(200);
      return (await response.json()) as { result?: V03; error?: { code: number } };
    };
    /** The parts of a 0.3 answer these tests read. */
    type V03 = {
      kind: string;
      id: string;
      status: { state: string; message: { parts: { data: { toolCallId: string } }[] } };
      artifacts: { parts: { text?: string }[] }[];
      artifact: { parts: { text?: string }[] };
    };
    const message03 = (parts: unknown[], ids: Record<string, string> = {}) => ({ kind: 'message', messageId: randomUUID(), role: 'user', parts, ...ids });

    it('answers message/send, tasks/get and tasks/cancel in 0.3’s shapes, and the tool round trip with data parts', async () => {
      const sent = await rpc03(agentId, { method: 'message/send', params: { message: message03([{ kind: 'text', text: 'old school' }]) } });
      expect(sent.result).toMatchObject({ kind: 'task', status: { state: 'completed' }, artifacts: [{ parts: [{ kind: 'text', text: 'old school' }] }] });
      const read = await rpc03(agentId, { method: 'tasks/get', params: { id: sent.result!.id } });
      expect(read.result).toMatchObject({ kind: 'task', id: sent.result!.id, history: [{ kind: 'message', role: 'user' }, { kind: 'message', role: 'agent' }] });
      expect((await rpc03(agentId, { method: 'tasks/cancel', params: { id: sent.result!.id } })).error?.code).toBe(-32002);

      const asked = await rpc03(toolAgentId, { method: 'message/send', params: { message: message03([{ kind: 'text', text: 'lookup {"q": "owls"}' }]) } });
      expect(asked.result).toMatchObject({ kind: 'task', status: { state: 'input-required', message: { kind: 'message', role: 'agent', parts: [{ kind: 'data', data: { name: 'lookup', arguments: { q: 'owls' } } }] } } });
      const callId = asked.result!.status.message.parts[0]!.data.toolCallId;
      const answered = await rpc03(toolAgentId, { method: 'message/send', params: { message: message03([{ kind: 'data', data: { toolCallId: callId, output: 'three owls' } }], { taskId: asked.result!.id }) } });
      expect(answered.result).toMatchObject({ kind: 'task', id: asked.result!.id, status: { state: 'completed' } });
      expect(answered.result!.artifacts.at(-1)!.parts[0]!.text).toBe('lookup returned: three owls.');
    });

    it('streams message/stream as 0.3 events, the last status update final', async () => {
      const response = await fetch(`${server.url}/a2a/${agentId}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'r', method: 'message/stream', params: { message: message03([{ kind: 'text', text: 'stream old' }]) } }),
      });
      const frames = (await response.text()).split('\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice(6)) as { id: string; result: V03 });
      expect(frames.every((frame) => frame.id === 'r')).toBe(true);
      const kinds = frames.map((frame) => frame.result.kind);
      expect(kinds[0]).toBe('task');
      expect(kinds).toContain('artifact-update');
      expect(frames.at(-1)!.result).toMatchObject({ kind: 'status-update', final: true, status: { state: 'completed' } });
      expect(frames.filter((frame) => frame.result.kind === 'artifact-update').map((frame) => frame.result.artifact.parts[0]!.text).join('')).toBe('stream old');
    });

    it('serves the SDK’s 0.3 HTTP+JSON client under /v1: send, stream, get, cancel, push configs and the extended card', async () => {
      const fetchImpl: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), Authorization: `Bearer ${user.apiKey}` } });
      const card = await (await fetch(`${server.url}/a2a/${agentId}/.well-known/agent-card.json`)).json();
      card.supportedInterfaces = card.supportedInterfaces.filter((item: { protocolVersion: string; protocolBinding: string }) => item.protocolVersion === '0.3' && item.protocolBinding === 'HTTP+JSON');
      const legacy = await new ClientFactory({ transports: [new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })] }).createFromAgentCard(card);
      expect(legacy.protocolVersion).toBe('0.3');
      const task = (await legacy.sendMessage(userMessage([text('rest from the past')]))) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(task)).toBe('rest from the past');
      expect((await legacy.getTask({ id: task.id, historyLength: undefined, tenant: '' })).history.map((message) => message.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
      await expect(legacy.cancelTask({ id: task.id, tenant: '', metadata: undefined })).rejects.toBeInstanceOf(TaskNotCancelableError);
      await expect(legacy.getTask({ id: 'run_missing', historyLength: undefined, tenant: '' })).rejects.toBeInstanceOf(TaskNotFoundError);
      const events = await collect(legacy.sendMessageStream(userMessage([text('rest stream from the past')])));
      expect(events[0]?.payload?.$case).toBe('task');
      const last = events.at(-1)?.payload;
      expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      const config = { tenant: '', id: 'past', taskId: task.id, url: 'https://example.com/past-hook', token: 'tok', authentication: { scheme: 'Bearer', credentials: 'c' } };
      expect(await legacy.createTaskPushNotificationConfig(config)).toMatchObject({ id: 'past', taskId: task.id, url: 'https://example.com/past-hook', token: 'tok' });
      expect(await legacy.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'past' })).toMatchObject({ id: 'past', url: 'https://example.com/past-hook' });
      expect((await legacy.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.map((item) => item.id)).toEqual(['past']);
      await legacy.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'past' });
      expect((await legacy.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toEqual([]);
      expect((await legacy.getAgentCard()).skills.find((skill) => skill.id === 'conversation')?.tags).toEqual(expect.arrayContaining([expect.stringMatching(/^model:/)]));
    });

    it('speaks 0.3’s protobuf JSON on the wire under /v1, with 0.3’s error bodies', async () => {
      const v1 = (path: string, init: RequestInit = {}) =>
        fetch(`${server.url}/a2a/${slowAgentId}/v1${path}`, { ...init, headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', ...(init.headers as Record<string, string>) } });
      upstream.enqueue({ hang: true });
      const sent = await v1('/message:send', {
        method: 'POST',
        body: JSON.stringify({ message: { messageId: randomUUID(), role: 'ROLE_USER', content: [{ text: 'wait, old style' }, { data: { data: { note: 1 } } }] }, configuration: { blocking: false } }),
      });
      const { task } = (await sent.json()) as { task: { id: string; status: { state: string } } };
      expect(task.status.state).toBe('TASK_STATE_WORKING');
      const canceled = (await (await v1(`/tasks/${task.id}:cancel`, { method: 'POST', body: JSON.stringify({ name: `tasks/${task.id}` }) })).json()) as { status: { state: string } };
      expect(canceled.status.state).toBe('TASK_STATE_CANCELLED');
      const read = (await (await v1(`/tasks/${task.id}`)).json()) as { history: { role: string; content: unknown[] }[] };
      expect(read.history[0]).toMatchObject({ role: 'ROLE_USER', content: [{ text: expect.stringContaining('wait, old style') }] });
      const missing = await v1('/tasks/run_missing');
      expect(missing.status).toBe(404);
      expect(await missing.json()).toMatchObject({ code: -32001, message: expect.any(String), data: [expect.objectContaining({ reason: 'TASK_NOT_FOUND' })] });
      const follow = await v1(`/tasks/${task.id}:subscribe`);
      expect(follow.status).toBe(400);
      expect(await follow.json()).toMatchObject({ code: -32004 });
      const created = (await (await v1(`/tasks/${task.id}/pushNotificationConfigs`, { method: 'POST', body: JSON.stringify({ name: `tasks/${task.id}/pushNotificationConfigs/named`, pushNotificationConfig: { url: 'https://example.com/h', authentication: { schemes: ['Basic'], credentials: 'x' } } }) })).json()) as Record<string, unknown>;
      expect(created).toEqual({ name: `tasks/${task.id}/pushNotificationConfigs/named`, pushNotificationConfig: { id: 'named', url: 'https://example.com/h', authentication: { schemes: ['Basic'], credentials: 'x' } } });
      expect((await v1(`/tasks/${task.id}/pushNotificationConfigs/named`, { method: 'DELETE' })).status).toBe(204);
      expect((await v1(`/tasks/${task.id}/pushNotificationConfigs/named`, { method: 'DELETE' })).status).toBe(204);
    });

    it('serves the SDK’s 0.3 client, given a card that offers only 0.3', async () => {
      const fetchImpl: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), Authorization: `Bearer ${user.apiKey}` } });
      const card = await (await fetch(`${server.url}/a2a/${agentId}/.well-known/agent-card.json`)).json();
      card.supportedInterfaces = card.supportedInterfaces.filter((item: { protocolVersion: string; protocolBinding: string }) => item.protocolVersion === '0.3' && item.protocolBinding === 'JSONRPC');
      const legacy = await new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })] }).createFromAgentCard(card);
      const task = (await legacy.sendMessage(userMessage([text('from the past')]))) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(task)).toBe('from the past');
      const events = await collect(legacy.sendMessageStream(userMessage([text('streamed from the past')])));
      expect(events[0]?.payload?.$case).toBe('task');
      const last = events.at(-1)?.payload;
      expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    });
  });

  describe('HTTP+JSON errors', () => {
    it('are google.rpc.Status with an ErrorInfo naming the A2A error', async () => {
      const response = await fetch(`${server.url}/a2a/${agentId}/tasks/run_missing`, { headers: { Authorization: `Bearer ${user.apiKey}`, 'A2A-Version': '1.0' } });
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({
        error: { code: 404, status: 'NOT_FOUND', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }] },
      });
      const unauthenticated = await fetch(`${server.url}/a2a/${agentId}/tasks`);
      expect(unauthenticated.status).toBe(401);
      expect(await unauthenticated.json()).toMatchObject({ error: { code: 401, status: 'UNAUTHENTICATED' } });
    });
  });
});
