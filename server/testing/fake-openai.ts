// A real HTTP server on loopback that speaks OpenAI's API, for tests and benchmarks of anything that
// calls an OpenAI-compatible upstream. It serves:
//   GET  /v1/models, GET /v1/models/{id}
//   POST /v1/chat/completions   JSON or SSE (`stream: true`), with `stream_options.include_usage`
//   POST /v1/completions        JSON or SSE
//   POST /v1/embeddings         float or base64 vectors, `dimensions`
// What it answers is scripted: replies queued with `enqueue` are used first, in order; then `respond`
// (a function of the request) decides; otherwise chat echoes the last user message, completions echo the
// prompt, and embeddings are deterministic vectors of the text. A reply may be text, tool calls (several
// make parallel calls), an error with a status and Retry-After, raw bytes of any type, a hang (no answer
// until the client leaves) or a stream that drops its connection midway. Timing is configurable per
// server and per reply: latency before an answer (for streams, the time to the first token) and the gap
// between chunks (or a token rate). Every request is recorded, with how its connection ended, so tests can prove that nothing
// reached the upstream, or that a client's abort closed the upstream connection.
// Token counts are words: the number of whitespace-separated pieces.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { countWords, sendJson, startFakeUpstream, type FakeUpstream, type Json, type RecordedRequest } from './fake-upstream.ts';

export type { RecordedRequest };

export interface FakeTiming {
  /** Before a JSON answer, or before the first chunk of a stream. */
  latencyMs?: number;
  /** Between chunks of a stream; overrides `tokensPerSecond`. */
  chunkGapMs?: number;
  /** Words per second of a stream, one word per chunk. */
  tokensPerSecond?: number;
}

export type FakeOpenAIReply = FakeTiming &
  (
    | { text: string; finishReason?: 'stop' | 'length' | 'content_filter'; /** Stream this many chunks, then cut the connection. */ dropAfterChunks?: number }
    | { toolCalls: { id?: string; name: string; arguments: string | Record<string, unknown> }[] }
    | { error: { status: number; message?: string; type?: string; code?: string | null; retryAfter?: number | string } }
    | { hang: true }
    | { embedding: number[] }
    | { /** Exactly these bytes, whatever was asked: HTML, an empty body, JSON of the wrong shape, an event stream to a plain call. */ raw: { status?: number; contentType?: string; body: string } }
  );

export interface FakeOpenAIOptions extends FakeTiming {
  /** When set, requests must carry `Authorization: Bearer <apiKey>`; others get 401, which echoes the key presented. */
  apiKey?: string;
  /** The ids GET /v1/models lists. */
  models?: string[];
  /** Decides the reply when the queue is empty; undefined falls back to the echo. */
  respond?: (request: RecordedRequest) => FakeOpenAIReply | undefined;
  /** The vector length of default embeddings without `dimensions`. */
  embeddingDimensions?: number;
  /** False: `requests` stays empty (see FakeUpstreamOptions.keepRequests). */
  keepRequests?: boolean;
}

export interface FakeOpenAI extends FakeUpstream<FakeOpenAIReply> {
  /** The base URL an OpenAI client takes, ending in `/v1`. */
  url: string;
}

function textOfContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: { text?: string }) => part.text ?? '').join(' ');
  return '';
}

/** A deterministic unit vector of the text, so that equal texts embed equally. */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  const vector = Array.from({ length: dimensions }, (_, i) => {
    let h = 2166136261 ^ i;
    for (let j = 0; j < text.length; j++) h = Math.imul(h ^ text.charCodeAt(j), 16777619);
    return ((h >>> 0) / 0xffffffff) * 2 - 1;
  });
  const norm = Math.hypot(...vector) || 1;
  return vector.map((value) => value / norm);
}

function gapOf(timing: FakeTiming): number {
  if (timing.chunkGapMs !== undefined) return timing.chunkGapMs;
  return timing.tokensPerSecond ? 1000 / timing.tokensPerSecond : 0;
}

function sendError(res: ServerResponse, error: Extract<FakeOpenAIReply, { error: unknown }>['error']): void {
  sendJson(
    res,
    error.status,
    { error: { message: error.message ?? `fake upstream error ${error.status}`, type: error.type ?? (error.status >= 500 ? 'server_error' : 'invalid_request_error'), param: null, code: error.code ?? null } },
    error.retryAfter === undefined ? {} : { 'Retry-After': String(error.retryAfter) },
  );
}

