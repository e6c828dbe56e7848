// The `openai-compatible` provider: any server that speaks OpenAI's API (OpenAI, Azure's v1 endpoint,
// Ollama, vLLM, llama.cpp, LM Studio, Groq, OpenRouter, …), through the lean relay (relay.ts) rather than
// an SDK: requests are already in OpenAI's format, so they go out as the gateway built them, and answers
// come back parsed only as far as the gateway needs (choices for the handlers, usage for metering) and
// checked for that much. An answer of the wrong shape is the upstream failing (a retriable UpstreamError),
// never a crash further on. There are no retries here: the gateway owns them (as fallbacks) and timeouts.
import type { ProviderSpec } from './catalog.ts';
import { createRelay, parseEvent } from './relay.ts';
import { chunkText, estimatedUsage, scrubber } from './upstream.ts';
import {
  UpstreamError,
  type ChatCompletion,
  type ChatCompletionChunk,
  type Completion,
  type CompletionUsage,
  type EmbeddingRequest,
  type EmbeddingResult,
  type PassThroughChunk,
  type Provider,
  type ProviderChatRequest,
  type ProviderCompletionRequest,
} from './types.ts';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;

/** The usage of an answer when it has the counts metering needs; anything else counts as none. */
function usageOf(value: unknown): CompletionUsage | undefined {
  if (!isObject(value) || !isCount(value.prompt_tokens) || !isCount(value.completion_tokens)) return undefined;
  return value as unknown as CompletionUsage;
}

/** The answer with its usage kept only when it is usable. */
function withCheckedUsage<T extends Json>(answer: T): T {
  if (answer.usage === undefined || answer.usage === null || usageOf(answer.usage)) return answer;
  const { usage: _dropped, ...rest } = answer;
  return rest as T;
}

/** Where the only occurrence of `needle` in `text` begins; -1 when there is none, -2 when there are more. */
function onlyIndex(text: string, needle: string): number {
  const at = text.indexOf(needle);
  if (at === -1) return -1;
  return text.indexOf(needle, at + needle.length) === -1 ? at : -2;
}

/** Where the JSON string that opens with the quote at `start` ends (past its closing quote); -1 if it does not. */
function stringEnd(text: string, start: number): number {
  for (let at = text.indexOf('"', start + 1); at !== -1; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return at + 1;
  }
  return -1;
}

const MODEL_KEY = '"model":"';
const USAGE_KEY = '"usage":';
/** Where each kind of chunk carries its text. */
const TEXT_KEYS = { chat: '"content":"', completion: '"text":"' } as const;

/**
 * A content chunk read without parsing it, for relaying it as it came: compact JSON on one line, with one
 * top-level model name (no escapes in it), no finish reason, text only in `content` of a delta object
 * (chat) or in `text` (a legacy completion), and `"usage":null` or no usage. Outside JSON strings every quote is structural, so these markers cannot come
 * from the text a chunk carries. Anything else (the usage chunk, the finishing chunk, tool calls, an
 * error, another layout) is undefined, and is parsed and checked. A chunk whose JSON is broken yet has
 * every marker is relayed broken: the client's parser then fails, as it would on the upstream's stream.
 */
export function sniffChunk(data: string, kind: keyof typeof TEXT_KEYS = 'chat'): PassThroughChunk<never> | undefined {
  if (data.charCodeAt(0) !== 123 || data.charCodeAt(data.length - 1) !== 125 || data.includes('\n')) return undefined;
  if (data.includes('"error"') || data.includes('"tool_calls"') || !data.includes('"choices":[')) return undefined;
  const modelKey = onlyIndex(data, MODEL_KEY);
  if (modelKey < 0) return undefined;
  const modelStart = modelKey + MODEL_KEY.length - 1;
  const modelEnd = stringEnd(data, modelStart);
  if (modelEnd === -1) return undefined;
  const model = data.slice(modelStart + 1, modelEnd - 1);
  if (model.includes('\\')) return undefined;
  // The finishing chunk (one per choice) is parsed: it is where servers leave the delta out.
  if (data.includes('"finish_reason":"')) return undefined;
  const textKey = TEXT_KEYS[kind];
  if (kind === 'chat' ? !data.includes('"delta":{') : !data.includes(textKey)) return undefined;
  let usageNullAt: readonly [number, number] | undefined;
  const usage = onlyIndex(data, USAGE_KEY);
  if (usage === -2) return undefined;
  if (usage >= 0) {
    const end = usage + USAGE_KEY.length + 4;
    if (!data.startsWith('null', usage + USAGE_KEY.length) || (data[end] !== ',' && data[end] !== '}')) return undefined;
    usageNullAt = data[usage - 1] === ',' ? [usage - 1, end] : data[end] === ',' ? [usage, end + 1] : [usage, end];
  }
  let text = '';
  for (let at = data.indexOf(textKey); at !== -1; at = data.indexOf(textKey, at + 1)) {
    const start = at + textKey.length - 1;
    const end = stringEnd(data, start);
    if (end === -1) return undefined;
    const literal = data.slice(start, end);
    if (!literal.includes('\\')) text += literal.slice(1, -1);
    else {
      try {
        text += JSON.parse(literal) as string;
      } catch {
        return undefined;
      }
    }
  }
  return {
    model,
    usageOnly: false,
    text,
    finished: false,
    raw: { data, modelAt: [modelStart, modelEnd], ...(usageNullAt ? { usageNullAt } : {}) },
  };
}

