// This server as an MCP server at /mcp (Streamable HTTP), served by the official SDK: the 2026-07-28
// revision (stateless requests) and, through the SDK's fallback, 2025-era clients (initialize, without
// sessions). Its tools are the caller's: one per agent and per team (a message in, the reply with the run
// and session ids out), knowledge_search, list_agents and get_run. The bearer credential is ours (an API
// key or a session token); every call goes through the same store reads, rate limit and quotas as the
// REST operation it mirrors, so another user's agents are neither listed nor callable. /mcp is an
// operation of the contract like any other: requests are authenticated, limited and validated before the
// SDK sees them, and errors are rendered as JSON-RPC errors (server/mcp/errors.ts).
import type * as McpServerSdk from '@modelcontextprotocol/server';
import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { PlanSpec } from '../billing/plans.ts';
import { ApiError } from '../errors.ts';
import { readEventStream } from '../../client/sse.ts';
import type { components } from '../../generated/openapi.gen.ts';
import type { SseFrame } from '../../generated/server.gen.ts';
import { callerOf, type Principal } from '../http/auth.ts';
import type { ErrorFormat } from '../http/error-handler.ts';
import type { AppHandlers } from '../http/operations.ts';
import type { Quotas } from '../limits/quotas.ts';
import { chatTurn } from '../runs/chat.ts';
import type { ApprovalAnswer } from '../runs/loop.ts';
import type { RunEngine, RunHandle, TeamTurnInput, TurnOptions } from '../runs/engine.ts';
import { toRun, type RunStore } from '../runs/store.ts';
import { agentTurn, teamTurn } from '../runs/turns.ts';
import type { AgentStore } from '../agents/agents.ts';
import type { TeamStore } from '../teams/teams.ts';
import type { Knowledge } from '../knowledge/service.ts';
import { mcpJsonRpcError, McpTransportError } from './errors.ts';

export interface McpEndpointDeps {
  publicUrl: string;
  /** Browser origins allowed besides PUBLIC_URL's own (CORS_ORIGINS). */
  corsOrigins: string[];
  agents: AgentStore;
  teams: TeamStore;
  runs: RunStore;
  engine: RunEngine;
  teamRunner: { startTeamTurn(input: TeamTurnInput, options: TurnOptions): Promise<RunHandle> };
  knowledge: Pick<Knowledge, 'search'>;
  planOf(userId: string): Promise<PlanSpec>;
  quotas: Quotas;
  logger: Logger;
}

/** At most this many agents and teams become tools; list_agents pages through the rest. */
const MAX_TOOLS = 200;

type Json = Record<string, unknown>;

const text = (value: string, structured?: Json): CallToolResult => ({
  content: [{ type: 'text', text: value }],
  ...(structured ? { structuredContent: structured } : {}),
});

const failure = (message: string): CallToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

/** An ApiError (not found, quota, rate limit, bad input) is the tool's error; anything else is logged. */
async function answer(logger: Logger, work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ApiError) return failure(`${error.code}: ${error.message}`);
    logger.error({ err: error }, 'an MCP tool call failed');
    return failure('internal_error: the call failed unexpectedly.');
  }
}

type ChatArgs = { message?: string; session_id?: string; approvals?: ApprovalAnswer[] };

/** The MCP SDK, loaded with the first MCP request: a server that is never asked need not load it (0.2 s of start-up). */
type Sdk = typeof McpServerSdk;
let sdkModule: Promise<Sdk> | undefined;
const loadSdk = (): Promise<Sdk> => (sdkModule ??= import('@modelcontextprotocol/server'));

