// A run's events as OpenAI's Responses stream, and the Response object they make. Pure and
// deterministic: the same events give the same stream events with the same sequence numbers, so a live
// stream, a replay from `starting_after` on another server, and a retrieved response all agree.
//
// RunStarted opens the response (`response.created`, `response.in_progress`); text deltas open a message
// item and stream into it; a whole message closes it (or is said at once when it came without deltas);
// a tool the server runs is an `mcp_call` item; the client-side calls a run halts for are `function_call`
// items, and server-side calls waiting for approval `mcp_approval_request` items, and the response is then completed, as OpenAI ends a turn that calls functions; the terminal
// event is `response.completed`, `response.incomplete` (a length limit, or a cancel) or `response.failed`.
import type { components } from '../../generated/openapi.gen.ts';
import { textOf } from '../models/types.ts';
import type { RunEvent } from '../runs/events.ts';
import { approvalRequestItemId, SERVER_LABEL, serverCallItemId, type Item } from './items.ts';

type Schemas = components['schemas'];
export type ResponseObject = Schemas['Response'];
export type StreamEvent = Schemas['ResponseStreamEvent'];
type MessageItem = Schemas['ResponseMessageItem'];
type ServerToolItem = Schemas['ResponseServerToolCallItem'];

/** Stream events before they are numbered. */
type Unnumbered = StreamEvent extends infer E ? (E extends StreamEvent ? Omit<E, 'sequence_number'> : never) : never;

interface OpenText {
  outputIndex: number;
  item: MessageItem;
  text: string;
}

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

export function isTerminalEvent(event: StreamEvent): boolean {
  return TERMINAL.has(event.type);
}

/** OpenAI's codes for a failed response: rate limits are theirs; anything else is a server error. */
function failureCode(code: string): string {
  return code === 'rate_limited' || code === 'quota_exceeded' ? 'rate_limit_exceeded' : 'server_error';
}

export class ResponseProjector {
  readonly response: ResponseObject;
  #sequence = 0;
  #texts = new Map<string, OpenText>();
  #tools = new Map<string, number>();
  #started = false;
  #ended = false;

  /** `base` is the response as it is before its run says anything: status, output and usage are filled here. */
  constructor(base: ResponseObject) {
    this.response = { ...base, output: [], status: 'in_progress', usage: null, error: null, incomplete_details: null };
  }

  get ended(): boolean {
    return this.#ended;
  }

  #number(events: Unnumbered[]): StreamEvent[] {
    return events.map((event) => ({ ...event, sequence_number: this.#sequence++ }) as StreamEvent);
  }

  #snapshot(): ResponseObject {
    return structuredClone(this.response);
  }

  #openText(messageId: string, out: Unnumbered[]): OpenText {
    const known = this.#texts.get(messageId);
    if (known) return known;
    const item: MessageItem = { id: messageId, type: 'message', role: 'assistant', status: 'in_progress', content: [] };
    const open: OpenText = { outputIndex: this.response.output.length, item, text: '' };
    this.response.output.push(item);
    this.#texts.set(messageId, open);
    out.push({ type: 'response.output_item.added', output_index: open.outputIndex, item: structuredClone(item) });
    item.content.push({ type: 'output_text', text: '', annotations: [] });
    out.push({ type: 'response.content_part.added', output_index: open.outputIndex, item_id: messageId, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
    return open;
  }

  #delta(open: OpenText, delta: string, out: Unnumbered[]): void {
    open.text += delta;
    open.item.content[0] = { type: 'output_text', text: open.text, annotations: [] };
    out.push({ type: 'response.output_text.delta', output_index: open.outputIndex, item_id: open.item.id, content_index: 0, delta, logprobs: [] });
  }

  #closeText(open: OpenText, status: MessageItem['status'], out: Unnumbered[]): void {
    const part = { type: 'output_text' as const, text: open.text, annotations: [] };
    open.item.content[0] = part;
    open.item.status = status;
    out.push({ type: 'response.output_text.done', output_index: open.outputIndex, item_id: open.item.id, content_index: 0, text: open.text, logprobs: [] });
    out.push({ type: 'response.content_part.done', output_index: open.outputIndex, item_id: open.item.id, content_index: 0, part });
    out.push({ type: 'response.output_item.done', output_index: open.outputIndex, item: structuredClone(open.item) });
    this.#texts.delete(open.item.id);
  }

