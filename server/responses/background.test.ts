// Background responses with the `openai` client: answered at once, the run going on; a stream resumed from
// a sequence number on another server of the same deployment; a cancel that stops the upstream call; a
// response whose server died, failed and still readable elsewhere. Also the request settings that reach
// the upstream, and Idempotency-Key. On PGlite (one process, two servers) and PostgreSQL.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../testing/fake-openai.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { checkResponseStream } from '../../conformance/responses-stream.ts';

describe.each(await availableEngines())('background responses on %s', (engine) => {
  let home: TestServer;
  let other: TestServer;
  let user: TestUser;
  let upstream: FakeOpenAI;
  const client = (server: TestServer) => new OpenAI({ apiKey: user.apiKey, baseURL: `${server.url}/v1`, maxRetries: 0 });

  beforeAll(async () => {
    upstream = await startFakeOpenAI({ models: ['scripted'] });
    const env = { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url };
    home = await startTestServer({ engine, env });
    other = await startTestServer({ engine, env, shareDatabaseWith: home });
    user = await home.signUp();
  });
  afterAll(async () => {
    await other?.close();
    await home?.close();
    await upstream?.close();
  });

  async function collect(stream: AsyncIterable<OpenAI.Responses.ResponseStreamEvent>) {
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    return events;
  }

  it('answers at once, goes on, and resumes its stream on another server after a sequence number', async () => {
    upstream.enqueue({ text: 'one two three four five six', chunkGapMs: 40 });
    const started = await client(home).responses.create({ model: 'scripted', input: 'Count.', background: true });
    expect(started).toMatchObject({ background: true, status: expect.stringMatching(/^(queued|in_progress)$/) });
    const all = await collect(await client(other).responses.retrieve(started.id, { stream: true }));
    expect(checkResponseStream(all)).toEqual([]);
    expect(all.at(-1)).toMatchObject({ type: 'response.completed', response: { output: [{ content: [{ text: 'one two three four five six' }] }] } });
    const tail = await collect(await client(other).responses.retrieve(started.id, { stream: true, starting_after: 4 }));
    expect(tail).toEqual(all.slice(5));
    expect(checkResponseStream(tail, { from: 5 })).toEqual([]);
    expect((await client(home).responses.retrieve(started.id)).status).toBe('completed');
  });

  it('cancels: the upstream call is closed and the response is cancelled', async () => {
    upstream.enqueue({ hang: true });
    const before = upstream.requests.length;
    const started = await client(home).responses.create({ model: 'scripted', input: 'Wait.', background: true });
    const call = await upstream.waitForRequest(before + 1);
    const cancelled = await client(home).responses.cancel(started.id);
    expect(cancelled.status).toBe('cancelled');
    await expect(call.outcome).resolves.toBe('aborted');
    const events = await collect(await client(other).responses.retrieve(started.id, { stream: true }));
    expect(checkResponseStream(events)).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'cancelled' } });
  });

  it('cancels from another server than the one running it: the answer shows it cancelled and the upstream call is closed', async () => {
    upstream.enqueue({ hang: true });
    const before = upstream.requests.length;
    const started = await client(home).responses.create({ model: 'scripted', input: 'Wait here.', background: true });
    const call = await upstream.waitForRequest(before + 1);
    const cancelled = await client(other).responses.cancel(started.id);
    expect(cancelled.status).toBe('cancelled');
    await expect(call.outcome).resolves.toBe('aborted');
    expect((await client(home).responses.retrieve(started.id)).status).toBe('cancelled');
  });

  it('fails a response whose server died, readable on the server that is left', async () => {
    const doomed = await startTestServer({ engine, env: { ...unlimitedPlanEnv(), OPENAI_BASE_URL: upstream.url }, shareDatabaseWith: home });
    upstream.enqueue({ hang: true });
    const before = upstream.requests.length;
    const started = await client(doomed).responses.create({ model: 'scripted', input: 'Never finishes.', background: true });
    await upstream.waitForRequest(before + 1);
    await doomed.close();
    const response = await client(other).responses.retrieve(started.id);
    expect(response).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
    const events = await collect(await client(other).responses.retrieve(started.id, { stream: true }));
    expect(checkResponseStream(events)).toEqual([]);
    expect(events.at(-1)?.type).toBe('response.failed');
  });

  it('passes text.format, max_output_tokens, temperature, top_p, tool_choice and parallel_tool_calls to the model', async () => {
    upstream.enqueue({ text: '{"ok": true}' });
    const response = await client(home).responses.create({
      model: 'scripted',
      input: 'JSON please.',
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object', properties: { ok: { type: 'boolean' } } }, strict: true } },
      max_output_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      tools: [{ type: 'function', name: 'noop', parameters: { type: 'object', properties: {} }, strict: false }],
      tool_choice: 'none',
      parallel_tool_calls: false,
    });
    expect(response).toMatchObject({ status: 'completed', max_output_tokens: 64, temperature: 0.2, top_p: 0.9, tool_choice: 'none', parallel_tool_calls: false });
    expect(response.text?.format).toMatchObject({ type: 'json_schema', name: 'answer', strict: true });
    expect(upstream.requests.at(-1)!.body).toMatchObject({
      response_format: { type: 'json_schema', json_schema: { name: 'answer', strict: true } },
      max_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      tool_choice: 'none',
      parallel_tool_calls: false,
    });
    upstream.enqueue({ text: 'a b c', finishReason: 'length' });
    const cut = await client(home).responses.create({ model: 'scripted', input: 'Long.', max_output_tokens: 3 });
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  });

  it('keeps the answer of a create with an Idempotency-Key and replays it', async () => {
    const key = `resp-${engine}-${Date.now()}`;
    // The openai client sends no Idempotency-Key of its own; a caller sets the header.
    const first = await client(home).responses.create({ model: 'local', input: 'Once.' }, { headers: { 'Idempotency-Key': key } });
    const again = await client(home).responses.create({ model: 'local', input: 'Once.' }, { headers: { 'Idempotency-Key': key } });
    expect(again.id).toBe(first.id);
  });
});
