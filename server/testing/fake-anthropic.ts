// A real HTTP server on loopback that speaks Anthropic's Messages API, for tests of the anthropic
// provider. It serves:
//   GET  /v1/models      the Anthropic list shape (data, has_more, first_id, last_id)
//   POST /v1/messages    a Message, or with `stream: true` the event sequence the API sends:
//                        message_start, ping, per block content_block_start / content_block_delta
//                        (text_delta, or input_json_delta for tool_use) / content_block_stop,
//                        message_delta (stop_reason and cumulative usage), message_stop
// Replies are scripted as for the fake OpenAI server: queued replies first, then `respond`, otherwise an
// echo of the last user text. A reply is content blocks (text and tool_use), an error with Anthropic's
// error shape (`{"type":"error","error":{"type","message"}}`, Retry-After on 429), a hang, or a stream that
// sends an `error` event midway. Every request is recorded with how its connection ended.
// Token counts are words, as in the fake OpenAI server.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FakeTiming } from './fake-openai.ts';
import { countWords, sendJson as writeJson, startFakeUpstream, type FakeUpstream, type Json, type RecordedRequest } from './fake-upstream.ts';

export type FakeAnthropicBlock = { type: 'text'; text: string } | { type: 'tool_use'; id?: string; name: string; input: Record<string, unknown> };

export type FakeAnthropicReply = FakeTiming &
  (
    | {
        content: FakeAnthropicBlock[];
        stopReason?: 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal' | 'pause_turn';
        usage?: { input_tokens?: number; output_tokens?: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
        /** Stream this many events, then send an `error` event of this type and end. */
        streamError?: { afterEvents: number; type: string; message: string };
      }
    | { error: { status: number; type: string; message?: string; retryAfter?: number } }
    | { hang: true }
  );

export interface FakeAnthropicOptions extends FakeTiming {
  /** When set, requests must carry the key (`x-api-key` or `Authorization: Bearer`); others get 401 authentication_error. */
  apiKey?: string;
  models?: string[];
  respond?: (request: RecordedRequest) => FakeAnthropicReply | undefined;
}

export interface FakeAnthropic extends FakeUpstream<FakeAnthropicReply> {
  /** The base URL the Anthropic SDK takes (without `/v1`). */
  url: string;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: { type: string; text?: string; content?: unknown }) => (block.type === 'text' ? block.text : block.type === 'tool_result' ? textOf(block.content) : ''))
    .filter(Boolean)
    .join(' ');
}

/** As the API does, every answer names a request id. */
function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  writeJson(res, status, body, { 'request-id': `req_fake_${Date.now()}`, ...headers });
}

