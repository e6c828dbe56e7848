// The typed client: openapi-fetch over the generated `paths`, plus helpers for agent and team chats,
// their event streams, and the client-side tool loop.
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from '../generated/openapi.gen.ts';
import { readEventStream, type ServerSentEvent } from './sse.ts';
import { foldTurnStream } from './turn.ts';

export type { components, paths } from '../generated/openapi.gen.ts';
export { readEventStream, type ServerSentEvent } from './sse.ts';
export { foldTurn, foldTurnStream, TurnFolder, type FoldedTurn } from './turn.ts';

export type Schemas = components['schemas'];
export type ErrorEnvelope = Schemas['Error'];
export type RunEvent = Schemas['RunEvent'];
export type ChatRequest = Schemas['ChatRequest'];
export type ChatTurn = Schemas['ChatTurn'];
export type ToolCall = Schemas['ToolCall'];

export interface OpenAgentClientOptions {
  /** The server's root, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** An API key or access token, sent as `Authorization: Bearer …`. */
  apiKey?: string;
  fetch?: (request: Request) => Promise<Response>;
  headers?: Record<string, string>;
}

/** An error response, carrying the typed envelope. */
export class OpenAgentError extends Error {
  readonly status: number;
  readonly body: ErrorEnvelope | undefined;

  constructor(status: number, body: ErrorEnvelope | undefined) {
    super(body?.error.message ?? `HTTP ${status}`);
    this.name = 'OpenAgentError';
    this.status = status;
    this.body = body;
  }

  get code(): Schemas['ErrorCode'] | undefined {
    return this.body?.error.code;
  }
}

/** A client-side tool: receives the parsed arguments, answers anything JSON-serialisable (or a string). */
export type ToolFunction = (args: Record<string, unknown>, call: ToolCall) => unknown;

export interface RunWithToolsOptions {
  /** Called with every event when the turns stream; without it, turns are plain JSON requests. */
  onEvent?: (event: RunEvent) => void;
  /** The most tool rounds before giving up (the run stays waiting for results). */
  maxRounds?: number;
}

type Chatter = {
  /** One turn, blocking: the whole turn. */
  chat(id: string, body: ChatRequest & { stream?: false }): Promise<ChatTurn>;
  /** One turn, streamed: its events, from RunStarted to RunCompleted, RunError or ToolRequest. */
  chat(id: string, body: ChatRequest & { stream: true }): AsyncGenerator<RunEvent>;
  /**
   * Chats until the run completes, running each client-side tool the agent calls with the matching
   * function of `tools` and sending the results back on the same session.
   */
  runWithTools(id: string, body: ChatRequest, tools: Record<string, ToolFunction>, options?: RunWithToolsOptions): Promise<ChatTurn>;
};

export interface OpenAgentClient extends Client<paths, 'application/json'> {
  agents: Chatter;
  teams: Chatter;
  runs: {
    /** A run's events after `lastEventId` (all without it), then live ones until it ends. */
    events(runId: string, lastEventId?: string): AsyncGenerator<RunEvent>;
  };
  /** Streams the events of an SSE response (after checking it is one). */
  events<T>(response: Response): AsyncGenerator<ServerSentEvent<T>>;
}

async function errorOf(response: Response): Promise<OpenAgentError> {
  const type = response.headers.get('content-type') ?? '';
  return new OpenAgentError(response.status, type.includes('json') ? ((await response.json()) as ErrorEnvelope) : undefined);
}

async function ensureStream(response: Response): Promise<ReadableStream<BufferSource>> {
  const type = response.headers.get('content-type') ?? '';
  if (!response.ok || !type.startsWith('text/event-stream') || !response.body) throw await errorOf(response);
  return response.body;
}