/** The input and output schemas of an agent's or team's chat tool, made once. */
let chatToolSchemas: ReturnType<typeof chatSchemas> | undefined;
const chatSchemas = ({ fromJsonSchema }: Sdk) => ({
  input: fromJsonSchema<ChatArgs>({
    type: 'object',
    properties: {
      message: { type: 'string', minLength: 1, maxLength: 32000, description: 'What to say.' },
      session_id: { type: 'string', description: 'Continue this session (from an earlier reply); a new one when omitted.' },
      approvals: {
        type: 'array',
        maxItems: 64,
        description: "Answers to the tool calls the session's run waits to have approved (`approvals` of an earlier reply), sent with its session_id.",
        items: {
          type: 'object',
          properties: {
            tool_call_id: { type: 'string', minLength: 1, maxLength: 200 },
            decision: { type: 'string', enum: ['approve', 'deny'] },
            reason: { type: 'string', maxLength: 2000, description: "Why; a denial's reason is given to the agent." },
          },
          required: ['tool_call_id', 'decision'],
          additionalProperties: false,
        },
      },
    },
    additionalProperties: false,
  }),
  output: fromJsonSchema<Json>({
    type: 'object',
    properties: {
      reply: { type: ['string', 'null'] },
      status: { type: 'string' },
      run_id: { type: 'string' },
      session_id: { type: 'string' },
      approvals: {
        type: 'array',
        description: 'The tool calls the run waits to have approved, when its status is requires_action.',
        items: {
          type: 'object',
          properties: { tool_call_id: { type: 'string' }, name: { type: 'string' }, arguments: { type: 'string' } },
          required: ['tool_call_id', 'name', 'arguments'],
        },
      },
    },
    required: ['reply', 'status', 'run_id', 'session_id'],
  }),
});

async function allOf<T extends { id: string }>(list: (request: { limit: number; after?: string }) => Promise<{ data: T[]; has_more: boolean }>): Promise<T[]> {
  const items: T[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await list({ limit: 100, ...(after ? { after } : {}) });
    items.push(...page.data);
    if (!page.has_more || items.length >= MAX_TOOLS || page.data.length === 0) break;
    after = page.data[page.data.length - 1]!.id;
  }
  return items.slice(0, MAX_TOOLS).sort((a, b) => a.id.localeCompare(b.id));
}

