// The rules a stream must follow beyond each event's schema: for run events, the order, the sequence
// numbers, the SSE `id:`/`event:` fields and that text deltas add up to the message; for AgentScope
// streams, sequence numbers from 0, the lifecycle of the response and the content deltas.
import type { SseEvent } from './http.ts';

const TERMINAL = new Set(['RunCompleted', 'RunError', 'ToolRequest']);

interface RunEventData {
  type: string;
  run_id: string;
  sequence_number: number;
  message_id?: string;
  delta?: string;
  message?: { content?: unknown } | null;
  resumed?: boolean;
  status?: string;
}

export interface RunStream {
  events: RunEventData[];
  runId: string | undefined;
  terminal: RunEventData | undefined;
  problems: string[];
}

/** The text each message got as deltas, by message_id; a message sent whole has no entry. */
export function deltasOf(events: readonly RunEventData[]): Map<string, string> {
  const texts = new Map<string, string>();
  for (const event of events) {
    if (event.type === 'RunResponse' && typeof event.delta === 'string' && event.message_id !== undefined) {
      texts.set(event.message_id, (texts.get(event.message_id) ?? '') + event.delta);
    }
  }
  return texts;
}

/**
 * Checks a stream of run events. `turn`: the stream of one chat call, one `RunStarted` then exactly one
 * terminal event, last. `replay`: a run's stored events, where a `ToolRequest` may be followed by the
 * `RunStarted` (resumed) of the same run continuing. `tail`: a replay after `Last-Event-ID`.
 */
export function analyseRunStream(sse: readonly SseEvent[], mode: 'turn' | 'replay' | 'tail'): RunStream {
  const problems: string[] = [];
  const events = sse.map((event) => event.json as RunEventData | undefined).filter((data): data is RunEventData => !!data && typeof data === 'object');
  if (events.length === 0) return { events, runId: undefined, terminal: undefined, problems: ['the stream has no run events'] };

  sse.forEach((event, index) => {
    const data = event.json as RunEventData | undefined;
    if (!data) return;
    if (event.event !== data.type) problems.push(`event ${index + 1} has "event: ${event.event ?? ''}" but its type is ${data.type}`);
    if (event.id !== String(data.sequence_number)) {
      problems.push(`event ${index + 1} has "id: ${event.id ?? ''}" but its sequence_number is ${data.sequence_number}`);
    }
  });
  for (let i = 1; i < events.length; i++) {
    if (!(events[i]!.sequence_number > events[i - 1]!.sequence_number)) {
      problems.push(`sequence numbers do not strictly increase: ${events[i - 1]!.sequence_number} then ${events[i]!.sequence_number}`);
      break;
    }
  }
  const runIds = new Set(events.map((event) => event.run_id));
  if (runIds.size > 1) problems.push(`the events name ${runIds.size} runs: ${[...runIds].join(', ')}`);

  if (mode !== 'tail' && events[0]!.type !== 'RunStarted') problems.push(`the stream starts with ${events[0]!.type}, not RunStarted`);
  const segments: RunEventData[][] = [];
  for (const event of events) {
    if (event.type === 'RunStarted' || segments.length === 0) segments.push([]);
    segments.at(-1)!.push(event);
  }
  if (mode === 'turn' && segments.length > 1) problems.push(`the stream has ${segments.length} RunStarted events`);
  segments.forEach((segment, index) => {
    // The tail of a replay may begin mid-turn, after a terminal event it does not repeat.
    if (mode === 'tail' && index === 0 && segment[0]!.type !== 'RunStarted') return;
    const terminals = segment.filter((event) => TERMINAL.has(event.type));
    const last = segment.at(-1)!;
    if (terminals.length !== 1 || !TERMINAL.has(last.type)) {
      problems.push(
        `a run stream must end with exactly one of RunCompleted, RunError or ToolRequest; got ${terminals.map((event) => event.type).join(', ') || 'none'}, last ${last.type}`,
      );
    }
    if (index < segments.length - 1) {
      if (last.type !== 'ToolRequest') problems.push(`the run started again after ${last.type}; only a ToolRequest is resumed`);
      if (segments[index + 1]![0]!.resumed !== true) problems.push('the RunStarted after a ToolRequest does not say resumed: true');
    }
  });

  const terminal = events.at(-1)!;
  const result = { events, runId: events[0]!.run_id, terminal: TERMINAL.has(terminal.type) ? terminal : undefined, problems };
  // A tail may have lost the first deltas of a message; only whole streams are added up.
  if (mode === 'tail') return result;
  const deltas = deltasOf(events);
  for (const event of events) {
    if (event.type !== 'RunResponse' || !event.message || event.message_id === undefined) continue;
    const text = deltas.get(event.message_id);
    if (text !== undefined && typeof event.message.content === 'string' && text !== event.message.content) {
      problems.push(`the deltas of message ${event.message_id} concatenate to ${JSON.stringify(text)}, but the message is ${JSON.stringify(event.message.content)}`);
    }
  }
  if (terminal.type === 'RunCompleted' && typeof terminal.message?.content === 'string') {
    const content = terminal.message.content;
    const carrying = events.filter((event) => event.type === 'RunResponse' && event.message?.content === content && event.message_id !== undefined);
    const lastWithDeltas = [...deltas.keys()].at(-1);
    const messageId = carrying.at(-1)?.message_id ?? lastWithDeltas;
    const text = messageId === undefined ? undefined : deltas.get(messageId);
    if (text !== undefined && text !== content) {
      problems.push(`the final message is ${JSON.stringify(content)}, but its deltas concatenate to ${JSON.stringify(text)}`);
    }
  }
  return result;
}