/** The tool messages answering a turn's pending calls. */
async function runTools(calls: ToolCall[], tools: Record<string, ToolFunction>): Promise<ChatRequest['messages']> {
  return Promise.all(
    calls.map(async (call) => {
      const tool = tools[call.function.name];
      let content: string;
      if (!tool) {
        content = `Error: this client has no tool named ${call.function.name}.`;
      } else {
        try {
          const result = await tool(JSON.parse(call.function.arguments || '{}') as Record<string, unknown>, call);
          content = typeof result === 'string' ? result : JSON.stringify(result ?? null);
        } catch (error) {
          content = `Error: ${(error as Error).message}`;
        }
      }
      return { role: 'tool' as const, tool_call_id: call.id, content };
    }),
  );
}

export function createOpenAgentClient(options: OpenAgentClientOptions): OpenAgentClient {
  const baseUrl = options.baseUrl.replace(/\/$/, '');
  const headers = {
    ...(options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {}),
    ...options.headers,
  };
  const api = createClient<paths, 'application/json'>({ baseUrl, ...(options.fetch ? { fetch: options.fetch } : {}), headers });
  const doFetch = options.fetch ?? ((request: Request) => fetch(request));

  const post = async (path: string, body: unknown, accept: string): Promise<Response> =>
    doFetch(
      new Request(`${baseUrl}${path}`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json', Accept: accept },
        body: JSON.stringify(body),
      }),
    );

  const chatter = (kind: 'agents' | 'teams'): Chatter => {
    async function* stream(id: string, body: ChatRequest): AsyncGenerator<RunEvent> {
      const response = await post(`/v1/${kind}/${encodeURIComponent(id)}/chat`, { ...body, stream: true }, 'text/event-stream');
      for await (const event of readEventStream<RunEvent>(await ensureStream(response))) yield event.data;
    }
    async function blocking(id: string, body: ChatRequest): Promise<ChatTurn> {
      const response = await post(`/v1/${kind}/${encodeURIComponent(id)}/chat`, { ...body, stream: false }, 'application/json');
      if (!response.ok) throw await errorOf(response);
      return (await response.json()) as ChatTurn;
    }
    /** A streamed turn, folded into the shape of a blocking one by the fold the server uses. */
    async function streamedTurn(id: string, body: ChatRequest, onEvent: (event: RunEvent) => void): Promise<ChatTurn> {
      const folded = await foldTurnStream(stream(id, body), onEvent);
      if (folded.error) {
        const { code, message } = folded.error;
        throw new OpenAgentError(200, { error: { code, type: 'server_error', message, param: null, request_id: '', details: [{ message: 'run failed', run_id: folded.turn.run_id }] } });
      }
      if (!folded.ended) throw new OpenAgentError(0, undefined);
      return folded.turn;
    }

    return {
      chat: ((id: string, body: ChatRequest) => (body.stream ? stream(id, body) : blocking(id, body))) as Chatter['chat'],
      async runWithTools(id, body, tools, runOptions = {}) {
        const turn = (request: ChatRequest) => (runOptions.onEvent ? streamedTurn(id, request, runOptions.onEvent) : blocking(id, request));
        let current = await turn(body);
        for (let round = 0; current.status === 'requires_action' && round < (runOptions.maxRounds ?? 20); round++) {
          const calls = current.required_action?.tool_calls ?? [];
          current = await turn({ session_id: current.session_id, messages: await runTools(calls, tools) });
        }
        return current;
      },
    };
  };

  return Object.assign(api, {
    agents: chatter('agents'),
    teams: chatter('teams'),
    runs: {
      async *events(runId: string, lastEventId?: string) {
        const response = await doFetch(
          new Request(`${baseUrl}/v1/runs/${encodeURIComponent(runId)}/events`, {
            headers: { ...headers, Accept: 'text/event-stream', ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}) },
          }),
        );
        for await (const event of readEventStream<RunEvent>(await ensureStream(response))) yield event.data;
      },
    },
    async *events<T>(response: Response) {
      yield* readEventStream<T>(await ensureStream(response));
    },
  });
}
