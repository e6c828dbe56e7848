// Protocols whose clients name the conversation themselves (AgentScope's session_id, AG-UI's threadId)
// and send the whole history every time: a stored session of that name already holds most of it.
import type { ChatMessage } from '../models/types.ts';
import type { Conversation } from '../runs/engine.ts';
import type { SessionStore, SessionTarget } from '../sessions/store.ts';

/**
 * What is new in a history that echoes a stored session: the messages after the agent's last one,
 * without tool results the session already holds.
 */
export function newMessages(messages: ChatMessage[], history: ChatMessage[]): ChatMessage[] {
  const lastAgentMessage = messages.findLastIndex((message) => message.role === 'assistant');
  const answered = new Set(history.flatMap((message) => (message.role === 'tool' ? [message.tool_call_id] : [])));
  return messages.slice(lastAgentMessage + 1).filter((message) => message.role !== 'tool' || !answered.has(message.tool_call_id));
}

/** The conversation a client-named thread stands for: its stored session and what is new, or a new one of that name. */
export async function namedConversation(
  sessions: SessionStore,
  userId: string,
  target: SessionTarget,
  name: string | undefined,
  messages: ChatMessage[],
): Promise<Conversation> {
  const named = name ? await sessions.findNamed(userId, target, name) : undefined;
  if (!named) return { externalId: name, messages };
  return { sessionId: named.id, messages: newMessages(messages, await sessions.messages(named.id)) };
}
