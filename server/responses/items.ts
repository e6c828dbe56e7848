// The items of OpenAI's Responses API and the chat messages the run core speaks. A request's input is
// made into items with ids (kept, listed and replayed as they are); a history of items is made into the
// chat transcript a run starts from. Pure: no store, no clock.
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError } from '../errors.ts';
import type { ChatMessage, FunctionTool, ToolCall } from '../models/types.ts';
import type { ApprovalAnswer, ModelSettings } from '../runs/loop.ts';

type Schemas = components['schemas'];
export type InputItem = Schemas['ResponseInputItem'];
export type Item = Schemas['ResponseItem'];
export type ContentPart = Schemas['ResponseContentPart'];
export type CreateResponseRequest = Schemas['CreateResponseRequest'];

/** The label of the tools an agent runs on this server, shown as `mcp_call` items. */
export const SERVER_LABEL = 'open-agent-api';

export const itemId = (prefix: 'msg' | 'fc' | 'fco' | 'mcp' | 'mcpa') => `${prefix}_${randomUUID().replaceAll('-', '')}`;

/**
 * The item ids of a server-side call: its `mcp_call` and, when it asked for approval first, its
 * `mcp_approval_request`. Both name the call, so that a later transcript joins a request to the call
 * that ran once it was answered.
 */
export const serverCallItemId = (callId: string) => `mcp_${callId}`;
export const approvalRequestItemId = (callId: string) => `mcpr_${callId}`;
const callIdOf = (itemId: string, prefix: 'mcp_' | 'mcpr_') => (itemId.startsWith(prefix) ? itemId.slice(prefix.length) : undefined);

function invalid(field: string, message: string): ApiError {
  return new ApiError('invalid_request', `${field}: ${message}`, { details: [{ field, message }] });
}

function required<T>(value: T | null | undefined, field: string): T {
  if (value === undefined || value === null) throw invalid(field, 'is required for this item type');
  return value;
}

function contentOf(role: string, content: InputItem['content'], field: string): ContentPart[] {
  const assistant = role === 'assistant';
  if (typeof content === 'string') return [assistant ? { type: 'output_text', text: content, annotations: [] } : { type: 'input_text', text: content }];
  const parts = required(content, field);
  return parts.map((part, index) => {
    const at = `${field}[${index}]`;
    const allowed = assistant ? ['output_text', 'refusal'] : ['input_text', 'input_image'];
    if (!allowed.includes(part.type)) throw invalid(`${at}.type`, `a ${role} message cannot hold ${part.type}`);
    if (part.type === 'input_image') {
      if (part.file_id) throw invalid(`${at}.file_id`, 'files are not supported; send image_url (an http(s) or data: URL)');
      return { type: 'input_image', image_url: required(part.image_url, `${at}.image_url`), detail: part.detail ?? 'auto' };
    }
    if (part.type === 'refusal') return { type: 'refusal', refusal: required(part.refusal, `${at}.refusal`) };
    const text = required(part.text, `${at}.text`);
    return part.type === 'output_text' ? { type: 'output_text', text, annotations: [] } : { type: 'input_text', text };
  });
}

/**
 * The request's input as items with ids. `references` holds the items an `item_reference` may name
 * (earlier responses' and the conversation's); a reference to anything else is refused.
 */
