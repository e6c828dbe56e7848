// The built-in `local` provider: a deterministic, offline stand-in for a model, so that the server, the
// demos and the tests run with no network and no weights. It follows fixed rules and says so; it is not
// a language model.
//   - The last message is the user's and names a provided tool: it calls that tool, with the first JSON
//     object in the text as arguments (or `{}`).
//   - The last messages are tool results: it answers with a sentence containing them.
//   - Otherwise it echoes the user's last message (or greets, when there is none).
// Its embedder maps text to a normalised vector of hashed word and character n-grams.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  textOf,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatMessage,
  type EmbeddingRequest,
  type EmbeddingResult,
  type Provider,
  type ProviderChatRequest,
  type ToolCall,
} from './types.ts';

const TOKEN = /[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;

/** The local model's token count: words and punctuation marks. */
export function countTokens(text: string): number {
  return text.match(TOKEN)?.length ?? 0;
}

/** How many opening braces `firstJsonObject` tries; each try may read to the end of the text. */
export const JSON_OBJECT_TRIES = 16;

/**
 * The first balanced `{…}` in `text` that parses as a JSON object, among the first JSON_OBJECT_TRIES
 * opening braces. Without that bound, a text of many unclosed braces costs the square of its length
 * (200 KB of `{` took half a minute and held the event loop). `steps`, when given, counts the characters read.
 */
export function firstJsonObject(text: string, steps?: { count: number }): Record<string, unknown> | undefined {
  let tries = 0;
  for (let start = text.indexOf('{'); start !== -1 && tries < JSON_OBJECT_TRIES; start = text.indexOf('{', start + 1), tries++) {
    let depth = 0;
    let inString = false;
    let i = start;
    for (; i < text.length; i++) {
      const char = text[i];
      if (inString) {
        if (char === '\\') i++;
        else if (char === '"') inString = false;
      } else if (char === '"') inString = true;
      else if (char === '{') depth++;
      else if (char === '}' && --depth === 0) {
        try {
          const value: unknown = JSON.parse(text.slice(start, i + 1));
          if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
        } catch {
          // not JSON; try the next brace
        }
        break;
      }
    }
    if (steps) steps.count += i - start + 1;
  }
  return undefined;
}

type Reply = { kind: 'text'; text: string } | { kind: 'tool'; call: ToolCall };

function namedTool(text: string, names: string[]): string | undefined {
  let best: { name: string; at: number } | undefined;
  for (const name of names) {
    const match = new RegExp(`(^|[^\\w-])${name.replace(/[-]/g, '\\-')}($|[^\\w-])`).exec(text);
    if (match && (!best || match.index < best.at)) best = { name, at: match.index };
  }
  return best?.name;
}

function reply(request: ProviderChatRequest): Reply {
  const messages = request.messages;
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') {
    const results: string[] = [];
    const names = new Map<string, string>();
    for (const message of messages) {
      if (message.role === 'assistant') for (const call of message.tool_calls ?? []) names.set(call.id, call.function.name);
    }
    for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) {
      const result = messages[i] as Extract<ChatMessage, { role: 'tool' }>;
      results.unshift(`${names.get(result.tool_call_id) ?? 'the tool'} returned: ${textOf(result.content)}`);
    }
    return { kind: 'text', text: `${results.join('; ')}.` };
  }
  const lastUser = [...messages].reverse().find((message) => message.role === 'user');
  const text = lastUser ? textOf(lastUser.content) : '';
  const tools = (request.tools ?? []).map((tool) => tool.function.name);
  const choice = request.tool_choice;
  if (last?.role === 'user' && tools.length > 0 && choice !== 'none') {
    const forced = typeof choice === 'object' && choice !== null ? choice.function.name : undefined;
    const name = forced ?? namedTool(text, tools) ?? (choice === 'required' ? tools[0] : undefined);
    if (name) {
      return {
        kind: 'tool',
        call: { id: `call_${randomUUID().replaceAll('-', '')}`, type: 'function', function: { name, arguments: JSON.stringify(firstJsonObject(text) ?? {}) } },
      };
    }
  }
  return { kind: 'text', text: text || 'Hello. This is the local model; it echoes what you write.' };
}

function promptTokens(request: ProviderChatRequest): number {
  let count = 0;
  for (const message of request.messages) {
    count += 1 + countTokens(textOf('content' in message ? message.content : ''));
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) count += countTokens(call.function.name + call.function.arguments);
  }
  for (const tool of request.tools ?? []) count += countTokens(tool.function.name + ' ' + (tool.function.description ?? ''));
  return count;
}

