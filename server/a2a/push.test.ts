// A2A push notifications end to end: the official client (`@a2a-js/sdk`, both bindings) stores, reads, lists and deletes
// push configs, and a receiver on loopback (allowed by OUTBOUND_ALLOW) gets the finished task with the
// config's token and credentials, also when it fails the first delivery. A private address the allow-list
// does not name is refused; another user's task is not found.
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { startPushReceiver, type PushReceiver } from '../testing/push-receiver.ts';

type Binding = 'JSONRPC' | 'HTTP+JSON';
const BINDINGS: Binding[] = ['JSONRPC', 'HTTP+JSON'];

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });

function userMessage(value: string, push?: { url: string; token?: string; credentials?: string }) {
  return {
    message: { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [text(value)], metadata: undefined, extensions: [], referenceTaskIds: [] },
    configuration: push
      ? {
          acceptedOutputModes: [],
          historyLength: undefined,
          returnImmediately: false,
          taskPushNotificationConfig: {
            tenant: '',
            id: '',
            taskId: '',
            url: push.url,
            token: push.token ?? '',
            authentication: push.credentials ? { scheme: 'Bearer', credentials: push.credentials } : undefined,
          },
        }
      : undefined,
    metadata: undefined,
    tenant: '',
  };
}

const pushConfig = (taskId: string, id: string, url: string, token = '') => ({ tenant: '', id, taskId, url, token, authentication: undefined });