  #end(fields: Partial<ResponseObject>, type: 'response.completed' | 'response.incomplete' | 'response.failed', out: Unnumbered[], at: string): void {
    for (const open of [...this.#texts.values()]) this.#closeText(open, 'incomplete', out);
    Object.assign(this.response, fields, { completed_at: Math.floor(Date.parse(at) / 1000) });
    this.#ended = true;
    out.push({ type, response: this.#snapshot() });
  }

  /** The stream events one run event makes (none for events a response does not show). */
  add(event: RunEvent): StreamEvent[] {
    if (this.#ended) return [];
    const out: Unnumbered[] = [];
    const own = !('member_run_id' in event) || event.member_run_id === undefined;
    switch (event.type) {
      case 'RunStarted':
        if (this.#started) break;
        this.#started = true;
        out.push({ type: 'response.created', response: this.#snapshot() });
        out.push({ type: 'response.in_progress', response: this.#snapshot() });
        break;
      case 'RunResponse': {
        if (!own) break;
        if (event.delta) {
          this.#delta(this.#openText(event.message_id, out), event.delta, out);
        } else if (event.message) {
          const known = this.#texts.get(event.message_id);
          const text = textOf(event.message.content);
          if (known) this.#closeText(known, 'completed', out);
          else if (text) {
            const open = this.#openText(event.message_id, out);
            this.#delta(open, text, out);
            this.#closeText(open, 'completed', out);
          }
        }
        break;
      }
      case 'ToolCallStarted': {
        if (!own) break;
        const call = event.tool_call;
        const item: ServerToolItem = { id: serverCallItemId(call.id), type: 'mcp_call', server_label: SERVER_LABEL, name: call.function.name, arguments: call.function.arguments, output: null, error: null, status: 'calling' };
        this.#tools.set(call.id, this.response.output.length);
        out.push({ type: 'response.output_item.added', output_index: this.response.output.length, item: structuredClone(item) });
        this.response.output.push(item);
        break;
      }
      case 'ToolCallCompleted': {
        if (!own) break;
        const index = this.#tools.get(event.tool_call_id);
        const item = index === undefined ? undefined : (this.response.output[index] as ServerToolItem);
        if (index === undefined || !item) break;
        Object.assign(item, event.is_error ? { error: event.output, status: 'failed' } : { output: event.output, status: 'completed' });
        out.push({ type: 'response.output_item.done', output_index: index, item: structuredClone(item) });
        break;
      }
      case 'ToolRequest': {
        const asked = new Set((event.approvals ?? []).map((approval) => approval.tool_call_id));
        for (const call of event.tool_calls) {
          const outputIndex = this.response.output.length;
          if (asked.has(call.id)) {
            // A server-side call that waits for the client's approval: said whole, as OpenAI does.
            const request: Item = { id: approvalRequestItemId(call.id), type: 'mcp_approval_request', server_label: SERVER_LABEL, name: call.function.name, arguments: call.function.arguments };
            out.push({ type: 'response.output_item.added', output_index: outputIndex, item: structuredClone(request) });
            out.push({ type: 'response.output_item.done', output_index: outputIndex, item: structuredClone(request) });
            this.response.output.push(request);
            continue;
          }
          const id = `fc_${call.id}`;
          const item: Item = { id, type: 'function_call', call_id: call.id, name: call.function.name, arguments: call.function.arguments, status: 'completed' };
          out.push({ type: 'response.output_item.added', output_index: outputIndex, item: { ...item, arguments: '', status: 'in_progress' } });
          if (call.function.arguments) out.push({ type: 'response.function_call_arguments.delta', output_index: outputIndex, item_id: id, delta: call.function.arguments });
          out.push({ type: 'response.function_call_arguments.done', output_index: outputIndex, item_id: id, arguments: call.function.arguments });
          out.push({ type: 'response.output_item.done', output_index: outputIndex, item: structuredClone(item) });
          this.response.output.push(item);
        }
        this.#end({ status: 'completed', usage: usageOf(event.usage) }, 'response.completed', out, event.created_at);
        break;
      }
      case 'RunCompleted':
        if (event.status === 'canceled') {
          this.#end({ status: 'cancelled', usage: usageOf(event.usage) }, 'response.incomplete', out, event.created_at);
        } else if (event.finish_reason === 'length' || event.finish_reason === 'content_filter') {
          const reason = event.finish_reason === 'length' ? 'max_output_tokens' : 'content_filter';
          this.#end({ status: 'incomplete', incomplete_details: { reason }, usage: usageOf(event.usage) }, 'response.incomplete', out, event.created_at);
        } else {
          this.#end({ status: 'completed', usage: usageOf(event.usage) }, 'response.completed', out, event.created_at);
        }
        break;
      case 'RunError':
        this.#end({ status: 'failed', error: { code: failureCode(event.error.code), message: event.error.message } }, 'response.failed', out, event.created_at);
        break;
      default:
        break;
    }
    return this.#number(out);
  }
}

export function usageOf(usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }): Schemas['ResponseUsage'] {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}

/** The response its run's events make, and every stream event on the way. */
export function project(base: ResponseObject, events: Iterable<RunEvent>): { response: ResponseObject; events: StreamEvent[] } {
  const projector = new ResponseProjector(base);
  const all: StreamEvent[] = [];
  for (const event of events) all.push(...projector.add(event));
  return { response: projector.response, events: all };
}
