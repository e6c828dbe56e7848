// Remote MCP servers' tools as tools of the run loop. At a turn's start every server of the agent (and of
// the request) is connected with the SDK's client and its tools listed once; the model sees them as
// `<server>__<tool>`. Whatever goes wrong with a server (unreachable, refused, slow, speaking something
// else, the tool failing) becomes what the model and the client read, never a failed run.
import type * as McpClientSdk from '@modelcontextprotocol/client';
import type { Client } from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import type { LoopTool } from '../runs/loop.ts';
import type { ToolResult } from '../tools/registry.ts';
import { needsApproval } from './approvals.ts';
import type { McpServerConfig } from './config.ts';

export interface RemoteToolsDeps {
  /** The outbound policy's fetch: private addresses are refused unless the operator allows them. */
  fetch: typeof fetch;
  logger: Logger;
  /** How long listing a server's tools may take. */
  listTimeoutMs: number;
  /** How long one tool call may take. */
  callTimeoutMs: number;
}

export interface RemoteTools {
  tools: LoopTool[];
  /** What the model should know about servers that could not be used this turn. */
  unavailable: string[];
  close(): Promise<void>;
}

const NAME = /[^A-Za-z0-9_-]/g;

/** The name the model sees: OpenAI function names are [A-Za-z0-9_-]{1,64}. */
export function toolName(server: string, tool: string): string {
  return `${server}__${tool.replace(NAME, '_')}`.slice(0, 64);
}

type Content = { type: string; text?: string; [key: string]: unknown };

/** A call's result as the text the model reads. */
function resultText(result: { content?: unknown; structuredContent?: unknown }): string {
  const parts = Array.isArray(result.content) ? (result.content as Content[]) : [];
  const texts = parts.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : JSON.stringify(part)));
  if (texts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return texts.join('\n');
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return `${message}${cause}`.slice(0, 500);
}

async function withTimeout<T>(work: (signal: AbortSignal) => Promise<T>, ms: number, outer: AbortSignal, what: string): Promise<T> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(outer.reason);
  outer.addEventListener('abort', onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`${what} did not answer within ${Math.round(ms / 1000)} seconds`);
      controller.abort(error);
      reject(error);
    }, ms);
  });
  try {
    return await Promise.race([work(controller.signal), timeout]);
  } finally {
    clearTimeout(timer);
    outer.removeEventListener('abort', onAbort);
  }
}

/** The MCP client SDK, loaded when an agent first reaches a remote MCP server (0.2 s of start-up otherwise). */
let clientModule: Promise<typeof McpClientSdk> | undefined;

async function connect(server: McpServerConfig, deps: RemoteToolsDeps, signal: AbortSignal) {
  const { Client, StreamableHTTPClientTransport } = await (clientModule ??= import('@modelcontextprotocol/client'));
  const client = new Client({ name: 'open-agent-api', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    fetch: deps.fetch,
    requestInit: { headers: server.headers },
  });
  try {
    await withTimeout(
      async (timeoutSignal) => {
        await client.connect(transport, { signal: timeoutSignal, timeout: deps.listTimeoutMs });
      },
      deps.listTimeoutMs,
      signal,
      `The MCP server ${server.name}`,
    );
    const tools = [];
    let cursor: string | undefined;
    do {
      const page = await withTimeout(
        (timeoutSignal) => client.listTools(cursor ? { cursor } : {}, { signal: timeoutSignal, timeout: deps.listTimeoutMs }),
        deps.listTimeoutMs,
        signal,
        `The MCP server ${server.name}`,
      );
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor && tools.length < 1000);
    return { client, tools };
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
}

/** Connects to each server and makes its (allowed) tools loop tools. */
export async function remoteTools(servers: McpServerConfig[], deps: RemoteToolsDeps, signal: AbortSignal): Promise<RemoteTools> {
  const clients: Client[] = [];
  const unavailable: string[] = [];
  const tools: LoopTool[] = [];
  const connected = await Promise.all(
    servers.map(async (server) => {
      try {
        return { server, ...(await connect(server, deps, signal)) };
      } catch (error) {
        if (signal.aborted) throw error;
        deps.logger.warn({ err: error, server: server.name }, 'an MCP server could not be listed');
        unavailable.push(`The MCP server ${server.name} is unavailable this turn: ${describe(error)}`);
        return undefined;
      }
    }),
  );
  for (const entry of connected) {
    if (!entry) continue;
    const { server, client } = entry;
    clients.push(client);
    for (const tool of entry.tools) {
      if (server.allowed_tools && !server.allowed_tools.includes(tool.name)) continue;
      const policy = server.tool_approvals[tool.name] ?? server.approval;
      const name = toolName(server.name, tool.name);
      tools.push({
        definition: {
          type: 'function',
          function: {
            name,
            description: (tool.description ?? tool.title ?? `${tool.name} from the MCP server ${server.name}`).slice(0, 1024),
            parameters: (tool.inputSchema as Record<string, unknown> | undefined) ?? { type: 'object', properties: {} },
          },
        },
        mcp: { server: server.name, tool: tool.name },
        approval: (args) => needsApproval(policy, args),
        async run(args, runSignal): Promise<ToolResult> {
          try {
            const result = await withTimeout(
              (timeoutSignal) => client.callTool({ name: tool.name, arguments: args }, { signal: timeoutSignal, timeout: deps.callTimeoutMs }),
              deps.callTimeoutMs,
              runSignal,
              `The MCP tool ${name}`,
            );
            const text = resultText(result as { content?: unknown; structuredContent?: unknown });
            return result.isError === true ? { output: `Error: ${text || 'the tool failed'}`, isError: true } : { output: text, isError: false };
          } catch (error) {
            if (runSignal.aborted) throw error;
            return { output: `Error: calling ${name} failed: ${describe(error)}`, isError: true };
          }
        },
      });
    }
  }
  // A stable order whatever order the servers answered in.
  tools.sort((a, b) => a.definition.function.name.localeCompare(b.definition.function.name));
  return {
    tools,
    unavailable,
    async close() {
      await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    },
  };
}