interface AgentScopeObject {
  object?: string;
  id?: string;
  type?: string;
  status?: string;
  sequence_number?: number | null;
  msg_id?: string | null;
  index?: number | null;
  delta?: boolean | null;
  text?: string | null;
  output?: { role?: string | null; type?: string }[] | null;
}

export interface AgentScopeStream {
  objects: AgentScopeObject[];
  final: AgentScopeObject | undefined;
  problems: string[];
}

export function analyseAgentScopeStream(sse: readonly SseEvent[]): AgentScopeStream {
  const problems: string[] = [];
  if (sse.some((event) => event.event !== undefined)) problems.push('AgentScope streams are data-only, but an event has an "event:" field');
  const objects = sse.map((event) => event.json as AgentScopeObject | undefined).filter((data): data is AgentScopeObject => !!data && typeof data === 'object');
  if (objects.length === 0) return { objects, final: undefined, problems: [...problems, 'the stream has no objects'] };

  const numbers = objects.map((object) => object.sequence_number);
  if (numbers[0] !== 0) problems.push(`the first sequence_number is ${numbers[0]}, not 0`);
  for (let i = 1; i < numbers.length; i++) {
    const [before, after] = [numbers[i - 1], numbers[i]];
    if (typeof before !== 'number' || typeof after !== 'number' || !(after > before)) {
      problems.push(`sequence numbers do not increase: ${before} then ${after}`);
      break;
    }
  }
  const first = objects[0]!;
  if (first.object !== 'response' || first.status !== 'created') {
    problems.push(`the stream starts with ${first.object} ${first.status}, not a response with status created`);
  }
  const final = objects.at(-1)!;
  if (final.object !== 'response' || !['completed', 'failed', 'canceled', 'incomplete'].includes(final.status ?? '')) {
    problems.push(`the stream ends with ${final.object} ${final.status}, not a finished response`);
  }

  const deltas = new Map<string, string>();
  for (const object of objects) {
    if (object.object !== 'content' || object.type !== 'text') continue;
    const key = `${object.msg_id}:${object.index}`;
    if (object.delta === true) {
      deltas.set(key, (deltas.get(key) ?? '') + (object.text ?? ''));
    } else if (object.status === 'completed' && deltas.has(key) && deltas.get(key) !== object.text) {
      problems.push(`the text deltas of ${key} concatenate to ${JSON.stringify(deltas.get(key))}, but the completed content is ${JSON.stringify(object.text)}`);
    }
  }
  return { objects, final, problems };
}

