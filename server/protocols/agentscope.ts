// The AgentScope Agent API protocol as a projection of run events: its messages in, its response /
// message / content objects out, numbered 0, 1, 2, … across the stream as AgentScope Runtime numbers
// them, the final response's `output` made of the very completed messages that were streamed. Liberal in
// what it accepts (nulls, unknown fields, history echoed back), strict in what it sends (every field
// present, as the reference server serialises them). Tools the agent ran are `plugin_call` /
// `plugin_call_output` (what the runtime's adapters send and its web UI shows); a client-side tool the
// client must run is a `function_call`; a call waiting for approval an `mcp_approval_request`, answered by
// an `mcp_approval_response` in the next request.
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError, type ErrorCode } from '../errors.ts';
import type { ChatMessage, FunctionTool, ToolCall } from '../models/types.ts';
import type { RunEvent, Speaker, TokenUsage } from '../runs/events.ts';
import type { ApprovalAnswer } from '../runs/loop.ts';

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
  /** An approval request's id, which is its call's. */
  id?: unknown;
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

type UserContent = Extract<ChatMessage, { role: 'user' }>['content'];
type UserPart = Exclude<UserContent, string>[number];

/** Audio as the model takes it: base64 and a format. A URL is fetched by the caller's policy. */
export type AudioResolver = (data: string, format: string | null | undefined) => Promise<{ data: string; format: 'wav' | 'mp3' }>;

/** A user message's content: a string when it is only text, parts when it carries images or audio. */
async function userContent(contents: AgentScopeContent[], audio: AudioResolver): Promise<UserContent> {
  const parts: UserPart[] = [];
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
        if (content.data) parts.push({ type: 'input_audio', input_audio: await audio(content.data, content.format) });
        break;
      case 'video':
        parts.push({ type: 'text', text: `[video ${content.video_url ?? ''}]`.trim() });
        break;
      case 'refusal':
        if (content.refusal) parts.push({ type: 'text', text: content.refusal });
        break;
    }
  }
  if (parts.every((part) => part.type === 'text')) return parts.map((part) => (part as { text: string }).text).join('\n');
  return parts;
}

function plainText(contents: AgentScopeContent[]): string {
  return contents.map((content) => (content.type === 'text' ? (content.text ?? '') : content.type === 'refusal' ? (content.refusal ?? '') : '')).join('');
}

/** Whether an echoed message is a team member's own work (see the projection's metadata). */
function isMemberWork(message: AgentScopeInputMessage): boolean {
  const metadata = message.metadata as { member_run_id?: unknown } | null | undefined;
  return typeof metadata?.member_run_id === 'string';
}

/**
 * The chat messages an AgentScope input stands for. Calls join the assistant message before them (a
 * tool's call and its output follow each other in a stream, so a call after an output opens a new
 * assistant message); outputs become tool messages; an approval request is its call; reasoning,
 * heartbeats, errors, approval answers and MCP bookkeeping are not conversation; a team member's own work is the member's, not the team's conversation.
 */
export async function toChatMessages(input: AgentScopeInputMessage[], audio: AudioResolver): Promise<ChatMessage[]> {
  const messages: ChatMessage[] = [];
  for (const message of input) {
    if (isMemberWork(message)) continue;
    const type = message.type ?? 'message';
    const contents = message.content ?? [];
    if (CALL_TYPES.has(type) || type === 'mcp_approval_request') {
      const calls: ToolCall[] = contents.flatMap((content) => {
        const data = dataOf(content);
        if (!data || typeof data.name !== 'string') return [];
        const id = type === 'mcp_approval_request' ? data.id : data.call_id;
        return [{ id: typeof id === 'string' ? id : `call_${randomUUID()}`, type: 'function' as const, function: { name: data.name, arguments: asText(data.arguments ?? '{}') } }];
      });
      if (calls.length === 0) continue;
      const previous = messages.at(-1);
      // A call that asked for approval first is echoed twice, as its request and as the mcp_call that ran.
      const known = new Set(previous?.role === 'assistant' ? (previous.tool_calls ?? []).map((call) => call.id) : []);
      if (previous?.role === 'assistant') previous.tool_calls = [...(previous.tool_calls ?? []), ...calls.filter((call) => !known.has(call.id))];
      else messages.push({ role: 'assistant', content: null, tool_calls: calls });
    } else if (OUTPUT_TYPES.has(type)) {
      for (const content of contents) {
        const data = dataOf(content);
        if (data && typeof data.call_id === 'string') messages.push({ role: 'tool', tool_call_id: data.call_id, content: asText(data.output) });
      }
    } else if (type === 'message') {
      if (message.role === 'assistant') messages.push({ role: 'assistant', content: plainText(contents) });
      else if (message.role === 'system') messages.push({ role: 'system', content: plainText(contents) });
      else messages.push({ role: 'user', content: await userContent(contents, audio) });
    }
  }
  return messages;
}

