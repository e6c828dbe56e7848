// Interop: the AgentScope Agent API protocol (/process) and the Connexity agent contract (/respond), fed
// the payloads their documentation and reference clients send.
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FakeOpenAI } from '../testing/fake-openai.ts';
import { startScriptedServer, type TestServer, type TestUser } from '../testing/harness.ts';

/** The `data:` objects of an SSE body, checking that nothing but `data:` lines is sent. */
async function dataLines(response: Response): Promise<Record<string, unknown>[]> {
  const text = await response.text();
  const lines = text.split('\n').filter((line) => line.length > 0 && !line.startsWith(':'));
  expect(lines.every((line) => line.startsWith('data: '))).toBe(true);
  return lines.map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
}

describe('protocol adapters', () => {
  let server: TestServer;
  let user: TestUser;
  let upstream: FakeOpenAI;

  beforeAll(async () => {
    const started = await startScriptedServer();
    ({ server, user, upstream } = started);
    return started.close;
  });

  const agentWith = async (body: Record<string, unknown> = {}) =>
    (await user.client.POST('/v1/agents', { body: { name: 'Interop', instructions: 'Help.', ...body } })).data!;

  const post = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });

  describe('AgentScope /process', () => {
    it('streams the documented example as response, message and content objects in order', async () => {
      const agent = await agentWith();
      // The request example of the protocol's documentation.
      const response = await post(`/v1/agents/${agent.id}/process`, {
        input: [{ role: 'user', content: [{ type: 'text', text: 'Describe this image' }], type: 'message' }],
        stream: true,
        model: 'gpt-4-vision',
      });
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const objects = await dataLines(response);
      expect(objects.map((o) => o.sequence_number)).toEqual(objects.map((_, i) => i));
      const shape = objects.map((o) => `${o.object}:${o.status}${o.object === 'content' ? `:${o.delta}` : ''}`);
      // Text deltas said while the store was busy arrive joined: one or more of them.
      const deltas = shape.filter((kind) => kind === 'content:in_progress:true').length;
      expect(deltas).toBeGreaterThanOrEqual(1);
      expect(shape).toEqual([
        'response:created',
        'response:in_progress',
        'message:in_progress',
        ...Array(deltas).fill('content:in_progress:true'),
        'content:completed:null',
        'message:completed',
        'response:completed',
      ]);
      const messageId = objects[2]!.id;
      expect(objects.slice(3, 4 + deltas).every((o) => o.msg_id === messageId && o.index === 0 && o.type === 'text')).toBe(true);
      expect(objects.slice(3, 3 + deltas).map((o) => o.text).join('')).toBe('Describe this image');
      const final = objects.at(-1)!;
      expect(final).toMatchObject({ object: 'response', status: 'completed', error: null, usage: { input_tokens: expect.any(Number), output_tokens: 3 } });
      expect(final.output).toEqual([
        expect.objectContaining({ id: messageId, type: 'message', role: 'assistant', status: 'completed', content: [expect.objectContaining({ text: 'Describe this image' })] }),
      ]);
      expect(final.session_id).toMatch(/^ses_/);
    });

    it("accepts the reference client's nulls and unknown fields, and continues a client-named session without duplicating echoed history", async () => {
      const agent = await agentWith();
      const first = await post(`/v1/agents/${agent.id}/process`, {
        input: [{ role: 'user', type: 'message', content: [{ type: 'text', text: 'hello', status: 'created' }] }],
        session_id: '1764056632961',
        stream: true,
        biz_params: { anything: true },
      });
      const output = (await dataLines(first)).at(-1)!.output as Record<string, unknown>[];
      const second = await post(`/v1/agents/${agent.id}/process`, {
        input: [
          { role: 'user', type: 'message', content: [{ type: 'text', text: 'hello' }] },
          ...output.map((message) => ({ ...message, code: null, usage: null })),
          { role: 'user', type: 'message', content: [{ type: 'text', text: 'What is the capital of France?', file_name: null }] },
        ],
        session_id: '1764056632961',
        stream: false,
        user_id: null,
        temperature: null,
      });
      const body = (await second.json()) as Record<string, unknown>;
      expect(body).toMatchObject({ object: 'response', status: 'completed', session_id: '1764056632961' });
      const sessions = await user.client.GET('/v1/sessions', { params: { query: { agent_id: agent.id } } });
      expect(sessions.data?.data).toHaveLength(1);
      const session = await user.client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId: sessions.data!.data[0]!.id } } });
      expect(session.data?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    });

    it('sends client-side tool calls as function_call messages and continues with function_call_output', async () => {
      const agent = await agentWith();
      const tools = [{ type: 'function', function: { name: 'lookup', description: 'Look up', parameters: { type: 'object', properties: {} } } }];
      const halted = (await (
        await post(`/v1/agents/${agent.id}/process`, {
          input: [{ role: 'user', content: [{ type: 'text', text: 'please lookup {"q": "x"}' }] }],
          tools,
          session_id: 'tools-1',
          stream: false,
        })
      ).json()) as { output: { type: string; content: { data: Record<string, string> }[] }[]; status: string };
      expect(halted.status).toBe('completed');
      const call = halted.output.find((m) => m.type === 'function_call')!;
      expect(call.content[0]!.data).toMatchObject({ name: 'lookup', arguments: '{"q":"x"}', call_id: expect.any(String) });
      const resumed = (await (
        await post(`/v1/agents/${agent.id}/process`, {
          input: [{ role: 'tool', type: 'function_call_output', content: [{ type: 'data', data: { call_id: call.content[0]!.data.call_id, output: '42' } }] }],
          session_id: 'tools-1',
          tools,
          stream: false,
        })
      ).json()) as { output: { content: { text?: string }[] }[] };
      expect(resumed.output.at(-1)!.content[0]!.text).toBe('lookup returned: 42.');
    });

    it('shows server-side tools as plugin_call and plugin_call_output messages', async () => {
      const agent = await agentWith({ server_tools: ['calculator'] });
      const objects = await dataLines(
        await post(`/v1/agents/${agent.id}/process`, { input: [{ role: 'user', content: [{ type: 'text', text: 'calculator {"expression": "7*6"}' }] }] }),
      );
      const final = objects.at(-1) as { output: { type: string; role: string; content: { data?: Record<string, string>; text?: string }[] }[] };
      expect(final.output.map((m) => `${m.type}/${m.role}`)).toEqual(['plugin_call/assistant', 'plugin_call_output/tool', 'message/assistant']);
      expect(final.output[1]!.content[0]!.data).toMatchObject({ name: 'calculator', output: '42' });
    });

    it('ends a failed run with a failed response carrying the error', async () => {
      const agent = await agentWith({ model: 'scripted' });
      upstream.enqueue({ error: { status: 500, message: 'broken' } });
      const objects = await dataLines(await post(`/v1/agents/${agent.id}/process`, { input: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }));
      expect(objects.at(-1)).toMatchObject({ object: 'response', status: 'failed', error: { code: 'MODEL_EXECUTION_FAILED', message: expect.any(String) } });
    });

    it('answers an unknown agent with the 404 envelope, not a stream', async () => {
      const response = await post('/v1/agents/agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D/process', { input: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] });
      expect(response.status).toBe(404);
      expect((await response.json()).error.code).toBe('not_found');
    });
  });

  describe('agents and teams as OpenAI models', () => {
    it('lists them and runs them through the official openai client, plain, streamed and with tools', async () => {
      const agent = await agentWith({ name: 'Modelled' });
      const team = (await user.client.POST('/v1/teams', { body: { name: 'Modelled team', mode: 'route', members: [{ agent_id: agent.id }] } })).data!;
      const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: user.apiKey });
      const ids = (await openai.models.list()).data.map((model) => model.id);
      expect(ids).toEqual(expect.arrayContaining(['local', `agent:${agent.id}`, `team:${team.id}`]));
      expect(await openai.models.retrieve(`agent:${agent.id}`)).toMatchObject({ owned_by: 'agent' });

      const plain = await openai.chat.completions.create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'hello agent' }] });
      expect(plain.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: 'hello agent' } });
      expect(plain.usage?.total_tokens).toBeGreaterThan(0);

      const chunks: string[] = [];
      const stream = await openai.chat.completions.create({ model: `agent:${agent.id}`, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'one two three' }] });
      let usage = 0;
      for await (const chunk of stream) {
        chunks.push(chunk.choices[0]?.delta.content ?? '');
        usage = chunk.usage?.total_tokens ?? usage;
      }
      expect(chunks.join('')).toBe('one two three');
      expect(usage).toBeGreaterThan(0);

      const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }];
      const asked = await openai.chat.completions.create({ model: `agent:${agent.id}`, tools, messages: [{ role: 'user', content: 'lookup {"q": "x"}' }] });
      expect(asked.choices[0]!.finish_reason).toBe('tool_calls');
      const call = asked.choices[0]!.message.tool_calls![0]!;
      const answered = await openai.chat.completions.create({
        model: `agent:${agent.id}`,
        tools,
        messages: [
          { role: 'user', content: 'lookup {"q": "x"}' },
          asked.choices[0]!.message,
          { role: 'tool', tool_call_id: call.id, content: 'found' },
        ],
      });
      expect(answered.choices[0]!.message.content).toBe('lookup returned: found.');

      const viaTeam = await openai.chat.completions.create({ model: `team:${team.id}`, messages: [{ role: 'user', content: 'hello team' }] });
      expect(viaTeam.choices[0]!.message.content).toBe('hello team');

      const stranger = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: (await server.signUp()).apiKey });
      await expect(stranger.chat.completions.create({ model: `agent:${agent.id}`, messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 404 });
      expect((await stranger.models.list()).data.map((model) => model.id)).not.toContain(`agent:${agent.id}`);
    });

    it('shows a call waiting for approval as an approval_ tool call, whose answer is a decision the server carries out', async () => {
      const agent = await agentWith({ name: 'Careful model', server_tools: ['calculator'], server_tool_approvals: { calculator: 'always_ask' } });
      const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: user.apiKey, maxRetries: 0 });
      const question = { role: 'user' as const, content: 'calculator {"expression": "6*7"}' };
      const asked = await openai.chat.completions.create({ model: `agent:${agent.id}`, messages: [question] });
      expect(asked.choices[0]!.finish_reason).toBe('tool_calls');
      const call = asked.choices[0]!.message.tool_calls![0]!;
      expect(call).toMatchObject({ id: expect.stringMatching(/^approval_/), function: { name: 'calculator' } });
      const answer = (content: string) =>
        openai.chat.completions.create({ model: `agent:${agent.id}`, messages: [question, asked.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content }] });

      // Approved: the server runs the tool, and the model reads its result.
      const approved = await answer(JSON.stringify({ approve: true }));
      expect(approved.choices[0]!.message.content).toBe('calculator returned: 42.');
      // Denied: the tool never runs, and the model reads the denial.
      const denied = (await answer(JSON.stringify({ approve: false, reason: 'not today' }))).choices[0]!.message.content!;
      expect(denied).toContain('not today');
      expect(denied).not.toContain('42');
      // A result in place of a decision is refused: the client cannot answer for a server-side tool.
      await expect(answer('42')).rejects.toMatchObject({ status: 400, error: { code: 'invalid_request', param: 'messages[2].content' } });

      // Streamed, the call waiting for approval comes under the same prefix.
      const stream = await openai.chat.completions.create({ model: `agent:${agent.id}`, stream: true, messages: [question] });
      const ids: string[] = [];
      for await (const chunk of stream) for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) if (delta.id) ids.push(delta.id);
      expect(ids).toEqual([expect.stringMatching(/^approval_/)]);

      // A later turn carries the decision in its history without running the call again.
      const later = await openai.chat.completions.create({
        model: `agent:${agent.id}`,
        messages: [question, asked.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ approve: true }) }, approved.choices[0]!.message, { role: 'user', content: 'thanks' }],
      });
      expect(later.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'thanks' } });
    });
  });

  describe('Connexity /respond', () => {
    it("answers the documentation's first-turn request with the turn's messages, model, provider, usage and metadata", async () => {
      const agent = await agentWith();
      const response = await post(`/v1/agents/${agent.id}/respond`, {
        messages: [{ role: 'user', content: "Hi, I'd like to book a duct cleaning.", tool_calls: null, tool_call_id: null, name: null }],
        metadata: { test_case_id: '1b2c3d4e-0000-4000-8000-000000000001', turn_index: 0 },
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        messages: [{ role: 'assistant', content: "Hi, I'd like to book a duct cleaning.", tool_calls: null, tool_call_id: null, name: null }],
        model: 'local',
        provider: 'local',
        usage: { prompt_tokens: expect.any(Number), completion_tokens: 12, total_tokens: expect.any(Number) },
        metadata: { run_id: expect.stringMatching(/^run_/), session_id: expect.stringMatching(/^ses_/), test_case_id: '1b2c3d4e-0000-4000-8000-000000000001', turn_index: 0 },
      });
    });

    it('accepts a whole transcript with earlier tool turns as the platform sends it', async () => {
      const agent = await agentWith();
      const response = await post(`/v1/agents/${agent.id}/respond`, {
        messages: [
          { role: 'user', content: 'Do you service V4T 0A7?', tool_calls: null, tool_call_id: null, name: null },
          {
            role: 'assistant',
            content: 'Let me check.',
            tool_calls: [{ id: 'call_abc123', type: 'function', function: { name: 'check_service_area', arguments: '{"zone": "V4T0A7"}' }, tool_result: null }],
            tool_call_id: null,
            name: null,
          },
          { role: 'tool', content: '{"serviced": true}', tool_calls: null, tool_call_id: 'call_abc123', name: null },
          { role: 'assistant', content: 'Yes, we do.', tool_calls: null, tool_call_id: null, name: null },
          { role: 'user', content: 'Great, Tuesday works.', tool_calls: null, tool_call_id: null, name: null },
        ],
        metadata: { test_case_id: 'c0ffee00-0000-4000-8000-000000000002', turn_index: 5 },
      });
      const body = await response.json();
      expect(response.status).toBe(200);
      expect(body.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Great, Tuesday works.' });
    });

    it('opens the conversation when messages is empty', async () => {
      const agent = await agentWith();
      const body = await (await post(`/v1/agents/${agent.id}/respond`, { messages: [], metadata: { test_case_id: 'x', turn_index: 0 } })).json();
      expect(body.messages).toHaveLength(1);
      expect(body.messages[0]).toMatchObject({ role: 'assistant', content: expect.stringContaining('Hello') });
    });

    it('runs server-side tools itself and returns every message of the turn, tool messages named', async () => {
      const agent = await agentWith({ server_tools: ['calculator'], tools: [{ type: 'function', function: { name: 'get_weather' } }] });
      const body = await (
        await post(`/v1/agents/${agent.id}/respond`, { messages: [{ role: 'user', content: 'calculator {"expression": "2+2"}' }] })
      ).json();
      expect(body.messages.map((m: { role: string }) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
      expect(body.messages[1]).toEqual({ role: 'tool', content: '4', tool_calls: null, tool_call_id: body.messages[0].tool_calls[0].id, name: 'calculator' });
      // Client-side tools are not offered: nobody on this side of the contract could run them.
      const plain = await (await post(`/v1/agents/${agent.id}/respond`, { messages: [{ role: 'user', content: 'get_weather please' }] })).json();
      expect(plain.messages).toEqual([{ role: 'assistant', content: 'get_weather please', tool_calls: null, tool_call_id: null, name: null }]);
    });

    it('refuses a call that would wait for approval, as the contract cannot ask for one: the tool never runs and the model is told', async () => {
      const agent = await agentWith({ server_tools: ['calculator'], server_tool_approvals: { calculator: 'always_ask' } });
      const response = await post(`/v1/agents/${agent.id}/respond`, { messages: [{ role: 'user', content: 'calculator {"expression": "6*7"}' }] });
      expect(response.status).toBe(200);
      const body = await response.json();
      expect(body.messages.map((m: { role: string }) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
      expect(body.messages[1]).toMatchObject({ role: 'tool', name: 'calculator', content: expect.stringContaining('cannot ask anyone for approval') });
      // The calculator's answer would be 42: neither the tool message nor the reply has it.
      expect(body.messages[1].content).not.toContain('42');
      expect(body.messages[2].content).not.toContain('42');
    });

    it('answers the connection probe and refuses a tool message answering no call with 400', async () => {
      const agent = await agentWith();
      expect((await post(`/v1/agents/${agent.id}/respond`, { messages: [{ role: 'user', content: 'ping' }] })).status).toBe(200);
      const unmatched = await post(`/v1/agents/${agent.id}/respond`, { messages: [{ role: 'tool', content: 'x', tool_call_id: 'call_nowhere' }] });
      expect(unmatched.status).toBe(400);
      expect((await unmatched.json()).error.details[0].path).toBe('/body/messages/0/tool_call_id');
    });
  });
});
