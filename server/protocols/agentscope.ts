// The AgentScope Agent API protocol over the run engine: its messages in, its response / message / content
// objects out. Liberal in what it accepts (nulls, unknown fields, history echoed back), strict in what it
// sends (every field present, as the reference server serialises them).
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/openapi.gen.ts';
import type { SseFrame } from '../../generated/server.gen.ts';
import type { ErrorCode } from '../errors.ts';
import type { AssistantMessage, ChatMessage, FunctionTool, ToolCall } from '../models/types.ts';
import type { RunEvent, TokenUsage } from '../runs/events.ts';

type Schemas = components['schemas'];
export type AgentScopeRequest = Schemas['AgentScopeAgentRequest'];
export type AgentScopeInputMessage = Schemas['AgentScopeInputMessage'];
export type AgentScopeResponse = Schemas['AgentScopeAgentResponse'];
export type AgentScopeMessage = Schemas['AgentScopeMessage'];
export type AgentScopeContent = Schemas['AgentScopeContent'];
export type AgentScopeObject = Schemas['AgentScopeStreamObject'];

const CALL_TYPES = new Set(['function_call', 'plugin_call', 'component_call', 'mcp_call']);
const OUTPUT_TYPES = new Set(['function_call_output', 'plugin_call_output', 'component_call_output', 'mcp_call_output']);

interface CallData {
  call_id?: unknown;
  name?: unknown;
  arguments?: unknown;
  output?: unknown;
}

function dataOf(content: AgentScopeContent): CallData | undefined {
  return content.type === 'data' && content.data ? (content.data as CallData) : undefined;
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? '');
}

type UserPart = Extract<ChatMessage, { role: 'user' }>['content'];

/** A user message's content: a string when it is only text, parts when it carries images. */
function userContent(contents: AgentScopeContent[]): UserPart {
  const parts: Exclude<UserPart, string> = [];
  for (const content of contents) {
    switch (content.type) {
      case 'text':
        if (content.text) parts.push({ type: 'text', text: content.text });
        break;
      case 'image':
        if (content.image_url) parts.push({ type: 'image_url', image_url: { url: content.image_url } });
        break;
      case 'data':
        parts.push({ type: 'text', text: JSON.stringify(content.data ?? {}) });
        break;
      case 'file':
        parts.push({ type: 'text', text: `[file ${content.filename ?? ''} ${content.file_url ?? content.file_id ?? ''}]`.replace(/\s+/g, ' ') });
        break;
      case 'audio':
        parts.push({ type: 'text', text: '[audio]' });
        break;
      case 'video':
        parts.push({ type: 'text', text: `[video ${content.video_url ?? ''}]`.trim() });
        break;
      case 'refusal':
        if (content.refusal) parts.push({ type: 'text', text: content.refusal });
        break;
    }
  }
  return parts.every((part) => part.type === 'text') ? parts.map((part) => (part as { text: string }).text).join('\n') : parts;
}

function plainText(contents: AgentScopeContent[]): string {
  return contents.map((content) => (content.type === 'text' ? (content.text ?? '') : content.type === 'refusal' ? (content.refusal ?? '') : '')).join('');
}

/**
 * The chat messages an AgentScope input stands for. Calls become one assistant message with tool calls;
 * outputs become tool messages; reasoning, heartbeats, errors and MCP bookkeeping are not conversation.
 */