export function inputItems(input: CreateResponseRequest['input'], references: ReadonlyMap<string, Item>, field = 'input'): Item[] {
  if (input === undefined) return [];
  if (typeof input === 'string') return [{ id: itemId('msg'), type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: input }] }];
  return input.map((item, index): Item => {
    const at = `${field}[${index}]`;
    switch (item.type ?? 'message') {
      case 'message': {
        const role = required(item.role, `${at}.role`);
        return { id: item.id ?? itemId('msg'), type: 'message', role, status: 'completed', content: contentOf(role, item.content, `${at}.content`) };
      }
      case 'function_call':
        return {
          id: item.id ?? itemId('fc'),
          type: 'function_call',
          call_id: required(item.call_id, `${at}.call_id`),
          name: required(item.name, `${at}.name`),
          arguments: required(item.arguments, `${at}.arguments`),
          status: 'completed',
        };
      case 'function_call_output': {
        const output = required(item.output, `${at}.output`);
        if (Array.isArray(output) && output.some((part) => part.type !== 'input_text')) {
          throw invalid(`${at}.output`, 'only input_text parts are supported in a function call output');
        }
        return {
          id: item.id ?? itemId('fco'),
          type: 'function_call_output',
          call_id: required(item.call_id, `${at}.call_id`),
          output: Array.isArray(output) ? output.map((part) => ({ type: 'input_text' as const, text: required(part.text, `${at}.output.text`) })) : output,
          status: 'completed',
        };
      }
      case 'mcp_call':
        return {
          id: item.id ?? itemId('mcp'),
          type: 'mcp_call',
          server_label: item.server_label ?? SERVER_LABEL,
          name: required(item.name, `${at}.name`),
          arguments: required(item.arguments, `${at}.arguments`),
          output: typeof item.output === 'string' ? item.output : null,
          error: item.error ?? null,
          status: 'completed',
        };
      case 'mcp_approval_response':
        return {
          id: item.id ?? itemId('mcpa'),
          type: 'mcp_approval_response',
          approval_request_id: required(item.approval_request_id, `${at}.approval_request_id`),
          approve: required(item.approve, `${at}.approve`),
          reason: item.reason ?? null,
        };
      case 'item_reference': {
        const id = required(item.id, `${at}.id`);
        const found = references.get(id);
        if (!found) throw new ApiError('not_found', `${at}.id: no item ${id} in your earlier responses or this conversation.`, { details: [{ field: `${at}.id`, message: 'unknown item' }] });
        return found;
      }
      default:
        throw invalid(`${at}.type`, 'unsupported item type');
    }
  });
}

/** The ids an input names with `item_reference`, to look up before `inputItems`. */
export function referencedIds(input: CreateResponseRequest['input']): string[] {
  if (!Array.isArray(input)) return [];
  return input.flatMap((item) => (item.type === 'item_reference' && item.id ? [item.id] : []));
}

function partsText(parts: ContentPart[] | string): string {
  if (typeof parts === 'string') return parts;
  return parts.map((part) => part.text ?? part.refusal ?? '').join('');
}

function userContent(parts: ContentPart[]): Extract<ChatMessage, { role: 'user' }>['content'] {
  if (parts.every((part) => part.type === 'input_text')) return partsText(parts);
  return parts.map((part) =>
    part.type === 'input_image'
      ? { type: 'image_url' as const, image_url: { url: part.image_url ?? '', detail: part.detail === 'low' || part.detail === 'high' ? part.detail : 'auto' } }
      : { type: 'text' as const, text: part.text ?? '' },
  );
}

/**
 * The approval answers of a response's input, checked against the requests of the history: each answers
 * one request of the last turn (no user message came after it) that is not answered yet, once. The calls they answer run (or are
 * refused) before the model is called again; a request left unanswered is dropped from the transcript.
 */
export function answeredApprovals(history: Item[], input: Item[], field = 'input'): { calls: ToolCall[]; answers: ApprovalAnswer[] } | undefined {
  const requests = new Map<string, Extract<Item, { type: 'mcp_approval_request' }>>();
  const answered = new Set<string>();
  /** Requests a later user message went on without: their turn is over. */
  const lapsed = new Set<string>();
  for (const item of history) {
    if (item.type === 'mcp_approval_request') requests.set(item.id, item);
    if (item.type === 'mcp_approval_response') answered.add(item.approval_request_id);
    if (item.type === 'message' && item.role === 'user') for (const id of requests.keys()) lapsed.add(id);
  }
  const calls: ToolCall[] = [];
  const answers: ApprovalAnswer[] = [];
  input.forEach((item, index) => {
    if (item.type !== 'mcp_approval_response') return;
    const at = `${field}[${index}].approval_request_id`;
    const request = requests.get(item.approval_request_id);
    if (!request) throw invalid(at, `no approval request ${item.approval_request_id} in the previous responses`);
    if (answered.has(request.id)) throw invalid(at, `the approval request ${request.id} is already answered`);
    if (lapsed.has(request.id)) throw invalid(at, `the approval request ${request.id} lapsed: the conversation went on without an answer`);
    answered.add(request.id);
    const callId = callIdOf(request.id, 'mcpr_') ?? request.id;
    calls.push({ id: callId, type: 'function', function: { name: request.name, arguments: request.arguments } });
    answers.push({ tool_call_id: callId, decision: item.approve ? 'approve' : 'deny', ...(item.reason ? { reason: item.reason } : {}) });
  });
  return calls.length > 0 ? { calls, answers } : undefined;
}

