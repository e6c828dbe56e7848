// The anthropic provider, both ways: OpenAI requests from the official `openai` SDK go through the real app
// to a real Messages API server on loopback, and its answers and streams come back as OpenAI's.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../testing/fake-anthropic.ts';
import { startTestServer, type TestServer } from '../testing/harness.ts';
import { failure } from '../testing/models.ts';

const ANTHROPIC_KEY = 'sk-ant-test-secret-key-0003';
const MODEL = 'claude-test-1';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('anthropic provider', () => {
  let server: TestServer;
  let upstream: FakeAnthropic;
  let client: OpenAI;

  beforeAll(async () => {
    upstream = await startFakeAnthropic({ apiKey: ANTHROPIC_KEY, models: [MODEL, 'claude-test-2'] });
    server = await startTestServer({ env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY, ANTHROPIC_BASE_URL: upstream.url } });
    const { apiKey } = await server.signUp();
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });
  });

  afterAll(async () => {
    await server?.close();
    await upstream?.close();
  });

  beforeEach(() => upstream.reset());

  it('discovers the upstream models as chat models', async () => {
    const claude = await client.models.retrieve(MODEL);
    expect(claude).toMatchObject({ id: MODEL, owned_by: 'anthropic', capabilities: ['chat'] });
    expect(upstream.requests).toEqual([]);
    const page = await client.models.list();
    expect(page.data.map((model) => model.id)).toContain('claude-test-2');
  });

  it('translates a whole conversation to the Messages API', async () => {
    await client.chat.completions.create({
      model: MODEL,
      max_tokens: 300,
      stop: 'STOP',
      user: 'end-user-9',
      tool_choice: 'required',
      parallel_tool_calls: false,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object', properties: { ok: { type: 'boolean' } } } } },
      tools: [{ type: 'function', function: { name: 'lookup', description: 'Look it up', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
      messages: [
        { role: 'system', content: 'You are helpful.' },
        { role: 'developer', content: [{ type: 'text', text: 'Prefer short answers.' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            { type: 'image_url', image_url: { url: 'https://example.com/photo.jpg' } },
            { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQK' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"image"}' } },
            { id: 'toolu_2', type: 'function', function: { name: 'lookup', arguments: '{"q":"pdf"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'a red square' },
        { role: 'tool', tool_call_id: 'toolu_2', content: [{ type: 'text', text: 'an empty page' }] },
        { role: 'user', content: 'Summarise.' },
      ],
    });
    const seen = upstream.requests[0]!;
    expect(seen.path).toBe('/v1/messages');
    expect(seen.headers.authorization).toBe(`Bearer ${ANTHROPIC_KEY}`);
    expect(seen.body).toEqual({
      model: MODEL,
      max_tokens: 300,
      system: 'You are helpful.\n\nPrefer short answers.',
      stop_sequences: ['STOP'],
      metadata: { user_id: 'end-user-9' },
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      output_config: { format: { type: 'json_schema', schema: { type: 'object', properties: { ok: { type: 'boolean' } } } } },
      tools: [{ name: 'lookup', description: 'Look it up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/photo.jpg' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQK' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'image' } },
            { type: 'tool_use', id: 'toolu_2', name: 'lookup', input: { q: 'pdf' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'a red square' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'an empty page' },
            { type: 'text', text: 'Summarise.' },
          ],
        },
      ],
    });
  });

  it('translates answers back: text, tool calls, stop reasons and usage with cached tokens', async () => {
    upstream.enqueue({
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'toolu_9', name: 'lookup', input: { q: 'x' } },
      ],
      usage: { input_tokens: 10, output_tokens: 4, cache_read_input_tokens: 6, cache_creation_input_tokens: 2 },
    });
    const completion = await client.chat.completions.create({
      model: MODEL,
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
      messages: [{ role: 'user', content: 'look x up' }],
    });
    expect(completion.model).toBe(MODEL);
    expect(completion.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'toolu_9', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
    });
    expect(completion.usage).toMatchObject({ prompt_tokens: 18, completion_tokens: 4, total_tokens: 22, prompt_tokens_details: { cached_tokens: 6 } });

    for (const [stopReason, finish] of [
      ['max_tokens', 'length'],
      ['stop_sequence', 'stop'],
      ['end_turn', 'stop'],
      ['refusal', 'content_filter'],
    ] as const) {
      upstream.enqueue({ content: [{ type: 'text', text: 'partial' }], stopReason });
      const answer = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'go' }] });
      expect(answer.choices[0]!.finish_reason).toBe(finish);
    }
  });

  it('streams text as chat.completion.chunk objects with usage at the end', async () => {
    upstream.enqueue({ content: [{ type: 'text', text: 'Hello from the fake Claude.' }], usage: { input_tokens: 12, output_tokens: 6 } });
    const stream = await client.chat.completions.create({ model: MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta).toMatchObject({ role: 'assistant' });
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Hello from the fake Claude.');
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 } });
    expect(upstream.requests[0]!.body).toMatchObject({ stream: true });
  });

  it('streams tool use: each tool_use block is a tool call, its input_json_delta the arguments', async () => {
    upstream.enqueue({
      content: [
        { type: 'text', text: 'Two lookups.' },
        { type: 'tool_use', id: 'toolu_a', name: 'lookup', input: { q: 'first', n: 1 } },
        { type: 'tool_use', id: 'toolu_b', name: 'fetch', input: { url: 'https://example.com/a?b=c' } },
      ],
    });
    const stream = await client.chat.completions.create({
      model: MODEL,
      stream: true,
      tools: [
        { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } },
        { type: 'function', function: { name: 'fetch', parameters: { type: 'object' } } },
      ],
      messages: [{ role: 'user', content: 'do both' }],
    });
    let text = '';
    let finish: string | null = null;
    const calls: { id: string; name: string; args: string }[] = [];
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      text += choice?.delta.content ?? '';
      finish = choice?.finish_reason ?? finish;
      for (const delta of choice?.delta.tool_calls ?? []) {
        calls[delta.index] ??= { id: '', name: '', args: '' };
        calls[delta.index]!.id += delta.id ?? '';
        calls[delta.index]!.name += delta.function?.name ?? '';
        calls[delta.index]!.args += delta.function?.arguments ?? '';
      }
    }
    expect(text).toBe('Two lookups.');
    expect(finish).toBe('tool_calls');
    expect(calls.map((call) => ({ ...call, args: JSON.parse(call.args) }))).toEqual([
      { id: 'toolu_a', name: 'lookup', args: { q: 'first', n: 1 } },
      { id: 'toolu_b', name: 'fetch', args: { url: 'https://example.com/a?b=c' } },
    ]);
  });

  it('maps Anthropic errors: 429 keeps Retry-After, overloaded is a 502, a mid-stream error event ends the stream', async () => {
    upstream.enqueue({ error: { status: 429, type: 'rate_limit_error', message: 'slow down', retryAfter: 11 } });
    const limited = await failure(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }));
    expect(limited.status).toBe(429);
    expect(limited.headers?.get('retry-after')).toBe('11');

    upstream.enqueue({ error: { status: 529, type: 'overloaded_error', message: 'Overloaded' } });
    expect((await failure(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }))).status).toBe(502);

    upstream.enqueue({ content: [{ type: 'text', text: 'one two three four' }], streamError: { afterEvents: 5, type: 'overloaded_error', message: 'Overloaded' } });
    const stream = await client.chat.completions.create({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const error = await failure(
      (async () => {
        for await (const chunk of stream) void chunk;
      })(),
    );
    expect(error.message).toMatch(new RegExp(`${MODEL} failed`));
  });

  it('refuses what has no Anthropic equivalent before anything is sent', async () => {
    const cases: [() => Promise<unknown>, RegExp][] = [
      [() => client.chat.completions.create({ model: MODEL, n: 2, messages: [{ role: 'user', content: 'hi' }] }), /n > 1/],
      [() => client.chat.completions.create({ model: MODEL, logprobs: true, messages: [{ role: 'user', content: 'hi' }] }), /logprobs/],
      [
        () =>
          client.chat.completions.create({
            model: MODEL,
            messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }],
          }),
        /audio/,
      ],
      [() => client.completions.create({ model: MODEL, prompt: 'hi' }), /does not support completions/],
      [() => client.embeddings.create({ model: MODEL, input: 'hi' }), /does not support embeddings/],
    ];
    for (const [call, message] of cases) {
      const error = await failure(call());
      expect(error.status).toBe(400);
      expect(error.message).toMatch(message);
    }
    expect(upstream.requests).toEqual([]);
  });
});
