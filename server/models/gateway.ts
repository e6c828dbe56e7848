// The model gateway: resolves a public model id through the catalog, calls its provider with a timeout,
// falls through the fallback list on rate limits, server errors and timeouts, and maps what is left to
// the error envelope.
import type { Logger } from 'pino';
import { ApiError } from '../errors.ts';
import type { UpstreamMetrics, UpstreamObserver, UpstreamOutcome } from '../metrics/metrics.ts';
import type { Catalog, ModelSpec } from './catalog.ts';
import { completeViaChat, streamViaChat } from './legacy.ts';
import { chunkText } from './upstream.ts';
import {
  UpstreamError,
  type CallOptions,
  type Capability,
  type ChatCompletion,
  type ChatCompletionChunk,
  type Completion,
  type EmbeddingResult,
  type PassThroughChunk,
  type Provider,
  type ProviderChatRequest,
  type ProviderCompletionRequest,
} from './types.ts';

export interface GatewayOptions {
  logger: Logger;
  /** When the catalog was loaded, for OpenAI's `created` field. */
  createdAt: number;
  /** Times every upstream attempt, fallbacks included. */
  metrics?: UpstreamMetrics;
}

export interface Served<T> {
  result: T;
  /** The model that answered: the one asked for, or a fallback. */
  model: ModelSpec;
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'APIUserAbortError');
}

function outcomeOf(error: unknown, timedOut: boolean, callerLeft: boolean): UpstreamOutcome {
  if (timedOut) return 'timeout';
  if (callerLeft || isAbort(error)) return 'aborted';
  return error instanceof UpstreamError ? error.failure : 'error';
}

/** What an upstream failure means for the client. */
export function toApiError(error: unknown, model: string): ApiError {
  if (error instanceof ApiError) return error;
  if (!(error instanceof UpstreamError)) {
    return new ApiError('upstream_error', `The model ${model} failed.`, { cause: error });
  }
  switch (error.failure) {
    case 'rate_limited':
      return new ApiError('rate_limited', `The provider of ${model} is rate-limiting requests.`, {
        headers: error.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(error.retryAfterSeconds) },
        cause: error,
      });
    case 'timeout':
      return new ApiError('upstream_timeout', `The model ${model} did not answer in time.`, { cause: error });
    case 'refused':
      return new ApiError('invalid_request', `The provider of ${model} refused the request: ${error.message}`, { cause: error });
    case 'not_found':
      return new ApiError('not_found', `The provider of ${model} does not know it: ${error.message}`, { cause: error });
    default:
      return new ApiError('upstream_error', `The model ${model} failed${error.status ? ` (status ${error.status})` : ''}.`, { cause: error });
  }
}

/**
 * A signal that aborts on the caller's signal or after `ms` of inactivity; `touch` restarts the clock and
 * `cancel` aborts it, for a stream its consumer stopped reading.
 */
