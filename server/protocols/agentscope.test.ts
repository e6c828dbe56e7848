// The AgentScope projection checked against AgentScope Runtime's own schemas (agent_schemas.py in
// agentscope-ai/agentscope-runtime: every field of a Message, a Content and a Response present, values in
// its enums) and its runner's rules (one counter over every object, 0, 1, 2, … without gaps; the final
// response's `output` holds the very completed messages that were streamed): an agent running a server
// tool, a client-side tool, and a team whose output, echoed back as input, is a valid history. Audio
// input reaches the model, and an empty input opens the conversation.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FakeOpenAI } from '../testing/fake-openai.ts';
import { startFakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { unansweredCalls } from '../runs/rules.ts';
import { toChatMessages, type AgentScopeInputMessage } from './agentscope.ts';

type Json = Record<string, unknown>;

// agent_schemas.py, as AgentScope Runtime 1.1.5 serialises it with model_dump_json(): every field present.
const MESSAGE_TYPES = new Set(['message', 'function_call', 'function_call_output', 'plugin_call', 'plugin_call_output', 'component_call', 'component_call_output', 'mcp_list_tools', 'mcp_approval_request', 'mcp_call', 'mcp_approval_response', 'mcp_call_output', 'reasoning', 'heartbeat', 'error']);
const STATUSES = new Set(['created', 'in_progress', 'completed', 'canceled', 'failed', 'rejected', 'unknown', 'queued', 'incomplete']);
const ROLES = new Set(['assistant', 'user', 'system', 'tool', null]);
const EVENT_FIELDS = ['sequence_number', 'object', 'status', 'error'];
const MESSAGE_FIELDS = [...EVENT_FIELDS, 'id', 'type', 'role', 'content', 'code', 'message', 'usage', 'metadata'];
const CONTENT_FIELDS = [...EVENT_FIELDS, 'type', 'index', 'delta', 'msg_id'];
const CONTENT_EXTRA: Record<string, string[]> = { text: ['text'], data: ['data'], image: ['image_url'], audio: ['data', 'format'], file: ['file_url', 'file_id', 'filename', 'file_data'], refusal: ['refusal'], video: ['video_url'] };
const RESPONSE_FIELDS = [...EVENT_FIELDS, 'id', 'created_at', 'completed_at', 'output', 'usage', 'session_id'];

function expectFields(value: Json, fields: string[], what: string) {
  for (const field of fields) expect(value, `${what} lacks ${field}`).toHaveProperty(field);
}

/** Checks one streamed object against the runtime's schema. */
function checkObject(object: Json) {
  expect(STATUSES.has(object.status as string)).toBe(true);
  if (object.object === 'response') {
    expectFields(object, RESPONSE_FIELDS, 'response');
    for (const message of (object.output as Json[] | null) ?? []) checkObject(message);
  } else if (object.object === 'message') {
    expectFields(object, MESSAGE_FIELDS, 'message');
    expect(MESSAGE_TYPES.has(object.type as string)).toBe(true);
    expect(ROLES.has(object.role as string | null)).toBe(true);
    for (const content of (object.content as Json[] | null) ?? []) checkObject(content);
  } else {
    expect(object.object).toBe('content');
    expectFields(object, [...CONTENT_FIELDS, ...(CONTENT_EXTRA[object.type as string] ?? ['unknown content type'])], `${object.type as string} content`);
  }
}

async function dataLines(response: Response): Promise<Json[]> {
  expect(response.status).toBe(200);
  const text = await response.text();
  const frames = text.split('\n\n').filter((frame) => frame.trim() && !frame.startsWith(':'));
  // The runtime's web UI takes one `data:` line per frame and nothing else.
  expect(frames.every((frame) => /^data: [^\n]+$/.test(frame.trim()))).toBe(true);
  return frames.map((frame) => JSON.parse(frame.trim().slice(6)) as Json);
}

/** The rules of AgentScope Runtime's runner, for one stream. */
function checkStream(objects: Json[]) {
  objects.forEach(checkObject);
  expect(objects.map((object) => object.sequence_number)).toEqual(objects.map((_, index) => index));
  const final = objects.at(-1)!;
  expect(final.object).toBe('response');
  const completed = objects.filter((object) => object.object === 'message' && object.status === 'completed');
  // The very objects streamed as completed, in completion order, with their numbers.
  expect(final.output).toEqual(completed);
  // Every content frame follows its message's first frame (the web UI drops orphan contents).
  const opened = new Set<unknown>();
  for (const object of objects) {
    if (object.object === 'message') opened.add(object.id);
    if (object.object === 'content' && object.status === 'in_progress') expect(opened.has(object.msg_id)).toBe(true);
  }
  return final as Json & { output: Json[] };
}

describe('AgentScope projection', () => {
  let server: TestServer;
  let user: TestUser;
  let upstream: FakeOpenAI;
  let audioHost: Server;
  let audioUrl: string;
  const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(40, 1)]);

  beforeAll(async () => {
    audioHost = createServer((req, res) => {
      if (req.url === '/clip.wav') res.writeHead(200, { 'Content-Type': 'audio/wav' }).end(wav);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => audioHost.listen(0, '127.0.0.1', resolve));
    audioUrl = `http://127.0.0.1:${(audioHost.address() as AddressInfo).port}/clip.wav`;
    upstream = await startFakeOpenAI({ models: ['scripted'] });
    server = await startTestServer({ env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url, OUTBOUND_ALLOW: '127.0.0.1' } });
    user = await server.signUp();
  });
  afterAll(async () => {
    await server?.close();
    await upstream?.close();
    audioHost?.close();
  });
  beforeEach(() => upstream.reset());

  const post = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const create = async (path: '/v1/agents' | '/v1/teams', body: Json) => {
    const response = await post(path, body);
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  };
  const userText = (text: string) => ({ role: 'user', type: 'message', content: [{ type: 'text', text }] });

  it('numbers a server tool run without gaps and shows it as plugin_call / plugin_call_output', async () => {
    const agent = await create('/v1/agents', { name: 'Calc', server_tools: ['calculator'] });
    const objects = await dataLines(await post(`/v1/agents/${agent}/process`, { input: [userText('calculator {"expression": "7*6"}')] }));
    const final = checkStream(objects);
    expect(final.output.map((message) => `${message.type as string}/${message.role as string}`)).toEqual(['plugin_call/assistant', 'plugin_call_output/tool', 'message/assistant']);
    const [call, output] = final.output.map((message) => (message.content as Json[])[0]!.data as Json);
    expect(call).toMatchObject({ name: 'calculator', arguments: '{"expression":"7*6"}' });
    expect(output).toMatchObject({ call_id: call!.call_id, name: 'calculator', output: '42' });
  });

  it('asks for a client-side tool with function_call and goes on after function_call_output', async () => {
    const agent = await create('/v1/agents', { name: 'Asker' });
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }];
    const final = checkStream(await dataLines(await post(`/v1/agents/${agent}/process`, { input: [userText('lookup {"q": "x"}')], tools, session_id: 'as-tools' })));
    expect(final.output.map((message) => message.type)).toEqual(['function_call']);
    const callId = ((final.output[0]!.content as Json[])[0]!.data as Json).call_id;
    const next = checkStream(
      await dataLines(
        await post(`/v1/agents/${agent}/process`, {
          input: [{ role: 'tool', type: 'function_call_output', content: [{ type: 'data', data: { call_id: callId, output: '42' } }] }],
          tools,
          session_id: 'as-tools',
        }),
      ),
    );
    expect(((next.output.at(-1)!.content as Json[])[0] as Json).text).toBe('lookup returned: 42.');
  });

  it('asks approval with mcp_approval_request and goes on after mcp_approval_response; the echoed history stays valid', async () => {
    const agent = await create('/v1/agents', { name: 'Careful calc', server_tools: ['calculator'], server_tool_approvals: { calculator: 'always_ask' } });
    const ask = userText('calculator {"expression": "6*7"}');
    const halted = checkStream(await dataLines(await post(`/v1/agents/${agent}/process`, { input: [ask], session_id: 'as-approval' })));
    expect(halted.output.map((message) => `${message.type as string}/${message.role as string}`)).toEqual(['mcp_approval_request/assistant']);
    const request = halted.output[0]!;
    const data = (request.content as Json[])[0]!.data as Json;
    expect(data).toEqual({ id: expect.any(String), name: 'calculator', arguments: '{"expression":"6*7"}', server_label: 'open-agent-api' });

    const reply = { role: 'user', type: 'mcp_approval_response', content: [{ type: 'data', data: { approval_request_id: data.id, approve: true } }] };
    const done = checkStream(await dataLines(await post(`/v1/agents/${agent}/process`, { input: [reply], session_id: 'as-approval' })));
    expect(done.output.map((message) => `${message.type as string}/${message.role as string}`)).toEqual(['plugin_call/assistant', 'plugin_call_output/tool', 'message/assistant']);
    expect(((done.output[0]!.content as Json[])[0]!.data as Json).call_id).toBe(data.id);
    expect(((done.output[1]!.content as Json[])[0]!.data as Json).output).toBe('42');

    // Echoed back whole, the request and the call that ran are one call with its one result.
    const history = await toChatMessages([ask, request, reply, ...done.output] as AgentScopeInputMessage[], async () => ({ data: '', format: 'wav' }));
    expect(unansweredCalls(history)).toEqual([]);
    expect(history.flatMap((message) => (message.role === 'assistant' ? (message.tool_calls ?? []).map((call) => call.id) : []))).toEqual([data.id]);
  });

  it('projects a team so that its output, echoed back as input, is a valid history with every member attributed', async () => {
    const member = await create('/v1/agents', { name: 'Counter', server_tools: ['calculator'] });
    const team = await create('/v1/teams', { name: 'Desk', members: [{ agent_id: member }] });
    const first = checkStream(
      await dataLines(await post(`/v1/teams/${team}/process`, { input: [userText('ask_counter {"task": "calculator {\\"expression\\": \\"2+3\\"}"}')] })),
    );
    const types = first.output.map((message) => `${message.type as string}${(message.metadata as Json | null)?.member_run_id ? '@member' : ''}`);
    expect(types).toEqual(['plugin_call', 'plugin_call@member', 'plugin_call_output@member', 'message@member', 'plugin_call_output', 'message']);
    const memberWork = first.output.filter((message) => (message.metadata as Json | null)?.member_run_id);
    expect(memberWork.every((message) => (message.metadata as { from: Json }).from.name === 'Counter')).toBe(true);
    // The web UI sends the whole history back; the history it stands for answers every call in order.
    const history = [userText('ask_counter {"task": "calculator {\\"expression\\": \\"2+3\\"}"}'), ...first.output] as AgentScopeInputMessage[];
    const messages = await toChatMessages(history, () => Promise.reject(new Error('no audio here')));
    expect(unansweredCalls(messages)).toEqual([]);
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const second = checkStream(await dataLines(await post(`/v1/teams/${team}/process`, { input: [...history, userText('thanks')] })));
    expect(second.status).toBe('completed');
  });

  it('hands audio to the model, fetched from a URL or inline, and refuses an internal URL no one allowed', async () => {
    const agent = await create('/v1/agents', { name: 'Listener', model: 'scripted' });
    upstream.enqueue({ text: 'heard it' });
    upstream.enqueue({ text: 'heard it again' });
    const audio = (data: string, format?: string) => ({ role: 'user', type: 'message', content: [{ type: 'text', text: 'what is this?' }, { type: 'audio', data, ...(format ? { format } : {}) }] });
    checkStream(await dataLines(await post(`/v1/agents/${agent}/process`, { input: [audio(audioUrl)] })));
    checkStream(await dataLines(await post(`/v1/agents/${agent}/process`, { input: [audio(`data:audio/mpeg;base64,${wav.toString('base64')}`)] })));
    const parts = upstream.requests.map((request) => (request.body as { messages: { role: string; content: unknown }[] }).messages.find((message) => message.role === 'user')!.content);
    expect(parts).toEqual([
      [{ type: 'text', text: 'what is this?' }, { type: 'input_audio', input_audio: { data: wav.toString('base64'), format: 'wav' } }],
      [{ type: 'text', text: 'what is this?' }, { type: 'input_audio', input_audio: { data: wav.toString('base64'), format: 'mp3' } }],
    ]);
    const internal = await post(`/v1/agents/${agent}/process`, { input: [audio('http://169.254.169.254/latest/meta-data.wav')] });
    expect(internal.status).toBe(400);
    expect(((await internal.json()) as { error: { message: string } }).error.message).toMatch(/internal address/);
  });

  it('opens the conversation on an empty input', async () => {
    const agent = await create('/v1/agents', { name: 'Opener' });
    const final = checkStream(await dataLines(await post(`/v1/agents/${agent}/process`, { input: [] })));
    expect(final.status).toBe('completed');
    expect(((final.output[0]!.content as Json[])[0] as Json).text).toMatch(/local model/);
  });
});
