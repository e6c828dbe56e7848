// AG-UI 1.0 (the Agent–User Interaction protocol) as a projection of run events. In: a RunAgentInput,
// whose threadId names the conversation and whose messages are the client's whole history. Out: AG-UI
// events, every entity opened before it is used and closed before the run finishes, as the client's
// sequence verifier demands; optional fields absent, never null, as its schemas demand.
//   - what the run says: TEXT_MESSAGE_START / CONTENT / END (a message said whole gets all three at once);
//   - tools the server ran: TOOL_CALL_START / ARGS / END in the assistant message that called them, then
//     TOOL_CALL_RESULT;
//   - a team member's own work: STEP_STARTED and SUBAGENT_STARTED (named by its member run), its events
//     tagged with `subagentRunId`, then SUBAGENT_FINISHED and STEP_FINISHED;
//   - client-side tools: their calls, then RUN_FINISHED with outcome `success` and `pendingToolCallIds`
//     (AG-UI 1.0: a run that stopped on a front-end tool is a completed run; the client sends the tool
//     messages in the next run, which continues ours);
//   - the end: RUN_FINISHED (success, or cancelled) with usage, or RUN_ERROR.
import { ApiError, field } from '../errors.ts';
import type { components } from '../../generated/openapi.gen.ts';
import type { ChatMessage, FunctionTool, ToolCall } from '../models/types.ts';
import type { RunEvent, TokenUsage } from '../runs/events.ts';
import type { AudioResolver } from './agentscope.ts';

type Schemas = components['schemas'];
export type AgUiInput = Schemas['AgUiRunAgentInput'];
export type AgUiMessage = Schemas['AgUiMessage'];
export type AgUiEvent = Schemas['AgUiEvent'];

type UserContent = Extract<ChatMessage, { role: 'user' }>['content'];
type UserPart = Exclude<UserContent, string>[number];

interface Part {
  type?: unknown;
  text?: unknown;
  source?: { type?: unknown; value?: unknown; mimeType?: unknown };
}

function invalid(index: number, message: string, path = 'content'): ApiError {
  return new ApiError('invalid_request', message, { details: [{ field: field('messages', index, path), message }] });
}

/** A part's media as the chat format takes it: an image URL (or data: URL), or audio as base64. */
async function mediaPart(part: Part, index: number, audio: AudioResolver): Promise<UserPart> {
  const source = part.source ?? {};
  const value = typeof source.value === 'string' ? source.value : '';
  const mime = typeof source.mimeType === 'string' ? source.mimeType : undefined;
  if (!value || (source.type !== 'data' && source.type !== 'url')) {
    if (part.type === 'document' || part.type === 'video') return { type: 'text', text: `[${part.type} ${value}]`.trim() };
    throw invalid(index, `A ${String(part.type)} part needs a source of type data or url with a value.`);
  }
  if (part.type === 'image') {
    if (source.type === 'url') return { type: 'image_url', image_url: { url: value } };
    if (!mime) throw invalid(index, 'Inline image data needs its mimeType.');
    return { type: 'image_url', image_url: { url: `data:${mime};base64,${value}` } };
  }
  if (part.type === 'audio') return { type: 'input_audio', input_audio: await audio(value, mime) };
  return { type: 'text', text: `[${String(part.type)} ${source.type === 'url' ? value : mime ?? 'inline'}]` };
}

async function contentOf(content: unknown, index: number, audio: AudioResolver): Promise<UserContent> {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(index, 'Content must be text or a list of parts.');
  const parts: UserPart[] = [];
  for (const part of content as Part[]) {
    if (part?.type === 'text') parts.push({ type: 'text', text: typeof part.text === 'string' ? part.text : '' });
    else parts.push(await mediaPart(part, index, audio));
  }
  if (parts.every((part) => part.type === 'text')) return parts.map((part) => (part as { text: string }).text).join('\n');
  return parts;
}

function textOfContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Part[]).map((part) => (part?.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}

/** AG-UI's history as chat messages; the front end's own activity and reasoning messages are not conversation. */
export async function toChatMessages(messages: AgUiMessage[], audio: AudioResolver): Promise<ChatMessage[]> {
  const out: ChatMessage[] = [];
  for (const [index, message] of messages.entries()) {
    switch (message.role) {
      case 'developer':
      case 'system':
        out.push({ role: 'system', content: textOfContent(message.content) });
        break;
      case 'user':
        out.push({ role: 'user', content: await contentOf(message.content ?? '', index, audio) });
        break;
      case 'assistant': {
        const calls: ToolCall[] = (message.toolCalls ?? []).map((call) => ({ id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }));
        const text = textOfContent(message.content);
        out.push({ role: 'assistant', content: text || (calls.length ? null : ''), ...(calls.length ? { tool_calls: calls } : {}) });
        break;
      }
      case 'tool': {
        if (!message.toolCallId) throw invalid(index, 'A tool message needs its toolCallId.', 'toolCallId');
        const text = textOfContent(message.content);
        out.push({ role: 'tool', tool_call_id: message.toolCallId, content: message.error ? `Error: ${message.error}${text ? `\n${text}` : ''}` : text });
        break;
      }
      default:
        break;
    }
  }
  return out;
}

export function toFunctionTools(tools: AgUiInput['tools']): FunctionTool[] {
  return (tools ?? []).map((tool) => ({
    type: 'function' as const,
    function: { name: tool.name, description: tool.description, ...(tool.parameters ? { parameters: tool.parameters } : {}) },
  }));
}

/** What the front end tells the model besides the conversation: its context entries and its state. */
export function turnInstructions(input: AgUiInput): string | undefined {
  const lines = (input.context ?? []).map((entry) => `- ${entry.description}: ${entry.value}`);
  const state = input.state;
  const hasState = state !== undefined && state !== null && !(typeof state === 'object' && Object.keys(state as object).length === 0);
  const parts = [
    ...(lines.length ? [`Context from the application:\n${lines.join('\n')}`] : []),
    ...(hasState ? [`The application's current state: ${JSON.stringify(state)}`] : []),
  ];
  return parts.length ? parts.join('\n\n') : undefined;
}

/** What an approval answer looks like in a resume entry's `payload`. */
const APPROVAL_ANSWER = {
  type: 'object',
  properties: { approved: { type: 'boolean' }, reason: { type: 'string', description: 'Why; a denial\'s reason is given to the model.' } },
  required: ['approved'],
} as const;

/** A server-side tool call waiting for approval, as an AG-UI interrupt answered by the call's id. */
function approvalInterrupt(approval: Schemas['ApprovalRequest']): Schemas['AgUiInterrupt'] {
  const where = approval.mcp ? ` on the MCP server ${approval.mcp.server}` : '';
  return {
    id: approval.tool_call_id,
    reason: 'tool_approval',
    message: `Allow the tool ${approval.name}${where} to run?`,
    toolCallId: approval.tool_call_id,
    responseSchema: APPROVAL_ANSWER,
  };
}

/**
 * Resume entries as approval answers. `resolved` with `{approved: true}` (or `true`) approves; anything
 * else resolved, or `cancelled`, denies, with the payload's reason when it gives one.
 */
export function toApprovals(resume: NonNullable<AgUiInput['resume']>): Schemas['ApprovalAnswer'][] {
  return resume.map((entry, index) => {
    const payload = entry.payload as { approved?: unknown; reason?: unknown } | boolean | undefined;
    const approved = entry.status === 'resolved' && (payload === true || (typeof payload === 'object' && payload !== null && payload.approved === true));
    const given = typeof payload === 'object' && payload !== null && typeof payload.reason === 'string' ? payload.reason : undefined;
    if (given !== undefined && given.length > 2000) {
      throw new ApiError('invalid_request', 'A resume reason is longer than 2000 characters.', { details: [{ field: field('resume', index, 'payload', 'reason'), message: 'longer than 2000 characters' }] });
    }
    const reason = given ?? (entry.status === 'cancelled' ? 'The user dismissed the request.' : undefined);
    return { tool_call_id: entry.interruptId, decision: approved ? 'approve' : 'deny', ...(reason ? { reason } : {}) };
  });
}

function usageOf(usage: TokenUsage, model: string | undefined): Schemas['AgUiTokenUsage'][] {
  return [{ ...(model ? { model } : {}), inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens, totalTokens: usage.total_tokens }];
}

interface OpenText {
  messageId: string;
  subagentRunId: string | undefined;
}

/**
 * Projects one turn's run events onto AG-UI events. Stateful only in what is open (messages, members)
 * and which ids it has used; each event's timestamp is the run event's.
 */
export class AgUiProjection {
  #threadId: string;
  #runId: string;
  #started = false;
  #model: string | undefined;
  #texts = new Map<string, OpenText>();
  /** Message ids already given out, so that a message said again (a team adopting a member's) gets its own. */
  #used = new Set<string>();
  /** The assistant message whose tool calls come next, per speaker (the team's own: ''). */
  #lastMessage = new Map<string, string>();
  #members = new Map<string, string>();
  #lastDelegation: string | undefined;
  finished = false;

  constructor(input: Pick<AgUiInput, 'threadId' | 'runId'>) {
    this.#threadId = input.threadId;
    this.#runId = input.runId;
  }

  project(event: RunEvent): AgUiEvent[] {
    const timestamp = Date.parse(event.created_at);
    const out: AgUiEvent[] = [];
    const member = 'member_run_id' in event ? event.member_run_id : undefined;
    if (member) out.push(...this.#openMember(member, event.type === 'RunStarted' ? undefined : event.from?.name, timestamp));
    else if (event.type !== 'RunStarted') out.push(...this.#closeMembers(timestamp));
    const tag = member ? { subagentRunId: member } : {};
    const speaker = member ?? '';
    switch (event.type) {
      case 'RunStarted':
        if (this.#started) return out;
        this.#started = true;
        this.#model = event.model;
        out.push({ type: 'RUN_STARTED', timestamp, threadId: this.#threadId, runId: this.#runId, metadata: { run_id: event.run_id, session_id: event.session_id } });
        return out;
      case 'RunResponse': {
        let open = this.#texts.get(event.message_id);
        if (event.delta !== undefined) {
          if (!open) open = this.#openText(event.message_id, tag, event.from?.name, timestamp, out);
          out.push({ type: 'TEXT_MESSAGE_CONTENT', timestamp, messageId: open.messageId, delta: event.delta, ...tag });
        }
        if (event.message) {
          const text = typeof event.message.content === 'string' ? event.message.content : '';
          if (!open && text) {
            open = this.#openText(event.message_id, tag, event.from?.name, timestamp, out);
            out.push({ type: 'TEXT_MESSAGE_CONTENT', timestamp, messageId: open.messageId, delta: text, ...tag });
          }
          if (open) {
            out.push({ type: 'TEXT_MESSAGE_END', timestamp, messageId: open.messageId, ...tag });
            this.#texts.delete(event.message_id);
          }
          this.#lastMessage.set(speaker, open?.messageId ?? this.#fresh(event.message_id));
        }
        return out;
      }
      case 'ToolCallStarted': {
        const call = event.tool_call;
        if (!member) this.#lastDelegation = call.id;
        out.push(...this.#toolCall(call, this.#lastMessage.get(speaker), tag, timestamp));
        return out;
      }
      case 'ToolCallCompleted':
        out.push({ type: 'TOOL_CALL_RESULT', timestamp, messageId: `${event.tool_call_id}-result`, toolCallId: event.tool_call_id, content: event.output, role: 'tool', ...tag });
        return out;
      case 'ToolRequest': {
        const parent = [...this.#lastMessage.values()].at(-1);
        for (const call of event.tool_calls) out.push(...this.#toolCall(call, parent, {}, timestamp));
        const approvals = event.approvals ?? [];
        out.push(...this.#finish(timestamp), {
          type: 'RUN_FINISHED',
          timestamp,
          threadId: this.#threadId,
          runId: this.#runId,
          // A call waiting for approval is an interrupt, answered by a resume entry; a client-side tool is
          // a pending call, answered by a tool message. A run that waits for both reports the interrupts:
          // its client-side calls were announced above, and the resume carries their results as messages.
          outcome: approvals.length
            ? { type: 'interrupt', interrupts: approvals.map((approval) => approvalInterrupt(approval)) }
            : { type: 'success', pendingToolCallIds: event.tool_calls.map((call) => call.id) },
          usage: usageOf(event.usage, this.#model),
        });
        return out;
      }
      case 'RunCompleted':
        out.push(...this.#finish(timestamp), {
          type: 'RUN_FINISHED',
          timestamp,
          threadId: this.#threadId,
          runId: this.#runId,
          outcome: event.status === 'canceled' ? { type: 'cancelled' } : { type: 'success' },
          usage: usageOf(event.usage, this.#model),
        });
        return out;
      case 'RunError':
        this.finished = true;
        out.push({ type: 'RUN_ERROR', timestamp, message: event.error.message, code: event.error.code });
        return out;
      default:
        return out;
    }
  }

  /** A message id not given out before in this run. */
  #fresh(id: string): string {
    let candidate = id;
    for (let n = 2; this.#used.has(candidate); n++) candidate = `${id}-${n}`;
    this.#used.add(candidate);
    return candidate;
  }

  #openText(key: string, tag: { subagentRunId?: string }, name: string | undefined, timestamp: number, out: AgUiEvent[]): OpenText {
    const open = { messageId: this.#fresh(key), subagentRunId: tag.subagentRunId };
    this.#texts.set(key, open);
    out.push({ type: 'TEXT_MESSAGE_START', timestamp, messageId: open.messageId, role: 'assistant', ...(name ? { name } : {}), ...tag });
    return open;
  }

  #toolCall(call: ToolCall, parent: string | undefined, tag: { subagentRunId?: string }, timestamp: number): AgUiEvent[] {
    return [
      { type: 'TOOL_CALL_START', timestamp, toolCallId: call.id, toolCallName: call.function.name, ...(parent ? { parentMessageId: parent } : {}), ...tag },
      { type: 'TOOL_CALL_ARGS', timestamp, toolCallId: call.id, delta: call.function.arguments, ...tag },
      { type: 'TOOL_CALL_END', timestamp, toolCallId: call.id, ...tag },
    ];
  }

  #openMember(memberRunId: string, name: string | undefined, timestamp: number): AgUiEvent[] {
    if (this.#members.has(memberRunId)) return [];
    const stepName = name ?? memberRunId;
    this.#members.set(memberRunId, stepName);
    return [
      { type: 'STEP_STARTED', timestamp, stepName },
      { type: 'SUBAGENT_STARTED', timestamp, subagentRunId: memberRunId, name: stepName, ...(this.#lastDelegation ? { parentToolCallId: this.#lastDelegation } : {}) },
    ];
  }

  /** Members end when the team speaks again. */
  #closeMembers(timestamp: number): AgUiEvent[] {
    const out: AgUiEvent[] = [];
    for (const [memberRunId, stepName] of this.#members) {
      for (const [key, open] of this.#texts) {
        if (open.subagentRunId !== memberRunId) continue;
        out.push({ type: 'TEXT_MESSAGE_END', timestamp, messageId: open.messageId, subagentRunId: memberRunId });
        this.#texts.delete(key);
      }
      out.push({ type: 'SUBAGENT_FINISHED', timestamp, subagentRunId: memberRunId, outcome: { type: 'success' } }, { type: 'STEP_FINISHED', timestamp, stepName });
    }
    this.#members.clear();
    return out;
  }

  /** Everything still open is closed before the run finishes. */
  #finish(timestamp: number): AgUiEvent[] {
    this.finished = true;
    const out = this.#closeMembers(timestamp);
    for (const open of this.#texts.values()) out.push({ type: 'TEXT_MESSAGE_END', timestamp, messageId: open.messageId, ...(open.subagentRunId ? { subagentRunId: open.subagentRunId } : {}) });
    this.#texts.clear();
    return out;
  }
}
