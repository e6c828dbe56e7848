// An agent's remote MCP servers: as the client gives them, as they are stored (headers sealed), as they
// are answered (headers masked) and as a run uses them (headers open).
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError } from '../errors.ts';
import { checkPolicy, type ApprovalPolicy } from './approvals.ts';
import type { Sealer } from './secrets.ts';

export type McpServerInput = components['schemas']['McpServerInput'];
export type McpServerView = components['schemas']['McpServer'];

export const HEADER_MASK = '********';

/** How an agent's row keeps a server: the headers as one sealed JSON object. */
export interface StoredMcpServer {
  name: string;
  url: string;
  sealed_headers: string | null;
  header_names: string[];
  allowed_tools: string[] | null;
  approval: ApprovalPolicy;
  tool_approvals: Record<string, ApprovalPolicy>;
}

/** A server as a run calls it. */
export interface McpServerConfig {
  name: string;
  url: string;
  headers: Record<string, string>;
  allowed_tools: string[] | null;
  approval: ApprovalPolicy;
  tool_approvals: Record<string, ApprovalPolicy>;
}

/** Names are unique, URLs are http(s) and allowed, policies are valid. */
export function checkMcpServers(servers: McpServerInput[], list: string, checkUrl: (url: string) => void): void {
  const seen = new Set<string>();
  servers.forEach((server, index) => {
    const at = `${list}[${index}]`;
    if (seen.has(server.name)) {
      throw new ApiError('invalid_request', `The MCP server name ${server.name} appears twice.`, { details: [{ field: `${at}.name`, message: 'duplicate name' }] });
    }
    seen.add(server.name);
    try {
      checkUrl(server.url);
    } catch (error) {
      throw new ApiError('invalid_request', `The MCP server URL cannot be used: ${(error as Error).message}`, { details: [{ field: `${at}.url`, message: 'not allowed' }] });
    }
    checkPolicy(server.approval, `${at}.approval`);
    for (const [tool, policy] of Object.entries(server.tool_approvals ?? {})) checkPolicy(policy, `${at}.tool_approvals.${tool}`);
  });
}

export function openHeaders(server: StoredMcpServer, sealer: Sealer): Record<string, string> {
  return server.sealed_headers ? (JSON.parse(sealer.open(server.sealed_headers)) as Record<string, string>) : {};
}

/**
 * Seals what the client gave. A header whose value is the mask keeps the value stored for the same
 * server and header, so that a client may send back what it read.
 */
export function storeMcpServers(servers: McpServerInput[], previous: StoredMcpServer[], sealer: Sealer): StoredMcpServer[] {
  return servers.map((server) => {
    const before = previous.find((stored) => stored.name === server.name);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(server.headers ?? {})) {
      if (value === HEADER_MASK) {
        const kept = before ? openHeaders(before, sealer)[name] : undefined;
        if (kept === undefined) continue;
        headers[name] = kept;
      } else {
        headers[name] = value;
      }
    }
    const names = Object.keys(headers);
    return {
      name: server.name,
      url: server.url,
      sealed_headers: names.length ? sealer.seal(JSON.stringify(headers)) : null,
      header_names: names,
      allowed_tools: server.allowed_tools ?? null,
      approval: server.approval ?? 'always_ask',
      tool_approvals: server.tool_approvals ?? {},
    };
  });
}

export function viewMcpServer(server: StoredMcpServer): McpServerView {
  return {
    name: server.name,
    url: server.url,
    headers: Object.fromEntries(server.header_names.map((name) => [name, HEADER_MASK])),
    allowed_tools: server.allowed_tools,
    approval: server.approval,
    tool_approvals: server.tool_approvals,
  };
}

export function openMcpServer(server: StoredMcpServer, sealer: Sealer): McpServerConfig {
  return {
    name: server.name,
    url: server.url,
    headers: openHeaders(server, sealer),
    allowed_tools: server.allowed_tools,
    approval: server.approval,
    tool_approvals: server.tool_approvals,
  };
}

/** A request's servers, as given (never stored). */
export function requestMcpServer(server: McpServerInput): McpServerConfig {
  return {
    name: server.name,
    url: server.url,
    headers: server.headers ?? {},
    allowed_tools: server.allowed_tools ?? null,
    approval: server.approval ?? 'always_ask',
    tool_approvals: server.tool_approvals ?? {},
  };
}

/** A turn's servers: the agent's or team's own, and the request's, which replace their own of the same name. */
export function turnMcpServers(own: McpServerConfig[], requested: McpServerConfig[] | undefined): McpServerConfig[] {
  const extra = requested ?? [];
  return [...own.filter((server) => !extra.some((other) => other.name === server.name)), ...extra];
}