function deadline(ms: number, outer: AbortSignal | undefined) {
  const controller = new AbortController();
  const timedOut = { value: false };
  const timer = setTimeout(() => {
    timedOut.value = true;
    controller.abort(new UpstreamError('timeout', `no answer within ${ms} ms`));
  }, ms);
  const onAbort = () => controller.abort(outer?.reason);
  outer?.addEventListener('abort', onAbort, { once: true });
  if (outer?.aborted) onAbort();
  return {
    signal: controller.signal,
    /** Starts the wait again, on the same timer (a stream touches it once an item; a cleared timer stays cleared). */
    touch: () => void timer.refresh(),
    timedOut,
    cancel() {
      controller.abort(new DOMException('The consumer stopped reading the stream.', 'AbortError'));
    },
    done() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}

type StreamedChunk = ChatCompletionChunk | Completion;

/** Parsed chunks as pass-through chunks, for providers that have no pass-through of their own. */
async function* parsedChunks<C extends StreamedChunk>(chunks: AsyncIterable<C>, textOf: (chunk: C) => string): AsyncGenerator<PassThroughChunk<C>> {
  for await (const chunk of chunks) {
    const choices: { finish_reason?: unknown }[] = chunk.choices;
    yield { model: chunk.model, usage: chunk.usage, usageOnly: choices.length === 0 && !!chunk.usage, text: textOf(chunk), finished: choices.some((choice) => choice.finish_reason !== null && choice.finish_reason !== undefined), chunk };
  }
}

const completionText = (chunk: Completion) => chunk.choices.map((choice) => choice.text).join('');

export function createGateway(catalog: Catalog, providers: Map<string, Provider>, options: GatewayOptions) {
  const models = new Map(catalog.models.map((model) => [model.id, model]));
  const timeouts = new Map(catalog.providers.map((provider) => [provider.name, provider.timeoutMs]));
  const created = Math.floor(options.createdAt / 1000);
  const observers = new Map<string, UpstreamObserver>();
  /** Records one attempt on `model` that began at `since` (performance.now()). */
  const observe = (model: ModelSpec, outcome: UpstreamOutcome, since: number): void => {
    if (!options.metrics) return;
    let observer = observers.get(model.id);
    if (!observer) {
      observer = options.metrics.upstream(model.provider, model.id);
      observers.set(model.id, observer);
    }
    observer(outcome, (performance.now() - since) / 1000);
  };

  const resolve = (id: string, capability: Capability): ModelSpec => {
    const model = models.get(id);
    if (!model) throw new ApiError('not_found', `The model ${id} does not exist.`, { details: [{ field: 'model', message: 'unknown model' }] });
    if (!model.capabilities.includes(capability)) {
      throw new ApiError('invalid_request', `The model ${id} does not support ${capability}.`, {
        details: [{ field: 'model', message: `not a ${capability} model` }],
      });
    }
    return model;
  };

  /** The model and its usable fallbacks, in order. */
  const candidates = (id: string, capability: Capability): ModelSpec[] => {
    const first = resolve(id, capability);
    const chain = [first];
    for (const fallback of first.fallbacks) {
      const model = models.get(fallback);
      if (model?.capabilities.includes(capability) && !chain.includes(model)) chain.push(model);
    }
    return chain;
  };

  const providerOf = (model: ModelSpec): Provider => {
    const provider = providers.get(model.provider);
    if (!provider) throw new ApiError('service_unavailable', `The provider of ${model.id} is not available.`);
    return provider;
  };

  /** Calls `call` on each candidate until one answers; rethrows what cannot be retried. */
  async function withFallbacks<T>(id: string, capability: Capability, signal: AbortSignal | undefined, call: (provider: Provider, model: ModelSpec, signal: AbortSignal) => Promise<T>): Promise<Served<T>> {
    let lastError: unknown;
    for (const model of candidates(id, capability)) {
      const limit = deadline(timeouts.get(model.provider) ?? 60_000, signal);
      const since = performance.now();
      try {
        const result = await call(providerOf(model), model, limit.signal);
        observe(model, 'ok', since);
        return { result, model };
      } catch (error) {
        observe(model, outcomeOf(error, limit.timedOut.value, signal?.aborted === true), since);
        const failure = limit.timedOut.value ? new UpstreamError('timeout', `${model.id} timed out`, { cause: error }) : error;
        if (signal?.aborted || (isAbort(error) && !limit.timedOut.value)) throw error;
        if (!(failure instanceof UpstreamError) || !failure.retriable) throw toApiError(failure, model.id);
        options.logger.warn({ model: model.id, failure: failure.failure, status: failure.status }, 'model call failed; trying the next fallback');
        lastError = failure;
      } finally {
        limit.done();
      }
    }
    throw toApiError(lastError, id);
  }

  /**
   * Streams from each candidate until one produces its first item. Fallbacks apply until then; after that
   * a failure ends the stream with the mapped error. The timeout is per item: a stream may run long while
   * it keeps talking. Items carry the public id of the model that serves them. A consumer that stops
   * reading early aborts the upstream call.
   */
  async function* streamWithFallbacks<T extends { model: string }>(
    id: string,
    capability: Capability,
    signal: AbortSignal | undefined,
    open: (provider: Provider, model: ModelSpec, signal: AbortSignal) => AsyncIterable<T>,
  ): AsyncGenerator<T, ModelSpec> {
    let lastError: unknown;
    for (const model of candidates(id, capability)) {
      const limit = deadline(timeouts.get(model.provider) ?? 60_000, signal);
      let started = false;
      let ended = false;
      let stream: AsyncIterator<T> | undefined;
      const since = performance.now();
      try {
        stream = open(providerOf(model), model, limit.signal)[Symbol.asyncIterator]();
        for (;;) {
          const next = await stream.next();
          if (!started) observe(model, 'ok', since);
          if (next.done) {
            ended = true;
            return model;
          }
          started = true;
          limit.touch();
          yield { ...next.value, model: model.id };
        }
      } catch (error) {
        ended = true;
        if (!started) observe(model, outcomeOf(error, limit.timedOut.value, signal?.aborted === true), since);
        const failure = limit.timedOut.value ? new UpstreamError('timeout', `${model.id} timed out`, { cause: error }) : error;
        if (signal?.aborted || (isAbort(error) && !limit.timedOut.value)) throw error;
        if (started || !(failure instanceof UpstreamError) || !failure.retriable) throw toApiError(failure, model.id);
        options.logger.warn({ model: model.id, failure: failure.failure, status: failure.status }, 'model stream failed; trying the next fallback');
        lastError = failure;
      } finally {
        if (!ended) {
          limit.cancel();
          await stream?.return?.();
        }
        limit.done();
      }
    }
    throw toApiError(lastError, id);
  }

  return {
    catalog,
    defaults: catalog.defaults,

    list(): { id: string; object: 'model'; created: number; owned_by: string; capabilities: Capability[] }[] {
      return catalog.models.map((model) => ({
        id: model.id,
        object: 'model',
        created,
        owned_by: providers.get(model.provider)?.type === 'local' ? 'local' : model.provider,
        capabilities: model.capabilities,
      }));
    },

    get(id: string): ModelSpec | undefined {
      return models.get(id);
    },

    resolve,

    /** A chat completion; its `model` is the public id of the model that answered. */
    async chat(id: string, request: Omit<ProviderChatRequest, 'model'>, call: CallOptions = {}): Promise<Served<ChatCompletion>> {
      return withFallbacks(id, 'chat', call.signal, async (provider, model, signal) => ({
        ...(await provider.chat({ ...request, model: model.upstream }, { signal })),
        model: model.id,
      }));
    },

    /** Chat completion chunks, as streamWithFallbacks describes; the last carries `usage` and no choices. */
    chatStream(id: string, request: Omit<ProviderChatRequest, 'model'>, call: CallOptions = {}): AsyncGenerator<ChatCompletionChunk, ModelSpec> {
      return streamWithFallbacks(id, 'chat', call.signal, (provider, model, signal) => provider.chatStream({ ...request, model: model.upstream }, { signal }));
    },

    /**
     * `chatStream` for relaying to an OpenAI client: chunks as the upstream wrote them where the provider
     * can (see PassThroughChunk), parsed chunks otherwise.
     */
    chatPassThrough(id: string, request: Omit<ProviderChatRequest, 'model'>, call: CallOptions = {}): AsyncGenerator<PassThroughChunk, ModelSpec> {
      return streamWithFallbacks(id, 'chat', call.signal, (provider, model, signal) =>
        provider.chatStreamPassThrough
          ? provider.chatStreamPassThrough({ ...request, model: model.upstream }, { signal })
          : parsedChunks(provider.chatStream({ ...request, model: model.upstream }, { signal }), chunkText),
      );
    },

    /** A legacy completion: native where the provider has it, otherwise served by the chat model. */
    async complete(id: string, request: Omit<ProviderCompletionRequest, 'model'>, call: CallOptions = {}): Promise<Served<Completion>> {
      return withFallbacks(id, 'completions', call.signal, async (provider, model, signal) =>
        provider.complete
          ? { ...(await provider.complete({ ...request, model: model.upstream }, { signal })), model: model.id }
          : completeViaChat(provider, model, { ...request, model: model.upstream }, { signal }),
      );
    },

    /**
     * A legacy completion's chunks, as `chatPassThrough` relays chat's: native where the provider has
     * them, otherwise served by the chat model.
     */
    completePassThrough(id: string, request: Omit<ProviderCompletionRequest, 'model'>, call: CallOptions = {}): AsyncGenerator<PassThroughChunk<Completion>, ModelSpec> {
      return streamWithFallbacks(id, 'completions', call.signal, (provider, model, signal) => {
        const upstream = { ...request, model: model.upstream };
        if (provider.completeStreamPassThrough) return provider.completeStreamPassThrough(upstream, { signal });
        return parsedChunks(provider.completeStream ? provider.completeStream(upstream, { signal }) : streamViaChat(provider, model, upstream, { signal }), completionText);
      });
    },

    async embed(id: string, input: string[], dimensions: number | undefined, call: CallOptions = {}): Promise<Served<EmbeddingResult>> {
      return withFallbacks(id, 'embeddings', call.signal, (provider, model, signal) => {
        if (!provider.embed) throw new ApiError('invalid_request', `The provider of ${model.id} does not make embeddings.`);
        return provider.embed({ model: model.upstream, input, ...(dimensions ? { dimensions } : {}) }, { signal });
      });
    },
  };
}

export type ModelGateway = ReturnType<typeof createGateway>;