/** The server label of an approval request for a tool the agent runs that is no MCP server's (a built-in). */
const SERVER_LABEL = 'open-agent-api';

/**
 * The approval answers of an input: the data of its `mcp_approval_response` messages (the runtime's
 * McpApprovalResponse: `approval_request_id`, `approve`, `reason`) after the agent's last message, as the
 * reference client echoes earlier, already answered ones back. An approval request's id is the call's.
 */
export function toApprovals(input: AgentScopeInputMessage[]): ApprovalAnswer[] {
  const last = input.findLastIndex((message) => message.role === 'assistant');
  const answers: ApprovalAnswer[] = [];
  input.forEach((message, index) => {
    if (index <= last || message.type !== 'mcp_approval_response') return;
    (message.content ?? []).forEach((content, position) => {
      const data = content.type === 'data' ? (content.data as { approval_request_id?: unknown; approve?: unknown; reason?: unknown } | null | undefined) : undefined;
      if (!data) return;
      const at = `input[${index}].content[${position}].data`;
      if (typeof data.approval_request_id !== 'string' || typeof data.approve !== 'boolean') {
        throw new ApiError('invalid_request', `${at}: an approval answer needs approval_request_id (a string) and approve (a boolean).`, { details: [{ field: at, message: 'not an McpApprovalResponse' }] });
      }
      answers.push({
        tool_call_id: data.approval_request_id,
        decision: data.approve ? 'approve' : 'deny',
        ...(typeof data.reason === 'string' && data.reason ? { reason: data.reason } : {}),
      });
    });
  });
  return answers;
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
  quota_exceeded: 'MODEL_QUOTA_EXCEEDED',
  not_found: 'RESOURCE_NOT_FOUND',
  invalid_request: 'INVALID_PARAMETER',
  validation_error: 'INVALID_PARAMETER',
  service_unavailable: 'NETWORK_ERROR',
};

function usageOf(usage: TokenUsage) {
  return { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens };
}

function content(fields: Partial<AgentScopeContent> & Pick<AgentScopeContent, 'type'>): AgentScopeContent {
  return { object: 'content', index: 0, delta: false, msg_id: null, status: 'completed', sequence_number: null, error: null, ...fields } as AgentScopeContent;
}

type MessageType = AgentScopeMessage['type'];
type Role = AgentScopeMessage['role'];

/** Who said it, for a team: the speaker, and for a member's own work the member run it comes from. */
function metadataOf(event: { from?: Speaker; member_run_id?: string }): Record<string, unknown> | null {
  if (!event.from && !event.member_run_id) return null;
  return { ...(event.from ? { from: event.from } : {}), ...(event.member_run_id ? { member_run_id: event.member_run_id } : {}) };
}

/**
 * Projects one turn's run events onto the protocol's objects. Every object gets the next number; the
 * final response's `output` holds the completed message objects exactly as they were streamed.
 */