describe.each(await availableEngines())('A2A push notifications (%s)', (engine) => {
  let server: TestServer;
  let upstream: FakeOpenAI;
  let receiver: PushReceiver;
  let user: TestUser;
  let stranger: TestUser;
  let agentId: string;
  let strangerAgentId: string;
  let toolAgentId: string;

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ models: ['scripted'] });
    receiver = await startPushReceiver(new Set(['/flaky']));
    server = await startTestServer({ engine, env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url, OUTBOUND_ALLOW: '127.0.0.1' } });
    user = await server.signUp();
    stranger = await server.signUp();
    agentId = await create(user, { name: 'Echo' });
    strangerAgentId = await create(stranger, { name: 'Other' });
    toolAgentId = await create(user, {
      name: 'Asker',
      tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks things up.', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
    });
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
    await upstream?.close();
  });

  async function create(owner: TestUser, body: Record<string, unknown>): Promise<string> {
    const response = await fetch(`${server.url}/v1/agents`, { method: 'POST', headers: { Authorization: `Bearer ${owner.apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  }

  async function clientFor(id: string, owner: TestUser = user, binding: Binding = 'JSONRPC'): Promise<Client> {
    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('Authorization', `Bearer ${owner.apiKey}`);
      return fetch(input, { ...init, headers });
    };
    const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })], preferredTransports: [binding] });
    return factory.createFromAgentCard(await (await fetch(`${server.url}/a2a/${id}/.well-known/agent-card.json`)).json());
  }

  const finishedDelivery = (path: string, taskId: string, state = 'TASK_STATE_COMPLETED') =>
    receiver.deliveries.find((delivery) => delivery.path === path && delivery.body.task?.id === taskId && delivery.body.task.status.state === state);

  const delivered = (path: string, taskId: string, state?: string) =>
    vi.waitFor(
      () => {
        const found = finishedDelivery(path, taskId, state);
        if (!found) throw new Error('not delivered yet');
        return found;
      },
      { timeout: 60_000, interval: 100 },
    );

  it('declares push notifications on the card', async () => {
    const card = (await (await fetch(`${server.url}/a2a/${agentId}/.well-known/agent-card.json`)).json()) as { capabilities: Record<string, unknown> };
    expect(card.capabilities.pushNotifications).toBe(true);
  });

  it.each(BINDINGS)('creates, reads, lists and deletes a task’s push configs (%s)', async (binding) => {
    const client = await clientFor(agentId, user, binding);
    const task = (await client.sendMessage(userMessage('hello'))) as Task;
    const created = await client.createTaskPushNotificationConfig(pushConfig(task.id, 'first', `${receiver.url}/crud`, 'tok-crud'));
    expect(created).toMatchObject({ id: 'first', taskId: task.id, url: `${receiver.url}/crud`, token: 'tok-crud' });
    const generated = await client.createTaskPushNotificationConfig(pushConfig(task.id, '', `${receiver.url}/crud2`));
    expect(generated.id).not.toBe('');
    expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'first' })).toMatchObject({ id: 'first', url: `${receiver.url}/crud` });
    const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    expect(listed.configs.map((config) => config.id).sort()).toEqual(['first', generated.id].sort());
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'first' });
    await expect(client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'first' })).rejects.toThrow();
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.map((config) => config.id)).toEqual([generated.id]);
  });

  it('posts the finished task to a config given with the message, with its token and credentials', async () => {
    const client = await clientFor(agentId);
    const task = (await client.sendMessage(userMessage('notify me', { url: `${receiver.url}/hook`, token: 'tok-123', credentials: 'receiver-secret' }))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const delivery = await vi.waitFor(
      () => {
        const found = finishedDelivery('/hook', task.id);
        if (!found) throw new Error('not delivered yet');
        return found;
      },
      { timeout: 60_000, interval: 100 },
    );
    expect(delivery.headers['x-a2a-notification-token']).toBe('tok-123');
    expect(delivery.headers.authorization).toBe('Bearer receiver-secret');
    expect(delivery.body.task?.id).toBe(task.id);
    // Kept sealed in the database, read back in the clear.
    const [stored] = await server.services.db.query<{ auth_credentials: string }>('SELECT auth_credentials FROM a2a_push_configs WHERE task_id = $1', [task.id]);
    expect(stored?.auth_credentials).toBeTruthy();
    expect(stored?.auth_credentials).not.toContain('receiver-secret');
    const [config] = (await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs;
    expect(config?.authentication?.credentials).toBe('receiver-secret');
  });

  it('delivers again after the receiver fails the first time', async () => {
    const client = await clientFor(agentId);
    const task = (await client.sendMessage(userMessage('try twice', { url: `${receiver.url}/flaky`, token: 'tok-flaky' }))) as Task;
    await vi.waitFor(
      () => {
        if (!finishedDelivery('/flaky', task.id)) throw new Error('not delivered yet');
      },
      { timeout: 60_000, interval: 100 },
    );
    expect(receiver.attempts.get('/flaky')).toBeGreaterThanOrEqual(2);
  });

  it('posts the task when it asks for input, and again when the next turn finishes it', async () => {
    const client = await clientFor(toolAgentId);
    const asked = (await client.sendMessage(userMessage('lookup {"q": "otters"}', { url: `${receiver.url}/turns`, token: 'tok-turns' }))) as Task;
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await delivered('/turns', asked.id, 'TASK_STATE_INPUT_REQUIRED');
    const request = asked.status!.message!.parts[0]!.content as { value: { toolCallId: string } };
    const answer: Part = { content: { $case: 'data', value: { toolCallId: request.value.toolCallId, output: '42 otters' } }, metadata: undefined, filename: '', mediaType: 'application/json' };
    const resume = userMessage('');
    const done = (await client.sendMessage({ ...resume, message: { ...resume.message, taskId: asked.id, contextId: asked.contextId, parts: [answer] } })) as Task;
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const last = await delivered('/turns', asked.id);
    expect(last.headers['x-a2a-notification-token']).toBe('tok-turns');
  });

  it('manages and delivers push configs for A2A 0.3 clients (tasks/pushNotificationConfig/*, message/send)', async () => {
    const fetchImpl: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), Authorization: `Bearer ${user.apiKey}` } });
    const card = await (await fetch(`${server.url}/a2a/${agentId}/.well-known/agent-card.json`)).json();
    card.supportedInterfaces = card.supportedInterfaces.filter((item: { protocolVersion: string; protocolBinding: string }) => item.protocolVersion === '0.3' && item.protocolBinding === 'JSONRPC');
    const legacy = await new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })] }).createFromAgentCard(card);
    expect(legacy.protocolVersion).toMatch(/^0\.3/);
    const task = (await legacy.sendMessage(userMessage('old push'))) as Task;
    const created = await legacy.createTaskPushNotificationConfig({ ...pushConfig(task.id, 'old', `${receiver.url}/old`, 'tok-old'), authentication: { scheme: 'Bearer', credentials: 'old-secret' } });
    expect(created).toMatchObject({ id: 'old', taskId: task.id, url: `${receiver.url}/old`, token: 'tok-old', authentication: { scheme: 'Bearer', credentials: 'old-secret' } });
    expect(await legacy.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'old' })).toMatchObject({ id: 'old', url: `${receiver.url}/old` });
    expect((await legacy.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.map((config) => config.id)).toEqual(['old']);
    await legacy.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'old' });
    expect((await legacy.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toEqual([]);

    // Raw 0.3: a config set without an id takes the task's, and `get` without a config id finds it.
    const raw = async (method: string, params: unknown) =>
      (await (await fetchImpl(`${server.url}/a2a/${agentId}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })).json()) as { result?: unknown; error?: { code: number } };
    const set = await raw('tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: `${receiver.url}/old2` } });
    expect(set.result).toEqual({ taskId: task.id, pushNotificationConfig: { id: task.id, url: `${receiver.url}/old2` } });
    expect((await raw('tasks/pushNotificationConfig/get', { id: task.id })).result).toEqual(set.result);
    expect(await raw('tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: task.id })).toMatchObject({ result: null });
    expect((await raw('tasks/pushNotificationConfig/get', { id: task.id })).error?.code).toBeLessThan(0);

    // message/send with a push config: the finished task is posted with its token and credentials.
    const sent = await raw('message/send', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'notify the past' }] },
      configuration: { pushNotificationConfig: { url: `${receiver.url}/old-hook`, token: 'tok-past', authentication: { schemes: ['Bearer'], credentials: 'past-secret' } } },
    });
    const sentTask = sent.result as { id: string; status: { state: string } };
    expect(sentTask.status.state).toBe('completed');
    const delivery = await delivered('/old-hook', sentTask.id);
    expect(delivery.headers['x-a2a-notification-token']).toBe('tok-past');
    expect(delivery.headers.authorization).toBe('Bearer past-secret');
  });

  it('refuses a private receiver the allow-list does not name', async () => {
    const client = await clientFor(agentId);
    const task = (await client.sendMessage(userMessage('hello'))) as Task;
    await expect(client.createTaskPushNotificationConfig(pushConfig(task.id, 'private', 'http://10.0.0.1/hook'))).rejects.toThrow(/refused/);
    await expect(client.sendMessage(userMessage('and this', { url: 'http://192.168.1.1/hook' }))).rejects.toThrow(/refused/);
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toEqual([]);
  });

  it.each(BINDINGS)('answers another user’s task as a missing one (%s)', async (binding) => {
    const task = (await (await clientFor(agentId)).sendMessage(userMessage('mine'))) as Task;
    const other = await clientFor(strangerAgentId, stranger, binding);
    await expect(other.createTaskPushNotificationConfig(pushConfig(task.id, 'steal', `${receiver.url}/steal`))).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(other.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(other.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'x' })).rejects.toBeInstanceOf(TaskNotFoundError);
  });
});
