// The OpenAI-compatible endpoints: models, chat completions, legacy completions and embeddings, over the
// gateway. Each handler checks what the schema cannot, calls the gateway with the client's abort signal,
// and meters the tokens of every call that produced output. Streams are primed with their first chunk
// before the response starts, so failures up to then (unknown model, rate limits, timeouts) still get
// their status and headers.
import type { SseFrame } from '../../generated/server.gen.ts';
import { callerOf, type Principal } from '../http/auth.ts';
import { ApiError } from '../errors.ts';
import { envelope, type ErrorEnvelope } from '../http/errors.ts';
import { IncompleteStream, SerializedJson } from '../http/sse.ts';
import type { AppHandlers, RequestContext } from '../http/operations.ts';
import type { UsageKind, UsageRecord } from '../usage/meter.ts';
import { toApiError, type ModelGateway } from './gateway.ts';
import { countTokens } from './local.ts';
import { chunkText, estimatedUsage } from './upstream.ts';
import { isVirtualModelId, unknownModel, type VirtualModels } from './virtual.ts';
import type {
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChatMessage,
  Completion,
  CompletionRequest,
  CompletionUsage,
  PassThroughChunk,
  ProviderChatRequest,
  ProviderCompletionRequest,
} from './types.ts';

export interface ModelHandlerDeps {
  models: ModelGateway;
  usage: { record(usage: UsageRecord, options?: { defer?: boolean }): Promise<void> };
  virtualModels?: VirtualModels;
}


/** The chat fields passed on to providers; anything else a client sends is accepted and ignored. */
const CHAT_FIELDS = [
  'messages',
  'frequency_penalty',
  'presence_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'seed',
  'stop',
  'temperature',
  'top_p',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'user',
] as const satisfies readonly (keyof ChatCompletionRequest)[];

const COMPLETION_FIELDS = [
  'prompt',
  'suffix',
  'max_tokens',
  'temperature',
  'top_p',
  'n',
  'logprobs',
  'echo',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'best_of',
  'logit_bias',
  'seed',
  'user',
] as const satisfies readonly (keyof CompletionRequest)[];

/** The named fields of `body` that are set; null counts as unset, since some upstreams refuse it. */
function pick<T extends object, K extends keyof T>(body: T, fields: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const field of fields) {
    const value = body[field];
    if (value !== undefined && value !== null) out[field] = value;
  }
  return out;
}

/**
 * Every tool message must answer a call of the assistant message it follows (tool messages in between
 * allowed), as OpenAI requires; otherwise the request is refused before it reaches a provider.
 */
export function checkToolMessages(messages: ChatMessage[]): void {
  let open = new Set<string>();
  messages.forEach((message, index) => {
    if (message.role !== 'tool') {
      open = new Set(message.role === 'assistant' ? (message.tool_calls ?? []).map((call) => call.id) : []);
      return;
    }
    if (!open.has(message.tool_call_id)) {
      throw new ApiError('invalid_request', `messages[${index}] answers the tool call ${message.tool_call_id}, which the preceding assistant message did not make.`, {
        details: [{ field: `messages[${index}].tool_call_id`, message: 'no matching tool call in the preceding assistant message' }],
      });
    }
  });
}

