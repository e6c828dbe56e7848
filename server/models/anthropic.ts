// The `anthropic` provider: Claude through the official SDK, translated to and from OpenAI's format.
//   OpenAI → Anthropic: system and developer messages become `system`; text, image (data: or http URL)
//   and PDF/plain-text file parts become content blocks; assistant tool calls become `tool_use` blocks and
//   tool messages `tool_result` blocks in the next user turn; tools, tool_choice and parallel_tool_calls,
//   stop, max_(completion_)tokens, user and a json_schema response_format map to their equivalents.
//   Anthropic → OpenAI: text and tool_use blocks become content and tool_calls, stop reasons become
//   finish reasons, usage becomes prompt/completion tokens (cache reads and writes count as prompt), and
//   the streaming events become chat.completion.chunk objects.
// What has no equivalent is refused with a 400 before anything is sent (n > 1, logprobs, audio input,
// uploaded-file references, the deprecated function role); sampling settings the Messages API no longer
// takes (temperature, top_p, seed, penalties) are left out. Legacy completions and embeddings are not
// offered, so the catalog never gives Anthropic models those capabilities.
import Anthropic, { APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import type { ProviderSpec } from './catalog.ts';
import { createHttpFetch } from './http-fetch.ts';
import { abortReason, failureOfStatus, retryAfterSeconds, scrubber } from './upstream.ts';
import {
  textOf,
  UpstreamError,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatMessage,
  type CompletionUsage,
  type FinishReason,
  type Provider,
  type ProviderChatRequest,
  type ToolCall,
} from './types.ts';

type MessageParam = Anthropic.MessageParam;
type BlockParam = Anthropic.ContentBlockParam;
type CreateParams = Anthropic.MessageCreateParamsNonStreaming;

/** The Messages API requires `max_tokens`; OpenAI's is optional. This is what a request without one gets. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
type ImageType = (typeof IMAGE_TYPES)[number];

function refuse(message: string): never {
  throw new UpstreamError('refused', message);
}

function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1]!.toLowerCase(), data: match[2]! } : undefined;
}

type OpenAIPart = { type: string; text?: string; refusal?: string; image_url?: { url: string }; file?: { file_data?: string; file_id?: string; filename?: string } };

function toBlock(part: OpenAIPart): BlockParam | undefined {
  switch (part.type) {
    case 'text':
    case 'refusal': {
      const text = part.text ?? part.refusal ?? '';
      return text ? { type: 'text', text } : undefined;
    }
    case 'image_url': {
      const url = part.image_url!.url;
      if (!url.startsWith('data:')) return { type: 'image', source: { type: 'url', url } };
      const parsed = parseDataUrl(url);
      if (!parsed || !IMAGE_TYPES.includes(parsed.mediaType as ImageType)) refuse(`images must be base64 data URLs of ${IMAGE_TYPES.join(', ')}`);
      return { type: 'image', source: { type: 'base64', media_type: parsed.mediaType as ImageType, data: parsed.data } };
    }
    case 'file': {
      const parsed = part.file?.file_data ? parseDataUrl(part.file.file_data) : undefined;
      if (parsed?.mediaType === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: parsed.data } };
      if (parsed?.mediaType === 'text/plain') {
        return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: Buffer.from(parsed.data, 'base64').toString('utf8') } };
      }
      return refuse('files must be sent inline as application/pdf or text/plain data URLs in file_data');
    }
    case 'input_audio':
      return refuse('audio input is not supported by Anthropic models');
    default:
      return refuse(`content parts of type ${part.type} are not supported by Anthropic models`);
  }
}

function toBlocks(content: unknown): BlockParam[] {
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) return [];
  return (content as OpenAIPart[]).map(toBlock).filter((block): block is BlockParam => block !== undefined);
}

function toolInput(call: ToolCall): unknown {
  try {
    const input: unknown = JSON.parse(call.function.arguments || '{}');
    if (input && typeof input === 'object' && !Array.isArray(input)) return input;
  } catch {
    // reported below
  }
  return refuse(`the arguments of tool call ${call.id} are not a JSON object`);
}

/** OpenAI messages as Anthropic's system prompt and alternating turns. */
export function toAnthropicMessages(messages: ChatMessage[]): { system: string | undefined; messages: MessageParam[] } {
  const system: string[] = [];
  const turns: { role: 'user' | 'assistant'; content: BlockParam[] }[] = [];
  const push = (role: 'user' | 'assistant', content: BlockParam[]) => {
    if (content.length === 0) return;
    const last = turns[turns.length - 1];
    // The API takes alternating turns; consecutive same-role messages (tool results and a following user
    // message, say) become one turn.
    if (last?.role === role) last.content.push(...content);
    else turns.push({ role, content });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(textOf(message.content));
        break;
      case 'user':
        push('user', toBlocks(message.content));
        break;
      case 'assistant': {
        if (message.function_call) refuse('function_call is deprecated and not supported by Anthropic models; use tool_calls');
        const blocks = toBlocks(message.content);
        for (const call of message.tool_calls ?? []) blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInput(call) });
        push('assistant', blocks);
        break;
      }
      case 'tool':
        push('user', [{ type: 'tool_result', tool_use_id: message.tool_call_id, content: textOf(message.content) }]);
        break;
      case 'function':
        refuse('function messages are deprecated and not supported by Anthropic models; use tool messages');
    }
  }
  const text = system.filter(Boolean).join('\n\n');
  return { system: text || undefined, messages: turns };
}

