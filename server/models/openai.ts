// The `openai-compatible` provider: any server that speaks OpenAI's API (OpenAI, Azure's v1 endpoint,
// Ollama, vLLM, llama.cpp, LM Studio, Groq, OpenRouter, …), through the lean relay (relay.ts) rather than
// an SDK: requests are already in OpenAI's format, so they go out as the gateway built them, and answers
// come back parsed only as far as the gateway needs (choices for the handlers, usage for metering) and
// checked for that much. An answer of the wrong shape is the upstream failing (a retriable UpstreamError),
// never a crash further on. There are no retries here: the gateway owns them (as fallbacks) and timeouts.
import type { ProviderSpec } from './catalog.ts';
import { createRelay } from './relay.ts';
import { chunkText, estimatedUsage } from './upstream.ts';
import {
  UpstreamError,
  type ChatCompletion,
  type ChatCompletionChunk,
  type Completion,
  type CompletionUsage,
  type EmbeddingRequest,
  type EmbeddingResult,
  type Provider,
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

export function createOpenAIProvider(spec: ProviderSpec): Provider {
  const relay = createRelay({ name: spec.name, baseUrl: spec.baseUrl ?? 'https://api.openai.com/v1', ...(spec.apiKey ? { apiKey: spec.apiKey } : {}) });
  const malformed = (what: string) => new UpstreamError('server', `${spec.name} answered with ${what}`);

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

  /**
   * Relays an event stream, checking each chunk, and refuses to let a stream that ended before the model
   * finished (a cut connection, a server that stopped) pass as whole.
   */
  async function* stream(path: string, request: object, signal: AbortSignal | undefined, check: (value: unknown) => Json): AsyncGenerator<Json> {
    const body = JSON.stringify({ ...request, stream: true, stream_options: { include_usage: true } });
    let complete = false;
    for await (const value of relay.events(path, body, signal)) {
      const chunk = check(value);
      if (finished(chunk)) complete = true;
      yield chunk;
    }
    if (!complete) throw new UpstreamError('server', `${spec.name} ended the stream before the model finished`);
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
      for await (const raw of stream('chat/completions', request, signal, (value) => checkChunk(value, chatDelta, 'chat completion chunk'))) {
        // Chunks without a delta (some servers send them with a finish reason) are given an empty one.
        const chunk = raw as unknown as ChatCompletionChunk;
        for (const choice of chunk.choices) choice.delta ??= {};
        if (chunk.usage) usage = true;
        text += chunkText(chunk);
        last = raw;
        yield chunk;
      }
      // Servers without stream_options report no usage; metering then counts what was sent and received.
      if (!usage && last) {
        yield { id: String(last.id), object: 'chat.completion.chunk', created: Number(last.created), model: String(last.model), choices: [], usage: estimatedUsage(request, text) };
      }
    },

    async complete(request: ProviderCompletionRequest, { signal }) {
      const answer = await relay.json('POST', 'completions', JSON.stringify(request), signal);
      return checkChoices(answer, textChoice, 'completion') as unknown as Completion;
    },

    async *completeStream(request: ProviderCompletionRequest, { signal }) {
      for await (const chunk of stream('completions', request, signal, (value) => checkChunk(value, textChoice, 'completion chunk'))) yield chunk as unknown as Completion;
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