function sendError(res: ServerResponse, error: { status: number; type: string; message?: string; retryAfter?: number }): void {
  sendJson(
    res,
    error.status,
    { type: 'error', error: { type: error.type, message: error.message ?? error.type }, request_id: `req_fake_${Date.now()}` },
    error.retryAfter === undefined ? {} : { 'retry-after': String(error.retryAfter) },
  );
}

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const queue: FakeAnthropicReply[] = [];
  let sequence = 0;

  async function messages(body: Json, reply: FakeAnthropicReply | undefined, res: ServerResponse): Promise<void> {
    const turns = (body.messages ?? []) as { role: string; content: unknown }[];
    const lastUser = [...turns].reverse().find((turn) => turn.role === 'user');
    const answer = reply && 'content' in reply ? reply : { content: [{ type: 'text' as const, text: `You said: ${textOf(lastUser?.content)}` }] };
    const latency = reply?.latencyMs ?? options.latencyMs ?? 0;
    const gap = reply?.chunkGapMs ?? options.chunkGapMs ?? 0;
    sequence += 1;
    const blocks = answer.content.map((block, i) => (block.type === 'tool_use' ? { ...block, id: block.id ?? `toolu_fake_${sequence}_${i}` } : block));
    const stopReason = 'stopReason' in answer && answer.stopReason ? answer.stopReason : blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
    const inputTokens = answer.usage?.input_tokens ?? turns.reduce((sum, turn) => sum + countWords(textOf(turn.content)), countWords(typeof body.system === 'string' ? body.system : ''));
    const outputTokens =
      answer.usage?.output_tokens ?? blocks.reduce((sum, block) => sum + (block.type === 'text' ? countWords(block.text) : countWords(JSON.stringify(block.input))), 0);
    const cache = {
      cache_creation_input_tokens: answer.usage?.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: answer.usage?.cache_read_input_tokens ?? 0,
    };
    const message = {
      id: `msg_fake_${sequence}`,
      type: 'message',
      role: 'assistant',
      model: String(body.model),
      content: [] as Json[],
      stop_reason: null as string | null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1, ...cache, service_tier: 'standard' },
    };
    const fullContent = blocks.map((block) => (block.type === 'text' ? { type: 'text', text: block.text, citations: null } : { type: 'tool_use', id: block.id, name: block.name, input: block.input }));

    if (!body.stream) {
      if (latency) await sleep(latency);
      if (res.destroyed) return;
      sendJson(res, 200, { ...message, content: fullContent, stop_reason: stopReason, usage: { ...message.usage, output_tokens: outputTokens } });
      return;
    }

    const events: [string, Json][] = [['message_start', { type: 'message_start', message }], ['ping', { type: 'ping' }]];
    blocks.forEach((block, index) => {
      if (block.type === 'text') {
        events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '', citations: null } }]);
        for (const piece of block.text.match(/\s*\S+/g) ?? []) {
          events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } }]);
        }
      } else {
        events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }]);
        const json = JSON.stringify(block.input);
        events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: '' } }]);
        for (const piece of json.match(/.{1,6}/gs) ?? []) {
          events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }]);
        }
      }
      events.push(['content_block_stop', { type: 'content_block_stop', index }]);
    });
    events.push([
      'message_delta',
      { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens, input_tokens: null, ...cache } },
    ]);
    events.push(['message_stop', { type: 'message_stop' }]);

    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'request-id': `req_fake_${sequence}` });
    res.flushHeaders();
    if (latency) await sleep(latency);
    for (const [i, [name, data]] of events.entries()) {
      if (res.destroyed) return;
      if ('streamError' in answer && answer.streamError && i === answer.streamError.afterEvents) {
        res.end(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: answer.streamError.type, message: answer.streamError.message } })}\n\n`);
        return;
      }
      if (i > 0 && gap) await sleep(gap);
      res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    }
    res.end();
  }

  async function handle(recorded: RecordedRequest, res: ServerResponse, req: IncomingMessage): Promise<void> {
    const { path, body } = recorded;
    // The API takes the key as `x-api-key`; the SDK since API version 2026-10-21 sends it as a bearer token.
    const presented = req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer\s+/i, '');
    if (options.apiKey !== undefined && presented !== options.apiKey) {
      sendError(res, { status: 401, type: 'authentication_error', message: 'invalid x-api-key' });
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      const data = (options.models ?? []).map((id) => ({ type: 'model', id, display_name: id, created_at: '2026-01-01T00:00:00Z' }));
      sendJson(res, 200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/messages') {
      sendError(res, { status: 404, type: 'not_found_error', message: `No route ${req.method} ${path}` });
      return;
    }
    if (!body) {
      sendError(res, { status: 400, type: 'invalid_request_error', message: 'The body is not JSON.' });
      return;
    }
    const reply = queue.shift() ?? options.respond?.(recorded);
    if (reply && 'hang' in reply) return;
    if (reply && 'error' in reply) {
      sendError(res, reply.error);
      return;
    }
    await messages(body, reply, res);
  }

  return startFakeUpstream({ queue, handle, sendError: (res, error) => sendError(res, { status: 500, type: 'api_error', message: String(error) }) });
}
