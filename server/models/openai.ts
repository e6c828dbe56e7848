// The `openai-compatible` provider: any server that speaks OpenAI's API (OpenAI, Azure's v1 endpoint,
// Ollama, vLLM, llama.cpp, LM Studio, Groq, OpenRouter, …), through the official SDK. Requests are
// already in OpenAI's format, so they pass through; the SDK's retries are off because the gateway owns
// retries (as fallbacks) and timeouts.
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ProviderSpec } from './catalog.ts';
import { createHttpFetch } from './http-fetch.ts';
import { abortReason, chunkText, estimatedUsage, failureOfStatus, retryAfterSeconds, scrubber } from './upstream.ts';
import {
  UpstreamError,
  type ChatCompletion,
  type ChatCompletionChunk,
  type Completion,
  type EmbeddingRequest,
  type EmbeddingResult,
  type Provider,
  type ProviderCompletionRequest,
} from './types.ts';

type ChatParams = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type ChatStreamParams = OpenAI.Chat.ChatCompletionCreateParamsStreaming;
type CompletionParams = OpenAI.CompletionCreateParamsNonStreaming;
type CompletionStreamParams = OpenAI.CompletionCreateParamsStreaming;

/**
 * The SDK refuses to start without a key, while local servers (Ollama, vLLM, llama.cpp) need none: they
 * get this placeholder and the Authorization header is removed from every request.
 */
const NO_KEY = 'no-key';

export function createOpenAIProvider(spec: ProviderSpec): Provider {
  const client = new OpenAI({
    baseURL: spec.baseUrl ?? 'https://api.openai.com/v1',
    apiKey: spec.apiKey ?? NO_KEY,
    // Explicit values, so that the SDK reads nothing from the environment behind the config's back.
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    maxRetries: 0,
    timeout: spec.timeoutMs,
    logLevel: 'off',
    // The SDK over node:http rather than the built-in fetch, whose overhead was the largest single cost
    // of a relayed call (see http-fetch.ts).
    fetch: createHttpFetch(),
    ...(spec.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
  });
  const scrub = scrubber([spec.apiKey]);

  /** The SDK's error as an UpstreamError; a caller's abort passes through untouched. */
  const classify = (error: unknown): unknown => {
    if (error instanceof APIUserAbortError || error instanceof UpstreamError) return error;
    if (error instanceof APIConnectionTimeoutError) return new UpstreamError('timeout', `${spec.name} did not answer in time`);
    if (error instanceof APIError) {
      const message = scrub(error.message);
      if (error.status === undefined) {
        // A transport failure, or an error event inside a stream: the upstream broke, not the request.
        return new UpstreamError(error.error ? 'server' : 'network', `${spec.name}: ${message}`);
      }
      return failureOfStatus(error.status, `${spec.name}: ${message}`, retryAfterSeconds(error.headers));
    }
    if (error instanceof Error && error.name === 'AbortError') return error;
    return new UpstreamError('network', `${spec.name}: ${scrub(error instanceof Error ? error.message : String(error))}`);
  };

  const call = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw classify(error);
    }
  };

  /** Iterates an SDK stream, classifying failures and refusing to let an aborted or cut-off stream pass as whole. */
  async function* relay<T>(open: () => Promise<AsyncIterable<T>>, signal: AbortSignal | undefined, isFinal: (item: T) => boolean): AsyncGenerator<T> {
    const stream = await call(open);
    let finished = false;
    try {
      for await (const item of stream) {
        if (isFinal(item)) finished = true;
        yield item;
      }
    } catch (error) {
      throw classify(error);
    }
    if (signal?.aborted) throw abortReason(signal);
    if (!finished) throw new UpstreamError('server', `${spec.name} ended the stream before the model finished`);
  }

  return {
    name: spec.name,
    type: 'openai-compatible',

    async chat(request, { signal }) {
      const result = await call(() => client.chat.completions.create(request as unknown as ChatParams, { signal }));
      return result as unknown as ChatCompletion;
    },

    async *chatStream(request, { signal }) {
      const params = { ...request, stream: true, stream_options: { include_usage: true } } as unknown as ChatStreamParams;
      let text = '';
      let usage = false;
      const chunks = relay(
        () => client.chat.completions.create(params, { signal }),
        signal,
        (chunk) => chunk.choices.some((choice) => choice.finish_reason !== null && choice.finish_reason !== undefined),
      );
      let last: ChatCompletionChunk | undefined;
      for await (const raw of chunks) {
        const chunk = raw as unknown as ChatCompletionChunk;
        if (chunk.usage) usage = true;
        text += chunkText(chunk);
        last = chunk;
        yield chunk;
      }
      // Servers without stream_options report no usage; metering then counts what was sent and received.
      if (!usage && last) {
        yield { id: last.id, object: 'chat.completion.chunk', created: last.created, model: last.model, choices: [], usage: estimatedUsage(request, text) };
      }
    },

    async complete(request: ProviderCompletionRequest, { signal }) {
      const result = await call(() => client.completions.create(request as unknown as CompletionParams, { signal }));
      return result as unknown as Completion;
    },

    async *completeStream(request: ProviderCompletionRequest, { signal }) {
      const params = { ...request, stream: true, stream_options: { include_usage: true } } as unknown as CompletionStreamParams;
      const chunks = relay(
        () => client.completions.create(params, { signal }),
        signal,
        (chunk) => chunk.choices.some((choice) => choice.finish_reason !== null && choice.finish_reason !== undefined),
      );
      for await (const chunk of chunks) yield chunk as unknown as Completion;
    },

    async embed(request: EmbeddingRequest, { signal }): Promise<EmbeddingResult> {
      const result = await call(() =>
        client.embeddings.create(
          { model: request.model, input: request.input, ...(request.dimensions ? { dimensions: request.dimensions } : {}) },
          { signal },
        ),
      );
      return {
        vectors: [...result.data].sort((a, b) => a.index - b.index).map((item) => item.embedding),
        promptTokens: result.usage?.prompt_tokens ?? 0,
      };
    },

    async listModels({ signal }) {
      return call(async () => {
        const ids: string[] = [];
        for await (const model of client.models.list({ signal })) ids.push(model.id);
        return ids;
      });
    },
  };
}