/** Pieces of `text` as the stream sends them: each word with the space before it. */
function pieces(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** Applies `max_tokens` and `stop` to a text reply. */
function limit(text: string, request: ProviderChatRequest): { text: string; finish: 'stop' | 'length' } {
  let out = text;
  const stops = request.stop === null || request.stop === undefined ? [] : Array.isArray(request.stop) ? request.stop : [request.stop];
  for (const stop of stops) {
    const at = out.indexOf(stop);
    if (stop && at !== -1) out = out.slice(0, at);
  }
  const max = request.max_completion_tokens ?? request.max_tokens;
  if (max !== null && max !== undefined && countTokens(out) > max) {
    // Tokens never span whitespace, so a piece's count adds to the others' (counting the kept text
    // again for each piece would cost the square of its length).
    let kept = '';
    let count = 0;
    for (const piece of pieces(out)) {
      count += countTokens(piece);
      if (count > max) break;
      kept += piece;
    }
    return { text: kept, finish: 'length' };
  }
  return { text: out, finish: 'stop' };
}

export function createLocalProvider(name = 'local', options: { tokenDelayMs?: number } = {}): Provider {
  const delay = options.tokenDelayMs ?? 0;
  const pause = (signal: AbortSignal | undefined) => (delay > 0 ? sleep(delay, undefined, { signal }) : undefined);
  const base = (request: ProviderChatRequest) => ({
    id: `chatcmpl-${randomUUID().replaceAll('-', '')}`,
    created: Math.floor(Date.now() / 1000),
    model: request.model,
  });
  return {
    name,
    type: 'local',

    async chat(request) {
      const answer = reply(request);
      const prompt = promptTokens(request);
      const n = request.n ?? 1;
      if (answer.kind === 'tool') {
        const completion = countTokens(answer.call.function.name + answer.call.function.arguments);
        return {
          ...base(request),
          object: 'chat.completion',
          choices: Array.from({ length: n }, (_, index) => ({
            index,
            message: { role: 'assistant', content: null, refusal: null, tool_calls: [answer.call] },
            finish_reason: 'tool_calls',
            logprobs: null,
          })),
          usage: { prompt_tokens: prompt, completion_tokens: completion * n, total_tokens: prompt + completion * n },
        } satisfies ChatCompletion;
      }
      const { text, finish } = limit(answer.text, request);
      const completion = countTokens(text) * n;
      return {
        ...base(request),
        object: 'chat.completion',
        choices: Array.from({ length: n }, (_, index) => ({
          index,
          message: { role: 'assistant', content: text, refusal: null },
          finish_reason: finish,
          logprobs: null,
        })),
        usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
      } satisfies ChatCompletion;
    },

    async *chatStream(request, { signal }) {
      const answer = reply(request);
      const prompt = promptTokens(request);
      const head = base(request);
      const chunk = (choices: ChatCompletionChunk['choices'], usage: ChatCompletionChunk['usage'] = null): ChatCompletionChunk => ({
        ...head,
        object: 'chat.completion.chunk',
        choices,
        usage,
      });
      yield chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
      let completion: number;
      if (answer.kind === 'tool') {
        const { id, function: fn } = answer.call;
        yield chunk([{ index: 0, delta: { tool_calls: [{ index: 0, id, type: 'function', function: { name: fn.name, arguments: '' } }] }, finish_reason: null }]);
        for (const piece of pieces(fn.arguments)) {
          yield chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: piece } }] }, finish_reason: null }]);
        }
        yield chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]);
        completion = countTokens(fn.name + fn.arguments);
      } else {
        const { text, finish } = limit(answer.text, request);
        for (const piece of pieces(text)) {
          await pause(signal);
          yield chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]);
        }
        yield chunk([{ index: 0, delta: {}, finish_reason: finish }]);
        completion = countTokens(text);
      }
      yield chunk([], { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
    },

    async embed(request: EmbeddingRequest): Promise<EmbeddingResult> {
      const dimensions = request.dimensions ?? LOCAL_EMBEDDING_DIMENSIONS;
      return {
        vectors: request.input.map((text) => embedText(text, dimensions)),
        promptTokens: request.input.reduce((sum, text) => sum + countTokens(text), 0),
      };
    },
  };
}

export const LOCAL_EMBEDDING_DIMENSIONS = 256;

const STOPWORDS = new Set(
  'a an and are as at be but by can do does for from has have how i in is it its of on or so that the their them there these this to was we were what when where which who why will with you your'.split(' '),
);

/** FNV-1a, 32 bits. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function words(text: string): string[] {
  return (text.toLowerCase().normalize('NFKD').match(/[\p{L}\p{N}]+/gu) ?? [])
    .filter((word) => !STOPWORDS.has(word))
    .map((word) => (word.length > 4 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word));
}

/**
 * A unit vector of signed, hashed features: words, word pairs and character trigrams (which make
 * "returns" and "returned" neighbours). Similar texts share features and so land near each other.
 */
export function embedText(text: string, dimensions = LOCAL_EMBEDDING_DIMENSIONS): number[] {
  const vector = new Float64Array(dimensions);
  const add = (feature: string, weight: number) => {
    const h = hash(feature);
    vector[h % dimensions]! += h & 0x80000000 ? -weight : weight;
  };
  const tokens = words(text);
  tokens.forEach((word, i) => {
    add(`w:${word}`, 1);
    if (i > 0) add(`b:${tokens[i - 1]} ${word}`, 0.5);
    const padded = `#${word}#`;
    for (let j = 0; j + 3 <= padded.length; j++) add(`c:${padded.slice(j, j + 3)}`, 0.25);
  });
  let norm = 0;
  for (const value of vector) norm += value * value;
  if (norm === 0) {
    // Empty or stopword-only text: a fixed unit vector, so cosine distance stays defined.
    vector[0] = 1;
    norm = 1;
  }
  const scale = 1 / Math.sqrt(norm);
  return Array.from(vector, (value) => value * scale);
}
