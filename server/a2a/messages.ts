// An A2A message as the chat messages a turn takes. Text parts are what the user says; an image (by URL,
// or as bytes with an image media type) is shown to the model; a `data` part with a `toolCallId` is the
// result of a client-side tool the task asked for (`{toolCallId, output}`), one with `approve` the decision
// on a call that waits for approval (`{toolCallId, approve, reason?}`), and any other `data` part is JSON
// the user sends. Bytes of a kind the model cannot read are refused as A2A's ContentTypeNotSupported.
import { invalidRequest } from '../errors.ts';
import type { ChatMessage } from '../models/types.ts';
import type { ApprovalAnswer } from '../runs/loop.ts';
import { A2aError } from './errors.ts';
import type { A2aMessage, A2aPart } from './projection.ts';

type UserContent = Extract<ChatMessage, { role: 'user' }>['content'];
type UserPart = Exclude<UserContent, string>[number];

const TEXT_TYPES = /^(text\/|application\/(json|xml|yaml|x-yaml|csv)$)/;

interface ToolResult {
  toolCallId: string;
  output?: unknown;
  error?: unknown;
}

interface ApprovalDecision {
  toolCallId: string;
  approve: boolean;
  reason?: unknown;
}

function isToolResult(data: unknown): data is ToolResult {
  return typeof data === 'object' && data !== null && typeof (data as { toolCallId?: unknown }).toolCallId === 'string';
}

function isApprovalDecision(data: unknown): data is ApprovalDecision {
  return isToolResult(data) && typeof (data as { approve?: unknown }).approve === 'boolean';
}

/** The decisions on calls waiting for approval an A2A message carries. */
export function toApprovals(message: A2aMessage): ApprovalAnswer[] {
  return message.parts.flatMap((part) => {
    if (!isApprovalDecision(part.data)) return [];
    const { toolCallId, approve, reason } = part.data;
    const answer: ApprovalAnswer = { tool_call_id: toolCallId, decision: approve ? 'approve' : 'deny', ...(typeof reason === 'string' && reason ? { reason } : {}) };
    return [answer];
  });
}

function textOf(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? null);
}

function userPart(part: A2aPart, index: number): UserPart {
  const mediaType = part.mediaType ?? '';
  if (part.text === undefined && part.data === undefined && part.url === undefined && part.raw === undefined) {
    throw invalidRequest(`Part ${index} has none of text, raw, url and data.`, `message.parts[${index}]`);
  }
  if (part.text !== undefined) return { type: 'text', text: part.text };
  if (part.data !== undefined) return { type: 'text', text: JSON.stringify(part.data) };
  if (part.url !== undefined) {
    if (mediaType.startsWith('image/') || (!mediaType && /\.(png|jpe?g|gif|webp)$/i.test(new URL(part.url, 'http://x').pathname))) {
      return { type: 'image_url', image_url: { url: part.url } };
    }
    return { type: 'text', text: `[${part.filename ?? 'file'}${mediaType ? ` (${mediaType})` : ''}: ${part.url}]` };
  }
  const raw = part.raw ?? '';
  if (mediaType.startsWith('image/')) return { type: 'image_url', image_url: { url: `data:${mediaType};base64,${raw}` } };
  if (TEXT_TYPES.test(mediaType)) return { type: 'text', text: Buffer.from(raw, 'base64').toString('utf8') };
  throw new A2aError('ContentTypeNotSupported', `Part ${index} is ${mediaType || 'bytes of no media type'}; this agent reads text, JSON and images.`, {
    mediaType: mediaType || 'unknown',
  });
}

/** The chat messages an A2A message stands for: tool results first, then what the user says (decisions are apart). */
export function toChatMessages(message: A2aMessage): ChatMessage[] {
  const tools: ChatMessage[] = [];
  const parts: UserPart[] = [];
  message.parts.forEach((part, index) => {
    if (isApprovalDecision(part.data)) return;
    if (isToolResult(part.data)) {
      const result = part.data;
      tools.push({
        role: 'tool',
        tool_call_id: result.toolCallId,
        content: result.error !== undefined ? `Error: ${textOf(result.error)}` : textOf(result.output),
      });
      return;
    }
    parts.push(userPart(part, index));
  });
  if (parts.length === 0) return tools;
  const content: UserContent = parts.every((part) => part.type === 'text') ? parts.map((part) => (part as { text: string }).text).join('\n') : parts;
  return [...tools, { role: 'user', content }];
}