export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const queue: FakeOpenAIReply[] = [];
  const dimensions = options.embeddingDimensions ?? 8;
  let sequence = 0;

  const replyFor = (recorded: RecordedRequest): FakeOpenAIReply | undefined => queue.shift() ?? options.respond?.(recorded);

  const timingOf = (reply: FakeOpenAIReply | undefined): { latency: number; gap: number } => ({
    latency: reply?.latencyMs ?? options.latencyMs ?? 0,
    gap: reply?.chunkGapMs !== undefined || reply?.tokensPerSecond !== undefined ? gapOf(reply) : gapOf(options),
  });

  /** Writes SSE chunks with the configured pacing; false when the connection went away or was cut. */
  async function streamChunks(res: ServerResponse, chunks: Json[], timing: { latency: number; gap: number }, dropAfter?: number): Promise<boolean> {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    res.flushHeaders();
    if (timing.latency) await sleep(timing.latency);
    for (const [i, chunk] of chunks.entries()) {
      if (i > 0 && timing.gap) await sleep(timing.gap);
      if (res.destroyed) return false;
      if (dropAfter !== undefined && i >= dropAfter) {
        res.socket?.destroy();
        return false;
      }
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    }
    if (res.destroyed) return false;
    res.end('data: [DONE]\n\n');
    return true;
  }

  async function chat(body: Json, reply: FakeOpenAIReply | undefined, res: ServerResponse): Promise<void> {
    const messages = (body.messages ?? []) as { role: string; content: unknown }[];
    const lastUser = [...messages].reverse().find((message) => message.role === 'user');
    const answer = reply ?? { text: `You said: ${textOfContent(lastUser?.content)}` };
    const timing = timingOf(reply);
    const n = typeof body.n === 'number' ? body.n : 1;
    const id = `chatcmpl-fake-${++sequence}`;
    const created = Math.floor(Date.now() / 1000);
    const model = String(body.model);
    const promptTokens = messages.reduce((sum, message) => sum + 1 + countWords(textOfContent(message.content)), 0);
    const calls =
      'toolCalls' in answer
        ? answer.toolCalls.map((call, i) => ({
            id: call.id ?? `call_fake_${sequence}_${i}`,
            type: 'function',
            function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) },
          }))
        : undefined;
    const text = 'text' in answer ? answer.text : '';
    const finish = calls ? 'tool_calls' : 'text' in answer ? (answer.finishReason ?? 'stop') : 'stop';
    const completionTokens = n * (calls ? calls.reduce((sum, call) => sum + countWords(call.function.arguments) + 1, 0) : countWords(text));
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };

    if (!body.stream) {
      if (timing.latency) await sleep(timing.latency);
      if (res.destroyed) return;
      sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: Array.from({ length: n }, (_, index) => ({
          index,
          message: { role: 'assistant', content: calls ? null : text, refusal: null, ...(calls ? { tool_calls: calls } : {}), annotations: [] },
          logprobs: null,
          finish_reason: finish,
        })),
        usage,
        system_fingerprint: null,
      });
      return;
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    const head = { id, object: 'chat.completion.chunk', created, model, system_fingerprint: null };
    const chunk = (index: number, delta: Json, finishReason: string | null = null): Json => ({
      ...head,
      choices: [{ index, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    });
    const chunks: Json[] = [];
    for (let index = 0; index < n; index++) {
      chunks.push(chunk(index, { role: 'assistant', content: '', refusal: null }));
      if (calls) {
        calls.forEach((call, i) => {
          chunks.push(chunk(index, { tool_calls: [{ index: i, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
          for (const piece of call.function.arguments.match(/.{1,8}/gs) ?? []) {
            chunks.push(chunk(index, { tool_calls: [{ index: i, function: { arguments: piece } }] }));
          }
        });
      } else {
        for (const piece of text.match(/\s*\S+/g) ?? []) chunks.push(chunk(index, { content: piece }));
      }
      chunks.push(chunk(index, {}, finish));
    }
    if (includeUsage) chunks.push({ ...head, choices: [], usage });
    await streamChunks(res, chunks, timing, 'dropAfterChunks' in answer ? answer.dropAfterChunks : undefined);
  }

  async function complete(body: Json, reply: FakeOpenAIReply | undefined, res: ServerResponse): Promise<void> {
    const prompt = Array.isArray(body.prompt) ? body.prompt.map(String).join('\n') : String(body.prompt ?? '');
    const answer = reply ?? { text: `Completion of: ${prompt}` };
    const text = 'text' in answer ? answer.text : '';
    const timing = timingOf(reply);
    const id = `cmpl-fake-${++sequence}`;
    const head = { id, object: 'text_completion', created: Math.floor(Date.now() / 1000), model: String(body.model) };
    const usage = { prompt_tokens: countWords(prompt), completion_tokens: countWords(text), total_tokens: countWords(prompt) + countWords(text) };
    const finish = 'text' in answer ? (answer.finishReason ?? 'stop') : 'stop';
    if (!body.stream) {
      if (timing.latency) await sleep(timing.latency);
      if (res.destroyed) return;
      sendJson(res, 200, { ...head, choices: [{ index: 0, text, logprobs: null, finish_reason: finish }], usage });
      return;
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    const chunks: Json[] = (text.match(/\s*\S+/g) ?? []).map((piece) => ({ ...head, choices: [{ index: 0, text: piece, logprobs: null, finish_reason: null }] }));
    chunks.push({ ...head, choices: [{ index: 0, text: '', logprobs: null, finish_reason: finish }] });
    if (includeUsage) chunks.push({ ...head, choices: [], usage });
    await streamChunks(res, chunks, timing, 'dropAfterChunks' in answer ? answer.dropAfterChunks : undefined);
  }

  async function embed(body: Json, reply: FakeOpenAIReply | undefined, res: ServerResponse): Promise<void> {
    const inputs = (Array.isArray(body.input) ? body.input : [body.input]).map(String);
    const size = typeof body.dimensions === 'number' ? body.dimensions : dimensions;
    const timing = timingOf(reply);
    if (timing.latency) await sleep(timing.latency);
    const base64 = body.encoding_format === 'base64';
    const data = inputs.map((input, index) => {
      const vector = reply && 'embedding' in reply ? reply.embedding : fakeEmbedding(input, size);
      return { object: 'embedding', index, embedding: base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector };
    });
    const tokens = inputs.reduce((sum, input) => sum + countWords(input), 0);
    sendJson(res, 200, { object: 'list', data, model: String(body.model), usage: { prompt_tokens: tokens, total_tokens: tokens } });
  }

  async function handle(recorded: RecordedRequest, res: ServerResponse, req: IncomingMessage): Promise<void> {
    const { path, body } = recorded;
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      const presented = req.headers.authorization?.replace(/^Bearer\s+/i, '') ?? '';
      sendJson(res, 401, { error: { message: `Incorrect API key provided: ${presented}.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: (options.models ?? []).map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'fake' })) });
      return;
    }
    if (req.method === 'GET' && path.startsWith('/v1/models/')) {
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      if (options.models?.includes(id)) sendJson(res, 200, { id, object: 'model', created: 1_700_000_000, owned_by: 'fake' });
      else sendError(res, { status: 404, message: `The model ${id} does not exist`, code: 'model_not_found' });
      return;
    }
    const routes: Record<string, (body: Json, reply: FakeOpenAIReply | undefined, res: ServerResponse) => Promise<void>> = {
      '/v1/chat/completions': chat,
      '/v1/completions': complete,
      '/v1/embeddings': embed,
    };
    const route = req.method === 'POST' ? routes[path] : undefined;
    if (!route || !body) {
      sendError(res, { status: route ? 400 : 404, message: route ? 'The body is not JSON.' : `No route ${req.method} ${path}` });
      return;
    }
    const reply = replyFor(recorded);
    if (reply && 'hang' in reply) return;
    if (reply && 'error' in reply) {
      if (reply.latencyMs) await sleep(reply.latencyMs);
      sendError(res, reply.error);
      return;
    }
    if (reply && 'raw' in reply) {
      if (reply.latencyMs) await sleep(reply.latencyMs);
      res.writeHead(reply.raw.status ?? 200, reply.raw.contentType ? { 'Content-Type': reply.raw.contentType } : {});
      res.end(reply.raw.body);
      return;
    }
    await route(body, reply, res);
  }

  return startFakeUpstream({
    queue,
    basePath: '/v1',
    keepAliveTimeout: 60_000,
    keepRequests: options.keepRequests,
    handle,
    sendError: (res, error) => sendError(res, { status: 500, message: String(error) }),
  });
}