/** The chunk that reports usage a server did not report, estimated from what was sent and received. */
function estimatedUsageChunk(last: Json, request: ProviderChatRequest, text: string): ChatCompletionChunk {
  return { id: String(last.id), object: 'chat.completion.chunk', created: Number(last.created), model: String(last.model), choices: [], usage: estimatedUsage(request, text) };
}

export function createOpenAIProvider(spec: ProviderSpec): Provider {
  const relay = createRelay({ name: spec.name, baseUrl: spec.baseUrl ?? 'https://api.openai.com/v1', ...(spec.apiKey ? { apiKey: spec.apiKey } : {}) });
  const malformed = (what: string) => new UpstreamError('server', `${spec.name} answered with ${what}`);
  const scrub = scrubber([spec.apiKey]);

  /** A JSON answer whose `choices` are all objects that `valid` accepts, and at least one. */
  function checkChoices(value: unknown, valid: (choice: Json) => boolean, kind: string): Json {
    if (!isObject(value) || !Array.isArray(value.choices) || value.choices.length === 0 || !value.choices.every((choice) => isObject(choice) && valid(choice))) {
      throw malformed(`JSON that is not a ${kind}`);
    }
    return withCheckedUsage(value);
  }

  /** A stream chunk: choices (possibly none, for the usage chunk) that `valid` accepts. */
  function checkChunk(value: unknown, valid: (choice: Json) => boolean, kind: string): Json {
    if (!isObject(value) || !Array.isArray(value.choices) || !value.choices.every((choice) => isObject(choice) && valid(choice))) {
      throw malformed(`an event that is not a ${kind}`);
    }
    return withCheckedUsage(value);
  }

  const chatChoice = (choice: Json) => isObject(choice.message);
  const chatDelta = (choice: Json) => choice.delta === undefined || isObject(choice.delta);
  const textChoice = (choice: Json) => typeof choice.text === 'string';
  const finished = (chunk: Json) => (chunk.choices as Json[]).some((choice) => choice.finish_reason !== null && choice.finish_reason !== undefined);

  const streamBody = (request: object) => JSON.stringify({ ...request, stream: true, stream_options: { include_usage: true } });
  const cutShort = () => new UpstreamError('server', `${spec.name} ended the stream before the model finished`);

  /**
   * Relays an event stream, checking each chunk, and refuses to let a stream that ended before the model
   * finished (a cut connection, a server that stopped) pass as whole.
   */
  async function* stream(path: string, request: object, signal: AbortSignal | undefined, check: (value: unknown) => Json): AsyncGenerator<Json> {
    let complete = false;
    for await (const value of relay.events(path, streamBody(request), signal)) {
      const chunk = check(value);
      if (finished(chunk)) complete = true;
      yield chunk;
    }
    if (!complete) throw cutShort();
  }

  const chatChunkOf = (value: unknown) => checkChunk(value, chatDelta, 'chat completion chunk') as unknown as ChatCompletionChunk;
  const completionChunkOf = (value: unknown) => checkChunk(value, textChoice, 'completion chunk') as unknown as Completion;

  /** A chat chunk that had to be parsed, checked like any other; choices without a delta get an empty one. */
  function parsedChatChunk(data: string): PassThroughChunk {
    const chunk = chatChunkOf(parseEvent(spec.name, scrub, data));
    for (const choice of chunk.choices) choice.delta ??= {};
    return { model: chunk.model, usage: chunk.usage, usageOnly: chunk.choices.length === 0 && !!chunk.usage, text: chunkText(chunk), finished: finished(chunk as unknown as Json), chunk };
  }

  function parsedCompletionChunk(data: string): PassThroughChunk<Completion> {
    const chunk = completionChunkOf(parseEvent(spec.name, scrub, data));
    const text = chunk.choices.map((choice) => choice.text).join('');
    return { model: chunk.model, usage: chunk.usage, usageOnly: chunk.choices.length === 0 && !!chunk.usage, text, finished: finished(chunk as unknown as Json), chunk };
  }

  /** `stream`, each event relayed as sniffChunk reads it or, failing that, parsed. */
  async function* passThrough<C>(path: string, request: object, signal: AbortSignal | undefined, kind: keyof typeof TEXT_KEYS, parsed: (data: string) => PassThroughChunk<C>): AsyncGenerator<PassThroughChunk<C>> {
    let complete = false;
    for await (const data of relay.rawEvents(path, streamBody(request), signal)) {
      const chunk = sniffChunk(data, kind) ?? parsed(data);
      if (chunk.finished) complete = true;
      yield chunk;
    }
    if (!complete) throw cutShort();
  }

  return {
    name: spec.name,
    type: 'openai-compatible',

    async chat(request, { signal }) {
      const answer = await relay.json('POST', 'chat/completions', JSON.stringify(request), signal);
      return checkChoices(answer, chatChoice, 'chat completion') as unknown as ChatCompletion;
    },

    async *chatStream(request, { signal }) {
      let text = '';
      let usage = false;
      let last: Json | undefined;
      for await (const raw of stream('chat/completions', request, signal, chatChunkOf)) {
        // Chunks without a delta (some servers send them with a finish reason) are given an empty one.
        const chunk = raw as unknown as ChatCompletionChunk;
        for (const choice of chunk.choices) choice.delta ??= {};
        if (chunk.usage) usage = true;
        text += chunkText(chunk);
        last = raw;
        yield chunk;
      }
      // Servers without stream_options report no usage; metering then counts what was sent and received.
      if (!usage && last) yield estimatedUsageChunk(last, request, text);
    },

    async *chatStreamPassThrough(request, { signal }) {
      let usage = false;
      let text = '';
      let last: PassThroughChunk | undefined;
      for await (const chunk of passThrough('chat/completions', request, signal, 'chat', parsedChatChunk)) {
        if (chunk.usage) usage = true;
        text += chunk.text;
        last = chunk;
        yield chunk;
      }
      if (!usage && last) {
        const estimate = estimatedUsageChunk((last.chunk ?? JSON.parse(last.raw!.data)) as Json, request, text);
        yield { model: estimate.model, usage: estimate.usage, usageOnly: true, text: '', finished: false, chunk: estimate };
      }
    },

    async complete(request: ProviderCompletionRequest, { signal }) {
      const answer = await relay.json('POST', 'completions', JSON.stringify(request), signal);
      return checkChoices(answer, textChoice, 'completion') as unknown as Completion;
    },

    async *completeStream(request: ProviderCompletionRequest, { signal }) {
      for await (const chunk of stream('completions', request, signal, completionChunkOf)) yield chunk as unknown as Completion;
    },

    completeStreamPassThrough(request: ProviderCompletionRequest, { signal }) {
      return passThrough('completions', request, signal, 'completion', parsedCompletionChunk);
    },

    async embed(request: EmbeddingRequest, { signal }): Promise<EmbeddingResult> {
      const body = JSON.stringify({ model: request.model, input: request.input, encoding_format: 'float', ...(request.dimensions ? { dimensions: request.dimensions } : {}) });
      const answer = await relay.json('POST', 'embeddings', body, signal);
      const data = isObject(answer) ? answer.data : undefined;
      if (
        !Array.isArray(data) ||
        data.length !== request.input.length ||
        !data.every((item) => isObject(item) && Array.isArray(item.embedding) && item.embedding.every((x) => typeof x === 'number'))
      ) {
        throw malformed(`JSON that is not ${request.input.length} embeddings`);
      }
      const items = data as { index?: unknown; embedding: number[] }[];
      const ordered = items.every((item) => typeof item.index === 'number') ? [...items].sort((a, b) => (a.index as number) - (b.index as number)) : items;
      return { vectors: ordered.map((item) => item.embedding), promptTokens: usageOf({ completion_tokens: 0, ...(answer as Json).usage as Json })?.prompt_tokens ?? 0 };
    },

    async listModels({ signal }) {
      const answer = await relay.json('GET', 'models', undefined, signal);
      const data = isObject(answer) ? answer.data : undefined;
      if (!Array.isArray(data)) throw malformed('JSON that is not a list of models');
      return data.filter((item): item is { id: string } => isObject(item) && typeof item.id === 'string').map((item) => item.id);
    },
  };
}
