// The gateway's lingua franca is the OpenAI chat-completions format; every provider speaks it here.
import type { components } from '../../generated/openapi.gen.ts';

type Schemas = components['schemas'];
export type ChatMessage = Schemas['ChatMessage'];
export type AssistantMessage = Schemas['AssistantMessage'];
export type ChatCompletionRequest = Schemas['CreateChatCompletionRequest'];
export type ChatCompletion = Schemas['ChatCompletion'];
export type ChatCompletionChunk = Schemas['ChatCompletionChunk'];
export type CompletionRequest = Schemas['CreateCompletionRequest'];
export type Completion = Schemas['Completion'];
export type CompletionUsage = Schemas['CompletionUsage'];
export type FunctionTool = Schemas['FunctionTool'];
export type ToolCall = Schemas['ToolCall'];
export type FinishReason = Schemas['FinishReason'];
export type Capability = Schemas['ModelCapability'];

/** A chat request as a provider receives it: `model` is the upstream model's id; streaming is the method's. */
export type ProviderChatRequest = Omit<ChatCompletionRequest, 'stream' | 'stream_options'>;
/** A legacy completion request as a provider receives it, likewise. */
export type ProviderCompletionRequest = Omit<CompletionRequest, 'stream' | 'stream_options'>;

export interface EmbeddingRequest {
  model: string;
  input: string[];
  dimensions?: number;
}

export interface EmbeddingResult {
  vectors: number[][];
  promptTokens: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * A streamed chunk (chat, or a legacy completion's) on its way from an OpenAI-compatible upstream to an
 * OpenAI-compatible client: the
 * event's text as the upstream sent it (`raw`), forwarded with at most two edits, or, where it needed more
 * than that (the usage chunk, tool calls, a chunk of another layout), the parsed chunk (`chunk`), written
 * again as any other. Either way it carries what metering and the gateway need, read from the text.
 */
export interface PassThroughChunk<C = ChatCompletionChunk> {
  /** The model that serves it: the upstream's name until the gateway sets the public id. */
  model: string;
  /** The usage it reports, on the last chunk. */
  usage?: CompletionUsage | null;
  /** Whether it only carries usage (no choices). */
  usageOnly: boolean;
  /** The text and tool-call arguments it adds, for usage estimates. */
  text: string;
  /** Whether a choice finished in it. */
  finished: boolean;
  raw?: RawChunkText;
  chunk?: C;
}

/** An upstream chunk's JSON text and where the edits go: the model's name, and a top-level `"usage":null` if any. */
export interface RawChunkText {
  data: string;
  /** The model's name with its quotes: [start, end). */
  modelAt: readonly [number, number];
  /** `"usage":null` with the comma that separates it: [start, end). */
  usageNullAt?: readonly [number, number];
}

export interface Provider {
  readonly name: string;
  readonly type: 'local' | 'openai-compatible' | 'anthropic';
  chat(request: ProviderChatRequest, options: CallOptions): Promise<ChatCompletion>;
  /** Chunks as OpenAI streams them; the last chunk carries `usage` and no choices. */
  chatStream(request: ProviderChatRequest, options: CallOptions): AsyncIterable<ChatCompletionChunk>;
  embed?(request: EmbeddingRequest, options: CallOptions): Promise<EmbeddingResult>;
  /** The upstream's model ids, for catalogs that discover them at start-up. */
  listModels?(options: CallOptions): Promise<string[]>;
  /** Native legacy completions, where the upstream has them; otherwise the gateway goes through chat. */
  complete?(request: ProviderCompletionRequest, options: CallOptions): Promise<Completion>;
  /** Native streamed legacy completions; the last chunk carries `usage` and no choices. */
  completeStream?(request: ProviderCompletionRequest, options: CallOptions): AsyncIterable<Completion>;
  /** `chatStream` as the upstream sent it, for relaying to OpenAI clients (see PassThroughChunk). */
  chatStreamPassThrough?(request: ProviderChatRequest, options: CallOptions): AsyncIterable<PassThroughChunk>;
  /** `completeStream` likewise. */
  completeStreamPassThrough?(request: ProviderCompletionRequest, options: CallOptions): AsyncIterable<PassThroughChunk<Completion>>;
}

export type UpstreamFailure = 'rate_limited' | 'server' | 'timeout' | 'network' | 'refused' | 'not_found';

/** A provider's failure, classified so the gateway knows whether a fallback may help. */
export class UpstreamError extends Error {
  readonly failure: UpstreamFailure;
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(failure: UpstreamFailure, message: string, options: { status?: number; retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'UpstreamError';
    this.failure = failure;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  /** Rate limits, server errors, timeouts and network failures may succeed elsewhere. */
  get retriable(): boolean {
    return this.failure === 'rate_limited' || this.failure === 'server' || this.failure === 'timeout' || this.failure === 'network';
  }
}

/** Text of a message's content, whether a string or parts. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: { type?: string; text?: string; refusal?: string }) => part.text ?? part.refusal ?? '')
      .join('');
  }
  return '';
}
