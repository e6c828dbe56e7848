// The MUST requirements of the A2A TCK (github.com/a2aproject/a2a-tck, branch 1.0-dev, tck/requirements/*),
// ported to TypeScript: one test per requirement, named by its id and the section of the specification it
// comes from, run over JSON-RPC and HTTP+JSON where the requirement concerns a binding. Requests are raw
// HTTP, as the TCK sends them, so that what is checked is the wire and not a client's reading of it.
// Requirements left out, and why:
//   - GRPC-*: this server offers no gRPC binding (its card declares none).
//   - CARD-SIGN-001…004: cards are not signed (`signatures` is optional); nothing to verify.
//   - AUTH-TLS-001: TLS is the deployment's (a proxy in front of the server), not the server's.
//   - AUTH-INTASK-001…004: no agent here asks for credentials in a task (TASK_STATE_AUTH_REQUIRED).
//   - CORE-STREAM-002: an agent here always answers with a task, never a lone message.
//   - CORE-CAP-001, CORE-CAP-002, CORE-CAP-003: the card declares push notifications, streaming and the
//     extended card, so the errors for their absence cannot arise; the operations themselves are checked.
//   - VER-CLIENT-001: a requirement of clients (every request here sends `A2A-Version`).
// SHOULD and MAY requirements are not ported, but for DM-SERIAL-005 (unknown fields are ignored).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { components } from '../../generated/openapi.gen.ts';
import { availableEngines } from '../testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { startPushReceiver, type PushReceiver } from '../testing/push-receiver.ts';
import { A2A_ERRORS } from './errors.ts';

type Schemas = components['schemas'];
type Task = Schemas['A2aTask'];
type Message = Schemas['A2aMessage'];
type Part = Schemas['A2aPart'];
type StreamResponse = Schemas['A2aStreamResponse'];
type AgentCard = Schemas['A2aAgentCard'];
type PushConfig = Schemas['A2aTaskPushNotificationConfig'];

const BINDINGS = ['JSONRPC', 'HTTP+JSON'] as const;
type Binding = (typeof BINDINGS)[number];

/** What each operation answers on success. */
interface Results {
  SendMessage: { task?: Task; message?: Message };
  GetTask: Task;
  ListTasks: Schemas['A2aListTasksResponse'];
  CancelTask: Task;
  CreateTaskPushNotificationConfig: PushConfig;
  GetTaskPushNotificationConfig: PushConfig;
  ListTaskPushNotificationConfigs: Schemas['A2aListPushConfigsResponse'];
  DeleteTaskPushNotificationConfig: unknown;
  GetExtendedAgentCard: AgentCard;
}
type Unary = keyof Results;
type Streaming = 'SendStreamingMessage' | 'SubscribeToTask';
type Params = Record<string, unknown>;

interface A2aFailure {
  /** The ErrorInfo reason (TASK_NOT_FOUND, …), when the error names one. */
  reason: string | undefined;
  /** The JSON-RPC error code, or over HTTP+JSON the `google.rpc.Status` code. */
  code: number;
  message: string;
  /** The error as the wire has it: the JSON-RPC `error` object or the `google.rpc.Status`. */
  raw: Record<string, unknown>;
}

interface Outcome<R> {
  httpStatus: number;
  contentType: string;
  /** The whole response body, parsed. */
  body: Record<string, unknown>;
  result?: R;
  error?: A2aFailure;
}

interface CallOptions {
  apiKey?: string;
  /** Headers on top of `A2A-Version: 1.0` and the credential; a null value removes the header. */
  headers?: Record<string, string | null>;
  target?: string;
}

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';

/** Where an operation lives in the HTTP+JSON binding (section 5.3). */
function restRequest(op: Unary | Streaming, params: Params): { method: string; path: string; body?: unknown } {
  const id = encodeURIComponent(String(params.id ?? ''));
  const taskId = encodeURIComponent(String(params.taskId ?? ''));
  const query = (names: string[]) => {
    const search = new URLSearchParams();
    for (const name of names) if (params[name] !== undefined) search.set(name, String(params[name]));
    return search.size ? `?${search}` : '';
  };
  switch (op) {
    case 'SendMessage':
      return { method: 'POST', path: '/message:send', body: params };
    case 'SendStreamingMessage':
      return { method: 'POST', path: '/message:stream', body: params };
    case 'GetTask':
      return { method: 'GET', path: `/tasks/${id}${query(['historyLength'])}` };
    case 'ListTasks':
      return { method: 'GET', path: `/tasks${query(['contextId', 'status', 'pageSize', 'pageToken', 'historyLength', 'statusTimestampAfter', 'includeArtifacts'])}` };
    case 'CancelTask':
      return { method: 'POST', path: `/tasks/${id}:cancel`, body: {} };
    case 'SubscribeToTask':
      return { method: 'POST', path: `/tasks/${id}:subscribe` };
    case 'CreateTaskPushNotificationConfig':
      return { method: 'POST', path: `/tasks/${taskId}/pushNotificationConfigs`, body: params };
    case 'GetTaskPushNotificationConfig':
      return { method: 'GET', path: `/tasks/${taskId}/pushNotificationConfigs/${id}` };
    case 'ListTaskPushNotificationConfigs':
      return { method: 'GET', path: `/tasks/${taskId}/pushNotificationConfigs` };
    case 'DeleteTaskPushNotificationConfig':
      return { method: 'DELETE', path: `/tasks/${taskId}/pushNotificationConfigs/${id}` };
    case 'GetExtendedAgentCard':
      return { method: 'GET', path: '/extendedAgentCard' };
  }
}

function failureOf(binding: Binding, body: Record<string, unknown>): A2aFailure | undefined {
  const error = body.error as Record<string, unknown> | undefined;
  if (!error || typeof error !== 'object') return undefined;
  const details = (binding === 'JSONRPC' ? error.data : error.details) as { '@type'?: string; reason?: string }[] | undefined;
  const info = Array.isArray(details) ? details.find((detail) => detail['@type'] === ERROR_INFO) : undefined;
  return { reason: info?.reason, code: error.code as number, message: String(error.message), raw: error };
}

/** The data of each server-sent event of a stream, parsed. */
async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<Record<string, unknown>> {
  const reader = body.getReader();
  try {
    yield* framesOf(reader);
  } finally {
    // A reader that stops early (one stream of several closed) closes its connection.
    await reader.cancel().catch(() => undefined);
  }
}

async function* framesOf(reader: ReadableStreamDefaultReader<Uint8Array>): AsyncGenerator<Record<string, unknown>> {
  const decoder = new TextDecoder();
  let buffer = '';
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    buffer += decoder.decode(chunk.value, { stream: true }).replaceAll('\r\n', '\n');
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) yield JSON.parse(data) as Record<string, unknown>;
    }
  }
}

const isTerminal = (state: string | undefined) => ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'].includes(state ?? '');
const textPart = (text: string): Part => ({ text });
const messageOf = (parts: Part[], ids: { taskId?: string; contextId?: string } = {}): Message => ({ messageId: randomUUID(), role: 'ROLE_USER', parts, ...ids });
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const SNAKE = /_[a-z]/;

/** Every key of a JSON value, at any depth, with its path; the values of free-form `data` and `metadata` are the sender's, not the protocol's. */
function keysOf(value: unknown, path = '$', out: string[][] = []): string[][] {
  if (Array.isArray(value)) value.forEach((item, index) => keysOf(item, `${path}[${index}]`, out));
  else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      out.push([key, `${path}.${key}`]);
      if (key !== 'data' && key !== 'metadata') keysOf(inner, `${path}.${key}`, out);
    }
  }
  return out;
}

