// Upstream answers that are not what was asked for: 200 with HTML, 200 with an empty body, JSON of the
// wrong shape, an event stream carrying an error to a plain call, a stream whose event is not a chunk.
// Each is the upstream failing: 502 with the envelope when nothing is left to try, and the fallback list
// like a 5xx otherwise, for chat (plain and streamed), legacy completions, embeddings and agent runs.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import { startFakeOpenAI, type FakeOpenAI, type FakeOpenAIReply } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { writeModelsFile, type ModelsFile } from '../testing/models.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

type RunEvent = components['schemas']['RunEvent'];

const BAD_ANSWERS: [string, FakeOpenAIReply][] = [
  ['200 with HTML', { raw: { contentType: 'text/html; charset=utf-8', body: '<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>' } }],
  ['200 with an empty body', { raw: { contentType: 'application/json', body: '' } }],
  ['200 with JSON of the wrong shape', { raw: { contentType: 'application/json', body: '{"result":"ok","choices":null,"data":"none"}' } }],
  [
    '200 with an event stream carrying an error',
    { raw: { contentType: 'text/event-stream', body: 'data: {"error":{"message":"The server had an error","type":"server_error"}}\n\n' } },
  ],
];

/** A stream whose first event is JSON but not a chunk. */
const BAD_CHUNK: FakeOpenAIReply = { raw: { contentType: 'text/event-stream', body: 'data: {"object":"nothing"}\n\ndata: [DONE]\n\n' } };

describe('upstream answers that are not what they should be', () => {
  let primary: FakeOpenAI;
  let backup: FakeOpenAI;
  let catalog: ModelsFile;
  let server: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    primary = await startFakeOpenAI();
    backup = await startFakeOpenAI();
    catalog = writeModelsFile('oaa-malformed-', {
      providers: [
        { name: 'primary', type: 'openai-compatible', base_url: primary.url, timeout_seconds: 5 },
        { name: 'backup', type: 'openai-compatible', base_url: backup.url, timeout_seconds: 5 },
      ],
      models: [
        { id: 'gpt-main', provider: 'primary', upstream: 'main', capabilities: ['chat', 'completions'], fallbacks: ['gpt-backup'] },
        { id: 'gpt-alone', provider: 'primary', upstream: 'main', capabilities: ['chat', 'completions'] },
        { id: 'gpt-backup', provider: 'backup', upstream: 'spare', capabilities: ['chat', 'completions'] },
        { id: 'embed-main', provider: 'primary', upstream: 'emb', capabilities: ['embeddings'], fallbacks: ['embed-backup'] },
        { id: 'embed-alone', provider: 'primary', upstream: 'emb', capabilities: ['embeddings'] },
        { id: 'embed-backup', provider: 'backup', upstream: 'emb-spare', capabilities: ['embeddings'] },
      ],
    });
    server = await startTestServer({ env: { ...unlimitedPlanEnv(), MODELS_FILE: catalog.file } });
    user = await server.signUp();
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

  const post = (path: string, body: Record<string, unknown>, accept = 'application/json') =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}`, 'Content-Type': 'application/json', Accept: accept },
      body: JSON.stringify(body),
    });

  const expectBadGateway = async (response: Response) => {
    const text = await response.text();
    expect(response.status, text).toBe(502);
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'upstream_error', type: 'server_error' } });
  };

  const chat = (model: string, stream = false) => post('/v1/chat/completions', { model, stream, messages: [{ role: 'user', content: 'hello there' }] });
  const complete = (model: string, stream = false) => post('/v1/completions', { model, stream, prompt: 'say something' });
  const embed = (model: string) => post('/v1/embeddings', { model, input: ['one', 'two'] });

  const streamedText = async (response: Response) => {
    expect(response.status).toBe(200);
    let text = '';
    for await (const frame of readEventStream<{ choices: { delta?: { content?: string }; text?: string }[] }>(response.body!)) {
      for (const choice of frame.data.choices ?? []) text += choice.delta?.content ?? choice.text ?? '';
    }
    return text;
  };

  describe.each(BAD_ANSWERS)('%s', (_name, bad) => {
    it('is a 502 with the envelope for chat, streamed chat, completions and embeddings when no fallback is left', async () => {
      for (const call of [() => chat('gpt-alone'), () => chat('gpt-alone', true), () => complete('gpt-alone'), () => complete('gpt-alone', true), () => embed('embed-alone')]) {
        primary.enqueue(bad);
        await expectBadGateway(await call());
      }
      expect(primary.requests).toHaveLength(5);
      expect(backup.requests).toHaveLength(0);
    });

    it('goes on to the fallback, as a 5xx does', async () => {
      primary.enqueue(bad, bad, bad, bad, bad);
      const answer = await chat('gpt-main');
      expect(answer.status).toBe(200);
      expect(await answer.json()).toMatchObject({ model: 'gpt-backup', choices: [{ message: { content: 'You said: hello there' } }] });
      expect(await streamedText(await chat('gpt-main', true))).toBe('You said: hello there');
      const completion = await complete('gpt-main');
      expect(completion.status).toBe(200);
      expect(await completion.json()).toMatchObject({ model: 'gpt-backup', choices: [{ text: 'Completion of: say something' }] });
      expect(await streamedText(await complete('gpt-main', true))).toBe('Completion of: say something');
      const embeddings = await embed('embed-main');
      expect(embeddings.status).toBe(200);
      expect(await embeddings.json()).toMatchObject({ model: 'embed-backup', data: [{ index: 0 }, { index: 1 }] });
      expect(primary.requests).toHaveLength(5);
      expect(backup.requests).toHaveLength(5);
    });

    it('fails an agent run with upstream_error, or completes it on the fallback', async () => {
      const alone = (await user.client.POST('/v1/agents', { body: { name: 'Alone', model: 'gpt-alone' } })).data!;
      const backed = (await user.client.POST('/v1/agents', { body: { name: 'Backed', model: 'gpt-main' } })).data!;
      const run = async (agentId: string) => {
        const response = await post(`/v1/agents/${agentId}/chat`, { messages: [{ role: 'user', content: 'hello there' }] }, 'text/event-stream');
        const events: RunEvent[] = [];
        for await (const frame of readEventStream<RunEvent>(response.body!)) events.push(frame.data);
        return events;
      };
      primary.enqueue(bad);
      expect((await run(alone.id)).at(-1)).toMatchObject({ type: 'RunError', status: 'failed', error: { code: 'upstream_error' } });
      primary.enqueue(bad);
      expect((await run(backed.id)).at(-1)).toMatchObject({ type: 'RunCompleted', status: 'completed', message: { content: 'You said: hello there' } });
    });
  });

  it('treats a stream event that is not a chunk as the upstream failing', async () => {
    primary.enqueue(BAD_CHUNK);
    await expectBadGateway(await chat('gpt-alone', true));
    primary.enqueue(BAD_CHUNK);
    expect(await streamedText(await chat('gpt-main', true))).toBe('You said: hello there');
  });
});