export class AgentScopeProjection {
  #sequence = 0;
  #response: AgentScopeResponse;
  #output: AgentScopeMessage[] = [];
  /** Calls of this turn that went to remote MCP servers. */
  #mcpCalls = new Set<string>();
  #open = new Map<string, { id: string; metadata: Record<string, unknown> | null }>();
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
      sequence_number: null,
      error: null,
    };
  }

  #number<T extends { sequence_number?: number | null }>(value: T): T {
    value.sequence_number = this.#sequence++;
    return value;
  }

  #responseObject(fields: Partial<AgentScopeResponse>): AgentScopeResponse {
    this.#response = this.#number({ ...this.#response, ...fields });
    return this.#response;
  }

  #message(id: string, type: MessageType, role: Role, status: 'in_progress' | 'completed', contents: AgentScopeContent[] | null, metadata: Record<string, unknown> | null): AgentScopeMessage {
    const message = this.#number<AgentScopeMessage>({ id, object: 'message', type, status, role, content: contents, code: null, message: null, usage: null, metadata, error: null });
    if (status === 'completed') this.#output.push(message);
    return message;
  }

  /** A whole message at once: in progress, its one content completed, completed. */
  #wholeMessage(type: MessageType, role: Role, data: Record<string, unknown>, metadata: Record<string, unknown> | null): AgentScopeObject[] {
    const id = `msg_${randomUUID().replaceAll('-', '')}`;
    const opened = this.#message(id, type, role, 'in_progress', null, metadata);
    const done = this.#number(content({ type: 'data', data, msg_id: id }));
    return [opened, done, this.#message(id, type, role, 'completed', [done], metadata)];
  }

  #final(status: AgentScopeResponse['status'], event: RunEvent, fields: Partial<AgentScopeResponse> = {}): AgentScopeObject[] {
    this.finished = true;
    return [this.#responseObject({ status, completed_at: Math.floor(Date.parse(event.created_at) / 1000), output: this.#output, ...fields })];
  }

  start(): AgentScopeObject[] {
    return [this.#responseObject({ status: 'created' }), this.#responseObject({ status: 'in_progress' })];
  }

  project(event: RunEvent): AgentScopeObject[] {
    switch (event.type) {
      case 'RunResponse': {
        const out: AgentScopeObject[] = [];
        const key = event.message_id;
        let open = this.#open.get(key);
        const text = event.message ? (typeof event.message.content === 'string' ? event.message.content : '') : '';
        if (!open && (event.delta || text)) {
          open = { id: `msg_${key.replace(/^msg_/, '')}`, metadata: metadataOf(event) };
          this.#open.set(key, open);
          out.push(this.#message(open.id, 'message', 'assistant', 'in_progress', null, open.metadata));
        }
        if (open && event.delta) out.push(this.#number(content({ type: 'text', text: event.delta, delta: true, msg_id: open.id, status: 'in_progress' })));
        if (open && event.message) {
          const whole = this.#number(content({ type: 'text', text, delta: null, msg_id: open.id }));
          out.push(whole, this.#message(open.id, 'message', 'assistant', 'completed', [whole], open.metadata));
          this.#open.delete(key);
        }
        return out;
      }
      case 'ToolCallStarted':
        // A remote MCP server's tool is the protocol's mcp_call, labelled with the server.
        if (event.mcp) this.#mcpCalls.add(event.tool_call.id);
        return this.#wholeMessage(
          event.mcp ? 'mcp_call' : 'plugin_call',
          'assistant',
          {
            call_id: event.tool_call.id,
            name: event.tool_call.function.name,
            arguments: event.tool_call.function.arguments,
            ...(event.mcp ? { server_label: event.mcp.server } : {}),
          },
          metadataOf(event),
        );
      case 'ToolCallCompleted':
        return this.#wholeMessage(
          this.#mcpCalls.has(event.tool_call_id) ? 'mcp_call_output' : 'plugin_call_output',
          'tool',
          { call_id: event.tool_call_id, name: event.name, output: event.output },
          metadataOf(event),
        );
      case 'ToolRequest': {
        // A server-side call waiting for approval is an mcp_approval_request (the runtime's McpApprovalRequest),
        // answered by an mcp_approval_response naming it; a client-side tool is a function_call.
        const asked = new Map((event.approvals ?? []).map((approval) => [approval.tool_call_id, approval]));
        const out = event.tool_calls.flatMap((call) => {
          const approval = asked.get(call.id);
          return approval
            ? this.#wholeMessage(
                'mcp_approval_request',
                'assistant',
                { id: call.id, name: call.function.name, arguments: call.function.arguments, server_label: approval.mcp?.server ?? SERVER_LABEL },
                metadataOf(event),
              )
            : this.#wholeMessage('function_call', 'assistant', { call_id: call.id, name: call.function.name, arguments: call.function.arguments }, metadataOf(event));
        });
        return [...out, ...this.#final('completed', event, { usage: usageOf(event.usage) })];
      }
      case 'RunCompleted':
        return this.#final(event.status === 'canceled' ? 'canceled' : 'completed', event, { usage: usageOf(event.usage) });
      case 'RunError':
        return this.#final('failed', event, { error: { code: ERROR_CODES[event.error.code] ?? 'AGENT_UNKNOWN_ERROR', message: event.error.message } });
      default:
        return [];
    }
  }

  /** The response as it stands: the final object of a stream, or the whole answer without one. */
  get response(): AgentScopeResponse {
    return this.#response;
  }
}
