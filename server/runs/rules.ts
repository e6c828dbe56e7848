// The pure rules of a conversation: what a turn may send given what the run waits for, and what makes a
// transcript a valid OpenAI history. No store, no clock: unit-tested on their own.
import { ApiError, field } from '../errors.ts';
import type { ChatMessage, FunctionTool, ToolCall } from '../models/types.ts';
import type { ApprovalAnswer, ApprovalRequest } from './loop.ts';

/**
 * The messages that continue a session. With nothing pending they may not answer tool calls; with calls
 * pending they must be exactly one tool message per pending call, in any order, and nothing else.
 */
export function checkNewMessages(messages: ChatMessage[], pending: ToolCall[] | undefined): void {
  if (!pending) {
    const index = messages.findIndex((message) => message.role === 'tool');
    if (index !== -1) {
      throw new ApiError('invalid_request', 'A tool message answers a pending tool call, and this session has none.', {
        details: [{ field: field('messages', index), message: 'no pending tool call' }],
      });
    }
    return;
  }
  const expected = new Set(pending.map((call) => call.id));
  const answered = new Set<string>();
  messages.forEach((message, index) => {
    if (message.role !== 'tool' || !expected.has(message.tool_call_id) || answered.has(message.tool_call_id)) {
      throw new ApiError('invalid_request', 'The run waits for tool results: send one tool message for each pending tool call, and nothing else.', {
        details: [
          {
            field: field('messages', index),
            message: message.role === 'tool' ? `unexpected tool_call_id ${message.tool_call_id}` : 'expected a tool message',
          },
        ],
      });
    }
    answered.add(message.tool_call_id);
  });
  const missing = [...expected].filter((id) => !answered.has(id));
  if (missing.length > 0) {
    throw new ApiError('invalid_request', `Tool results are missing for: ${missing.join(', ')}.`, {
      details: missing.map((id) => ({ field: 'messages', message: `no result for ${id}` })),
    });
  }
}

/** In a transcript, every tool message answers a call of an earlier assistant message, once. */
export function checkTranscript(messages: ChatMessage[]): void {
  const open = new Set<string>();
  messages.forEach((message, index) => {
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) open.add(call.id);
    if (message.role === 'tool') {
      if (!open.has(message.tool_call_id)) {
        throw new ApiError('invalid_request', `The tool message answers ${message.tool_call_id}, which no earlier assistant message called.`, {
          details: [{ field: field('messages', index, 'tool_call_id'), message: 'no matching tool call' }],
        });
      }
      open.delete(message.tool_call_id);
    }
  });
}

/**
 * Whether a history is one an OpenAI-compatible model accepts: every assistant message's tool calls are
 * answered by the tool messages right after it, in any order, before anything else is said.
 */
export function unansweredCalls(messages: ChatMessage[]): string[] {
  const unanswered: string[] = [];
  let open = new Set<string>();
  for (const message of messages) {
    if (message.role === 'tool') {
      open.delete(message.tool_call_id);
      continue;
    }
    unanswered.push(...open);
    open = new Set(message.role === 'assistant' ? (message.tool_calls ?? []).map((call) => call.id) : []);
  }
  return unanswered;
}

/**
 * The client-side tools of a turn: the agent's own and those the request declares. A request may declare
 * a tool the agent already has (tool-loop libraries must declare a tool to run it): the client runs it,
 * so the request's definition is the one the model sees for this turn.
 */
export function mergeClientTools(own: FunctionTool[], requested: FunctionTool[]): FunctionTool[] {
  const names = new Set(requested.map((tool) => tool.function.name));
  return [...own.filter((tool) => !names.has(tool.function.name)), ...requested];
}

/** The answers to the approvals a run waits for: exactly one per pending approval, and none when it waits for none. */
export function checkApprovals(answers: ApprovalAnswer[], pending: ApprovalRequest[] | undefined): void {
  const expected = new Set((pending ?? []).map((request) => request.tool_call_id));
  const answered = new Set<string>();
  answers.forEach((answer, index) => {
    if (!expected.has(answer.tool_call_id) || answered.has(answer.tool_call_id)) {
      throw new ApiError('invalid_request', expected.size === 0 ? 'This session waits for no approval.' : `No pending approval is for ${answer.tool_call_id}, or it is answered twice.`, {
        details: [{ field: field('approvals', index, 'tool_call_id'), message: 'no such pending approval' }],
      });
    }
    answered.add(answer.tool_call_id);
  });
  const missing = [...expected].filter((id) => !answered.has(id));
  if (missing.length > 0) {
    throw new ApiError('invalid_request', `The run waits for approval of: ${missing.join(', ')}; answer each in \`approvals\`.`, {
      details: missing.map((id) => ({ field: 'approvals', message: `no decision for ${id}` })),
    });
  }
}

/** The calls waiting for approval: server-side calls to execute (or refuse) once they are answered. */
export function approvalCalls(calls: ToolCall[], approvals: readonly { tool_call_id: string }[] | undefined): ToolCall[] {
  const asked = new Set((approvals ?? []).map((request) => request.tool_call_id));
  return calls.filter((call) => asked.has(call.id));
}

/** The pending calls clients answer with tool messages: those not waiting for approval. */
export function clientCalls(calls: ToolCall[] | undefined, approvals: ApprovalRequest[] | undefined): ToolCall[] | undefined {
  if (!calls) return undefined;
  const asked = new Set((approvals ?? []).map((request) => request.tool_call_id));
  const left = calls.filter((call) => !asked.has(call.id));
  return left.length > 0 ? left : asked.size > 0 ? [] : left;
}