/** The caller's MCP server: built per request, as the tools are the caller's agents and teams. */
async function serverFor(sdk: Sdk, principal: Principal, deps: McpEndpointDeps): Promise<McpServer> {
  const { fromJsonSchema } = sdk;
  const caller = callerOf(principal);
  const server = new sdk.McpServer(
    { name: 'open-agent-api', version: '1.0.0' },
    { instructions: "Tools to talk to this user's agents and teams, search their knowledge and read runs." },
  );
  const [agents, teams] = await Promise.all([
    allOf((request) => deps.agents.list(caller.userId, request)),
    allOf((request) => deps.teams.list(caller.userId, request)),
  ]);
  const runQuota = async () => {
    await deps.quotas.enforce(caller.userId, await deps.planOf(caller.userId), ['tokens_per_month', 'runs_per_day']);
  };
  const chat = async (start: ReturnType<typeof agentTurn>, args: ChatArgs, signal: AbortSignal) => {
    await runQuota();
    const request = {
      messages: args.message ? [{ role: 'user' as const, content: args.message }] : [],
      ...(args.session_id ? { session_id: args.session_id } : {}),
      ...(args.approvals?.length ? { approvals: args.approvals } : {}),
    };
    const turn = await chatTurn(caller, request, { stream: false, signal }, start);
    if (!('body' in turn)) throw new Error('a blocking turn answered a stream');
    const body = turn.body;
    const content = body.message?.content;
    const reply = typeof content === 'string' ? content : content ? JSON.stringify(content) : null;
    const structured = { reply, status: body.status, run_id: body.run_id, session_id: body.session_id };
    if (body.status === 'requires_action') {
      const action = body.required_action;
      const asked = new Set((action?.approvals ?? []).map((approval) => approval.tool_call_id));
      const calls = action?.tool_calls ?? [];
      // Approvals can be answered here; a client-side tool of the agent's only through the HTTP API.
      if (asked.size > 0 && calls.every((call) => asked.has(call.id))) {
        const approvals = calls.map((call) => ({ tool_call_id: call.id, name: call.function.name, arguments: call.function.arguments }));
        const list = approvals.map((call) => `${call.name} ${call.arguments} (tool_call_id ${call.tool_call_id})`).join('; ');
        return text(
          `The run ${body.run_id} waits for approval of: ${list}. Call this tool again with session_id "${body.session_id}" and approvals [{tool_call_id, decision: "approve" or "deny", reason?}], one per call.`,
          { ...structured, approvals },
        );
      }
      return text(
        `The run ${body.run_id} waits for client-side tools${asked.size > 0 ? ' and approvals' : ''} (${calls.map((call) => call.function.name).join(', ')}); answer them through the HTTP API with session ${body.session_id}.`,
        structured,
      );
    }
    return text(reply ?? '', structured);
  };

  server.registerTool(
    'list_agents',
    { title: 'List agents', description: "Lists the caller's agents and teams with their ids.", inputSchema: fromJsonSchema<Json>({ type: 'object', properties: {} }) },
    () =>
      answer(deps.logger, async () => {
        const listing = {
          agents: agents.map((agent) => ({ id: agent.id, name: agent.name, description: agent.description, model: agent.model })),
          teams: teams.map((team) => ({ id: team.id, name: team.name, description: team.description })),
        };
        return text(JSON.stringify(listing), listing);
      }),
  );
  server.registerTool(
    'get_run',
    {
      title: 'Read a run',
      description: 'A run by id: its status, usage, error and what it waits for.',
      inputSchema: fromJsonSchema<{ run_id: string }>({ type: 'object', properties: { run_id: { type: 'string' } }, required: ['run_id'] }),
    },
    (args) =>
      answer(deps.logger, async () => {
        const run = toRun(await deps.runs.get(caller.userId, args.run_id));
        return text(JSON.stringify(run), run as unknown as Json);
      }),
  );
  server.registerTool(
    'knowledge_search',
    {
      title: 'Search knowledge',
      description: "Searches the caller's knowledge documents and returns the most relevant passages.",
      inputSchema: fromJsonSchema<{ query: string; top_k?: number; collections?: string[] }>({
        type: 'object',
        properties: {
          query: { type: 'string', minLength: 1 },
          top_k: { type: 'integer', minimum: 1, maximum: 50 },
          collections: { type: 'array', items: { type: 'string' } },
        },
        required: ['query'],
      }),
    },
    (args, ctx) =>
      answer(deps.logger, async () => {
        const found = await deps.knowledge.search(
          caller.userId,
          { query: args.query, top_k: args.top_k ?? 5, collections: args.collections?.length ? args.collections : undefined },
          { apiKeyId: caller.apiKeyId, signal: ctx.mcpReq.signal },
        );
        const result = { query: args.query, results: found.results };
        return text(JSON.stringify(result), result as unknown as Json);
      }),
  );
  // One tool per agent and per team, agents first, each in the order its list gives.
  const chatSchema = (chatToolSchemas ??= chatSchemas(sdk));
  const targets = [
    ...agents.map((agent) => ({ kind: 'agent', target: agent, start: agentTurn(deps.engine, agent.id) })),
    ...teams.map((team) => ({ kind: 'team', target: team, start: teamTurn(deps.teamRunner, team.id) })),
  ];
  for (const { kind, target, start } of targets) {
    server.registerTool(
      `${kind}_${target.id}`,
      {
        title: target.name,
        description: `Talk to the ${kind} "${target.name}"${target.description ? `: ${target.description}` : ''}. Returns its reply with the run and session ids; a tool call it must have approved first comes back as status requires_action with \`approvals\`, answered by calling again with the session_id and approvals.`,
        inputSchema: chatSchema.input,
        outputSchema: chatSchema.output,
      },
      (args, ctx) => answer(deps.logger, () => chat(start, args, ctx.mcpReq.signal)),
    );
  }
  return server;
}

type Schemas = components['schemas'];

/** The messages of an SSE answer of the SDK, as frames for our event stream writer (which adds keep-alives). */
async function* framesOf(body: ReadableStream<BufferSource>): AsyncGenerator<SseFrame<Schemas['McpJsonRpcMessage']>> {
  for await (const event of readEventStream<Schemas['McpJsonRpcMessage']>(body)) {
    yield { data: event.data, ...(event.event ? { event: event.event } : {}), ...(event.id ? { id: event.id } : {}) };
  }
}

/** Request headers the SDK's transport reads; the body comes parsed, so none about its bytes. */
const FORWARDED = new Set(['accept', 'content-type', 'last-event-id']);

/**
 * The MCP endpoint's operations and its RFC 9728 Protected Resource Metadata. Requests reach the SDK after
 * the contract's own layers: authentication, the rate limit, the body limit and request validation.
 */
