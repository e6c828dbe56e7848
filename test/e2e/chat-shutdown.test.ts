// SIGTERM while /v1/chat/completions and /v1/completions streams are open, on the real server process:
// each stream ends with an OpenAI-style error event (which the official SDK raises) before its connection
// closes, never with `[DONE]` or a `stop` finish reason for an answer that was cut, and the process exits 0.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI, { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { startFakeOpenAI } from '../../server/testing/fake-openai.ts';
import { unlimitedPlanEnv } from '../../server/testing/plans.ts';
import { runScript, teardownAfterAll } from './server-process.ts';
import { headersFor } from './workload.ts';

const LONG_ANSWER = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');

/** Reads a stream's raw `data:` payloads until the connection closes; resolves once `count` content payloads arrived. */
function readRaw(response: Response, count: number) {
  const payloads: string[] = [];
  let arrived: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (arrived = resolve));
  const closed = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(bytes, { stream: true });
      const events = buffer.split('\n\n');
      buffer = events.pop()!;
      for (const event of events) {
        const data = event
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice(6))
          .join('\n');
        if (data) payloads.push(data);
      }
      if (payloads.length >= count) arrived();
    }
    return payloads;
  })();
  return { started, closed };
}

describe('SIGTERM with OpenAI-style streams open', () => {
  const teardown = teardownAfterAll();

  it('ends each with an error event, never [DONE] or a stop finish reason, and exits 0', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-chat-shutdown-'));
    const upstream = await startFakeOpenAI({ models: ['slow'], respond: () => ({ text: LONG_ANSWER, chunkGapMs: 25 }) });
    teardown.add(async () => {
      await upstream.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const env = { DATA_DIR: dataDir, OPENAI_BASE_URL: upstream.url, ...unlimitedPlanEnv() };
    const apiKey = await runScript('scripts/create-key.ts', ['--email', 'chat-shutdown@example.com'], env);
    const server = await teardown.startServer(env);

    const post = (route: string, body: Record<string, unknown>) =>
      fetch(`${server.url}${route}`, { method: 'POST', headers: headersFor(apiKey, { Accept: 'text/event-stream' }), body: JSON.stringify(body) });
    const chat = readRaw(await post('/v1/chat/completions', { model: 'slow', stream: true, messages: [{ role: 'user', content: 'talk' }] }), 4);
    const legacy = readRaw(await post('/v1/completions', { model: 'slow', stream: true, prompt: 'talk' }), 4);
    // The official client, which must raise rather than end quietly.
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });
    const sdkStream = await client.chat.completions.create({ model: 'slow', stream: true, messages: [{ role: 'user', content: 'talk' }] });
    const sdkIterator = sdkStream[Symbol.asyncIterator]();
    const sdkParts: string[] = [];
    for (let i = 0; i < 3; i++) sdkParts.push((await sdkIterator.next()).value?.choices[0]?.delta.content ?? '');
    await Promise.all([chat.started, legacy.started]);

    const exited = server.kill('SIGTERM');
    const sdkOutcome = (async () => {
      try {
        for (let next = await sdkIterator.next(); !next.done; next = await sdkIterator.next()) sdkParts.push(next.value.choices[0]?.delta.content ?? '');
        return 'ended quietly';
      } catch (error) {
        return error;
      }
    })();

    for (const stream of [chat, legacy]) {
      const payloads = await stream.closed;
      expect(payloads).not.toContain('[DONE]');
      const last = JSON.parse(payloads.at(-1)!) as { error?: { code: string; type: string } };
      expect(last.error).toMatchObject({ code: 'service_unavailable', type: 'server_error' });
      const chunks = payloads.slice(0, -1).map((payload) => JSON.parse(payload) as { choices: { finish_reason?: string | null }[] });
      expect(chunks.length).toBeGreaterThanOrEqual(4);
      expect(chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.finish_reason ?? null)).filter((reason) => reason !== null)).toEqual([]);
    }
    const outcome = await sdkOutcome;
    expect(outcome).toBeInstanceOf(APIError);
    expect((outcome as APIError).message).toMatch(/shutting down/);
    expect(sdkParts.join('')).not.toBe(LONG_ANSWER);
    expect(await exited).toBe(0);
    expect(server.logs.filter((line) => line.includes('"level":50'))).toEqual([]);
  });
});