function toToolChoice(request: ProviderChatRequest): Anthropic.ToolChoice | undefined {
  const parallel = request.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {};
  const choice = request.tool_choice;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any', ...parallel };
  if (typeof choice === 'object' && choice !== null) return { type: 'tool', name: choice.function.name, ...parallel };
  if (choice === 'auto' || request.parallel_tool_calls === false) return { type: 'auto', ...parallel };
  return undefined;
}

/** An OpenAI chat request as a Messages API request. */
export function toAnthropicRequest(request: ProviderChatRequest): CreateParams {
  if ((request.n ?? 1) > 1) refuse('n > 1 is not supported by Anthropic models');
  if (request.logprobs) refuse('logprobs are not supported by Anthropic models');
  const { system, messages } = toAnthropicMessages(request.messages);
  if (messages.length === 0) refuse('Anthropic models need at least one user or assistant message besides the system prompt');
  const stops = request.stop === null || request.stop === undefined ? [] : Array.isArray(request.stop) ? request.stop : [request.stop];
  const tools = request.tools?.length ? request.tools : undefined;
  const toolChoice = tools ? toToolChoice(request) : undefined;
  const format = request.response_format?.type === 'json_schema' ? request.response_format.json_schema.schema : undefined;
  return {
    model: request.model,
    max_tokens: request.max_completion_tokens ?? request.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    messages,
    ...(system ? { system } : {}),
    ...(stops.filter(Boolean).length ? { stop_sequences: stops.filter(Boolean) } : {}),
    ...(tools
      ? {
          tools: tools.map((tool) => ({
            name: tool.function.name,
            ...(tool.function.description ? { description: tool.function.description } : {}),
            input_schema: { type: 'object' as const, ...(tool.function.parameters ?? {}) },
            ...(tool.function.strict ? { strict: true } : {}),
          })),
        }
      : {}),
    ...(toolChoice ? { tool_choice: toolChoice } : {}),
    ...(request.user ? { metadata: { user_id: request.user } } : {}),
    ...(format ? { output_config: { format: { type: 'json_schema', schema: format } } } : {}),
  };
}

export function toFinishReason(reason: Anthropic.StopReason | null): FinishReason {
  switch (reason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop';
  }
}

interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

export function toUsage(usage: AnthropicUsage): CompletionUsage {
  const cached = usage.cache_read_input_tokens ?? 0;
  const prompt = (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + cached;
  const completion = usage.output_tokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(cached ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
  };
}

/** A Messages API answer as an OpenAI chat completion. */
export function fromAnthropicMessage(message: Anthropic.Message, created: number): ChatCompletion {
  let text = '';
  const calls: ToolCall[] = [];
  for (const block of message.content) {
    if (block.type === 'text') text += block.text;
    else if (block.type === 'tool_use') calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
  }
  return {
    id: message.id,
    object: 'chat.completion',
    created,
    model: message.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text || (calls.length ? null : ''), refusal: null, ...(calls.length ? { tool_calls: calls } : {}) },
        finish_reason: toFinishReason(message.stop_reason),
        logprobs: null,
      },
    ],
    usage: toUsage(message.usage),
  };
}

/**
 * Anthropic's stream events as OpenAI chunks: the role first, then text and tool-call deltas (each
 * tool_use block is the next tool call index), the finish reason at message_delta, and usage last.
 */
