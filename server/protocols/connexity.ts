// The Connexity agent contract over the run engine: one POST is one agent turn over the whole transcript;
// the agent runs its server-side tools itself and answers every assistant and tool message of the turn.
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError } from '../errors.ts';
import { textOf, type ChatMessage } from '../models/types.ts';
import type { TokenUsage } from '../runs/events.ts';

type Schemas = components['schemas'];
export type ConnexityRequest = Schemas['ConnexityAgentRequest'];
export type ConnexityResponse = Schemas['ConnexityAgentResponse'];
export type ConnexityMessage = Schemas['ConnexityChatMessage'];

/** The platform's messages as chat messages; it sends explicit nulls and echoes tool_result, both ignored. */
export function toChatMessages(messages: ConnexityMessage[]): ChatMessage[] {
  return messages.map((message, index): ChatMessage => {
    const content = message.content ?? '';
    switch (message.role) {
      case 'system':
        return { role: 'system', content };
      case 'assistant':
        return {
          role: 'assistant',
          content: message.content ?? null,
          ...(message.tool_calls?.length
            ? { tool_calls: message.tool_calls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.function.name, arguments: call.function.arguments } })) }
            : {}),
        };
      case 'tool':
        if (!message.tool_call_id) {
          throw new ApiError('invalid_request', 'A tool message needs its tool_call_id.', {
            details: [{ field: `messages[${index}].tool_call_id`, message: 'required for role tool' }],
          });
        }
        return { role: 'tool', tool_call_id: message.tool_call_id, content };
      default:
        return { role: 'user', content };
    }
  });
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