export function toChatMessages(input: AgentScopeInputMessage[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (const message of input) {
    const type = message.type ?? 'message';
    const contents = message.content ?? [];
    if (CALL_TYPES.has(type)) {
      const calls: ToolCall[] = contents.flatMap((content) => {
        const data = dataOf(content);
        if (!data || typeof data.name !== 'string') return [];
        return [{ id: typeof data.call_id === 'string' ? data.call_id : `call_${randomUUID()}`, type: 'function' as const, function: { name: data.name, arguments: asText(data.arguments ?? '{}') } }];
      });
      const previous = messages.at(-1);
      if (previous?.role === 'assistant' && previous.tool_calls && !previous.content) previous.tool_calls.push(...calls);
      else if (calls.length) messages.push({ role: 'assistant', content: null, tool_calls: calls });
    } else if (OUTPUT_TYPES.has(type)) {
      for (const content of contents) {
        const data = dataOf(content);
        if (data && typeof data.call_id === 'string') messages.push({ role: 'tool', tool_call_id: data.call_id, content: asText(data.output) });
      }
    } else if (type === 'message') {
      if (message.role === 'assistant') messages.push({ role: 'assistant', content: plainText(contents) });
      else if (message.role === 'system') messages.push({ role: 'system', content: plainText(contents) });
      else messages.push({ role: 'user', content: userContent(contents) });
    }
  }
  return messages;
}

/**
 * What is new in an input that echoes a stored session's history: the messages after the agent's last
 * one, without tool results the session already holds.
 */
export function newMessages(messages: ChatMessage[], history: ChatMessage[]): ChatMessage[] {
  const lastAgentMessage = messages.findLastIndex((message) => message.role === 'assistant');
  const answered = new Set(history.flatMap((message) => (message.role === 'tool' ? [message.tool_call_id] : [])));
  return messages.slice(lastAgentMessage + 1).filter((message) => message.role !== 'tool' || !answered.has(message.tool_call_id));
}

export function toFunctionTools(tools: AgentScopeRequest['tools']): FunctionTool[] {
  return (tools ?? []).flatMap((tool) =>
    tool.function
      ? [{ type: 'function' as const, function: { name: tool.function.name, ...(tool.function.description ? { description: tool.function.description } : {}), ...(tool.function.parameters ? { parameters: tool.function.parameters } : {}) } }]
      : [],
  );
}

export function toModelSettings(request: AgentScopeRequest) {
  const stop = request.stop === null || request.stop === undefined ? undefined : Array.isArray(request.stop) ? request.stop : [request.stop];
  return {
    ...(request.temperature != null ? { temperature: request.temperature } : {}),
    ...(request.top_p != null ? { top_p: request.top_p } : {}),
    ...(request.max_tokens != null ? { max_tokens: request.max_tokens } : {}),
    ...(request.seed != null ? { seed: request.seed } : {}),
    ...(request.presence_penalty != null ? { presence_penalty: request.presence_penalty } : {}),
    ...(request.frequency_penalty != null ? { frequency_penalty: request.frequency_penalty } : {}),
    ...(stop?.length ? { stop } : {}),
  };
}

/** Our error codes in the AgentScope runtime's own vocabulary. */
const ERROR_CODES: Partial<Record<ErrorCode, string>> = {
  upstream_timeout: 'MODEL_TIMEOUT',
  upstream_error: 'MODEL_EXECUTION_FAILED',
  rate_limited: 'RATE_LIMIT_EXCEEDED',
  not_found: 'RESOURCE_NOT_FOUND',
  invalid_request: 'INVALID_PARAMETER',
  validation_error: 'INVALID_PARAMETER',
  service_unavailable: 'NETWORK_ERROR',
};

function usageOf(usage: TokenUsage) {
  return { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens };
}

function content(fields: Partial<AgentScopeContent> & Pick<AgentScopeContent, 'type'>): AgentScopeContent {
  return { object: 'content', index: 0, delta: false, msg_id: null, status: 'completed', sequence_number: null, ...fields } as AgentScopeContent;
}

/**
 * Turns run events into the protocol's objects, numbered from 0 across the stream: the response created
 * and in progress; each message in progress, its content (text as deltas, then whole), completed; tool
 * calls as `function_call` messages and results as `function_call_output`; the response completed (or
 * failed) with every completed message in `output`.
 */
export class AgentScopeTranslator {
  #sequence = 0;
  #response: AgentScopeResponse;
  #output: AgentScopeMessage[] = [];
  #open = new Map<string, { id: string; text: string }>();
  #callNames = new Map<string, string>();
  finished = false;

  constructor(responseId: string, sessionId: string, createdAt: number) {
    this.#response = {
      id: responseId,
      object: 'response',
      status: 'created',
      created_at: createdAt,
      completed_at: null,
      output: null,
      usage: null,
      session_id: sessionId,
      error: null,
    };
  }

  #stamp<T extends object>(value: T): T {
    return { ...value, sequence_number: this.#sequence++ };
  }

  #responseObject(fields: Partial<AgentScopeResponse>): AgentScopeResponse {
    this.#response = { ...this.#response, ...fields };
    return this.#stamp(this.#response);
  }

  #message(id: string, type: AgentScopeMessage['type'], role: AgentScopeMessage['role'], status: 'in_progress' | 'completed', contents: AgentScopeContent[] | null): AgentScopeMessage {
    return this.#stamp({ id, object: 'message', type, status, role, content: contents, code: null, message: null, usage: null, metadata: null, error: null });
  }

  /** A whole message at once: in progress, its content completed, completed; kept for the final output. */
  #wholeMessage(type: AgentScopeMessage['type'], role: AgentScopeMessage['role'], item: Partial<AgentScopeContent> & Pick<AgentScopeContent, 'type'>): AgentScopeObject[] {
    const id = `msg_${randomUUID().replaceAll('-', '')}`;
    const done = content({ ...item, msg_id: id });
    const completed = this.#message(id, type, role, 'completed', [done]);
    this.#output.push(completed);
    return [this.#message(id, type, role, 'in_progress', null), this.#stamp(done), { ...completed, sequence_number: this.#sequence++ }];
  }

  start(): AgentScopeObject[] {
    return [this.#responseObject({ status: 'created' }), this.#responseObject({ status: 'in_progress' })];
  }

  translate(event: RunEvent): AgentScopeObject[] {
    switch (event.type) {
      case 'RunResponse': {
        const out: AgentScopeObject[] = [];
        const key = event.message_id;
        if (event.delta) {
          let open = this.#open.get(key);
          if (!open) {
            open = { id: `msg_${key.replace(/^msg_/, '')}`, text: '' };
            this.#open.set(key, open);
            out.push(this.#message(open.id, 'message', 'assistant', 'in_progress', null));
          }
          open.text += event.delta;
          out.push(this.#stamp(content({ type: 'text', text: event.delta, delta: true, msg_id: open.id, status: 'in_progress' })));
        }
        if (event.message) out.push(...this.#completeMessage(key, event.message));
        return out;
      }
      case 'ToolCallCompleted':
        return this.#wholeMessage('function_call_output', 'tool', {
          type: 'data',
          data: { call_id: event.tool_call_id, name: event.name, output: event.output },
        });
      case 'ToolRequest':
      case 'RunCompleted': {
        this.finished = true;
        const status = event.type === 'RunCompleted' && event.status === 'canceled' ? 'canceled' : 'completed';
        return [this.#responseObject({ status, completed_at: Math.floor(Date.parse(event.created_at) / 1000), output: this.#output, usage: usageOf(event.usage) })];
      }
      case 'RunError':
        this.finished = true;
        return [
          this.#responseObject({
            status: 'failed',
            completed_at: Math.floor(Date.parse(event.created_at) / 1000),
            output: this.#output,
            error: { code: ERROR_CODES[event.error.code] ?? 'AGENT_UNKNOWN_ERROR', message: event.error.message },
          }),
        ];
      default:
        return [];
    }
  }

  #completeMessage(key: string, message: AssistantMessage): AgentScopeObject[] {
    const out: AgentScopeObject[] = [];
    const open = this.#open.get(key);
    const text = typeof message.content === 'string' ? message.content : '';
    if (open || text) {
      const id = open?.id ?? `msg_${key.replace(/^msg_/, '')}`;
      if (!open) out.push(this.#message(id, 'message', 'assistant', 'in_progress', null));
      const whole = content({ type: 'text', text, delta: null, msg_id: id });
      out.push(this.#stamp(whole));
      const completed = this.#message(id, 'message', 'assistant', 'completed', [whole]);
      this.#output.push(completed);
      out.push(completed);
      this.#open.delete(key);
    }
    for (const call of message.tool_calls ?? []) {
      this.#callNames.set(call.id, call.function.name);
      out.push(...this.#wholeMessage('function_call', 'assistant', { type: 'data', data: { call_id: call.id, name: call.function.name, arguments: call.function.arguments } }));
    }
    return out;
  }

  /** The response as it stands: the final object of a stream, or the whole answer without one. */
  get response(): AgentScopeResponse {
    return this.#response;
  }
}

export function toFrames(objects: AgentScopeObject[]): SseFrame<AgentScopeObject>[] {
  return objects.map((data) => ({ data }));
}
