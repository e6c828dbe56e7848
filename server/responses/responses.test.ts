// The Responses API and Conversations end to end with the official `openai` client, against `local`, an
// OpenAI-compatible upstream on loopback and an agent; every stream passes the grammar checker, and its
// raw SSE names each event twice and ends with [DONE]. On PGlite and PostgreSQL.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { checkResponseStream } from '../../conformance/responses-stream.ts';

const weather = { type: 'function' as const, name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false };

describe.each(await availableEngines())('the Responses API on %s', (engine) => {
  let server: TestServer;
  let user: TestUser;
  let upstream: FakeOpenAI;
  let openai: OpenAI;
  beforeAll(async () => {
    upstream = await startFakeOpenAI({ models: ['scripted'] });
    server = await startTestServer({ engine, env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url } });
    user = await server.signUp();
    openai = new OpenAI({ apiKey: user.apiKey, baseURL: `${server.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await upstream?.close();
  });

  /** Streams a response through the client, checking the grammar; answers the events. */
  async function streamed(body: OpenAI.Responses.ResponseCreateParamsStreaming) {
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.create(body)) events.push(event);
    expect(checkResponseStream(events)).toEqual([]);
    return events;
  }

  it('answers JSON for local, stores it, retrieves it, lists its input items and deletes it', async () => {
    const response = await openai.responses.create({ model: 'local', input: 'Say hello.', metadata: { case: 'json' } });
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: 'local', metadata: { case: 'json' }, store: true, background: false });
    expect(response.output_text).toBe('Say hello.');
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Say hello.', annotations: [] }] });
    expect(response.usage?.total_tokens).toBeGreaterThan(0);
    const again = await openai.responses.retrieve(response.id);
    expect(again.output).toEqual(response.output);
    expect(again.status).toBe('completed');
    const items = await openai.responses.inputItems.list(response.id);
    expect(items.data).toMatchObject([{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say hello.' }] }]);
    expect(await openai.responses.delete(response.id)).toMatchObject({ id: response.id, deleted: true });
    await expect(openai.responses.retrieve(response.id)).rejects.toMatchObject({ status: 404 });
  });

  it('streams with the exact grammar, event lines equal to types and a final [DONE]', async () => {
    const raw = await fetch(`${server.url}/v1/responses`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'local', input: 'One two three.', stream: true }),
    });
    const text = await raw.text();
    const blocks = text.trim().split('\n\n');
    expect(blocks.at(-1)).toBe('data: [DONE]');
    const events = blocks.slice(0, -1).map((block) => {
      const event = /^event: (.+)$/m.exec(block)?.[1];
      const data = JSON.parse(/^data: (.+)$/m.exec(block)![1]!) as { type: string; sequence_number: number };
      expect(event).toBe(data.type);
      return data;
    });
    expect(checkResponseStream(events)).toEqual([]);
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...events.filter((event) => event.type === 'response.output_text.delta').map(() => 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const done = events.at(-1) as unknown as OpenAI.Responses.ResponseCompletedEvent;
    const stored = await openai.responses.retrieve(done.response.id);
    expect(stored.output).toEqual(done.response.output);
  });

  it('streams through the client helper and resumes a stored stream after a sequence number', async () => {
    const stream = openai.responses.stream({ model: 'local', input: 'Resume me please.' });
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Resume me please.');
    const all: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.retrieve(final.id, { stream: true })) all.push(event);
    expect(checkResponseStream(all)).toEqual([]);
    const tail: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.retrieve(final.id, { stream: true, starting_after: 3 })) tail.push(event);
    expect(tail).toEqual(all.slice(4));
  });

  it('runs a function tool round trip: the response ends with function_call items, completed; the output continues it', async () => {
    const first = await openai.responses.create({ model: 'local', input: 'get_weather {"city": "Paris"}', tools: [weather] });
    expect(first.status).toBe('completed');
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' });
    const events = await streamed({
      model: 'local',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: (call as OpenAI.Responses.ResponseFunctionToolCall).call_id, output: 'sunny, 21 C' }],
      tools: [weather],
      stream: true,
    });
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.type).toBe('response.completed');
    expect(JSON.stringify(completed.response.output)).toContain('sunny, 21 C');
  });

  it('replays a three-turn chain to the upstream with every item in order, function calls included', async () => {
    upstream.enqueue({ text: 'First answer.' });
    const one = await openai.responses.create({ model: 'scripted', input: 'Turn one.', instructions: 'Be brief.' });
    upstream.enqueue({ toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: { city: 'Oslo' } }] });
    const two = await openai.responses.create({ model: 'scripted', input: 'Turn two.', previous_response_id: one.id, tools: [weather] });
    expect(two.output).toMatchObject([{ type: 'function_call', call_id: 'call_w1', name: 'get_weather' }]);
    upstream.enqueue({ text: 'Cold in Oslo.' });
    const three = await openai.responses.create({
      model: 'scripted',
      previous_response_id: two.id,
      input: [{ type: 'function_call_output', call_id: 'call_w1', output: '-3 C' }],
      tools: [weather],
    });
    expect(three.output_text).toBe('Cold in Oslo.');
    const sent = upstream.requests.at(-1)!.body as { messages: { role: string; content: unknown; tool_calls?: { id: string }[]; tool_call_id?: string }[] };
    expect(sent.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'tool']);
    expect(sent.messages[0]!.content).toBe('Turn one.');
    expect(sent.messages[1]!.content).toBe('First answer.');
    expect(sent.messages[3]!.tool_calls?.[0]?.id).toBe('call_w1');
    expect(sent.messages[4]).toMatchObject({ tool_call_id: 'call_w1', content: '-3 C' });
    // Instructions do not carry over a chain, as on OpenAI.
    expect(JSON.stringify(sent.messages)).not.toContain('Be brief.');
  });

  it('runs an agent: its server tools are mcp_call items, its answer a message', async () => {
    const agent = await user.client.POST('/v1/agents', { body: { name: 'Calc', server_tools: ['calculator'] } });
    const events = await streamed({ model: `agent:${agent.data!.id}`, input: 'calculator {"expression": "6*7"}', stream: true });
    const response = (events.at(-1) as OpenAI.Responses.ResponseCompletedEvent).response;
    expect(response.output).toMatchObject([
      { type: 'mcp_call', server_label: 'open-agent-api', name: 'calculator', output: '42', status: 'completed' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'calculator returned: 42.' }] },
    ]);
  });

  it('runs a team: the leader\'s delegation is an mcp_call item, the member\'s own work stays in its run', async () => {
    const member = await user.client.POST('/v1/agents', { body: { name: 'Counter', server_tools: ['calculator'] } });
    const team = await user.client.POST('/v1/teams', { body: { name: 'Desk', members: [{ agent_id: member.data!.id }] } });
    const events = await streamed({ model: `team:${team.data!.id}`, input: 'ask_counter {"task": "calculator {\\"expression\\": \\"2+3\\"}"}', stream: true });
    const response = (events.at(-1) as OpenAI.Responses.ResponseCompletedEvent).response;
    expect(response.status).toBe('completed');
    expect(response.output[0]).toMatchObject({ type: 'mcp_call', name: 'ask_counter', output: 'calculator returned: 5.', status: 'completed' });
    expect(response.output.filter((item) => item.type === 'mcp_call')).toHaveLength(1);
    expect(response.output.at(-1)).toMatchObject({ type: 'message', role: 'assistant' });
  });

  it('sends image parts to the model as chat image parts', async () => {
    upstream.enqueue({ text: 'A red pixel.' });
    const image = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
    const response = await openai.responses.create({
      model: 'scripted',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: image, detail: 'low' }] }],
    });
    expect(response.output_text).toBe('A red pixel.');
    const sent = upstream.requests.at(-1)!.body as { messages: { content: unknown }[] };
    expect(sent.messages[0]!.content).toEqual([{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: image, detail: 'low' } }]);
    const items = await openai.responses.inputItems.list(response.id);
    expect(items.data[0]).toMatchObject({ type: 'message', content: [{ type: 'input_text' }, { type: 'input_image', image_url: image, detail: 'low' }] });
  });

  it('keeps a conversation: items in and out, and its history reaches the next response', async () => {
    const conversation = await openai.conversations.create({ metadata: { topic: 'test' }, items: [{ type: 'message', role: 'user', content: 'Remember blue.' }] });
    expect(conversation).toMatchObject({ object: 'conversation', metadata: { topic: 'test' } });
    upstream.enqueue({ text: 'Noted.' });
    await openai.responses.create({ model: 'scripted', conversation: conversation.id, input: 'What colour?' });
    const sent = upstream.requests.at(-1)!.body as { messages: { content: unknown }[] };
    expect(sent.messages.map((message) => message.content)).toEqual(['Remember blue.', 'What colour?']);
    const items = await openai.conversations.items.list(conversation.id, { order: 'asc' });
    expect(items.data.map((item) => item.type === 'message' && item.content[0]?.type)).toEqual(['input_text', 'input_text', 'output_text']);
    const added = await openai.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'user', content: 'More.' }] });
    expect(added.data).toHaveLength(1);
    const one = await openai.conversations.items.retrieve(added.data[0]!.id!, { conversation_id: conversation.id });
    expect(one).toMatchObject({ type: 'message', role: 'user' });
    await openai.conversations.items.delete(added.data[0]!.id!, { conversation_id: conversation.id });
    await expect(openai.conversations.items.retrieve(added.data[0]!.id!, { conversation_id: conversation.id })).rejects.toMatchObject({ status: 404 });
    expect(await openai.conversations.update(conversation.id, { metadata: { topic: 'new' } })).toMatchObject({ metadata: { topic: 'new' } });
    expect(await openai.conversations.delete(conversation.id)).toMatchObject({ deleted: true });
    await expect(openai.conversations.retrieve(conversation.id)).rejects.toMatchObject({ status: 404 });
  });

  it('refuses unknown fields and unsupported values with a 400 naming the field', async () => {
    await expect(openai.responses.create({ model: 'local', input: 'x', frobnicate: true } as never)).rejects.toMatchObject({ status: 400, param: expect.stringContaining('frobnicate') });
    await expect(openai.responses.create({ model: 'local', input: 'x', include: ['message.output_text.logprobs'] })).rejects.toMatchObject({ status: 400, param: 'include' });
    await expect(openai.responses.create({ model: 'local', input: 'x', background: true, store: false })).rejects.toMatchObject({ status: 400, param: 'background' });
    await expect(openai.responses.create({ model: 'nope', input: 'x' })).rejects.toMatchObject({ status: 404, param: 'model' });
  });

  it('answers a failed run as an error to a waiting client and keeps the failed response; store: false is not kept', async () => {
    upstream.enqueue({ error: { status: 500, message: 'upstream broke' } }, { error: { status: 500, message: 'upstream broke' } }, { error: { status: 500, message: 'upstream broke' } });
    const failed = await openai.responses.create({ model: 'scripted', input: 'Fail.' }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(OpenAI.APIError);
    expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBeGreaterThanOrEqual(500);
    upstream.reset();
    const unkept = await openai.responses.create({ model: 'local', input: 'Forget me.', store: false });
    expect((unkept as unknown as { store: boolean }).store).toBe(false);
    await expect(openai.responses.retrieve(unkept.id)).rejects.toMatchObject({ status: 404 });
    await expect(openai.responses.create({ model: 'local', input: 'x', previous_response_id: unkept.id })).rejects.toMatchObject({ status: 404 });
  });

  it("answers another user's response and conversation as missing", async () => {
    const mine = await openai.responses.create({ model: 'local', input: 'Mine.' });
    const conversation = await openai.conversations.create({});
    const other = await server.signUp();
    const theirs = new OpenAI({ apiKey: other.apiKey, baseURL: `${server.url}/v1`, maxRetries: 0 });
    await expect(theirs.responses.retrieve(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(theirs.responses.inputItems.list(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(theirs.responses.delete(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(theirs.responses.cancel(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(theirs.responses.create({ model: 'local', input: 'x', previous_response_id: mine.id })).rejects.toMatchObject({ status: 404, param: 'previous_response_id' });
    await expect(theirs.conversations.retrieve(conversation.id)).rejects.toMatchObject({ status: 404 });
    await expect(theirs.conversations.items.list(conversation.id)).rejects.toMatchObject({ status: 404 });
    expect((await openai.responses.retrieve(mine.id)).id).toBe(mine.id);
  });
});