interface AgUiEvent {
  type?: string;
  messageId?: string;
  toolCallId?: string;
  delta?: string;
  stepName?: string;
  subagentRunId?: string;
  threadId?: string;
  runId?: string;
  outcome?: { type?: string; pendingToolCallIds?: string[] };
}

export interface AgUiStream {
  events: AgUiEvent[];
  final: AgUiEvent | undefined;
  /** The text of each message, by messageId. */
  texts: Map<string, string>;
  problems: string[];
}

/**
 * An AG-UI 1.0 stream by the rules of its client's verifier: data-only frames, RUN_STARTED first (echoing the
 * input's ids), every message, tool call, step and subagent opened before use and closed before the run
 * finishes, exactly one RUN_FINISHED or RUN_ERROR, last, and no null in an optional field.
 */
export function analyseAgUiStream(sse: readonly SseEvent[], input: { threadId: string; runId: string }): AgUiStream {
  const problems: string[] = [];
  const events = sse.map((event) => event.json as AgUiEvent | undefined).filter((data): data is AgUiEvent => !!data && typeof data === 'object');
  const texts = new Map<string, string>();
  if (events.length === 0) return { events, final: undefined, texts, problems: ['the stream has no events'] };
  const first = events[0]!;
  if (first.type !== 'RUN_STARTED') problems.push(`the stream starts with ${first.type}, not RUN_STARTED`);
  else if (first.threadId !== input.threadId || first.runId !== input.runId) problems.push('RUN_STARTED does not echo the input threadId and runId');
  const open = { text: new Set<string>(), tool: new Set<string>(), step: new Set<string>(), subagent: new Set<string>() };
  let ended = false;
  for (const [index, event] of events.entries()) {
    if (Object.values(event).some((value) => value === null)) problems.push(`${event.type} #${index} has a null field (optional fields must be absent)`);
    if (ended) problems.push(`${event.type} comes after the run ended`);
    switch (event.type) {
      case 'TEXT_MESSAGE_START':
        if (open.text.has(event.messageId!)) problems.push(`message ${event.messageId} starts twice`);
        open.text.add(event.messageId!);
        break;
      case 'TEXT_MESSAGE_CONTENT':
        if (!open.text.has(event.messageId!)) problems.push(`content for message ${event.messageId}, which is not open`);
        texts.set(event.messageId!, (texts.get(event.messageId!) ?? '') + (event.delta ?? ''));
        break;
      case 'TEXT_MESSAGE_END':
        if (!open.text.delete(event.messageId!)) problems.push(`message ${event.messageId} ends without starting`);
        break;
      case 'TOOL_CALL_START':
        open.tool.add(event.toolCallId!);
        break;
      case 'TOOL_CALL_ARGS':
        if (!open.tool.has(event.toolCallId!)) problems.push(`arguments for call ${event.toolCallId}, which is not open`);
        break;
      case 'TOOL_CALL_END':
        if (!open.tool.delete(event.toolCallId!)) problems.push(`call ${event.toolCallId} ends without starting`);
        break;
      case 'STEP_STARTED':
        open.step.add(event.stepName!);
        break;
      case 'STEP_FINISHED':
        if (!open.step.delete(event.stepName!)) problems.push(`step ${event.stepName} finishes without starting`);
        break;
      case 'SUBAGENT_STARTED':
        open.subagent.add(event.subagentRunId!);
        break;
      case 'SUBAGENT_FINISHED':
        if (!open.subagent.delete(event.subagentRunId!)) problems.push(`subagent ${event.subagentRunId} finishes without starting`);
        break;
      case 'RUN_FINISHED': {
        ended = true;
        const left = [...open.text, ...open.tool, ...open.step, ...open.subagent];
        if (left.length) problems.push(`RUN_FINISHED while ${left.join(', ')} are still open`);
        break;
      }
      case 'RUN_ERROR':
        ended = true;
        break;
    }
  }
  if (!ended) problems.push('the stream ends without RUN_FINISHED or RUN_ERROR');
  return { events, final: events.at(-1), texts, problems };
}
