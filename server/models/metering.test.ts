// Usage metering of the model endpoints on both engines: every call counted with the tokens the model
// reported, per user, API key, model and kind; and no credential, ours or the upstream's, in a log or a response.
import { Writable } from 'node:stream';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getUser } from '../identity/users.ts';
import { createLogger } from '../logger.ts';
import { availableEngines } from '../testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer } from '../testing/harness.ts';
import { writeModelsFile, type ModelsFile } from '../testing/models.ts';

interface UsageRow {
  user_id: string;
  api_key_id: string | null;
  model: string;
  kind: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

const UPSTREAM_KEY = 'sk-upstream-metering-secret-4242';

describe.each(await availableEngines())('usage metering on %s', (engine) => {
  let server: TestServer;
  let upstream: FakeOpenAI;
  let catalog: ModelsFile;

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ apiKey: UPSTREAM_KEY });
    catalog = writeModelsFile('oaa-metering-', {
      providers: [{ name: 'up', type: 'openai-compatible', base_url: upstream.url, api_key_env: 'UPSTREAM_KEY' }],
      models: [{ id: 'remote', provider: 'up', upstream: 'gpt-x', capabilities: ['chat', 'completions'] }],
    });
    server = await startTestServer({ engine, env: { MODELS_FILE: catalog.file, UPSTREAM_KEY } });
  });

  afterAll(async () => {
    await server?.close();
    await upstream?.close();
    catalog?.remove();
  });

  // Usage is stored just after the answer goes out; flushing waits for what is on its way. Calls that
  // reach one write share a row, so the rows are summed per API key, model and kind here.
  const rowsOf = async (userId: string) => {
    await server.services.usage.flush();
    return server.services.db.query<UsageRow>(
      `SELECT user_id, api_key_id, model, kind, sum(requests)::int AS requests, sum(prompt_tokens)::int AS prompt_tokens,
              sum(completion_tokens)::int AS completion_tokens, sum(total_tokens)::int AS total_tokens
       FROM usage_records WHERE user_id = $1 GROUP BY user_id, api_key_id, model, kind ORDER BY min(id)`,
      [userId],
    );
  };

  it('records every call with its tokens per user, API key and model', async () => {
    const alice = await server.signUp();
    const aliceSecondKey = await server.services.apiKeys.create(alice.userId, { name: 'second' });
    const bob = await server.signUp();
    const aliceClient = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: alice.apiKey, maxRetries: 0 });
    const aliceSecond = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: aliceSecondKey.secret, maxRetries: 0 });
    const bobClient = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: bob.apiKey, maxRetries: 0 });
    const user = await getUser(server.services.db, alice.userId);
    const session = await server.services.sessions.issue(user!, 'magic_link', false);
    const aliceSession = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: session.access_token, maxRetries: 0 });
    const [firstKey] = (await server.services.apiKeys.list(alice.userId, {})).data.filter((key) => key.id !== aliceSecondKey.id);

    const chat = await aliceClient.chat.completions.create({ model: 'local', messages: [{ role: 'user', content: 'count these four words' }] });
    const stream = await aliceClient.chat.completions.create({ model: 'local', stream: true, messages: [{ role: 'user', content: 'streamed without usage' }] });
    for await (const chunk of stream) void chunk;
    const embedding = await aliceSecond.embeddings.create({ model: 'local-embedding', input: ['first text', 'second text here'] });
    const legacy = await bobClient.completions.create({ model: 'remote', prompt: 'tell me a story' });
    const viaSession = await aliceSession.chat.completions.create({ model: 'remote', messages: [{ role: 'user', content: 'by session' }] });

    expect(await rowsOf(alice.userId)).toEqual([
      // The chat and the stream (4 prompt tokens, 3 completion tokens).
      { user_id: alice.userId, api_key_id: firstKey!.id, model: 'local', kind: 'chat', requests: 2, prompt_tokens: chat.usage!.prompt_tokens + 4, completion_tokens: 4 + 3, total_tokens: chat.usage!.total_tokens + 7 },
      { user_id: alice.userId, api_key_id: aliceSecondKey.id, model: 'local-embedding', kind: 'embedding', requests: 1, prompt_tokens: embedding.usage.prompt_tokens, completion_tokens: 0, total_tokens: embedding.usage.prompt_tokens },
      { user_id: alice.userId, api_key_id: null, model: 'remote', kind: 'chat', requests: 1, prompt_tokens: viaSession.usage!.prompt_tokens, completion_tokens: viaSession.usage!.completion_tokens, total_tokens: viaSession.usage!.total_tokens },
    ]);
    const bobKey = (await server.services.apiKeys.list(bob.userId, {})).data[0]!;
    expect(await rowsOf(bob.userId)).toEqual([
      { user_id: bob.userId, api_key_id: bobKey.id, model: 'remote', kind: 'completion', requests: 1, prompt_tokens: 4, completion_tokens: legacy.usage!.completion_tokens, total_tokens: 4 + legacy.usage!.completion_tokens },
    ]);
    const aliceTotal = (await rowsOf(alice.userId)).reduce((sum, row) => sum + row.total_tokens, 0);
    const [monthly] = await server.services.db.query<{ requests: number; tokens: number }>('SELECT requests, tokens FROM usage_monthly WHERE user_id = $1', [alice.userId]);
    expect(monthly).toEqual({ requests: 4, tokens: aliceTotal });
    expect(await server.services.usage.tokensThisMonth(alice.userId)).toBe(aliceTotal);
  });

  it('meters what a stream produced when the client leaves early, and nothing for a failed call', async () => {
    const carol = await server.signUp();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: carol.apiKey, maxRetries: 0 });
    upstream.enqueue({ text: Array.from({ length: 100 }, (_, i) => `w${i}`).join(' '), chunkGapMs: 10 });
    const stream = await client.chat.completions.create({ model: 'remote', stream: true, messages: [{ role: 'user', content: 'go on' }] });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) break;
    }
    const upstreamCall = upstream.requests.at(-1)!;
    expect(await upstreamCall.outcome).toBe('aborted');

    upstream.enqueue({ error: { status: 500 } });
    await expect(client.chat.completions.create({ model: 'remote', messages: [{ role: 'user', content: 'fail' }] })).rejects.toBeInstanceOf(APIError);

    // The record is written as the stream winds down, after the client has gone.
    let rows: UsageRow[] = [];
    for (let attempt = 0; attempt < 50 && rows.length === 0; attempt++) {
      rows = await rowsOf(carol.userId);
      if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ model: 'remote', kind: 'chat', requests: 1, prompt_tokens: 3 });
    expect(rows[0]!.completion_tokens).toBeGreaterThan(0);
    expect(rows[0]!.completion_tokens).toBeLessThan(100);
  });
});