/**
 * A history of items as the chat transcript a model reads: function calls join the assistant message
 * they follow (or make one), their outputs become tool messages, a server tool call becomes a call and
 * its result. A call that asked for approval is the call once answered, and its `mcp_call` (when it ran,
 * or was denied) its result; a request nobody answered is left out, as the model never got a result for it.
 */
export function toChatMessages(items: Item[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const answered = new Set(items.flatMap((item) => (item.type === 'mcp_approval_response' ? [item.approval_request_id] : [])));
  /** Calls of answered approval requests, whose result is still to come. */
  const approved = new Set<string>();
  const call = (toolCall: ToolCall) => {
    const last = messages.at(-1);
    if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), toolCall];
    else messages.push({ role: 'assistant', content: null, tool_calls: [toolCall] });
  };
  for (const item of items) {
    switch (item.type) {
      case 'message':
        if (item.role === 'assistant') messages.push({ role: 'assistant', content: partsText(item.content) });
        else if (item.role === 'user') messages.push({ role: 'user', content: userContent(item.content) });
        else messages.push({ role: 'system', content: partsText(item.content) });
        break;
      case 'function_call':
        call({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } });
        break;
      case 'function_call_output':
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: partsText(item.output) });
        break;
      case 'mcp_call': {
        const callId = callIdOf(item.id, 'mcp_');
        if (callId && approved.delete(callId)) {
          messages.push({ role: 'tool', tool_call_id: callId, content: item.output ?? item.error ?? '' });
          break;
        }
        call({ id: item.id, type: 'function', function: { name: item.name, arguments: item.arguments } });
        messages.push({ role: 'tool', tool_call_id: item.id, content: item.output ?? item.error ?? '' });
        break;
      }
      case 'mcp_approval_request': {
        if (!answered.has(item.id)) break;
        const callId = callIdOf(item.id, 'mcpr_') ?? item.id;
        approved.add(callId);
        call({ id: callId, type: 'function', function: { name: item.name, arguments: item.arguments } });
        break;
      }
      case 'mcp_approval_response':
        break;
    }
  }
  return messages;
}

/** The request's function tools as the run core's client-side tools. */
export function clientTools(tools: CreateResponseRequest['tools']): FunctionTool[] {
  return (tools ?? []).map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      ...(tool.parameters ? { parameters: tool.parameters } : {}),
      ...(tool.strict != null ? { strict: tool.strict } : {}),
    },
  }));
}

/** The request's sampling, output and tool settings as the run core's model settings. */
export function modelSettings(body: CreateResponseRequest): ModelSettings {
  const format = body.text?.format;
  const choice = body.tool_choice;
  return {
    ...(body.temperature != null ? { temperature: body.temperature } : {}),
    ...(body.top_p != null ? { top_p: body.top_p } : {}),
    ...(body.max_output_tokens != null ? { max_tokens: body.max_output_tokens } : {}),
    ...(body.parallel_tool_calls != null ? { parallel_tool_calls: body.parallel_tool_calls } : {}),
    ...(choice ? { tool_choice: typeof choice === 'string' ? choice : { type: 'function' as const, function: { name: choice.name } } } : {}),
    ...(format?.type === 'json_object' ? { response_format: { type: 'json_object' as const } } : {}),
    ...(format?.type === 'json_schema'
      ? {
          response_format: {
            type: 'json_schema' as const,
            json_schema: {
              name: format.name,
              schema: format.schema,
              ...(format.description ? { description: format.description } : {}),
              ...(format.strict != null ? { strict: format.strict } : {}),
            },
          },
        }
      : {}),
  };
}