export function mcpHandlers(deps: McpEndpointDeps) {
  const endpoint = new URL('/mcp', deps.publicUrl).href;
  const metadata = {
    resource: endpoint,
    // Our credentials are issued by this server itself (API keys, and session tokens from its sign-in).
    authorization_servers: [new URL('/', deps.publicUrl).href],
    bearer_methods_supported: ['header' as const],
    resource_name: 'Open Agent API',
    resource_documentation: new URL('/docs', deps.publicUrl).href,
  };
  let handler: Promise<ReturnType<Sdk['createMcpHandler']>> | undefined;
  const sdkHandler = () =>
    (handler ??= loadSdk().then((sdk) =>
      sdk.createMcpHandler((ctx) => serverFor(sdk, ctx.authInfo!.extra!.principal as Principal, deps), {
        onerror: (error) => deps.logger.debug({ err: error }, 'an MCP request was refused'),
        // Our event stream writer sends its own keep-alives.
        keepAliveMs: 0,
      }),
    ));

  const publicOrigin = new URL(deps.publicUrl).origin;
  const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
  // A server on a loopback address (development) takes any loopback origin, whatever port the page has.
  const loopbackServer = LOOPBACK.has(new URL(deps.publicUrl).hostname);
  const allowedOrigin = (origin: string) => {
    if (origin === publicOrigin || deps.corsOrigins.includes(origin) || deps.corsOrigins.includes('*')) return true;
    try {
      return loopbackServer && LOOPBACK.has(new URL(origin).hostname);
    } catch {
      return false;
    }
  };

  /** Hands a request to the SDK; an error answer of its transport is thrown, to be rendered as it wrote it. */
  const forward = async (request: { method: 'GET' | 'POST' | 'DELETE'; headers: Readonly<Record<string, string | undefined>>; body?: unknown; auth: Principal; signal: AbortSignal }) => {
    // A web page elsewhere must not drive the endpoint through a browser (DNS rebinding): the spec asks
    // servers to check Origin.
    const origin = request.headers.origin;
    if (origin !== undefined && !allowedOrigin(origin)) {
      throw new ApiError('forbidden', `Requests from the origin ${origin} are not allowed here.`);
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && (FORWARDED.has(name) || name.startsWith('mcp-'))) headers.set(name, value);
    }
    const response = await (await sdkHandler()).fetch(new Request(endpoint, { method: request.method, headers, signal: request.signal }), {
      authInfo: { token: 'bearer', clientId: request.auth.userId, scopes: [], extra: { principal: request.auth } },
      ...(request.method === 'POST' ? { parsedBody: request.body } : {}),
    });
    if (response.status >= 400) {
      const body: unknown = await response.json().catch(() => null);
      const allow = response.headers.get('allow');
      throw new McpTransportError(response.status, body, allow ? { Allow: allow } : {});
    }
    return response;
  };
  /** GET and DELETE: a server without sessions has no stream to open or session to end, and the SDK says so. */
  const sessionless = async (request: Parameters<typeof forward>[0]): Promise<never> => {
    const response = await forward(request);
    await response.body?.cancel();
    throw new ApiError('internal_error', `The MCP transport answered ${request.method} with ${response.status}, which this server does not offer.`);
  };

  return {
    async sendMcpMessage({ auth, headers, body, signal }) {
      const response = await forward({ method: 'POST', headers, body, auth, signal });
      if (response.status === 202 || !response.body) return { status: 202 };
      if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        return { status: 200, stream: framesOf(response.body) };
      }
      return { status: 200, body: (await response.json()) as Schemas['McpJsonRpcMessage'] };
    },
    async openMcpStream({ auth, headers, signal }) {
      return sessionless({ method: 'GET', headers, auth, signal });
    },
    async deleteMcpSession({ auth, headers, signal }) {
      return sessionless({ method: 'DELETE', headers, auth, signal });
    },
    async getProtectedResourceMetadata() {
      return { status: 200, body: metadata };
    },
    async getMcpProtectedResourceMetadata() {
      return { status: 200, body: metadata };
    },
  } satisfies Partial<AppHandlers>;
}

/** How the MCP operations render errors, by their `x-error-format`. */
export function mcpErrorFormats(publicUrl: string): Record<string, ErrorFormat> {
  const metadataUrl = new URL('/.well-known/oauth-protected-resource/mcp', publicUrl).href;
  return { 'mcp-jsonrpc': (error, req) => mcpJsonRpcError(error, { body: req.body, id: req.id }, metadataUrl) };
}
