// The OpenAI-compatible endpoints through the official `openai` SDK, against the real app with response
// validation on, backed by the local model and by two real OpenAI-speaking servers on loopback.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer } from '../testing/harness.ts';
import { failure, writeModelsFile, type ModelsFile } from '../testing/models.ts';

const PRIMARY_KEY = 'sk-primary-upstream-secret-0001';
const BACKUP_KEY = 'sk-backup-upstream-secret-0002';

function decodeFloat32(base64: string): number[] {
  const bytes = Buffer.from(base64, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

describe('OpenAI-compatible endpoints', () => {
  let server: TestServer;
  let primary: FakeOpenAI;
  let backup: FakeOpenAI;
  let client: OpenAI;
  let apiKey: string;
  let catalog: ModelsFile;

  beforeAll(async () => {
    primary = await startFakeOpenAI({ apiKey: PRIMARY_KEY });
    backup = await startFakeOpenAI({ apiKey: BACKUP_KEY });
    catalog = writeModelsFile('oaa-models-', {
      providers: [
        { name: 'primary', type: 'openai-compatible', base_url: primary.url, api_key_env: 'PRIMARY_KEY', timeout_seconds: 1 },
        { name: 'backup', type: 'openai-compatible', base_url: backup.url, api_key_env: 'BACKUP_KEY', timeout_seconds: 1 },
      ],
      models: [
        { id: 'gpt-main', provider: 'primary', upstream: 'gpt-4o-mini', capabilities: ['chat', 'completions'], fallbacks: ['gpt-backup'] },
        { id: 'gpt-alone', provider: 'primary', upstream: 'gpt-4o-mini', capabilities: ['chat', 'completions'] },
        { id: 'gpt-backup', provider: 'backup', upstream: 'backup-model', capabilities: ['chat', 'completions'] },
        { id: 'embed-up', provider: 'primary', upstream: 'text-embedding-3-small', capabilities: ['embeddings'] },
      ],
    });
    server = await startTestServer({ env: { MODELS_FILE: catalog.file, PRIMARY_KEY, BACKUP_KEY } });
    ({ apiKey } = await server.signUp());
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });
  });

  afterAll(async () => {
    await server?.close();
    await primary?.close();
    await backup?.close();
    catalog?.remove();
  });

  beforeEach(() => {
    primary.reset();
    backup.reset();
  });

  describe('models', () => {
    it('lists the catalog in OpenAI list shape and gets one model', async () => {
      const page = await client.models.list();
      expect(page.data.map((model) => model.id)).toEqual(['local', 'local-embedding', 'gpt-main', 'gpt-alone', 'gpt-backup', 'embed-up']);
      expect(page.data[2]).toMatchObject({ id: 'gpt-main', object: 'model', owned_by: 'primary' });

      const model = await client.models.retrieve('local-embedding');
      expect(model).toMatchObject({ id: 'local-embedding', object: 'model', owned_by: 'local', capabilities: ['embeddings'] });
    });

    it('answers 404 for an unknown model, and for an agent id without an agent engine', async () => {
      expect((await failure(client.models.retrieve('no-such-model'))).status).toBe(404);
      expect((await failure(client.models.retrieve('agent:agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D'))).status).toBe(404);
    });
  });

  describe('chat completions on the local model', () => {
    it('echoes the user', async () => {
      const completion = await client.chat.completions.create({
        model: 'local',
        messages: [
          { role: 'system', content: 'Be terse.' },
          { role: 'user', content: [{ type: 'text', text: 'Hello there, gateway.' }] },
        ],
      });
      expect(completion.object).toBe('chat.completion');
      expect(completion.model).toBe('local');
      expect(completion.choices[0]!.message.content).toBe('Hello there, gateway.');
      expect(completion.choices[0]!.finish_reason).toBe('stop');
      expect(completion.usage).toMatchObject({ completion_tokens: 5, total_tokens: completion.usage!.prompt_tokens + 5 });
    });

    it('streams token by token, framed as OpenAI frames it, with usage only when asked', async () => {
      const stream = await client.chat.completions.create({ model: 'local', messages: [{ role: 'user', content: 'one two three' }], stream: true });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('one two three');
      expect(chunks.length).toBe(5);
      expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
      expect(chunks.every((chunk) => chunk.usage === undefined)).toBe(true);
      expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);

      const withUsage = await client.chat.completions.create({
        model: 'local',
        messages: [{ role: 'user', content: 'one two three' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      const all = [];
      for await (const chunk of withUsage) all.push(chunk);
      expect(all.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 3 } });
      expect(all.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    });

    it('streams for Accept: text/event-stream, ending with data: [DONE]', async () => {
      const response = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: JSON.stringify({ model: 'local', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const text = await response.text();
      const lines = text.split('\n').filter(Boolean);
      expect(lines.every((line) => line.startsWith('data: '))).toBe(true);
      expect(lines.at(-1)).toBe('data: [DONE]');
      expect(JSON.parse(lines[0]!.slice(6))).toMatchObject({ object: 'chat.completion.chunk', choices: [{ delta: { role: 'assistant' } }] });
    });

    it('calls a tool the user names, and answers a tool result with a sentence containing it', async () => {
      const tools: OpenAI.Chat.ChatCompletionTool[] = [
        { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
        { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
      ];
      const first = await client.chat.completions.create({
        model: 'local',
        tools,
        messages: [{ role: 'user', content: 'Please get_weather for {"city": "Lisbon"}' }],
      });
      const call = first.choices[0]!.message.tool_calls![0]!;
      expect(first.choices[0]!.finish_reason).toBe('tool_calls');
      expect(call.type === 'function' && call.function).toEqual({ name: 'get_weather', arguments: '{"city":"Lisbon"}' });

      const second = await client.chat.completions.create({
        model: 'local',
        tools,
        messages: [
          { role: 'user', content: 'Please get_weather for {"city": "Lisbon"}' },
          first.choices[0]!.message,
          { role: 'tool', tool_call_id: call.id, content: 'sunny, 24°C' },
        ],
      });
      expect(second.choices[0]!.message.content).toContain('sunny, 24°C');
      expect(second.choices[0]!.message.content).toContain('get_weather');
    });

    it('streams a tool call as OpenAI does: id and name first, then the arguments in pieces', async () => {
      const stream = await client.chat.completions.create({
        model: 'local',
        stream: true,
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
        messages: [{ role: 'user', content: 'lookup {"q": "open agents", "limit": 3}' }],
      });
      let name = '';
      let args = '';
      let finish: string | null = null;
      for await (const chunk of stream) {
        for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
          name += call.function?.name ?? '';
          args += call.function?.arguments ?? '';
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect(name).toBe('lookup');
      expect(JSON.parse(args)).toEqual({ q: 'open agents', limit: 3 });
      expect(finish).toBe('tool_calls');
    });

    it('honours n, stop and max_tokens', async () => {
      const many = await client.chat.completions.create({ model: 'local', n: 3, messages: [{ role: 'user', content: 'same answer' }] });
      expect(many.choices.map((choice) => choice.index)).toEqual([0, 1, 2]);
      expect(new Set(many.choices.map((choice) => choice.message.content))).toEqual(new Set(['same answer']));

      const stopped = await client.chat.completions.create({ model: 'local', stop: ['END'], messages: [{ role: 'user', content: 'keep this END drop this' }] });
      expect(stopped.choices[0]!.message.content).toBe('keep this ');

      const short = await client.chat.completions.create({ model: 'local', max_tokens: 2, messages: [{ role: 'user', content: 'one two three four' }] });
      expect(short.choices[0]!.message.content).toBe('one two');
      expect(short.choices[0]!.finish_reason).toBe('length');
    });
  });

  describe('chat completions through an OpenAI-compatible upstream', () => {
    it('passes the OpenAI fields through, with the upstream model id and the upstream key, not the caller’s', async () => {
      const fields = {
        messages: [
          { role: 'developer', content: 'Answer in French.' },
          { role: 'user', content: [{ type: 'text', text: 'Describe' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } }] },
        ],
        temperature: 0.2,
        top_p: 0.9,
        seed: 7,
        user: 'user-42',
        stop: ['\n\n'],
        max_completion_tokens: 50,
        n: 2,
        logprobs: true,
        top_logprobs: 2,
        response_format: { type: 'json_object' },
        tools: [{ type: 'function', function: { name: 'noop', parameters: { type: 'object' } } }],
        tool_choice: 'auto',
        parallel_tool_calls: false,
      } satisfies Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, 'model'>;
      const completion = await client.chat.completions.create({
        model: 'gpt-main',
        ...fields,
        // @ts-expect-error a field this server does not know is accepted and not passed on
        unknown_field: 1,
      });
      expect(completion.model).toBe('gpt-main');
      expect(completion.choices).toHaveLength(2);
      const seen = primary.requests[0]!;
      expect(seen.headers.authorization).toBe(`Bearer ${PRIMARY_KEY}`);
      expect(seen.body).toEqual({ model: 'gpt-4o-mini', ...fields });
    });

    it('relays parallel tool calls and then the tool results', async () => {
      primary.enqueue({ toolCalls: [{ id: 'call_a', name: 'weather', arguments: { city: 'Oslo' } }, { id: 'call_b', name: 'weather', arguments: { city: 'Rome' } }] });
      const first = await client.chat.completions.create({
        model: 'gpt-alone',
        messages: [{ role: 'user', content: 'Weather in Oslo and Rome?' }],
        tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      });
      const calls = first.choices[0]!.message.tool_calls!;
      expect(calls.map((call) => call.id)).toEqual(['call_a', 'call_b']);
      expect(first.choices[0]!.finish_reason).toBe('tool_calls');

      primary.enqueue({ text: 'Oslo is cold, Rome is warm.' });
      const second = await client.chat.completions.create({
        model: 'gpt-alone',
        messages: [
          { role: 'user', content: 'Weather in Oslo and Rome?' },
          first.choices[0]!.message,
          { role: 'tool', tool_call_id: 'call_a', content: '2°C' },
          { role: 'tool', tool_call_id: 'call_b', content: '25°C' },
        ],
      });
      expect(second.choices[0]!.message.content).toBe('Oslo is cold, Rome is warm.');
      const sent = primary.requests[1]!.body!.messages as { role: string; tool_call_id?: string }[];
      expect(sent.map((message) => message.tool_call_id ?? message.role)).toEqual(['user', 'assistant', 'call_a', 'call_b']);
    });

    it('streams parallel tool calls with their indexes', async () => {
      primary.enqueue({ toolCalls: [{ id: 'call_1', name: 'a', arguments: { x: 1 } }, { id: 'call_2', name: 'b', arguments: { y: 'two' } }] });
      const stream = await client.chat.completions.create({
        model: 'gpt-alone',
        stream: true,
        messages: [{ role: 'user', content: 'go' }],
        tools: [
          { type: 'function', function: { name: 'a', parameters: { type: 'object' } } },
          { type: 'function', function: { name: 'b', parameters: { type: 'object' } } },
        ],
      });
      const calls: { id: string; name: string; args: string }[] = [];
      for await (const chunk of stream) {
        for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
          calls[delta.index] ??= { id: '', name: '', args: '' };
          calls[delta.index]!.id += delta.id ?? '';
          calls[delta.index]!.name += delta.function?.name ?? '';
          calls[delta.index]!.args += delta.function?.arguments ?? '';
        }
      }
      expect(calls).toEqual([
        { id: 'call_1', name: 'a', args: '{"x":1}' },
        { id: 'call_2', name: 'b', args: '{"y":"two"}' },
      ]);
      expect(primary.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    });

    it('ends a stream that breaks midway with the error envelope, which the SDK raises', async () => {
      // The gap lets the first chunks reach the client before the cut; fetch drops chunks queued with an error.
      primary.enqueue({ text: 'one two three four five six', dropAfterChunks: 3, chunkGapMs: 100 });
      const stream = await client.chat.completions.create({ model: 'gpt-main', stream: true, messages: [{ role: 'user', content: 'count' }] });
      let text = '';
      const error = await failure(
        (async () => {
          for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        })(),
      );
      expect(text).toBe('one two');
      expect(error.message).toMatch(/gpt-main failed/);
      // Once a stream has begun, a fallback cannot take over.
      expect(backup.requests).toHaveLength(0);
    });

    it('times a stream out by its silence, not by its length', async () => {
      const read = async (stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>, into: { text: string }) => {
        for await (const chunk of stream) into.text += chunk.choices[0]?.delta.content ?? '';
      };
      const ask = () => client.chat.completions.create({ model: 'gpt-alone', stream: true, messages: [{ role: 'user', content: 'count' }] });
      // The provider's timeout is 1 s: six chunks 300 ms apart take longer, but each starts the wait again.
      primary.enqueue({ text: 'one two three four five six', chunkGapMs: 300 });
      const talking = { text: '' };
      await read(await ask(), talking);
      expect(talking.text).toBe('one two three four five six');

      // One silence longer than the timeout ends the stream with it, and abandons the upstream call. The
      // stream had begun (the fake sends its role chunk at once, then waits before each word), so the
      // error comes inside it, with no word before it.
      primary.enqueue({ text: 'one two three', chunkGapMs: 1_500 });
      const silent = { text: '' };
      const error = await failure(read(await ask(), silent));
      expect(error.message).toBe('The model gpt-alone did not answer in time.');
      expect(silent.text).toBe('');
      expect(await primary.requests.at(-1)!.outcome).toBe('aborted');
    });
  });

  describe('legacy completions', () => {
    it('serves them from the local chat model, with echo, n and OpenAI’s default of 16 tokens', async () => {
      const completion = await client.completions.create({ model: 'local', prompt: ['alpha beta', 'gamma'], n: 2, echo: true });
      expect(completion.object).toBe('text_completion');
      expect(completion.choices.map((choice) => [choice.index, choice.text])).toEqual([
        [0, 'alpha betaalpha beta'],
        [1, 'alpha betaalpha beta'],
        [2, 'gammagamma'],
        [3, 'gammagamma'],
      ]);
      const long = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
      const limited = await client.completions.create({ model: 'local', prompt: long });
      expect(limited.choices[0]!.text.split(' ')).toHaveLength(16);
      expect(limited.choices[0]!.finish_reason).toBe('length');
    });

    it('streams them, with usage when asked', async () => {
      const stream = await client.completions.create({ model: 'local', prompt: 'red green blue', stream: true, stream_options: { include_usage: true } });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks.map((chunk) => chunk.choices[0]?.text ?? '').join('')).toBe('red green blue');
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 3 } });
    });

    it('passes them through to an upstream that has them', async () => {
      primary.enqueue({ text: 'there was a gateway' });
      const completion = await client.completions.create({ model: 'gpt-alone', prompt: 'Once upon a time', max_tokens: 5, suffix: '.' });
      expect(completion.choices[0]!.text).toBe('there was a gateway');
      expect(completion.model).toBe('gpt-alone');
      expect(primary.requests[0]).toMatchObject({ path: '/v1/completions', body: { model: 'gpt-4o-mini', prompt: 'Once upon a time', max_tokens: 5, suffix: '.' } });

      const stream = await client.completions.create({ model: 'gpt-alone', prompt: 'Stream me', stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
      expect(text).toBe('Completion of: Stream me');
    });

    it('refuses what only native completions can do on the local model', async () => {
      const error = await failure(client.completions.create({ model: 'local', prompt: 'x', suffix: 'y' }));
      expect(error.status).toBe(400);
      expect(error.message).toMatch(/suffix/);
    });
  });

  describe('embeddings', () => {
    it('embeds a string or a batch, as floats or as base64 little-endian float32', async () => {
      const floats = await client.embeddings.create({ model: 'local-embedding', input: ['the cat sat', 'the cat sat down'], encoding_format: 'float' });
      expect(floats.data.map((item) => item.index)).toEqual([0, 1]);
      expect(floats.data[0]!.embedding).toHaveLength(256);
      expect(floats.usage).toEqual({ prompt_tokens: 7, total_tokens: 7 });

      const raw = (await fetch(`${server.url}/v1/embeddings`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'local-embedding', input: 'the cat sat', encoding_format: 'base64' }),
      }).then((response) => response.json())) as { data: { embedding: string }[] };
      const decoded = decodeFloat32(raw.data[0]!.embedding);
      expect(decoded).toEqual(floats.data[0]!.embedding.map((value) => Math.fround(value)));

      // The SDK asks for base64 by default and decodes it itself.
      const viaSdk = await client.embeddings.create({ model: 'local-embedding', input: 'the cat sat' });
      expect(viaSdk.data[0]!.embedding).toEqual(decoded);
    });

    it('honours dimensions, and passes embeddings through to an upstream', async () => {
      const short = await client.embeddings.create({ model: 'local-embedding', input: 'short vector', dimensions: 32, encoding_format: 'float' });
      expect(short.data[0]!.embedding).toHaveLength(32);
      expect(Math.hypot(...short.data[0]!.embedding)).toBeCloseTo(1, 5);

      const upstream = await client.embeddings.create({ model: 'embed-up', input: ['a b c', 'd e'], dimensions: 12 });
      expect(upstream.model).toBe('embed-up');
      expect(upstream.data.map((item) => item.embedding.length)).toEqual([12, 12]);
      expect(upstream.usage.prompt_tokens).toBe(5);
      expect(primary.requests[0]!.body).toMatchObject({ model: 'text-embedding-3-small', input: ['a b c', 'd e'], dimensions: 12 });
    });
  });

  describe('bad input never reaches the upstream', () => {
    it('answers an unknown model with 404', async () => {
      for (const call of [
        () => client.chat.completions.create({ model: 'gpt-nope', messages: [{ role: 'user', content: 'x' }] }),
        () => client.completions.create({ model: 'gpt-nope', prompt: 'x' }),
        () => client.embeddings.create({ model: 'gpt-nope', input: 'x' }),
      ]) {
        const error = await failure(call());
        expect(error.status).toBe(404);
        expect(error.error).toMatchObject({ code: 'not_found' });
      }
    });

    it('answers wrong types, empty messages and a wrong capability with 400', async () => {
      const cases: unknown[] = [
        { model: 'gpt-main', messages: 'hello' },
        { model: 'gpt-main', messages: [] },
        { model: 'gpt-main', messages: [{ role: 'user', content: 'x' }], temperature: 'hot' },
        { model: 'gpt-main', messages: [{ role: 'wizard', content: 'x' }] },
        { model: 'embed-up', messages: [{ role: 'user', content: 'x' }] },
      ];
      for (const body of cases) {
        const error = await failure(client.chat.completions.create(body as never));
        expect(error.status).toBe(400);
        expect(['validation_error', 'invalid_request']).toContain((error.error as { code: string }).code);
      }
      expect((await failure(client.embeddings.create({ model: 'gpt-main', input: 'x' }))).status).toBe(400);
      expect(primary.requests).toHaveLength(0);
    });

    it('refuses a tool message without a matching call', async () => {
      const error = await failure(
        client.chat.completions.create({
          model: 'gpt-main',
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
            { role: 'tool', tool_call_id: 'call_2', content: 'result' },
          ],
        }),
      );
      expect(error.status).toBe(400);
      expect(error.error).toMatchObject({ code: 'invalid_request', details: [{ path: '/body/messages/2/tool_call_id' }] });

      const orphan = await failure(client.chat.completions.create({ model: 'gpt-main', messages: [{ role: 'tool', tool_call_id: 'call_1', content: 'result' }] }));
      expect(orphan.status).toBe(400);
      expect(primary.requests).toHaveLength(0);
    });
  });

  describe('upstream failures', () => {
    it('falls through to the fallback on 429, 5xx and timeouts', async () => {
      for (const trouble of [{ error: { status: 429, retryAfter: 3 } }, { error: { status: 503 } }, { hang: true as const }]) {
        primary.reset();
        backup.reset();
        primary.enqueue(trouble);
        backup.enqueue({ text: 'the backup answered' });
        const completion = await client.chat.completions.create({ model: 'gpt-main', messages: [{ role: 'user', content: 'hi' }] });
        expect(completion.choices[0]!.message.content).toBe('the backup answered');
        expect(completion.model).toBe('gpt-backup');
        expect(backup.requests[0]!.body).toMatchObject({ model: 'backup-model' });
        expect(backup.requests[0]!.headers.authorization).toBe(`Bearer ${BACKUP_KEY}`);
      }
    });

    it('falls through before the first chunk of a stream', async () => {
      primary.enqueue({ error: { status: 500 } });
      backup.enqueue({ text: 'streamed by the backup' });
      const stream = await client.chat.completions.create({ model: 'gpt-main', stream: true, messages: [{ role: 'user', content: 'hi' }] });
      let text = '';
      const models = new Set<string>();
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        models.add(chunk.model);
      }
      expect(text).toBe('streamed by the backup');
      expect([...models]).toEqual(['gpt-backup']);
    });

    it('keeps Retry-After on a 429 with no fallback left, also for streams', async () => {
      primary.enqueue({ error: { status: 429, retryAfter: 7, message: 'slow down' } });
      const error = await failure(client.chat.completions.create({ model: 'gpt-alone', messages: [{ role: 'user', content: 'hi' }] }));
      expect(error.status).toBe(429);
      expect(error.headers?.get('retry-after')).toBe('7');
      expect(error.error).toMatchObject({ code: 'rate_limited' });

      primary.enqueue({ error: { status: 429, retryAfter: 9 } });
      const streamed = await failure(client.chat.completions.create({ model: 'gpt-alone', stream: true, messages: [{ role: 'user', content: 'hi' }] }));
      expect(streamed.status).toBe(429);
      expect(streamed.headers?.get('retry-after')).toBe('9');
    });

    it('maps what is left: 5xx to 502, a hang to 504, an upstream 400 to 400', async () => {
      primary.enqueue({ error: { status: 500 } });
      backup.enqueue({ error: { status: 503 } });
      const failed = await failure(client.chat.completions.create({ model: 'gpt-main', messages: [{ role: 'user', content: 'hi' }] }));
      expect(failed.status).toBe(502);
      expect(failed.error).toMatchObject({ code: 'upstream_error' });
      backup.reset();

      primary.enqueue({ hang: true });
      const timeout = await failure(client.chat.completions.create({ model: 'gpt-alone', messages: [{ role: 'user', content: 'hi' }] }));
      expect(timeout.status).toBe(504);
      expect(timeout.error).toMatchObject({ code: 'upstream_timeout' });
      // The timed-out upstream call is abandoned, not left running.
      expect(await primary.requests.at(-1)!.outcome).toBe('aborted');

      primary.enqueue({ error: { status: 400, message: 'context too long' } });
      const refused = await failure(client.chat.completions.create({ model: 'gpt-main', messages: [{ role: 'user', content: 'hi' }] }));
      expect(refused.status).toBe(400);
      expect(refused.message).toMatch(/context too long/);
      expect(backup.requests).toHaveLength(0);
    });

    it('aborts the upstream call when the client goes away, streaming or not', async () => {
      primary.enqueue({ hang: true });
      const controller = new AbortController();
      const pending = client.chat.completions.create({ model: 'gpt-alone', messages: [{ role: 'user', content: 'hi' }] }, { signal: controller.signal });
      const upstream = await primary.waitForRequest(1);
      controller.abort();
      await expect(pending).rejects.toThrow();
      expect(await upstream.outcome).toBe('aborted');

      primary.enqueue({ text: Array.from({ length: 200 }, (_, i) => `word${i}`).join(' '), chunkGapMs: 20 });
      const stream = await client.chat.completions.create({ model: 'gpt-alone', stream: true, messages: [{ role: 'user', content: 'long' }] });
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) break;
      }
      expect(await primary.requests[1]!.outcome).toBe('aborted');
    });
  });
});
