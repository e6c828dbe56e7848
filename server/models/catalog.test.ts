// The model catalog as an operator configures it: MODELS_FILE with fallbacks, clear errors for a bad file,
// and OPENAI_BASE_URL alone discovering what the upstream serves.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, loadConfig } from '../config.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer } from '../testing/harness.ts';

describe('model catalog', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'oaa-catalog-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const writeCatalog = (name: string, content: unknown) => {
    const file = path.join(dir, name);
    writeFileSync(file, typeof content === 'string' ? content : stringify(content));
    return file;
  };

  it('loads MODELS_FILE: providers, models with fallbacks, defaults, and the local models', () => {
    const file = writeCatalog('good.yaml', {
      providers: [
        { name: 'openai', type: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1', api_key_env: 'MY_OPENAI_KEY', timeout_seconds: 5 },
        { name: 'claude', type: 'anthropic', api_key_env: 'MY_ANTHROPIC_KEY' },
      ],
      models: [
        { id: 'smart', provider: 'openai', upstream: 'gpt-4o', fallbacks: ['careful', 'local'] },
        { id: 'careful', provider: 'claude', upstream: 'claude-sonnet-5' },
        { id: 'vectors', provider: 'openai', upstream: 'text-embedding-3-small', capabilities: ['embeddings'], dimensions: 1536 },
      ],
      defaults: { chat: 'smart', embeddings: 'vectors' },
    });
    const { models } = loadConfig({ MODELS_FILE: file, MY_OPENAI_KEY: 'sk-1', MY_ANTHROPIC_KEY: 'sk-2', MODEL_TIMEOUT_SECONDS: '30' });
    expect(models.providers).toEqual([
      { name: 'local', type: 'local', timeoutMs: 60_000, discover: false, tokenDelayMs: 0 },
      { name: 'openai', type: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-1', timeoutMs: 5000, discover: false },
      { name: 'claude', type: 'anthropic', apiKey: 'sk-2', timeoutMs: 30_000, discover: false },
    ]);
    expect(models.models.map((model) => [model.id, model.fallbacks])).toEqual([
      ['local', []],
      ['local-embedding', []],
      ['smart', ['careful', 'local']],
      ['careful', []],
      ['vectors', []],
    ]);
    expect(models.defaults).toEqual({ chat: 'smart', embeddings: 'vectors' });
  });

  it('refuses a bad catalog at start-up with a message that says what and where', () => {
    const cases: [unknown, Record<string, string>, RegExp][] = [
      ['providers: [unclosed', {}, /MODELS_FILE .* cannot be read/],
      [{ providers: [{ name: 'x', type: 'grpc' }] }, {}, /providers\[0\]\.type: must be openai-compatible, anthropic or local/],
      [{ providers: [{ name: 'x', type: 'openai-compatible', api_key_env: 'MISSING_KEY' }] }, {}, /providers\[0\]\.api_key_env: names MISSING_KEY, which is not set/],
      [{ providers: [{ name: 'c', type: 'anthropic' }] }, {}, /providers\[0\]\.api_key_env: is required for an anthropic provider/],
      [{ models: [{ id: 'a', provider: 'nowhere' }] }, {}, /model a: names the unknown provider nowhere/],
      [{ models: [{ id: 'a', provider: 'local', fallbacks: ['ghost'] }] }, {}, /model a: falls back to the unknown model ghost/],
      [{ models: [{ id: 'a', provider: 'local', capabilities: ['dreams'] }] }, {}, /models\[0\]\.capabilities: must list some of chat, completions, embeddings/],
      [
        { providers: [{ name: 'c', type: 'anthropic', api_key_env: 'K' }], models: [{ id: 'e', provider: 'c', capabilities: ['embeddings'] }] },
        { K: 'sk' },
        /model e: is served by an anthropic provider, which offers chat only/,
      ],
      [{ defaults: { chat: 'local-embedding' } }, {}, /defaults\.chat: local-embedding is not a chat model/],
    ];
    for (const [content, env, message] of cases) {
      const file = writeCatalog('bad.yaml', content);
      let error: unknown;
      try {
        loadConfig({ MODELS_FILE: file, ...env });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/^the model catalog is invalid: /);
      expect((error as Error).message).toMatch(message);
    }
    expect(() => loadConfig({ MODELS_FILE: path.join(dir, 'missing.yaml') })).toThrow(/cannot be read/);
    expect(() => loadConfig({ MODEL_TIMEOUT_SECONDS: 'soon' })).toThrow(/MODEL_TIMEOUT_SECONDS must be an integer/);
  });

  describe('OPENAI_BASE_URL alone', () => {
    let upstream: FakeOpenAI;
    beforeAll(async () => {
      upstream = await startFakeOpenAI({ models: ['llama-3.1-8b', 'nomic-embed-text'] });
    });
    afterAll(() => upstream?.close());

    it('discovers the upstream models, and sends no Authorization to a keyless upstream', async () => {
      const server = await startTestServer({ env: { OPENAI_BASE_URL: upstream.url } });
      try {
        const { apiKey } = await server.signUp();
        const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });
        const models = await client.models.list();
        expect(models.data.map((model) => [model.id, model.owned_by, (model as { capabilities?: string[] }).capabilities])).toEqual([
          ['local', 'local', ['chat', 'completions']],
          ['local-embedding', 'local', ['embeddings']],
          ['llama-3.1-8b', 'openai', ['chat', 'completions']],
          ['nomic-embed-text', 'openai', ['embeddings']],
        ]);
        const completion = await client.chat.completions.create({ model: 'llama-3.1-8b', messages: [{ role: 'user', content: 'ping' }] });
        expect(completion.choices[0]!.message.content).toBe('You said: ping');
        const chat = upstream.requests.find((request) => request.path === '/v1/chat/completions')!;
        expect(chat.body).toMatchObject({ model: 'llama-3.1-8b' });
        expect(chat.headers.authorization).toBeUndefined();
      } finally {
        await server.close();
      }
    });
  });
});
