// The Connexity agent contract over the run engine: one POST is one agent turn over the whole transcript;
// the agent runs its server-side tools itself and answers every assistant and tool message of the turn.
import type { components } from '../../generated/openapi.gen.ts';
import { textOf, type ChatMessage } from '../models/types.ts';
import type { TokenUsage } from '../runs/events.ts';
import type { Caller } from '../runs/tools.ts';
import { collectTurn, succeeded, type StartTurn } from '../runs/turns.ts';

type Schemas = components['schemas'];
export type ConnexityRequest = Schemas['ConnexityAgentRequest'];
export type ConnexityResponse = Schemas['ConnexityAgentResponse'];
export type ConnexityMessage = Schemas['ConnexityChatMessage'];

/**
 * The platform's messages as chat messages; it sends explicit nulls and echoes tool_result, both ignored.
 * A tool message may come without its tool_call_id (its model allows that): it answers the next call of
 * the assistant message before it that is still unanswered (by name, when it has one); with no such call
 * it is context the user gives, and says so.
 */
export function toChatMessages(messages: ConnexityMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const answered = new Set<string>();
  const unanswered = (name: string | null | undefined): string | undefined => {
    const assistant = out.findLast((message) => message.role === 'assistant' && message.tool_calls?.length);
    if (assistant?.role !== 'assistant') return undefined;
    return assistant.tool_calls?.find((call) => !answered.has(call.id) && (!name || call.function.name === name))?.id;
  };
  for (const message of messages) {
    const content = message.content ?? '';
    switch (message.role) {
      case 'system':
        out.push({ role: 'system', content });
        break;
      case 'assistant':
        out.push({
          role: 'assistant',
          content: message.content ?? null,
          ...(message.tool_calls?.length
            ? { tool_calls: message.tool_calls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.function.name, arguments: call.function.arguments } })) }
            : {}),
        });
        break;
      case 'tool': {
        const callId = message.tool_call_id ?? unanswered(message.name);
        if (callId) {
          answered.add(callId);
          out.push({ role: 'tool', tool_call_id: callId, content });
        } else {
          out.push({ role: 'user', content: `Tool result${message.name ? ` from ${message.name}` : ''}: ${content}` });
        }
        break;
      }
      default:
        out.push({ role: 'user', content });
    }
  }
  return out;
}

/** The turn's messages in the contract's shape, every field present, tool messages named by their call. */
export function toConnexityMessages(messages: ChatMessage[]): ConnexityMessage[] {
  const names = new Map<string, string>();
  return messages.flatMap((message): ConnexityMessage[] => {
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) names.set(call.id, call.function.name);
      return [
        {
          role: 'assistant',
          content: typeof message.content === 'string' ? message.content : message.content ? textOf(message.content) : null,
          tool_calls: message.tool_calls?.length ? message.tool_calls.map((call) => ({ id: call.id, type: 'function', function: call.function })) : null,
          tool_call_id: null,
          name: null,
        },
      ];
    }
    if (message.role === 'tool') {
      return [{ role: 'tool', content: textOf(message.content), tool_calls: null, tool_call_id: message.tool_call_id, name: names.get(message.tool_call_id) ?? null }];
    }
    return [];
  });
}

/** The platform rejects a turn that does not end with an assistant message; a cut-short turn gets one. */
export function endWithAssistant(messages: ConnexityMessage[]): ConnexityMessage[] {
  if (messages.at(-1)?.role === 'assistant') return messages;
  return [
    ...messages,
    { role: 'assistant', content: 'I could not finish this turn within my step limit.', tool_calls: null, tool_call_id: null, name: null },
  ];
}

export function toConnexityUsage(usage: TokenUsage): ConnexityResponse['usage'] {
  return { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.total_tokens };
}

/** The contract has no way to ask the platform for an approval: a call that would ask is refused, with this. */
const CANNOT_ASK = 'this conversation (the Connexity contract) cannot ask anyone for approval, so the call was not made';

/** A `/respond` call is one stateless turn over the whole transcript, answered as the fold of its events. */
export async function respondTurn(
  deps: { models: { get(id: string): { provider: string } | undefined } },
  request: { caller: Caller; body: ConnexityRequest; signal: AbortSignal },
  start: StartTurn,
): Promise<ConnexityResponse> {
  const { caller, body } = request;
  const metadata: Record<string, string> = { protocol: 'connexity' };
  const testCase = body.metadata?.test_case_id ?? undefined;
  const turnIndex = body.metadata?.turn_index ?? undefined;
  if (testCase) metadata.test_case_id = testCase;
  if (turnIndex !== undefined) metadata.turn_index = String(turnIndex);
  const handle = await start(
    { ...caller, conversation: { messages: toChatMessages(body.messages), stateless: true }, clientTools: false, cannotAsk: CANNOT_ASK, metadata },
    { resumable: false },
  );
  const turn = succeeded(await collectTurn(handle, request.signal));
  return {
    messages: endWithAssistant(toConnexityMessages(turn.messages)),
    model: handle.run.model,
    provider: deps.models.get(handle.run.model)?.provider ?? null,
    usage: toConnexityUsage(turn.usage),
    metadata: {
      run_id: turn.run_id,
      session_id: turn.session_id,
      ...(testCase ? { test_case_id: testCase } : {}),
      ...(turnIndex !== undefined ? { turn_index: turnIndex } : {}),
    },
  };
}
