// Agents: a model with instructions, generation settings and tools, owned by one user.
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError, notFound } from '../errors.ts';
import type { ModelGateway } from '../models/gateway.ts';
import { holdQuota, type ResourceLimit } from '../limits/quotas.ts';
import { one, type Db } from '../store/db.ts';
import { groupCommit } from '../store/group-commit.ts';
import { newId } from '../store/ids.ts';
import { ownedRows } from '../store/owned.ts';
import { cursorOf, limitOf, toPage, type Page, type PageRequest } from '../store/pagination.ts';
import { serverToolNames } from '../tools/registry.ts';
import { checkPolicy } from '../mcp/approvals.ts';
import { checkMcpServers, openMcpServer, storeMcpServers, viewMcpServer, type McpServerConfig, type StoredMcpServer } from '../mcp/config.ts';
import type { Sealer } from '../mcp/secrets.ts';

export type Agent = components['schemas']['Agent'];
export type AgentCreate = components['schemas']['AgentCreate'];
export type AgentUpdate = components['schemas']['AgentUpdate'];
export type FunctionTool = components['schemas']['FunctionTool'];

export const DEFAULT_MAX_STEPS = 10;
export const DEFAULT_RUN_TIMEOUT_SECONDS = 300;

interface AgentRow {
  id: string;
  user_id: string;
  name: string;
  description: string | null;
  instructions: string | null;
  model: string;
  model_settings: Agent['model_settings'];
  tools: FunctionTool[];
  server_tools: Agent['server_tools'];
  knowledge_collections: string[];
  mcp_servers: StoredMcpServer[];
  server_tool_approvals: Agent['server_tool_approvals'];
  max_steps: number;
  run_timeout_seconds: number;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'id, user_id, name, description, instructions, model, model_settings, tools, server_tools, knowledge_collections, mcp_servers, server_tool_approvals, max_steps, run_timeout_seconds, metadata, created_at, updated_at';

export function toAgent(row: AgentRow): Agent {
  return {
    id: row.id,
    object: 'agent',
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    model: row.model,
    model_settings: row.model_settings,
    tools: row.tools,
    server_tools: row.server_tools,
    knowledge_collections: row.knowledge_collections,
    mcp_servers: row.mcp_servers.map(viewMcpServer),
    server_tool_approvals: row.server_tool_approvals,
    max_steps: row.max_steps,
    run_timeout_seconds: row.run_timeout_seconds,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Client-side tool names must be unique and must not shadow a server-side tool. */
export function checkToolNames(tools: FunctionTool[], list: string): void {
  const seen = new Set<string>();
  tools.forEach((tool, index) => {
    const name = tool.function.name;
    if (serverToolNames.has(name)) {
      throw new ApiError('invalid_request', `The tool name ${name} is taken by a server-side tool; rename yours.`, {
        details: [{ field: `${list}[${index}].function.name`, message: 'reserved for a server-side tool' }],
      });
    }
    if (seen.has(name)) {
      throw new ApiError('invalid_request', `The tool name ${name} appears twice.`, {
        details: [{ field: `${list}[${index}].function.name`, message: 'duplicate tool name' }],
      });
    }
    seen.add(name);
  });
}

export interface AgentStoreDeps {
  db: Db;
  models: ModelGateway;
  knowledge: { missingCollections(userId: string, names: string[]): Promise<string[]> };
  /** Seals the headers of agents' MCP servers. */
  sealer: Sealer;
  /** Throws when a URL may not be called (server/net/outbound.ts). */
  checkUrl: (url: string) => void;
  /** The user's plan limit, held atomically with each creation. */
  limitOf: ResourceLimit;
}

export function createAgentStore({ db, models, knowledge, sealer, checkUrl, limitOf: resourceLimit }: AgentStoreDeps) {
  const owned = ownedRows(db, 'agents', 'agent');
  const checkTools = (input: AgentCreate | AgentUpdate) => {
    if (input.tools !== undefined) checkToolNames(input.tools, 'tools');
    if (input.mcp_servers !== undefined) checkMcpServers(input.mcp_servers, 'mcp_servers', checkUrl);
    for (const [name, policy] of Object.entries(input.server_tool_approvals ?? {})) checkPolicy(policy, `server_tool_approvals.${name}`);
  };

  const storedServers = async (userId: string, agentId: string): Promise<StoredMcpServer[]> => {
    const row = await one<{ mcp_servers: StoredMcpServer[] }>(db, 'SELECT mcp_servers FROM agents WHERE id = $1 AND user_id = $2', [agentId, userId]);
    if (!row) throw notFound('agent', agentId);
    return row.mcp_servers;
  };

  const checkCollections = async (userId: string, names: string[] | undefined) => {
    const missing = names?.length ? await knowledge.missingCollections(userId, names) : [];
    if (missing.length > 0) {
      throw new ApiError('invalid_request', `No knowledge collection named ${missing.join(', ')}; add a document to it first.`, {
        details: missing.map((name) => ({ field: `knowledge_collections[${names!.indexOf(name)}]`, message: 'unknown collection' })),
      });
    }
  };

  const checkModel = (model: string) => {
    const spec = models.get(model);
    if (!spec?.capabilities.includes('chat')) {
      throw new ApiError('invalid_request', `The model ${model} is not a chat model of this server's catalog.`, {
        details: [{ field: 'model', message: spec ? 'not a chat model' : 'unknown model' }],
      });
    }
  };

  // Agents that runs starting at once need are read together (see store/group-commit.ts).
  const read = groupCommit(async (keys: readonly { userId: string; agentId: string }[]) => {
    const rows = await db.query<AgentRow>(`SELECT ${COLUMNS} FROM agents WHERE id = ANY($1::text[])`, [[...new Set(keys.map((key) => key.agentId))]]);
    const byId = new Map(rows.map((row) => [row.id, row]));
    // Another user's agent is as absent as one that does not exist.
    return keys.map((key) => (byId.get(key.agentId)?.user_id === key.userId ? byId.get(key.agentId) : undefined));
  });

  const get = async (userId: string, agentId: string): Promise<Agent> => {
    const row = await read({ userId, agentId });
    if (!row) throw notFound('agent', agentId);
    return toAgent(row);
  };

  return {
    get,

    /** The agent's MCP servers with their headers, for a run to call them. */
    async mcpServers(userId: string, agentId: string): Promise<McpServerConfig[]> {
      return (await storedServers(userId, agentId)).map((server) => openMcpServer(server, sealer));
    },

    async create(userId: string, input: AgentCreate): Promise<Agent> {
      const model = input.model ?? models.defaults.chat;
      checkModel(model);
      checkTools(input);
      await checkCollections(userId, input.knowledge_collections);
      const limit = await resourceLimit(userId, 'agents');
      const row = await db.transaction(async (tx) => {
        await holdQuota(tx, { userId, metric: 'agents', limit, count: () => owned.count(userId, tx) });
        return one<AgentRow>(
          tx,
          `INSERT INTO agents (id, user_id, name, description, instructions, model, model_settings, tools, server_tools,
                               knowledge_collections, max_steps, run_timeout_seconds, metadata, mcp_servers, server_tool_approvals)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING ${COLUMNS}`,
          [
            newId('agt'),
            userId,
            input.name,
            input.description ?? null,
            input.instructions ?? null,
            model,
            JSON.stringify(input.model_settings ?? {}),
            JSON.stringify(input.tools ?? []),
            JSON.stringify(input.server_tools ?? []),
            JSON.stringify(input.knowledge_collections ?? []),
            input.max_steps ?? DEFAULT_MAX_STEPS,
            input.run_timeout_seconds ?? DEFAULT_RUN_TIMEOUT_SECONDS,
            JSON.stringify(input.metadata ?? {}),
            JSON.stringify(storeMcpServers(input.mcp_servers ?? [], [], sealer)),
            JSON.stringify(input.server_tool_approvals ?? {}),
          ],
        );
      });
      return toAgent(row!);
    },

    async list(userId: string, request: PageRequest): Promise<Page<Agent>> {
      const limit = limitOf(request);
      const rows = await db.query<AgentRow>(
        `SELECT ${COLUMNS} FROM agents WHERE user_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
        [userId, cursorOf(request, 'agt'), limit + 1],
      );
      return toPage(rows, limit, toAgent);
    },

    async update(userId: string, agentId: string, patch: AgentUpdate): Promise<Agent> {
      if (patch.model !== undefined) checkModel(patch.model);
      checkTools(patch);
      const current = await get(userId, agentId);
      await checkCollections(userId, patch.knowledge_collections);
      const { mcp_servers: servers, ...rest } = patch;
      const next = { ...current, ...rest };
      const mcpServers = servers === undefined ? undefined : storeMcpServers(servers, await storedServers(userId, agentId), sealer);
      const row = await one<AgentRow>(
        db,
        `UPDATE agents SET name = $3, description = $4, instructions = $5, model = $6, model_settings = $7, tools = $8,
                server_tools = $9, knowledge_collections = $10, max_steps = $11, run_timeout_seconds = $12, metadata = $13,
                mcp_servers = coalesce($14::jsonb, mcp_servers), server_tool_approvals = $15, updated_at = now()
         WHERE id = $1 AND user_id = $2 RETURNING ${COLUMNS}`,
        [
          agentId,
          userId,
          next.name,
          next.description ?? null,
          next.instructions ?? null,
          next.model,
          JSON.stringify(next.model_settings),
          JSON.stringify(next.tools),
          JSON.stringify(next.server_tools),
          JSON.stringify(next.knowledge_collections),
          next.max_steps,
          next.run_timeout_seconds,
          JSON.stringify(next.metadata),
          mcpServers === undefined ? null : JSON.stringify(mcpServers),
          JSON.stringify(next.server_tool_approvals),
        ],
      );
      if (!row) throw notFound('agent', agentId);
      return toAgent(row);
    },

    ...owned,
  };
}

export type AgentStore = ReturnType<typeof createAgentStore>;