export async function* toChunks(events: AsyncIterable<Anthropic.RawMessageStreamEvent>, created: number): AsyncGenerator<ChatCompletionChunk> {
  let id = '';
  let model = '';
  let usage: AnthropicUsage = {};
  let finished = false;
  const toolIndex = new Map<number, number>();
  const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finish: FinishReason | null = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  for await (const event of events) {
    switch (event.type) {
      case 'message_start':
        id = event.message.id;
        model = event.message.model;
        usage = { ...event.message.usage };
        yield chunk({ role: 'assistant', content: '' });
        break;
      case 'content_block_start':
        if (event.content_block.type === 'tool_use') {
          const index = toolIndex.size;
          toolIndex.set(event.index, index);
          yield chunk({ tool_calls: [{ index, id: event.content_block.id, type: 'function', function: { name: event.content_block.name, arguments: '' } }] });
        } else if (event.content_block.type === 'text' && event.content_block.text) {
          yield chunk({ content: event.content_block.text });
        }
        break;
      case 'content_block_delta':
        if (event.delta.type === 'text_delta') yield chunk({ content: event.delta.text });
        else if (event.delta.type === 'input_json_delta' && toolIndex.has(event.index) && event.delta.partial_json) {
          yield chunk({ tool_calls: [{ index: toolIndex.get(event.index)!, function: { arguments: event.delta.partial_json } }] });
        }
        break;
      case 'message_delta':
        // Counts in message_delta are cumulative; input counts appear here only when they changed.
        usage = {
          ...usage,
          output_tokens: event.usage.output_tokens,
          ...(event.usage.input_tokens !== null && event.usage.input_tokens !== undefined ? { input_tokens: event.usage.input_tokens } : {}),
          ...(event.usage.cache_read_input_tokens !== null && event.usage.cache_read_input_tokens !== undefined
            ? { cache_read_input_tokens: event.usage.cache_read_input_tokens }
            : {}),
          ...(event.usage.cache_creation_input_tokens !== null && event.usage.cache_creation_input_tokens !== undefined
            ? { cache_creation_input_tokens: event.usage.cache_creation_input_tokens }
            : {}),
        };
        if (event.delta.stop_reason) {
          finished = true;
          yield chunk({}, toFinishReason(event.delta.stop_reason));
        }
        break;
      case 'message_stop':
        if (!finished) yield chunk({}, 'stop');
        yield { id, object: 'chat.completion.chunk', created, model, choices: [], usage: toUsage(usage) };
        return;
      default:
        break;
    }
  }
  throw new UpstreamError('server', 'the Anthropic stream ended before message_stop');
}

export function createAnthropicProvider(spec: ProviderSpec): Provider {
  const client = new Anthropic({
    apiKey: spec.apiKey ?? null,
    ...(spec.baseUrl ? { baseURL: spec.baseUrl } : {}),
    webhookKey: null,
    maxRetries: 0,
    timeout: spec.timeoutMs,
    logLevel: 'off',
    openTelemetry: false,
    // As the openai-compatible provider: node:http rather than the built-in fetch (see http-fetch.ts).
    fetch: createHttpFetch(),
  });
  const scrub = scrubber([spec.apiKey]);

  const classify = (error: unknown): unknown => {
    if (error instanceof APIUserAbortError || error instanceof UpstreamError) return error;
    if (error instanceof APIConnectionTimeoutError) return new UpstreamError('timeout', `${spec.name} did not answer in time`);
    if (error instanceof APIError) {
      const message = `${spec.name}: ${scrub(error.apiMessage ?? error.message)}`;
      if (error.status !== undefined) return failureOfStatus(error.status, message, retryAfterSeconds(error.headers));
      // An `error` event inside a stream carries only its type.
      if (error.type === 'rate_limit_error') return new UpstreamError('rate_limited', message);
      return new UpstreamError(error.error ? 'server' : 'network', message);
    }
    if (error instanceof Error && error.name === 'AbortError') return error;
    return new UpstreamError('network', `${spec.name}: ${scrub(error instanceof Error ? error.message : String(error))}`);
  };

  return {
    name: spec.name,
    type: 'anthropic',

    async chat(request, { signal }) {
      const params = toAnthropicRequest(request);
      try {
        return fromAnthropicMessage(await client.messages.create(params, { signal }), Math.floor(Date.now() / 1000));
      } catch (error) {
        throw classify(error);
      }
    },

    async *chatStream(request, { signal }) {
      const params = toAnthropicRequest(request);
      try {
        const events = await client.messages.create({ ...params, stream: true }, { signal });
        yield* toChunks(events, Math.floor(Date.now() / 1000));
      } catch (error) {
        // The SDK ends an aborted stream quietly; toChunks then reports a cut-off stream instead.
        if (signal?.aborted) throw abortReason(signal);
        throw classify(error);
      }
    },

    async listModels({ signal }) {
      try {
        const ids: string[] = [];
        for await (const model of client.models.list({}, { signal })) ids.push(model.id);
        return ids;
      } catch (error) {
        throw classify(error);
      }
    },
  };
}