describe.each(await availableEngines())('A2A TCK MUST requirements (%s)', (engine) => {
  let server: TestServer;
  let upstream: FakeOpenAI;
  let receiver: PushReceiver;
  let user: TestUser;
  let stranger: TestUser;
  let agentId: string;
  let toolAgentId: string;
  let strangerAgentId: string;

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ models: ['scripted'] });
    receiver = await startPushReceiver();
    server = await startTestServer({ engine, env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url, OUTBOUND_ALLOW: '127.0.0.1' } });
    user = await server.signUp();
    stranger = await server.signUp();
    // On the scripted model, whose replies a test may queue (a hang, a slow stream).
    agentId = await create(user, { name: 'Echo', description: 'Says what it hears.', model: 'scripted', server_tools: ['calculator'] });
    toolAgentId = await create(user, {
      name: 'Asker',
      tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks things up.', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
    });
    strangerAgentId = await create(stranger, { name: 'Elsewhere' });
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

  function headersOf(options: CallOptions, extra: Record<string, string> = {}): Headers {
    const headers = new Headers({ 'A2A-Version': '1.0', Authorization: `Bearer ${options.apiKey ?? user.apiKey}`, ...extra });
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value === null) headers.delete(name);
      else headers.set(name, value);
    }
    return headers;
  }

  /** The raw HTTP request of an operation over one binding. */
  function send(binding: Binding, op: Unary | Streaming, params: Params, options: CallOptions, rpcId: string | number): Promise<Response> {
    const base = `${server.url}/a2a/${options.target ?? agentId}`;
    if (binding === 'JSONRPC') {
      return fetch(base, {
        method: 'POST',
        headers: headersOf(options, { 'Content-Type': 'application/json' }),
        body: JSON.stringify({ jsonrpc: '2.0', id: rpcId, method: op, params }),
      });
    }
    const request = restRequest(op, params);
    return fetch(`${base}${request.path}`, {
      method: request.method,
      headers: headersOf(options, request.body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
    });
  }

  async function call<O extends Unary>(binding: Binding, op: O, params: Params, options: CallOptions = {}): Promise<Outcome<Results[O]>> {
    const response = await send(binding, op, params, options, 1);
    const text = await response.text();
    const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
    const error = failureOf(binding, body);
    const result = error ? undefined : ((binding === 'JSONRPC' ? body.result : body) as Results[O]);
    return { httpStatus: response.status, contentType: response.headers.get('content-type') ?? '', body, result, error };
  }

  /** A stream of an operation: its events as they come; `frames` are the data lines as sent (JSON-RPC responses over JSON-RPC). */
  async function open(binding: Binding, op: Streaming, params: Params, options: CallOptions = {}) {
    const controller = new AbortController();
    const rpcId = randomUUID();
    const response = await send(binding, op, params, options, rpcId);
    const contentType = response.headers.get('content-type') ?? '';
    if (!contentType.startsWith('text/event-stream')) {
      const body = (await response.json()) as Record<string, unknown>;
      return { httpStatus: response.status, contentType, rpcId, error: failureOf(binding, body), frames: [], events: (async function* () {})(), close: () => controller.abort() };
    }
    const frames: Record<string, unknown>[] = [];
    const events = (async function* () {
      for await (const frame of sseData(response.body!)) {
        frames.push(frame);
        yield (binding === 'JSONRPC' ? frame.result : frame) as StreamResponse;
      }
    })();
    return {
      httpStatus: response.status,
      contentType,
      rpcId,
      error: undefined,
      frames,
      events,
      close: async () => {
        await events.return(undefined);
      },
    };
  }

  async function collect(binding: Binding, op: Streaming, params: Params, options: CallOptions = {}) {
    const stream = await open(binding, op, params, options);
    const events: StreamResponse[] = [];
    for await (const event of stream.events) events.push(event);
    return { ...stream, events };
  }

  async function completedTask(binding: Binding, text = 'hello from the TCK', target = agentId): Promise<Task> {
    const outcome = await call(binding, 'SendMessage', { message: messageOf([textPart(text)]) }, { target });
    expect(outcome.error).toBeUndefined();
    expect(outcome.result?.task?.status.state).toBe('TASK_STATE_COMPLETED');
    return outcome.result!.task!;
  }

  /** A task that works until it is canceled: its model call never answers. */
  async function workingTask(binding: Binding): Promise<Task> {
    upstream.enqueue({ hang: true });
    const outcome = await call(binding, 'SendMessage', { message: messageOf([textPart('wait for it')]), configuration: { returnImmediately: true } });
    expect(outcome.result?.task?.status.state).toBe('TASK_STATE_WORKING');
    return outcome.result!.task!;
  }

  async function inputRequiredTask(binding: Binding): Promise<Task> {
    const outcome = await call(binding, 'SendMessage', { message: messageOf([textPart('lookup {"q": "otters"}')]) }, { target: toolAgentId });
    expect(outcome.result?.task?.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    return outcome.result!.task!;
  }

  const cardOf = async (id = agentId) => (await (await fetch(`${server.url}/a2a/${id}/.well-known/agent-card.json`)).json()) as AgentCard;

  describe('Agent card (section 8)', () => {
    it('CARD-DISC-001 (8.1): the agent card is served at the well-known path, without a credential', async () => {
      const response = await fetch(`${server.url}/a2a/${agentId}/.well-known/agent-card.json`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await response.json()) as AgentCard).name).toBe('Echo');
    });

    it('CARD-STRUCT-001 (4.4.1): the card has every REQUIRED field of AgentCard, its interfaces and its skills', async () => {
      const card = await cardOf();
      for (const field of ['name', 'description', 'supportedInterfaces', 'version', 'capabilities', 'defaultInputModes', 'defaultOutputModes', 'skills'] as const) {
        expect(card[field], field).toBeDefined();
      }
      expect(card.supportedInterfaces.length).toBeGreaterThan(0);
      expect(card.defaultInputModes.length).toBeGreaterThan(0);
      expect(card.defaultOutputModes.length).toBeGreaterThan(0);
      expect(card.skills.length).toBeGreaterThan(0);
      for (const skill of card.skills) {
        expect(skill.id && skill.name && skill.description, JSON.stringify(skill)).toBeTruthy();
        expect(skill.tags.length, skill.id).toBeGreaterThan(0);
      }
      if (card.provider) expect(card.provider.url && card.provider.organization).toBeTruthy();
    });

    it('CARD-PROTO-001 (8.3): the card declares its protocols, each a known binding and a Major.Minor version', async () => {
      const card = await cardOf();
      for (const item of card.supportedInterfaces) {
        expect(['JSONRPC', 'HTTP+JSON', 'GRPC']).toContain(item.protocolBinding);
        expect(item.protocolVersion).toMatch(/^\d+\.\d+$/);
      }
      expect(card.supportedInterfaces.filter((item) => item.protocolVersion === '1.0').map((item) => item.protocolBinding).sort()).toEqual(['HTTP+JSON', 'JSONRPC']);
    });

    it('CARD-PROTO-002 (8.3.1): each declared interface answers its binding at its URL', async () => {
      const card = await cardOf();
      for (const item of card.supportedInterfaces.filter((entry) => entry.protocolVersion === '1.0')) {
        const headers = { Authorization: `Bearer ${user.apiKey}`, 'A2A-Version': '1.0', 'Content-Type': 'application/json' };
        const response =
          item.protocolBinding === 'JSONRPC'
            ? await fetch(item.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'run_missing' } }) })
            : await fetch(`${item.url}/tasks/run_missing`, { headers });
        const body = (await response.json()) as Record<string, unknown>;
        expect(failureOf(item.protocolBinding as Binding, body)?.reason, item.protocolBinding).toBe('TASK_NOT_FOUND');
      }
    });

    it('BIND-FIELD-001 (5.2): every protocol the agent answers is declared in its card', async () => {
      const card = await cardOf();
      const declared = new Set(card.supportedInterfaces.map((item) => `${item.protocolBinding} ${item.protocolVersion}`));
      // JSON-RPC 1.0 and 0.3 (without A2A-Version) at /a2a/{id}, HTTP+JSON 1.0 below it and 0.3 under /v1.
      expect(declared).toEqual(new Set(['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3']));
    });
  });

  describe('Errors (sections 5.4, 9.5, 11.6)', () => {
    it('JSONRPC-SSE-002 / HTTP_JSON-STATUS-001 (5.4): every A2A error has the JSON-RPC code, gRPC status and HTTP status of the mapping table', async () => {
      const { errorCatalog } = await import('../errors.ts');
      const table = {
        TaskNotFound: [-32001, 'NOT_FOUND', 404],
        TaskNotCancelable: [-32002, 'FAILED_PRECONDITION', 409],
        PushNotificationNotSupported: [-32003, 'UNIMPLEMENTED', 400],
        UnsupportedOperation: [-32004, 'UNIMPLEMENTED', 400],
        ContentTypeNotSupported: [-32005, 'INVALID_ARGUMENT', 415],
        InvalidAgentResponse: [-32006, 'INTERNAL', 502],
        ExtendedAgentCardNotConfigured: [-32007, 'FAILED_PRECONDITION', 400],
        ExtensionSupportRequired: [-32008, 'FAILED_PRECONDITION', 400],
        VersionNotSupported: [-32009, 'UNIMPLEMENTED', 400],
      } as const;
      for (const [kind, [rpc, grpc, status]] of Object.entries(table)) {
        const entry = A2A_ERRORS[kind as keyof typeof A2A_ERRORS];
        expect([entry.rpc, entry.grpc, errorCatalog[entry.code].status], kind).toEqual([rpc, grpc, status]);
        expect(entry.reason, kind).toMatch(/^[A-Z]+(_[A-Z]+)*$/);
      }
      expect(Object.keys(A2A_ERRORS).sort()).toEqual(Object.keys(table).sort());
    });

    it('JSONRPC-ERR-001 (9.5): a JSON-RPC error is {code, message, data}, data an array of google.protobuf.Any', async () => {
      const outcome = await call('JSONRPC', 'GetTask', { id: 'run_missing' });
      expect(Object.keys(outcome.error!.raw).sort()).toEqual(['code', 'data', 'message']);
      expect(Number.isInteger(outcome.error!.code)).toBe(true);
      expect(outcome.error!.message.length).toBeGreaterThan(0);
      const data = outcome.error!.raw.data as Record<string, unknown>[];
      expect(Array.isArray(data)).toBe(true);
      for (const item of data) expect(item['@type']).toMatch(/^type\.googleapis\.com\//);
    });

    it('JSONRPC-ERR-002 (9.5): A2A errors use codes from -32001 to -32099', async () => {
      const task = await completedTask('JSONRPC');
      const outcomes = [
        await call('JSONRPC', 'GetTask', { id: 'run_missing' }),
        await call('JSONRPC', 'CancelTask', { id: task.id }),
        await call('JSONRPC', 'SendMessage', { message: messageOf([textPart('again')], { taskId: task.id }) }),
        await call('JSONRPC', 'SendMessage', { message: messageOf([{ raw: 'dGNr', mediaType: 'application/x-unsupported-tck-type' }]) }),
        await call('JSONRPC', 'GetTask', { id: 'run_missing' }, { headers: { 'A2A-Version': '99.0' } }),
      ];
      expect(outcomes.map((outcome) => outcome.error?.code)).toEqual([-32001, -32002, -32004, -32005, -32009]);
    });

    it('JSONRPC-ERR-003 (9.5): an A2A error carries a google.rpc.ErrorInfo with an UPPER_SNAKE_CASE reason and the domain a2a-protocol.org', async () => {
      const outcome = await call('JSONRPC', 'GetTask', { id: 'run_missing' });
      const info = (outcome.error!.raw.data as Record<string, unknown>[]).find((item) => item['@type'] === ERROR_INFO);
      expect(info).toMatchObject({ reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' });
      if (info?.metadata !== undefined) expect(Object.values(info.metadata as object).every((value) => typeof value === 'string')).toBe(true);
    });

    it('HTTP_JSON-ERR-001 (11.6): an HTTP+JSON error is AIP-193: application/json {error: {code, status, message, details}}', async () => {
      const outcome = await call('HTTP+JSON', 'GetTask', { id: 'run_missing' });
      expect(outcome.httpStatus).toBe(404);
      expect(outcome.contentType).toMatch(/^application\/json/);
      expect(Object.keys(outcome.body)).toEqual(['error']);
      expect(outcome.error!.raw).toMatchObject({ code: 404, status: 'NOT_FOUND', message: expect.any(String), details: expect.any(Array) });
    });

    it('HTTP_JSON-ERR-002 (11.6): an A2A error over HTTP+JSON carries an ErrorInfo with its reason and the domain a2a-protocol.org', async () => {
      const task = await completedTask('HTTP+JSON');
      const cancel = await call('HTTP+JSON', 'CancelTask', { id: task.id });
      expect(cancel.httpStatus).toBe(409);
      expect(cancel.error!.raw.details).toEqual(expect.arrayContaining([expect.objectContaining({ '@type': ERROR_INFO, reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org' })]));
    });

    it('HTTP_JSON-STATUS-001 (5.4): each A2A error answers its HTTP status over HTTP+JSON', async () => {
      const task = await completedTask('HTTP+JSON');
      const observed = [
        await call('HTTP+JSON', 'GetTask', { id: 'run_missing' }),
        await call('HTTP+JSON', 'CancelTask', { id: task.id }),
        await call('HTTP+JSON', 'SendMessage', { message: messageOf([textPart('again')], { taskId: task.id }) }),
        await call('HTTP+JSON', 'SendMessage', { message: messageOf([{ raw: 'dGNr', mediaType: 'application/x-unsupported-tck-type' }]) }),
        await call('HTTP+JSON', 'GetTask', { id: 'run_missing' }, { headers: { 'A2A-Version': '99.0' } }),
      ].map((outcome) => [outcome.error?.reason, outcome.httpStatus, (outcome.error?.raw as { status?: string }).status]);
      expect(observed).toEqual([
        ['TASK_NOT_FOUND', 404, 'NOT_FOUND'],
        ['TASK_NOT_CANCELABLE', 409, 'FAILED_PRECONDITION'],
        ['UNSUPPORTED_OPERATION', 400, 'UNIMPLEMENTED'],
        ['CONTENT_TYPE_NOT_SUPPORTED', 415, 'INVALID_ARGUMENT'],
        ['VERSION_NOT_SUPPORTED', 400, 'UNIMPLEMENTED'],
      ]);
    });
  });

  describe('JSON-RPC binding (section 9)', () => {
    const raw = async (body: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(`${server.url}/a2a/${agentId}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'A2A-Version': '1.0', 'Content-Type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: response.status, contentType: response.headers.get('content-type') ?? '', body: (await response.json()) as Record<string, unknown> };
    };

    it('JSONRPC-FMT-001 (9.1): requests are JSON-RPC 2.0; answers echo the id and carry result or error, never both', async () => {
      const ok = await raw({ jsonrpc: '2.0', id: 'req-1', method: 'ListTasks', params: {} });
      expect(ok.body).toMatchObject({ jsonrpc: '2.0', id: 'req-1', result: expect.any(Object) });
      expect(ok.body).not.toHaveProperty('error');
      const failed = await raw({ jsonrpc: '2.0', id: 42, method: 'GetTask', params: { id: 'run_missing' } });
      expect(failed.body).toMatchObject({ jsonrpc: '2.0', id: 42, error: expect.any(Object) });
      expect(failed.body).not.toHaveProperty('result');
      expect((await raw({ id: 3, method: 'ListTasks', params: {} })).body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32600 } });
      expect((await raw('{"jsonrpc": "2.0", "id": 4, "method": ')).body).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 } });
    });

    it('JSONRPC-FMT-002 (9.1): answers are application/json', async () => {
      expect((await raw({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} })).contentType).toMatch(/^application\/json/);
      expect((await raw({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'run_missing' } })).contentType).toMatch(/^application\/json/);
    });

    it('JSONRPC-SVC-001 (9.1): method names are PascalCase, as in gRPC; others are unknown methods', async () => {
      const task = await completedTask('JSONRPC');
      expect((await raw({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: task.id } })).body.result).toMatchObject({ id: task.id });
      expect((await raw({ jsonrpc: '2.0', id: 1, method: 'getTask', params: { id: task.id } })).body).toMatchObject({ error: { code: -32601 } });
    });

    it('JSONRPC-SVC-002 (9.2): service parameters (A2A-Version) travel as HTTP headers', async () => {
      const unsupported = await raw({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }, { 'A2A-Version': '99.0' });
      expect(unsupported.body).toMatchObject({ error: { code: -32009 } });
      expect((await raw({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }, { 'A2A-Version': '1.0' })).body).toHaveProperty('result');
    });

    it('JSONRPC-SSE-001 (9.4.2): streams are text/event-stream, each data line a JSON-RPC response wrapping a StreamResponse', async () => {
      const stream = await collect('JSONRPC', 'SendStreamingMessage', { message: messageOf([textPart('sse framing')]) });
      expect(stream.contentType).toMatch(/^text\/event-stream/);
      expect(stream.frames.length).toBeGreaterThan(1);
      for (const frame of stream.frames) {
        expect(frame).toMatchObject({ jsonrpc: '2.0', id: stream.rpcId, result: expect.any(Object) });
        expect(Object.keys(frame.result as object)).toHaveLength(1);
      }
    });
  });

  describe('HTTP+JSON binding (section 11)', () => {
    it('HTTP_JSON-URL-001 (11.3): every operation answers at its resource URL', async () => {
      const task = await completedTask('HTTP+JSON');
      const base = `${server.url}/a2a/${agentId}`;
      const headers = { Authorization: `Bearer ${user.apiKey}`, 'A2A-Version': '1.0', 'Content-Type': 'application/json' };
      const statuses = await Promise.all(
        [
          [`${base}/tasks/${task.id}`, 'GET'],
          [`${base}/tasks?pageSize=1`, 'GET'],
          [`${base}/tasks/${task.id}/pushNotificationConfigs`, 'GET'],
          [`${base}/tasks/${task.id}:cancel`, 'POST'],
        ].map(async ([url, method]) => (await fetch(url!, { method, headers, ...(method === 'POST' ? { body: '{}' } : {}) })).status),
      );
      // The cancel of a finished task is TaskNotCancelable: the route exists and speaks of the task.
      expect(statuses).toEqual([200, 200, 200, 409]);
    });

    it('HTTP_JSON-URL-002 (11.3): retrieval is GET, actions POST, removal DELETE; another verb is refused', async () => {
      const task = await completedTask('HTTP+JSON');
      const base = `${server.url}/a2a/${agentId}`;
      const headers = { Authorization: `Bearer ${user.apiKey}`, 'A2A-Version': '1.0' };
      expect((await fetch(`${base}/tasks/${task.id}`, { method: 'DELETE', headers })).status).toBe(405);
      expect((await fetch(`${base}/message:send`, { method: 'GET', headers })).status).toBe(405);
      const created = await call('HTTP+JSON', 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'verbs', url: `${receiver.url}/verbs` });
      expect(created.httpStatus).toBe(200);
      expect((await call('HTTP+JSON', 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'verbs' })).httpStatus).toBeLessThan(300);
    });

    it('HTTP_JSON-SVC-001 (11.1): requests and answers are application/json', async () => {
      const sent = await call('HTTP+JSON', 'SendMessage', { message: messageOf([textPart('json please')]) });
      expect(sent.httpStatus).toBe(200);
      expect(sent.contentType).toMatch(/^application\/json/);
      const response = await fetch(`${server.url}/a2a/${agentId}/message:send`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${user.apiKey}`, 'A2A-Version': '1.0', 'Content-Type': 'text/plain' },
        body: JSON.stringify({ message: messageOf([textPart('not json')]) }),
      });
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    });

    it('HTTP_JSON-SVC-002 (11.2): service parameters (A2A-Version) travel as HTTP headers', async () => {
      const unsupported = await call('HTTP+JSON', 'ListTasks', {}, { headers: { 'A2A-Version': '99.0' } });
      expect(unsupported.error?.reason).toBe('VERSION_NOT_SUPPORTED');
      expect((await call('HTTP+JSON', 'ListTasks', {}, { headers: { 'A2A-Version': '1.0' } })).httpStatus).toBe(200);
    });

    it('HTTP_JSON-QP-001 (11.5): query parameters are camelCase, as the ProtoJSON field names', async () => {
      const first = await completedTask('HTTP+JSON');
      await call('HTTP+JSON', 'SendMessage', { message: messageOf([textPart('second')], { contextId: first.contextId }) });
      const page = await call('HTTP+JSON', 'ListTasks', { contextId: first.contextId, pageSize: 1, includeArtifacts: true, historyLength: 1 });
      expect(page.result?.tasks).toHaveLength(1);
      expect(page.result?.tasks[0]?.artifacts?.length).toBeGreaterThan(0);
      expect(page.result?.tasks[0]?.history?.length).toBe(1);
      const got = await call('HTTP+JSON', 'GetTask', { id: first.id, historyLength: 1 });
      expect(got.result?.history).toHaveLength(1);
    });

    it('HTTP_JSON-SSE-001 (11.7): streams are server-sent events whose data is a StreamResponse', async () => {
      const stream = await collect('HTTP+JSON', 'SendStreamingMessage', { message: messageOf([textPart('rest sse')]) });
      expect(stream.contentType).toMatch(/^text\/event-stream/);
      expect(stream.frames.length).toBeGreaterThan(1);
      for (const frame of stream.frames) {
        expect(Object.keys(frame)).toHaveLength(1);
        expect(['task', 'message', 'statusUpdate', 'artifactUpdate']).toContain(Object.keys(frame)[0]);
      }
    });
  });

  describe.each(BINDINGS)('over %s', (binding) => {
    it('CORE-SEND-001 (3.1.1): SendMessage answers a Task or a Message', async () => {
      const outcome = await call(binding, 'SendMessage', { message: messageOf([textPart('Hello from TCK')]) });
      expect(outcome.httpStatus).toBe(200);
      expect(Object.keys(outcome.result!)).toHaveLength(1);
      expect(outcome.result!.task ?? outcome.result!.message).toBeDefined();
      expect(outcome.result!.task!.artifacts?.[0]?.parts).toEqual([{ text: 'You said: Hello from TCK' }]);
    });

    it('CORE-SEND-002 (3.1.1): a message to a terminal task is UnsupportedOperation', async () => {
      const task = await completedTask(binding);
      const outcome = await call(binding, 'SendMessage', { message: messageOf([textPart('one more')], { taskId: task.id, contextId: task.contextId }) });
      expect(outcome.error?.reason).toBe('UNSUPPORTED_OPERATION');
      expect((await call(binding, 'GetTask', { id: task.id })).result?.status.state).toBe('TASK_STATE_COMPLETED');
    });

    it('CORE-SEND-003 (3.1.1): a media type the agent does not support is ContentTypeNotSupported', async () => {
      const outcome = await call(binding, 'SendMessage', { message: messageOf([{ raw: 'dGNr', mediaType: 'application/x-unsupported-tck-type' }]) });
      expect(outcome.error?.reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
    });

    it('CORE-STREAM-001 (3.1.2): SendStreamingMessage opens a stream of real-time events', async () => {
      upstream.enqueue({ text: 'one two three four', chunkGapMs: 30 });
      const stream = await collect(binding, 'SendStreamingMessage', { message: messageOf([textPart('Stream hello from TCK')]) });
      expect(stream.httpStatus).toBe(200);
      expect(stream.contentType).toMatch(/^text\/event-stream/);
      expect(stream.events.filter((event) => event.artifactUpdate).length).toBeGreaterThan(1);
    });

    it('CORE-STREAM-003 (3.1.2): a task’s stream begins with the Task and closes at its terminal state', async () => {
      const stream = await collect(binding, 'SendStreamingMessage', { message: messageOf([textPart('Stream task lifecycle')]) });
      expect(stream.events[0]?.task?.id).toBeDefined();
      const rest = stream.events.slice(1);
      expect(rest.every((event) => event.statusUpdate || event.artifactUpdate)).toBe(true);
      expect(isTerminal(rest.at(-1)?.statusUpdate?.status.state)).toBe(true);
      expect(rest.slice(0, -1).some((event) => isTerminal(event.statusUpdate?.status.state))).toBe(false);
    });

    it('CORE-GET-001 (3.1.3): GetTask answers the task’s current state, artifacts and history', async () => {
      const task = await completedTask(binding, 'get me');
      const read = await call(binding, 'GetTask', { id: task.id });
      expect(read.result).toMatchObject({ id: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ parts: [{ text: 'You said: get me' }] }] });
      expect(read.result?.history?.map((message) => message.role)).toEqual(['ROLE_USER', 'ROLE_AGENT']);
    });

    it('CORE-GET-002 (3.1.3): GetTask of an unknown id is TaskNotFound', async () => {
      expect((await call(binding, 'GetTask', { id: `tck-nonexistent-${randomUUID()}` })).error?.reason).toBe('TASK_NOT_FOUND');
    });

    it('CORE-LIST-001 (3.1.4): ListTasks answers only the caller’s tasks', async () => {
      const mine = await completedTask(binding, 'listed');
      const listed = await call(binding, 'ListTasks', { contextId: mine.contextId });
      expect(listed.result?.tasks.map((task) => task.id)).toEqual([mine.id]);
      const theirs = await call(binding, 'ListTasks', { contextId: mine.contextId }, { apiKey: stranger.apiKey, target: strangerAgentId });
      expect(theirs.result?.tasks).toEqual([]);
      const all = await call(binding, 'ListTasks', { pageSize: 100 }, { apiKey: stranger.apiKey, target: strangerAgentId });
      expect(all.result?.tasks.some((task) => task.id === mine.id)).toBe(false);
    });

    it('CORE-LIST-002 (3.1.4): ListTasks pages with pageToken and nextPageToken', async () => {
      const first = await completedTask(binding, 'page one');
      const ids = [first.id];
      for (const word of ['two', 'three']) ids.push((await call(binding, 'SendMessage', { message: messageOf([textPart(word)], { contextId: first.contextId }) })).result!.task!.id);
      const seen: string[] = [];
      let token = '';
      for (let page = 0; page < 5; page++) {
        const listed = await call(binding, 'ListTasks', { contextId: first.contextId, pageSize: 2, ...(token ? { pageToken: token } : {}) });
        expect(listed.result!.tasks.length).toBeLessThanOrEqual(2);
        seen.push(...listed.result!.tasks.map((task) => task.id));
        token = listed.result!.nextPageToken;
        if (!token) break;
      }
      expect(seen.sort()).toEqual(ids.sort());
    });

    it('CORE-LIST-003 (3.1.4): ListTasks sorts by status timestamp, most recently updated first', async () => {
      const first = await completedTask(binding, 'older');
      await call(binding, 'SendMessage', { message: messageOf([textPart('newer')], { contextId: first.contextId }) });
      await call(binding, 'SendMessage', { message: messageOf([textPart('newest')], { contextId: first.contextId }) });
      const listed = await call(binding, 'ListTasks', { contextId: first.contextId });
      const stamps = listed.result!.tasks.map((task) => Date.parse(task.status.timestamp!));
      expect(stamps).toHaveLength(3);
      expect([...stamps].sort((a, b) => b - a)).toEqual(stamps);
      expect(listed.result!.tasks.at(-1)!.id).toBe(first.id);
    });

    it('CORE-LIST-004 (3.1.4): nextPageToken is always present, the empty string on the last page', async () => {
      const task = await completedTask(binding, 'last page');
      const listed = await call(binding, 'ListTasks', { contextId: task.contextId, pageSize: 100 });
      expect(listed.result).toHaveProperty('nextPageToken', '');
      expect(listed.result).toMatchObject({ pageSize: 100, totalSize: 1 });
    });

    it('CORE-LIST-005 (3.1.4): without includeArtifacts (false by default) tasks have no artifacts field', async () => {
      const task = await completedTask(binding, 'no artifacts here');
      for (const params of [{ contextId: task.contextId }, { contextId: task.contextId, includeArtifacts: false }]) {
        const listed = await call(binding, 'ListTasks', params);
        expect(listed.result!.tasks).toHaveLength(1);
        expect(listed.result!.tasks[0]).not.toHaveProperty('artifacts');
      }
    });

    it('CORE-CANCEL-001 (3.1.5): CancelTask answers the task in its canceled state', async () => {
      const task = await workingTask(binding);
      const canceled = await call(binding, 'CancelTask', { id: task.id });
      expect(canceled.result).toMatchObject({ id: task.id, status: { state: 'TASK_STATE_CANCELED' } });
      expect((await call(binding, 'GetTask', { id: task.id })).result?.status.state).toBe('TASK_STATE_CANCELED');
    });

    it('CORE-CANCEL-002 (3.1.5): CancelTask of a terminal task is TaskNotCancelable', async () => {
      const task = await completedTask(binding);
      expect((await call(binding, 'CancelTask', { id: task.id })).error?.reason).toBe('TASK_NOT_CANCELABLE');
    });

    it('CORE-CANCEL-003 (3.1.5): CancelTask of an unknown id is TaskNotFound', async () => {
      expect((await call(binding, 'CancelTask', { id: `tck-nonexistent-${randomUUID()}` })).error?.reason).toBe('TASK_NOT_FOUND');
    });

    it('CORE-EXECUTION-MODE-001 (3.2.2): without returnImmediately, SendMessage waits for a terminal or interrupted state', async () => {
      upstream.enqueue({ text: 'slow but sure', latencyMs: 300 });
      const done = await call(binding, 'SendMessage', { message: messageOf([textPart('Blocking request')]) });
      expect(done.result?.task?.status.state).toBe('TASK_STATE_COMPLETED');
      const interrupted = await inputRequiredTask(binding);
      expect(interrupted.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    });

    it('CORE-EXECUTION-MODE-002 (3.2.2): with returnImmediately, SendMessage answers while the task still works', async () => {
      const task = await workingTask(binding);
      expect(isTerminal(task.status.state)).toBe(false);
      await call(binding, 'CancelTask', { id: task.id });
    });

    it('CORE-ERR-001 (3.3.2): errors say what is wrong: a code and a message naming it', async () => {
      const id = `tck-nonexistent-${randomUUID()}`;
      const outcome = await call(binding, 'GetTask', { id });
      expect(outcome.error?.code).toBe(binding === 'JSONRPC' ? -32001 : 404);
      expect(outcome.error?.message).toContain(id);
    });

    it('CORE-ERR-002 (3.3.2): input is validated before anything runs', async () => {
      const before = upstream.requests.length;
      for (const params of [{}, { message: { role: 'ROLE_USER', parts: [{ text: 'no id' }] } }, { message: { messageId: 'm', role: 'ROLE_NOBODY', parts: [{ text: 'x' }] } }]) {
        const outcome = await call(binding, 'SendMessage', params);
        expect(outcome.error, JSON.stringify(params)).toBeDefined();
        expect(outcome.error!.code).toBe(binding === 'JSONRPC' ? -32602 : 400);
      }
      expect(upstream.requests.length).toBe(before);
    });

    it('CARD-EXT-001 (3.1.11): GetExtendedAgentCard needs a credential of a scheme the public card declares', async () => {
      const card = await cardOf();
      expect(card.capabilities.extendedAgentCard).toBe(true);
      expect((await call(binding, 'GetExtendedAgentCard', {}, { headers: { Authorization: null } })).httpStatus).toBe(401);
      const basic = `Basic ${Buffer.from(`${user.apiKey}:`).toString('base64')}`;
      const schemes: Record<string, string | null>[] = [{}, { Authorization: basic }, { Authorization: null, 'X-API-Key': user.apiKey }];
      for (const headers of schemes) {
        const extended = await call(binding, 'GetExtendedAgentCard', {}, { headers });
        expect(extended.result?.name, JSON.stringify(headers)).toBe(card.name);
      }
    });

    it('CARD-EXT-002 (3.1.11): an agent that declares the extended card has one configured, so never ExtendedAgentCardNotConfigured', async () => {
      for (const target of [agentId, toolAgentId]) {
        expect((await cardOf(target)).capabilities.extendedAgentCard).toBe(true);
        const extended = await call(binding, 'GetExtendedAgentCard', {}, { target });
        expect(extended.error?.reason).toBeUndefined();
        expect(extended.result?.supportedInterfaces).toEqual((await cardOf(target)).supportedInterfaces);
      }
    });

    it('CORE-CAP-004 (3.3.4): no extension is required of clients, so none can be missing', async () => {
      const card = await cardOf();
      expect(((card.capabilities as { extensions?: { uri: string; required?: boolean }[] }).extensions ?? []).filter((extension) => extension.required)).toEqual([]);
      expect((await call(binding, 'SendMessage', { message: messageOf([textPart('no extensions')]) })).error).toBeUndefined();
    });

    it('CORE-MULTI-001a (3.4.1): a contextId the agent generates is in the answer', async () => {
      const outcome = await call(binding, 'SendMessage', { message: messageOf([textPart('Message without contextId')]) });
      expect(outcome.result?.task?.contextId).toMatch(/\S/);
      expect((await call(binding, 'GetTask', { id: outcome.result!.task!.id })).result?.contextId).toBe(outcome.result!.task!.contextId);
    });

    it('CORE-MULTI-002a (3.4.1): a contextId the agent cannot accept is refused, and no context is made for it', async () => {
      const contextId = `tck-client-context-${randomUUID()}`;
      const outcome = await call(binding, 'SendMessage', { message: messageOf([textPart('Message with client contextId')], { contextId }) });
      expect(outcome.error).toBeDefined();
      expect((await call(binding, 'ListTasks', { contextId })).result?.tasks).toEqual([]);
    });

    it('CORE-MULTI-003 (3.4.2): each new task gets a unique taskId of the agent’s making', async () => {
      const ids = await Promise.all([1, 2, 3].map(async (n) => (await completedTask(binding, `task ${n}`)).id));
      expect(new Set(ids).size).toBe(3);
    });

    it('CORE-MULTI-004 (3.4.2): a message naming a task that does not exist is TaskNotFound', async () => {
      const outcome = await call(binding, 'SendMessage', { message: messageOf([textPart('Message to invalid task')], { taskId: `tck-nonexistent-${randomUUID()}` }) });
      expect(outcome.error?.reason).toBe('TASK_NOT_FOUND');
    });

    it('CORE-MULTI-005 (3.4.3): given only a taskId, the agent takes the contextId from the task', async () => {
      const asked = await inputRequiredTask(binding);
      const call0 = asked.status.message!.parts[0]!.data as { toolCallId: string };
      const answered = await call(binding, 'SendMessage', { message: messageOf([{ data: { toolCallId: call0.toolCallId, output: 'ten otters' } }], { taskId: asked.id }) }, { target: toolAgentId });
      expect(answered.result?.task).toMatchObject({ id: asked.id, contextId: asked.contextId, status: { state: 'TASK_STATE_COMPLETED' } });
    });

    it('CORE-MULTI-006 (3.4.3): a message whose contextId is not its task’s is refused', async () => {
      const asked = await inputRequiredTask(binding);
      const other = await completedTask(binding, 'another context', toolAgentId);
      const call0 = asked.status.message!.parts[0]!.data as { toolCallId: string };
      const outcome = await call(
        binding,
        'SendMessage',
        { message: messageOf([{ data: { toolCallId: call0.toolCallId, output: 'x' } }], { taskId: asked.id, contextId: other.contextId }) },
        { target: toolAgentId },
      );
      expect(outcome.error).toBeDefined();
      expect((await call(binding, 'GetTask', { id: asked.id }, { target: toolAgentId })).result?.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    });

    it('CORE-HIST-002 (3.2.4): no more history than historyLength asks for', async () => {
      const task = await completedTask(binding, 'history');
      for (const length of [1, 2]) {
        const read = await call(binding, 'GetTask', { id: task.id, historyLength: length });
        expect(read.result?.history?.length ?? 0).toBeLessThanOrEqual(length);
      }
      const sent = await call(binding, 'SendMessage', { message: messageOf([textPart('short history')]), configuration: { historyLength: 1 } });
      expect(sent.result?.task?.history?.length ?? 0).toBeLessThanOrEqual(1);
    });

    it('STREAM-ORDER-001 (3.5.2): events come in the order they happened', async () => {
      upstream.enqueue({ text: 'alpha beta gamma delta', chunkGapMs: 20 });
      const stream = await collect(binding, 'SendStreamingMessage', { message: messageOf([textPart('ordered')]) });
      const kinds = stream.events.map((event) => Object.keys(event)[0]);
      expect(kinds[0]).toBe('task');
      expect(kinds.at(-1)).toBe('statusUpdate');
      const text = stream.events.flatMap((event) => event.artifactUpdate?.artifact.parts.map((part) => part.text ?? '') ?? []).join('');
      expect(text).toBe('alpha beta gamma delta');
      const read = await call(binding, 'GetTask', { id: stream.events[0]!.task!.id });
      expect(read.result?.artifacts?.[0]?.parts[0]?.text).toBe(text);
    });

    describe('several streams of one task', () => {
      /** A task that streams slowly, and two subscribers of it. */
      async function twoSubscribers() {
        upstream.enqueue({ text: 'one two three four five six seven eight', chunkGapMs: 150 });
        const task = (await call(binding, 'SendMessage', { message: messageOf([textPart('slow')]), configuration: { returnImmediately: true } })).result!.task!;
        const first = await open(binding, 'SubscribeToTask', { id: task.id });
        const second = await open(binding, 'SubscribeToTask', { id: task.id });
        return { task, first, second };
      }
      const drain = async (events: AsyncIterable<StreamResponse>) => {
        const out: StreamResponse[] = [];
        for await (const event of events) out.push(event);
        return out;
      };
      const textOf = (events: StreamResponse[]) => events.flatMap((event) => event.artifactUpdate?.artifact.parts.map((part) => part.text ?? '') ?? []).join('');
      const fullText = 'one two three four five six seven eight';

      it('STREAM-ORDER-002 (3.5.2): every stream of a task gets its events', async () => {
        const { first, second } = await twoSubscribers();
        const [a, b] = await Promise.all([drain(first.events), drain(second.events)]);
        for (const events of [a, b]) {
          expect(events.filter((event) => event.artifactUpdate).length).toBeGreaterThan(0);
          expect(events.at(-1)?.statusUpdate?.status.state).toBe('TASK_STATE_COMPLETED');
        }
      });

      it('STREAM-ORDER-003 (3.5.2): each stream gets the same events in the same order', async () => {
        const { first, second } = await twoSubscribers();
        const [a, b] = await Promise.all([drain(first.events), drain(second.events)]);
        // Each began with a snapshot of its own moment; from the later snapshot on, the updates are the same.
        const updates = (events: StreamResponse[]) => events.slice(1);
        const shorter = Math.min(updates(a).length, updates(b).length);
        expect(updates(a).slice(-shorter)).toEqual(updates(b).slice(-shorter));
        expect(a[0]?.task?.id).toBe(b[0]?.task?.id);
        expect((a[0]!.task!.artifacts?.[0]?.parts[0]?.text ?? '') + textOf(a)).toBe(fullText);
        expect((b[0]!.task!.artifacts?.[0]?.parts[0]?.text ?? '') + textOf(b)).toBe(fullText);
      });

      it('STREAM-ORDER-004 (3.5.2): closing one stream leaves the others running', async () => {
        const { first, second } = await twoSubscribers();
        await first.events.next();
        await first.close();
        const rest = await drain(second.events);
        expect(rest.at(-1)?.statusUpdate?.status.state).toBe('TASK_STATE_COMPLETED');
        expect((rest[0]!.task!.artifacts?.[0]?.parts[0]?.text ?? '') + textOf(rest)).toBe(fullText);
      });
    });

    it('STREAM-SUB-001 (3.1.6): SubscribeToTask begins with the Task as it is', async () => {
      const task = await workingTask(binding);
      const stream = await open(binding, 'SubscribeToTask', { id: task.id });
      const first = await stream.events.next();
      expect(first.value?.task).toMatchObject({ id: task.id, contextId: task.contextId, status: { state: 'TASK_STATE_WORKING' } });
      await stream.close();
      await call(binding, 'CancelTask', { id: task.id });
    });

    it('STREAM-SUB-002 (3.1.6): the subscription ends when the task reaches a terminal state', async () => {
      const task = await workingTask(binding);
      const stream = await open(binding, 'SubscribeToTask', { id: task.id });
      await stream.events.next();
      await call(binding, 'CancelTask', { id: task.id });
      const rest: StreamResponse[] = [];
      for await (const event of stream.events) rest.push(event);
      expect(rest.at(-1)?.statusUpdate?.status.state).toBe('TASK_STATE_CANCELED');
    });

    it('STREAM-SUB-003 (3.1.6): SubscribeToTask of a terminal task is UnsupportedOperation', async () => {
      const task = await completedTask(binding);
      const stream = await open(binding, 'SubscribeToTask', { id: task.id });
      expect(stream.error?.reason).toBe('UNSUPPORTED_OPERATION');
    });

    it('STREAM-SUB-004 (3.1.6): SubscribeToTask of an unknown id is TaskNotFound', async () => {
      const stream = await open(binding, 'SubscribeToTask', { id: `tck-nonexistent-${randomUUID()}` });
      expect(stream.error?.reason).toBe('TASK_NOT_FOUND');
    });

    describe('push notification configs', () => {
      const config = (taskId: string, id: string, path = '/tck') => ({ taskId, id, url: `${receiver.url}${path}`, token: `token-${id}`, authentication: { scheme: 'Bearer', credentials: `secret-${id}` } });

      it('PUSH-CREATE-001 (3.1.7): CreateTaskPushNotificationConfig sets a webhook for the task', async () => {
        const task = await completedTask(binding);
        const created = await call(binding, 'CreateTaskPushNotificationConfig', config(task.id, 'create'));
        expect(created.result).toMatchObject({ taskId: task.id, id: 'create', url: `${receiver.url}/tck`, token: 'token-create' });
      });

      it('PUSH-CREATE-002 (3.1.7): the config stays until the task completes or it is deleted', async () => {
        const task = await completedTask(binding);
        await call(binding, 'CreateTaskPushNotificationConfig', config(task.id, 'stays'));
        await completedTask(binding, 'something else meanwhile');
        expect((await call(binding, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'stays' })).result?.id).toBe('stays');
      });

      it('PUSH-GET-001 (3.1.8): GetTaskPushNotificationConfig answers the webhook URL and settings', async () => {
        const task = await completedTask(binding);
        await call(binding, 'CreateTaskPushNotificationConfig', config(task.id, 'read'));
        const read = await call(binding, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'read' });
        expect(read.result).toMatchObject({ taskId: task.id, id: 'read', url: `${receiver.url}/tck`, token: 'token-read', authentication: { scheme: 'Bearer' } });
      });

      it('PUSH-GET-002 (3.1.8): GetTaskPushNotificationConfig fails for a config that does not exist or is not the caller’s', async () => {
        const task = await completedTask(binding);
        await call(binding, 'CreateTaskPushNotificationConfig', config(task.id, 'private'));
        expect((await call(binding, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'tck-nonexistent' })).error).toBeDefined();
        const stolen = await call(binding, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'private' }, { apiKey: stranger.apiKey, target: strangerAgentId });
        expect(stolen.error?.reason).toBe('TASK_NOT_FOUND');
      });

      it('PUSH-LIST-001 (3.1.9): ListTaskPushNotificationConfigs answers every config of the task', async () => {
        const task = await completedTask(binding);
        for (const id of ['a', 'b', 'c']) await call(binding, 'CreateTaskPushNotificationConfig', config(task.id, id));
        const listed = await call(binding, 'ListTaskPushNotificationConfigs', { taskId: task.id });
        expect(listed.result?.configs.map((item) => item.id).sort()).toEqual(['a', 'b', 'c']);
      });

      it('PUSH-DEL-001 (3.1.10): DeleteTaskPushNotificationConfig removes the config for good', async () => {
        const task = await completedTask(binding);
        await call(binding, 'CreateTaskPushNotificationConfig', config(task.id, 'gone'));
        expect((await call(binding, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'gone' })).error).toBeUndefined();
        expect((await call(binding, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'gone' })).error).toBeDefined();
        expect((await call(binding, 'ListTaskPushNotificationConfigs', { taskId: task.id })).result?.configs).toEqual([]);
      });

      it('PUSH-DEL-002 (3.1.10): deleting is idempotent: a second delete of the same config succeeds too', async () => {
        const task = await completedTask(binding);
        await call(binding, 'CreateTaskPushNotificationConfig', config(task.id, 'twice'));
        const first = await call(binding, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'twice' });
        const second = await call(binding, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'twice' });
        expect([first.error, second.error]).toEqual([undefined, undefined]);
        expect(second.httpStatus).toBe(first.httpStatus);
      });

      describe('delivery (4.3.3)', () => {
        const paths = { a: `/deliver-${binding === 'JSONRPC' ? 'rpc' : 'rest'}-a`, b: `/deliver-${binding === 'JSONRPC' ? 'rpc' : 'rest'}-b` };
        const to = (path: string) => receiver.deliveries.filter((delivery) => delivery.path === path);
        const canceled = (path: string) => {
          const last = to(path).at(-1)?.body;
          return last?.task?.status.state === 'TASK_STATE_CANCELED' || last?.statusUpdate?.status.state === 'TASK_STATE_CANCELED';
        };
        beforeAll(async () => {
          // Two webhooks on one working task, which is then canceled: each gets its updates.
          const task = await workingTask(binding);
          await call(binding, 'CreateTaskPushNotificationConfig', config(task.id, 'deliver-a', paths.a));
          await call(binding, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'deliver-b', url: `${receiver.url}${paths.b}` });
          await call(binding, 'CancelTask', { id: task.id });
          await vi.waitFor(
            () => {
              if (!canceled(paths.a) || !canceled(paths.b)) throw new Error('not delivered yet');
            },
            { timeout: 30_000, interval: 100 },
          );
        });

        it('PUSH-DELIVER-001 (4.3.3): each delivery carries the config’s credentials and token', () => {
          expect(to(paths.a).length).toBeGreaterThan(0);
          for (const delivery of to(paths.a)) {
            expect(delivery.headers.authorization).toBe('Bearer secret-deliver-a');
            expect(delivery.headers['x-a2a-notification-token']).toBe('token-deliver-a');
          }
          for (const delivery of to(paths.b)) expect(delivery.headers.authorization).toBeUndefined();
        });

        it('PUSH-DELIVER-002 (4.3.3): every configured webhook gets each update at least once', () => {
          const states = (path: string) => new Set(to(path).map((delivery) => delivery.body.task?.status.state ?? delivery.body.statusUpdate?.status.state));
          expect(states(paths.a)).toContain('TASK_STATE_CANCELED');
          expect(states(paths.b)).toEqual(states(paths.a));
        });

        it('PUSH-DELIVER-003 (4.3.3): the payload is a StreamResponse, exactly one of task, message, statusUpdate and artifactUpdate', () => {
          for (const delivery of [...to(paths.a), ...to(paths.b)]) {
            expect(Object.keys(delivery.body)).toHaveLength(1);
            expect(['task', 'message', 'statusUpdate', 'artifactUpdate']).toContain(Object.keys(delivery.body)[0]);
          }
        });
      });
    });

    describe('authentication and authorization (sections 7, 13)', () => {
      it('AUTH-SERVER-002 (7.4): every operation needs a valid credential', async () => {
        const task = await completedTask(binding);
        const ops: [Unary, Params][] = [
          ['SendMessage', { message: messageOf([textPart('anonymous')]) }],
          ['GetTask', { id: task.id }],
          ['ListTasks', {}],
          ['CancelTask', { id: task.id }],
          ['ListTaskPushNotificationConfigs', { taskId: task.id }],
          ['GetExtendedAgentCard', {}],
        ];
        for (const [op, params] of ops) {
          for (const headers of [{ Authorization: null }, { Authorization: 'Bearer oaa_not-a-real-key' }]) {
            const outcome = await call(binding, op, params, { headers });
            expect(outcome.httpStatus, `${op} ${JSON.stringify(headers)}`).toBe(401);
            expect(outcome.result).toBeUndefined();
          }
        }
        const stream = await open(binding, 'SendStreamingMessage', { message: messageOf([textPart('anonymous')]) }, { headers: { Authorization: null } });
        expect(stream.httpStatus).toBe(401);
      });

      it('AUTH-SCOPE-001 (13.1): each operation checks that the caller may touch the agent and the task', async () => {
        const task = await completedTask(binding);
        // The stranger's valid key, on the owner's agent: refused as a missing agent, never served.
        for (const op of ['GetTask', 'CancelTask', 'ListTasks'] as const) {
          const outcome = await call(binding, op, { id: task.id }, { apiKey: stranger.apiKey });
          expect(outcome.result, op).toBeUndefined();
          expect(outcome.httpStatus, op).toBe(404);
          expect(outcome.error, op).toBeDefined();
        }
      });

      it('AUTH-SCOPE-002 (13.1): results are scoped to what the caller may see', async () => {
        const mine = await completedTask(binding, 'scoped');
        // The owner's key on the stranger's agent reaches nothing.
        const intrusion = await call(binding, 'SendMessage', { message: messageOf([textPart('theirs')]) }, { target: strangerAgentId });
        expect(intrusion.result).toBeUndefined();
        expect(intrusion.httpStatus).toBe(404);
        const strangerTask = (await call(binding, 'SendMessage', { message: messageOf([textPart('stranger’s own')]) }, { apiKey: stranger.apiKey, target: strangerAgentId })).result!.task!;
        const listed = await call(binding, 'ListTasks', { pageSize: 100 }, { apiKey: stranger.apiKey, target: strangerAgentId });
        expect(listed.result?.tasks.map((task) => task.id)).toContain(strangerTask.id);
        expect(listed.result?.tasks.map((task) => task.id)).not.toContain(mine.id);
      });

      it('AUTH-SCOPE-003 (3.3.2): another user’s task is indistinguishable from a missing one', async () => {
        const mine = await completedTask(binding, 'secret task');
        const missing = `run_${'0'.repeat(26)}`;
        const as = { apiKey: stranger.apiKey, target: strangerAgentId };
        const shape = (outcome: { httpStatus: number; error?: A2aFailure }, id: string) => [outcome.httpStatus, outcome.error?.code, outcome.error?.reason, outcome.error?.message.replaceAll(id, 'ID')];
        const pairs: [string, (id: string) => Promise<{ httpStatus: number; error?: A2aFailure }>][] = [
          ['GetTask', (id) => call(binding, 'GetTask', { id }, as)],
          ['CancelTask', (id) => call(binding, 'CancelTask', { id }, as)],
          ['SubscribeToTask', (id) => open(binding, 'SubscribeToTask', { id }, as)],
          ['SendMessage', (id) => call(binding, 'SendMessage', { message: messageOf([textPart('hijack')], { taskId: id }) }, as)],
          ['CreateTaskPushNotificationConfig', (id) => call(binding, 'CreateTaskPushNotificationConfig', { taskId: id, url: `${receiver.url}/stolen` }, as)],
        ];
        for (const [name, attempt] of pairs) {
          const [other, absent] = [shape(await attempt(mine.id), mine.id), shape(await attempt(missing), missing)];
          expect(other[2], name).toBe('TASK_NOT_FOUND');
          expect(other, name).toEqual(absent);
        }
      });
    });

    describe('data model (sections 4, 5.5–5.7)', () => {
      /** Objects from every answer that carries them: a finished task, one that asks for input, a stream and a list. */
      async function sample() {
        const finished = await completedTask(binding, 'data model sample');
        const asking = await inputRequiredTask(binding);
        const stream = await collect(binding, 'SendStreamingMessage', { message: messageOf([textPart('streamed sample')]) });
        const listed = await call(binding, 'ListTasks', { contextId: finished.contextId, includeArtifacts: true, historyLength: 10 });
        const read = await call(binding, 'GetTask', { id: finished.id });
        const tasks = [finished, asking, read.result!, ...listed.result!.tasks, ...stream.events.flatMap((event) => (event.task ? [event.task] : []))];
        const statuses = [...tasks.map((task) => task.status), ...stream.events.flatMap((event) => (event.statusUpdate ? [event.statusUpdate.status] : []))];
        const messages = [...tasks.flatMap((task) => [...(task.history ?? []), ...(task.status.message ? [task.status.message] : [])])];
        const artifacts = [...tasks.flatMap((task) => task.artifacts ?? []), ...stream.events.flatMap((event) => (event.artifactUpdate ? [event.artifactUpdate.artifact] : []))];
        const parts = [...messages, ...artifacts].flatMap((item) => item.parts);
        return { tasks, statuses, messages, artifacts, parts, stream, wire: [finished, asking, read.body, listed.body, stream.frames] };
      }
      let objects: Awaited<ReturnType<typeof sample>>;
      beforeAll(async () => {
        objects = await sample();
      });

      it('DM-TASK-001 (4.1.1): a Task has its id and status', () => {
        for (const task of objects.tasks) {
          expect(task.id).toMatch(/\S/);
          expect(task.status).toBeDefined();
        }
      });

      it('DM-TASK-002 (4.1.3): a TaskState is one of the defined values', () => {
        const states = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];
        for (const status of objects.statuses) expect(states).toContain(status.state);
        expect(new Set(objects.statuses.map((status) => status.state))).toEqual(new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_WORKING']));
      });

      it('DM-MSG-001 (4.1.4): a Message has its role, parts and messageId', () => {
        expect(objects.messages.length).toBeGreaterThan(0);
        for (const message of objects.messages) {
          expect(message.messageId).toMatch(/\S/);
          expect(message.role).toBeDefined();
          expect(message.parts.length).toBeGreaterThan(0);
        }
      });

      it('DM-MSG-002 (4.1.5): a Role is ROLE_USER or ROLE_AGENT', () => {
        for (const message of objects.messages) expect(['ROLE_USER', 'ROLE_AGENT']).toContain(message.role);
      });

      it('DM-PART-001 (4.1.6): a Part is exactly one of text, raw, url and data', () => {
        expect(objects.parts.length).toBeGreaterThan(0);
        for (const part of objects.parts) expect(['text', 'raw', 'url', 'data'].filter((field) => field in part), JSON.stringify(part)).toHaveLength(1);
      });

      it('DM-ART-001 (4.1.7): an Artifact has its artifactId and parts', () => {
        expect(objects.artifacts.length).toBeGreaterThan(0);
        for (const artifact of objects.artifacts) {
          expect(artifact.artifactId).toMatch(/\S/);
          expect(artifact.parts.length).toBeGreaterThan(0);
        }
      });

      it('DM-STATUS-001 (4.1.2): a TaskStatus has a valid state', () => {
        for (const status of objects.statuses) expect(status.state).toMatch(/^TASK_STATE_[A-Z_]+$/);
      });

      it('DM-SERIAL-001 (5.5): field names are camelCase', () => {
        const snake = keysOf(objects.wire).filter(([key]) => SNAKE.test(key!) && key !== '@type');
        expect(snake).toEqual([]);
      });

      it('DM-SERIAL-002 (5.5): enums are their ProtoJSON names', () => {
        const enums = keysOf(objects.wire).filter(([key]) => key === 'state' || key === 'role');
        expect(enums.length).toBeGreaterThan(0);
        const values = JSON.stringify(objects.wire).match(/"(state|role)":("[^"]*"|\d+)/g) ?? [];
        for (const value of values) expect(value).toMatch(/":"(TASK_STATE|ROLE)_[A-Z_]+"$/);
      });

      it('DM-SERIAL-003 (5.6.1): timestamps are ISO 8601 in UTC, with Z', () => {
        const stamps = objects.statuses.flatMap((status) => (status.timestamp ? [status.timestamp] : []));
        expect(stamps.length).toBeGreaterThan(0);
        for (const stamp of stamps) expect(stamp).toMatch(ISO_UTC);
      });

      it('DM-SERIAL-004 (5.7): REQUIRED fields are set, REQUIRED lists are not empty', () => {
        for (const event of objects.stream.events) {
          const update = event.statusUpdate ?? event.artifactUpdate;
          if (!update) continue;
          expect(update.taskId).toMatch(/\S/);
          expect(update.contextId).toMatch(/\S/);
        }
        const listed = objects.wire[3] as Record<string, unknown>;
        for (const field of ['tasks', 'nextPageToken', 'pageSize', 'totalSize']) expect(listed, field).toHaveProperty(binding === 'JSONRPC' ? `result.${field}` : field);
      });
    });

    it('DM-SERIAL-005 (5.7, a SHOULD): fields the server does not know are ignored', async () => {
      const message = { ...messageOf([{ text: 'future fields', futurePartField: true } as Part]), futureMessageField: { nested: 1 } };
      const outcome = await call(binding, 'SendMessage', { message, futureRequestField: 'x', configuration: { futureOption: 1 } });
      expect(outcome.error).toBeUndefined();
      expect(outcome.result?.task?.status.state).toBe('TASK_STATE_COMPLETED');
    });

    describe('version negotiation (section 3.6)', () => {
      it('VER-SERVER-001 (3.6.2): a request is answered in the semantics of its A2A-Version', async () => {
        const task = await completedTask(binding);
        const read = await call(binding, 'GetTask', { id: task.id }, { headers: { 'A2A-Version': '1.0' } });
        expect(read.result?.status.state).toBe('TASK_STATE_COMPLETED');
        expect(read.result).not.toHaveProperty('kind');
        if (binding === 'JSONRPC') {
          // 0.3's tasks/get is no method of 1.0; without the header (0.3) it answers in 0.3's shapes.
          const asked = (version: Record<string, string | null>) =>
            fetch(`${server.url}/a2a/${agentId}`, {
              method: 'POST',
              headers: headersOf({ headers: version }, { 'Content-Type': 'application/json' }),
              body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: task.id } }),
            }).then(async (response) => (await response.json()) as { result?: { kind?: string; status: { state: string } }; error?: { code: number } });
          expect((await asked({ 'A2A-Version': '1.0' })).error?.code).toBe(-32601);
          expect((await asked({ 'A2A-Version': null })).result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
          expect((await asked({ 'A2A-Version': '0.3' })).result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
        }
      });

      it('VER-SERVER-002 (3.6.2): a version the interface does not support is VersionNotSupported', async () => {
        for (const version of ['99.0', '2.0', '0.2']) {
          expect((await call(binding, 'SendMessage', { message: messageOf([textPart('version test')]) }, { headers: { 'A2A-Version': version } })).error?.reason, version).toBe('VERSION_NOT_SUPPORTED');
        }
      });

      it('VER-SERVER-003 (3.6.2): an empty or missing A2A-Version is 0.3', async () => {
        if (binding === 'HTTP+JSON') {
          // 0.3's HTTP+JSON paths differ from 1.0's (/v1/message:send), so 1.0's paths stay 1.0's without the header.
          expect((await call(binding, 'ListTasks', {}, { headers: { 'A2A-Version': '' } })).httpStatus).toBe(200);
          return;
        }
        for (const version of ['', null]) {
          const response = await fetch(`${server.url}/a2a/${agentId}`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', ...(version === null ? {} : { 'A2A-Version': version }) },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'old' }] } } }),
          });
          expect(await response.json()).toMatchObject({ result: { kind: 'task', status: { state: 'completed' } } });
        }
      });

      it('VER-CLIENT-002 (3.6): the patch number is not considered in negotiation', async () => {
        const outcome = await call(binding, 'ListTasks', {}, { headers: { 'A2A-Version': '1.0.7' } });
        expect(outcome.httpStatus).toBe(200);
        const card = await cardOf();
        for (const item of card.supportedInterfaces) expect(item.protocolVersion).not.toMatch(/^\d+\.\d+\.\d+$/);
      });
    });
  });

  describe('binding equivalence (section 5.1)', () => {
    it('BIND-EQUIV-001 (5.1): both bindings offer the same operations', async () => {
      const task = await completedTask('JSONRPC');
      const ops: [Unary, Params][] = [
        ['GetTask', { id: task.id }],
        ['ListTasks', {}],
        ['ListTaskPushNotificationConfigs', { taskId: task.id }],
        ['CreateTaskPushNotificationConfig', { taskId: task.id, id: 'equiv', url: `${receiver.url}/equiv` }],
        ['GetTaskPushNotificationConfig', { taskId: task.id, id: 'equiv' }],
        ['DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'equiv' }],
        ['GetExtendedAgentCard', {}],
      ];
      for (const [op, params] of ops) {
        const [rpc, rest] = [await call('JSONRPC', op, params), await call('HTTP+JSON', op, params)];
        expect([rpc.error?.reason, rpc.result === undefined], op).toEqual([rest.error?.reason, rest.result === undefined]);
      }
      for (const binding of BINDINGS) expect((await collect(binding, 'SendStreamingMessage', { message: messageOf([textPart('both')]) })).events.length).toBeGreaterThan(1);
    });

    it('BIND-EQUIV-002 (5.1): both bindings answer the same request alike', async () => {
      const task = await completedTask('HTTP+JSON', 'same either way');
      const [rpc, rest] = [await call('JSONRPC', 'GetTask', { id: task.id }), await call('HTTP+JSON', 'GetTask', { id: task.id })];
      expect(rpc.result).toEqual(rest.result);
      const [rpcList, restList] = [await call('JSONRPC', 'ListTasks', { contextId: task.contextId }), await call('HTTP+JSON', 'ListTasks', { contextId: task.contextId })];
      expect(rpcList.result).toEqual(restList.result);
    });

    it('BIND-EQUIV-003 (5.1): both bindings name the same error for the same failure', async () => {
      const task = await completedTask('JSONRPC');
      const failures: [Unary, Params][] = [
        ['GetTask', { id: 'run_missing' }],
        ['CancelTask', { id: task.id }],
        ['SendMessage', { message: messageOf([textPart('again')], { taskId: task.id }) }],
        ['SendMessage', { message: messageOf([{ raw: 'AAEC', mediaType: 'application/octet-stream' }]) }],
      ];
      for (const [op, params] of failures) {
        const [rpc, rest] = [await call('JSONRPC', op, params), await call('HTTP+JSON', op, params)];
        expect(rpc.error?.reason, op).toBeDefined();
        expect(rpc.error?.reason, op).toBe(rest.error?.reason);
        const kind = Object.entries(A2A_ERRORS).find(([, entry]) => entry.reason === rpc.error?.reason)![1];
        expect(rpc.error?.code).toBe(kind.rpc);
      }
    });

    it('BIND-EQUIV-004 (5.1): both bindings take every credential scheme the card declares', async () => {
      const card = await cardOf();
      const credentials: Record<string, Record<string, string>> = {
        bearer: { Authorization: `Bearer ${user.apiKey}` },
        apiKey: { Authorization: '', 'X-API-Key': user.apiKey },
        basic: { Authorization: `Basic ${Buffer.from(`${user.apiKey}:`).toString('base64')}` },
      };
      expect(Object.keys(card.securitySchemes ?? {}).sort()).toEqual(Object.keys(credentials).sort());
      for (const [scheme, headers] of Object.entries(credentials)) {
        for (const binding of BINDINGS) {
          const outcome = await call(binding, 'ListTasks', {}, { headers: { ...headers, ...(headers.Authorization === '' ? { Authorization: null } : {}) } });
          expect(outcome.httpStatus, `${scheme} over ${binding}`).toBe(200);
        }
      }
    });
  });
});