describe('secrets', () => {
  const RIGHT_KEY = 'sk-right-upstream-key-7f3a9c';
  const WRONG_KEY = 'sk-wrong-upstream-key-1b2d4e';
  let upstream: FakeOpenAI;
  let server: TestServer;
  let catalog: ModelsFile;
  const lines: string[] = [];

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ apiKey: RIGHT_KEY, models: ['gpt-x'] });
    catalog = writeModelsFile('oaa-secrets-', {
      providers: [
        { name: 'good', type: 'openai-compatible', base_url: upstream.url, api_key_env: 'GOOD_KEY', discover: true },
        { name: 'bad', type: 'openai-compatible', base_url: upstream.url, api_key_env: 'BAD_KEY', discover: true },
      ],
      models: [
        { id: 'good-model', provider: 'good', upstream: 'gpt-x' },
        { id: 'bad-model', provider: 'bad', upstream: 'gpt-x' },
      ],
    });
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    server = await startTestServer({ env: { MODELS_FILE: catalog.file, GOOD_KEY: RIGHT_KEY, BAD_KEY: WRONG_KEY }, logger: createLogger('debug', sink) });
  });

  afterAll(async () => {
    await server?.close();
    await upstream?.close();
    catalog?.remove();
  });

  it('never puts a key in a log line or a response, even when the upstream echoes it', async () => {
    const { apiKey } = await server.signUp();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });
    const bodies: string[] = [];

    const ok = await client.chat.completions.create({ model: 'good-model', messages: [{ role: 'user', content: 'hi' }] });
    bodies.push(JSON.stringify(ok));

    // The upstream answers 401 with the key it was given in the message, as OpenAI does (partly masked).
    const rejected = await client.chat.completions.create({ model: 'bad-model', messages: [{ role: 'user', content: 'hi' }] }).catch((error: APIError) => error);
    expect(rejected).toBeInstanceOf(APIError);
    expect((rejected as APIError).status).toBe(502);
    bodies.push(JSON.stringify((rejected as APIError).error), (rejected as APIError).message);

    upstream.enqueue({ error: { status: 400, message: `request with key ${RIGHT_KEY} is too long` } });
    const refused = await client.chat.completions.create({ model: 'good-model', messages: [{ role: 'user', content: 'hi' }] }).catch((error: APIError) => error);
    expect((refused as APIError).status).toBe(400);
    expect((refused as APIError).message).toContain('[redacted]');
    bodies.push(JSON.stringify((refused as APIError).error));

    // The upstream really did receive the keys, so their absence below means something.
    expect(upstream.requests.some((request) => request.headers.authorization === `Bearer ${WRONG_KEY}`)).toBe(true);
    const log = lines.join('');
    expect(log).toContain('request completed');
    expect(log).toContain('could not list the upstream models');
    for (const secret of [RIGHT_KEY, WRONG_KEY, apiKey]) {
      expect(log).not.toContain(secret);
      for (const body of bodies) expect(body).not.toContain(secret);
    }
  });
});