/** Little-endian float32 bytes in base64, as OpenAI's `encoding_format: base64` sends vectors. */
export function encodeVector(vector: number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

type Frame<T> = SseFrame<T | ErrorEnvelope>;

/** What a stream cut by shutdown ends with; the client may retry elsewhere or once the server is back. */
const shuttingDownError = () => new ApiError('service_unavailable', 'The server is shutting down; the answer is incomplete. Retry the request.');

interface Relay<T> {
  /** The usage an upstream reports, if this item carries it. */
  usageOf(item: T): CompletionUsage | null | undefined;
  /** Whether the item only carries usage (the last chunk of an OpenAI stream). */
  isUsageOnly(item: T): boolean;
  textOf(item: T): string;
  /** Usage estimated from the request and the text so far, when the stream ended without a report. */
  estimate(text: string): CompletionUsage;
  /** What the client gets of an item: with its usage as it is, with `usage: null`, or without usage. */
  payloadOf(item: T, usage: UsageField): unknown;
}

export type UsageField = 'keep' | 'null' | 'drop';

/** An item as the client gets it, given OpenAI's usage convention (see startStream). */
export function payloadOf<T extends { usage?: CompletionUsage | null }>(item: T, usage: UsageField): unknown {
  if (usage === 'keep') return item;
  if (usage === 'null') return { ...item, usage: null };
  const { usage: _usage, ...rest } = item;
  return rest;
}

/**
 * A relayed chunk as the client gets it: a parsed one as any item, with the public model id; one the
 * upstream wrote, as it wrote it but for the model's name and a `"usage":null` put in or taken out. For
 * the compact JSON that such chunks are, that is byte for byte what serialising the parsed chunk with
 * these edits would write.
 */
export function passThroughPayload<C extends { usage?: CompletionUsage | null }>(item: PassThroughChunk<C>, usage: UsageField): unknown {
  if (item.chunk) return payloadOf({ ...item.chunk, model: item.model }, usage);
  const { data, modelAt, usageNullAt } = item.raw!;
  // Replacements of [start, end) spans, in the order they come in the text.
  const edits: [number, number, string][] = [[modelAt[0], modelAt[1], JSON.stringify(item.model)]];
  if (usageNullAt && usage === 'drop') edits.push([usageNullAt[0], usageNullAt[1], '']);
  else if (!usageNullAt && usage === 'null') edits.push([data.length - 1, data.length - 1, ',"usage":null']);
  if (edits.length > 1 && edits[1]![0] < edits[0]![0]) edits.reverse();
  let text = '';
  let at = 0;
  for (const [start, end, replacement] of edits) {
    text += data.slice(at, start) + replacement;
    at = end;
  }
  return new SerializedJson(text + data.slice(at));
}

export function modelHandlers(deps: ModelHandlerDeps) {
  const { models } = deps;

  /**
   * Records a call's usage without holding up the answer: the meter stores it with others in its next
   * batch, moments later. A failure is logged, not answered: the call happened and its answer is good, so
   * failing it now would only invite a paid retry.
   */
  function meter(request: RequestContext & { auth: Principal }, model: string, kind: UsageKind, usage: CompletionUsage): void {
    deps.usage
      .record({
        userId: request.auth.userId,
        apiKeyId: request.auth.credential.kind === 'api_key' ? request.auth.credential.id : null,
        model,
        kind,
        promptTokens: usage.prompt_tokens,
        completionTokens: usage.completion_tokens,
      }, { defer: true })
      .catch((error: unknown) => request.log.error({ err: error, model, kind }, 'could not record usage'));
  }

  /**
   * Starts a stream: waits for its first item (so that early failures become error responses), then
   * relays items with OpenAI's usage convention, ends with the error envelope and without `[DONE]` if the
   * model fails midway or the server begins to shut down, and meters what was produced, also when the
   * client leaves early.
   */
  async function startStream<T extends { model: string; usage?: CompletionUsage | null }>(
    request: RequestContext & { auth: Principal },
    source: AsyncGenerator<T, unknown>,
    options: { includeUsage: boolean; kind: UsageKind | undefined; relay: Relay<T> },
  ): Promise<AsyncIterable<Frame<T>>> {
    const { relay } = options;
    const { shuttingDown } = request;
    let first: IteratorResult<T, unknown>;
    try {
      first = await source.next();
    } catch (error) {
      if (shuttingDown.aborted && !request.signal.aborted) throw shuttingDownError();
      throw error;
    }
    return (async function* (): AsyncGenerator<Frame<T>> {
      let usage: CompletionUsage | undefined;
      let model: string | undefined;
      let text = '';
      let completed = false;
      try {
        for (let next = first; !next.done; next = await source.next()) {
          const item = next.value;
          model = item.model;
          usage = relay.usageOf(item) ?? usage;
          text += relay.textOf(item);
          if (relay.isUsageOnly(item)) {
            if (options.includeUsage) yield { data: relay.payloadOf(item, 'keep') as T };
            continue;
          }
          yield { data: relay.payloadOf(item, options.includeUsage ? 'null' : 'drop') as T };
        }
        completed = true;
      } catch (error) {
        if (request.signal.aborted) return;
        // An error event as OpenAI sends one, and no `[DONE]`: the answer so far is not the whole answer.
        let apiError: ApiError;
        if (shuttingDown.aborted) apiError = shuttingDownError();
        else {
          apiError = toApiError(error, model ?? 'the model');
          request.log.warn({ err: error, model }, 'model stream failed after it began');
        }
        yield { data: envelope(apiError, request.requestId) };
        throw new IncompleteStream();
      } finally {
        if (!completed) await source.return(undefined);
        if (options.kind && model) meter(request, model, options.kind, usage ?? relay.estimate(text));
      }
    })();
  }

  const chatRelay = (request: ProviderChatRequest): Relay<ChatCompletionChunk> => ({
    usageOf: (chunk) => chunk.usage,
    isUsageOnly: (chunk) => chunk.choices.length === 0 && !!chunk.usage,
    textOf: chunkText,
    estimate: (text) => estimatedUsage(request, text),
    payloadOf,
  });

  /** Relays chunks passed through (see PassThroughChunk), estimating usage with `estimate` where none came. */
  const passThroughRelay = <C extends { usage?: CompletionUsage | null }>(estimate: (text: string) => CompletionUsage): Relay<PassThroughChunk<C>> => ({
    usageOf: (chunk) => chunk.usage,
    isUsageOnly: (chunk) => chunk.usageOnly,
    textOf: (chunk) => chunk.text,
    estimate,
    payloadOf: passThroughPayload,
  });

  /** A legacy completion's usage, estimated from its prompt and its text. */
  const completionEstimate = (request: ProviderCompletionRequest) => (text: string): CompletionUsage => {
    const prompt = typeof request.prompt === 'string' ? countTokens(request.prompt) : request.prompt.length;
    const completion = countTokens(text);
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  };

  return {
    async listModels({ auth }) {
      const own = deps.virtualModels ? await deps.virtualModels.list(auth.userId) : [];
      return { status: 200, body: { object: 'list', data: [...models.list(), ...own], has_more: false, next_cursor: null } };
    },

    async getModel({ auth, params }) {
      const found = isVirtualModelId(params.model)
        ? await deps.virtualModels?.get(auth.userId, params.model)
        : models.list().find((model) => model.id === params.model);
      if (!found) throw new ApiError('not_found', `The model ${params.model} does not exist.`);
      return { status: 200, body: found };
    },

    async createChatCompletion(request) {
      const { body, auth, signal } = request;
      checkToolMessages(body.messages);
      const stream = body.stream === true || request.acceptsEventStream;
      const includeUsage = body.stream_options?.include_usage === true;

      if (isVirtualModelId(body.model)) {
        const virtual = deps.virtualModels;
        if (!virtual) throw unknownModel(body.model);
        if (!stream) return { status: 200, body: await virtual.chat(callerOf(auth), body, { signal }) };
        const chunks = virtual.chatStream(callerOf(auth), body, { signal });
        return { status: 200, stream: await startStream(request, chunks, { includeUsage, kind: undefined, relay: chatRelay(body) }) };
      }

      const upstream = pick(body, CHAT_FIELDS);
      if (!stream) {
        const { result } = await models.chat(body.model, upstream, { signal });
        meter(request, result.model, 'chat', result.usage ?? estimatedUsage({ ...upstream, model: result.model }, result.choices.map((c) => c.message.content ?? '').join('')));
        return { status: 200, body: result };
      }
      // Shutdown ends the upstream call too, and the stream with an error event (see startStream).
      const chunks = models.chatPassThrough(body.model, upstream, { signal: AbortSignal.any([signal, request.shuttingDown]) });
      const frames = await startStream(request, chunks, { includeUsage, kind: 'chat', relay: passThroughRelay((text) => estimatedUsage({ ...upstream, model: body.model }, text)) });
      // Chunks relayed as the upstream wrote them are chat completion chunks still, in their written form.
      return { status: 200, stream: frames as unknown as AsyncIterable<Frame<ChatCompletionChunk>> };
    },

    async createCompletion(request) {
      const { body, signal } = request;
      if (isVirtualModelId(body.model)) throw unknownModel(body.model);
      const upstream = pick(body, COMPLETION_FIELDS);
      if (!(body.stream === true || request.acceptsEventStream)) {
        const { result } = await models.complete(body.model, upstream, { signal });
        const usage = result.usage ?? completionEstimate({ ...upstream, model: body.model })(result.choices.map((c) => c.text).join(''));
        meter(request, result.model, 'completion', usage);
        return { status: 200, body: result };
      }
      const chunks = models.completePassThrough(body.model, upstream, { signal: AbortSignal.any([signal, request.shuttingDown]) });
      const includeUsage = body.stream_options?.include_usage === true;
      const frames = await startStream(request, chunks, { includeUsage, kind: 'completion', relay: passThroughRelay<Completion>(completionEstimate({ ...upstream, model: body.model })) });
      return { status: 200, stream: frames as unknown as AsyncIterable<Frame<Completion>> };
    },

    async createEmbedding(request) {
      const { body, signal } = request;
      if (isVirtualModelId(body.model)) throw unknownModel(body.model);
      const inputs = typeof body.input === 'string' ? [body.input] : body.input;
      if (!inputs.every((input): input is string => typeof input === 'string')) {
        throw new ApiError('invalid_request', 'Send text to embed; token arrays are not accepted.', { details: [{ field: 'input', message: 'not text' }] });
      }
      const { result, model } = await models.embed(body.model, inputs, body.dimensions, { signal });
      const base64 = body.encoding_format === 'base64';
      meter(request, model.id, 'embedding', { prompt_tokens: result.promptTokens, completion_tokens: 0, total_tokens: result.promptTokens });
      return {
        status: 200,
        body: {
          object: 'list',
          data: result.vectors.map((vector, index) => ({ object: 'embedding', index, embedding: base64 ? encodeVector(vector) : vector })),
          model: model.id,
          usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
        },
      };
    },
  } satisfies Partial<AppHandlers>;
}
