// Server-side tools: built-ins the server runs itself during a run, registered in this one place. Their
// names are the contract's ServerToolName enum (a test keeps the two equal).
import type { components } from '../../generated/openapi.gen.ts';
import { evaluate } from './calculator.ts';
import { ToolInputError } from './errors.ts';

export { ToolInputError } from './errors.ts';

export type ServerToolName = components['schemas']['ServerToolName'];
export type KnowledgeSource = components['schemas']['KnowledgeSource'];

export interface KnowledgeHit {
  document_id: string;
  title: string | null;
  source: string | null;
  text: string;
  score: number;
}

/** What the knowledge module offers the `knowledge_search` tool. */
export interface KnowledgeSearcher {
  search(
    userId: string,
    request: { query: string; top_k: number; collections?: string[] },
    call: { apiKeyId: string | null; signal: AbortSignal },
  ): Promise<KnowledgeHit[]>;
}

export interface ToolContext {
  userId: string;
  /** The credential the run was started with, for metering what the tool spends. */
  apiKeyId: string | null;
  /** The agent's knowledge collections; empty means all of the owner's. */
  collections: string[];
  clock: () => number;
  knowledge: KnowledgeSearcher;
  signal: AbortSignal;
}

export interface ToolResult {
  output: string;
  isError: boolean;
  sources?: KnowledgeSource[];
}

export interface ServerTool {
  name: ServerToolName;
  description: string;
  /** JSON Schema of the arguments, as the model sees it. */
  parameters: Record<string, unknown>;
  run(args: Record<string, unknown>, context: ToolContext): Promise<ToolResult>;
}

function stringArg(args: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const value = args[name];
  if (value === undefined || value === null) {
    if (required) throw new ToolInputError(`"${name}" is required.`);
    return undefined;
  }
  if (typeof value !== 'string') throw new ToolInputError(`"${name}" must be a string.`);
  return value;
}

/** The time in `timeZone` as an ISO 8601 string with its UTC offset, e.g. 2026-11-20T11:00:00+01:00. */
export function isoInZone(time: number, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    })
      .formatToParts(time)
      .map((part) => [part.type, part.value]),
  );
  const offset = parts.timeZoneName === 'GMT' ? '+00:00' : String(parts.timeZoneName).replace('GMT', '');
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`;
}

const currentTime: ServerTool = {
  name: 'current_time',
  description: 'The current date and time, in an IANA time zone such as Europe/Paris (UTC when omitted).',
  parameters: {
    type: 'object',
    properties: { timezone: { type: 'string', description: 'An IANA time zone name, e.g. America/New_York.' } },
  },
  async run(args, context) {
    const zone = stringArg(args, 'timezone', false) ?? 'UTC';
    try {
      return { output: isoInZone(context.clock(), zone), isError: false };
    } catch {
      throw new ToolInputError(`"${zone}" is not an IANA time zone.`);
    }
  },
};

const calculator: ServerTool = {
  name: 'calculator',
  description: 'Evaluates an arithmetic expression with + - * / % ^ and parentheses, e.g. (2 + 3) * 4.',
  parameters: {
    type: 'object',
    properties: { expression: { type: 'string', description: 'The expression to evaluate.' } },
    required: ['expression'],
  },
  async run(args) {
    const expression = stringArg(args, 'expression', true)!;
    return { output: String(evaluate(expression)), isError: false };
  },
};

const knowledgeSearch: ServerTool = {
  name: 'knowledge_search',
  description: "Searches the agent's knowledge documents and returns the passages most relevant to a query.",
  parameters: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'What to look for.' },
      top_k: { type: 'integer', minimum: 1, maximum: 20, description: 'How many passages, 5 when omitted.' },
    },
    required: ['query'],
  },
  async run(args, context) {
    const query = stringArg(args, 'query', true)!;
    const topK = args.top_k === undefined ? 5 : Number(args.top_k);
    if (!Number.isInteger(topK) || topK < 1 || topK > 20) throw new ToolInputError('"top_k" must be an integer from 1 to 20.');
    const hits = await context.knowledge.search(
      context.userId,
      { query, top_k: topK, ...(context.collections.length ? { collections: context.collections } : {}) },
      { apiKeyId: context.apiKeyId, signal: context.signal },
    );
    const sources = new Map<string, KnowledgeSource>();
    for (const hit of hits) sources.set(hit.document_id, { document_id: hit.document_id, title: hit.title, source: hit.source });
    return {
      output: JSON.stringify(hits.map(({ document_id, title, source, text, score }) => ({ document_id, title, source, text, score }))),
      isError: false,
      sources: [...sources.values()],
    };
  },
};

export const serverTools: readonly ServerTool[] = [currentTime, calculator, knowledgeSearch];
export const serverToolNames: ReadonlySet<string> = new Set(serverTools.map((tool) => tool.name));

export function serverTool(name: string): ServerTool | undefined {
  return serverTools.find((tool) => tool.name === name);
}
