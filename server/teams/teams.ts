// Teams: 1–20 of a user's agents under a leader, which is the member flagged `is_leader` or, when none
// is, an orchestrator built from the team's instructions and `leader_model`.
import type { components } from '../../generated/openapi.gen.ts';
import type { Agent, AgentStore } from '../agents/agents.ts';
import { ApiError, notFound } from '../errors.ts';
import type { ModelGateway } from '../models/gateway.ts';
import { holdQuota, type ResourceLimit } from '../limits/quotas.ts';
import { checkMcpServers, openMcpServer, storeMcpServers, viewMcpServer, type McpServerConfig, type StoredMcpServer } from '../mcp/config.ts';
import type { Sealer } from '../mcp/secrets.ts';
import { one, type Db } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import { ownedRows } from '../store/owned.ts';
import { cursorOf, limitOf, toPage, type Page, type PageRequest } from '../store/pagination.ts';

type Schemas = components['schemas'];
export type Team = Schemas['Team'];
export type TeamCreate = Schemas['TeamCreate'];
export type TeamUpdate = Schemas['TeamUpdate'];
export type TeamMemberInput = Schemas['TeamMemberInput'];

export const DEFAULT_TEAM_MAX_STEPS = 10;

interface TeamRow {
  id: string;
  name: string;
  description: string | null;
  instructions: string | null;
  mode: Team['mode'];
  leader_model: string | null;
  mcp_servers: StoredMcpServer[];
  max_steps: number;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

interface MemberRow {
  team_id: string;
  agent_id: string;
  role: string | null;
  is_leader: boolean;
  name: string;
  model: string;
}

const COLUMNS = 'id, name, description, instructions, mode, leader_model, mcp_servers, max_steps, metadata, created_at, updated_at';

/** The leader's display name when the server builds one. */
export function orchestratorName(team: { name: string }): string {
  return `${team.name} leader`;
}

function toTeam(row: TeamRow, members: MemberRow[], defaultModel: string): Team {
  const leader = members.find((member) => member.is_leader);
  return {
    id: row.id,
    object: 'team',
    name: row.name,
    description: row.description,
    instructions: row.instructions,
    mode: row.mode,
    leader_model: row.leader_model,
    leader: leader
      ? { type: 'member', agent_id: leader.agent_id, name: leader.name, model: leader.model }
      : { type: 'orchestrator', agent_id: null, name: orchestratorName(row), model: row.leader_model ?? defaultModel },
    members: members.map((member) => ({ agent_id: member.agent_id, name: member.name, role: member.role, is_leader: member.is_leader })),
    mcp_servers: row.mcp_servers.map(viewMcpServer),
    max_steps: row.max_steps,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export interface TeamStoreDeps {
  db: Db;
  agents: AgentStore;
  models: ModelGateway;
  /** The user's plan limit, held atomically with each creation. */
  limitOf: ResourceLimit;
  /** Seals MCP servers' headers at rest. */
  sealer: Sealer;
  /** Refuses an MCP server URL the outbound policy does not allow. */
  checkUrl: (url: string) => void;
}

export function createTeamStore({ db, agents, models, sealer, checkUrl, limitOf: resourceLimit }: TeamStoreDeps) {
  const owned = ownedRows(db, 'teams', 'team');
  const storedServers = async (userId: string, teamId: string): Promise<StoredMcpServer[]> => {
    const row = await one<{ mcp_servers: StoredMcpServer[] }>(db, 'SELECT mcp_servers FROM teams WHERE id = $1 AND user_id = $2', [teamId, userId]);
    if (!row) throw notFound('team', teamId);
    return row.mcp_servers;
  };
  const membersOf = async (teamIds: string[]): Promise<Map<string, MemberRow[]>> => {
    const rows = await db.query<MemberRow>(
      `SELECT m.team_id, m.agent_id, m.role, m.is_leader, a.name, a.model
       FROM team_members m JOIN agents a ON a.id = m.agent_id
       WHERE m.team_id IN (SELECT jsonb_array_elements_text($1::jsonb)) ORDER BY m.team_id, m.position`,
      [JSON.stringify(teamIds)],
    );
    const byTeam = new Map<string, MemberRow[]>();
    for (const row of rows) byTeam.set(row.team_id, [...(byTeam.get(row.team_id) ?? []), row]);
    return byTeam;
  };

  /** Checks a member list: the caller's own agents, each once, at most one leader. */
  const checkMembers = async (userId: string, members: TeamMemberInput[]): Promise<void> => {
    const seen = new Set<string>();
    members.forEach((member, index) => {
      if (seen.has(member.agent_id)) {
        throw new ApiError('invalid_request', `The agent ${member.agent_id} is listed twice.`, {
          details: [{ field: `members[${index}].agent_id`, message: 'duplicate member' }],
        });
      }
      seen.add(member.agent_id);
    });
    if (members.filter((member) => member.is_leader).length > 1) {
      throw new ApiError('invalid_request', 'At most one member can lead.', { details: [{ field: 'members', message: 'several is_leader' }] });
    }
    for (const member of members) await agents.get(userId, member.agent_id);
  };

  const checkLeaderModel = (model: string | null | undefined) => {
    if (model && !models.get(model)?.capabilities.includes('chat')) {
      throw new ApiError('invalid_request', `The model ${model} is not a chat model of this server's catalog.`, {
        details: [{ field: 'leader_model', message: 'not a chat model' }],
      });
    }
  };

  const writeMembers = async (tx: Pick<Db, 'query'>, teamId: string, members: TeamMemberInput[]) => {
    await tx.query('DELETE FROM team_members WHERE team_id = $1', [teamId]);
    await tx.query(
      `INSERT INTO team_members (team_id, agent_id, position, role, is_leader)
       SELECT $1, m.value->>'agent_id', (m.ordinality - 1)::int, m.value->>'role', coalesce((m.value->>'is_leader')::boolean, false)
       FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS m`,
      [teamId, JSON.stringify(members)],
    );
  };

  const get = async (userId: string, teamId: string): Promise<Team> => {
    const row = await one<TeamRow>(db, `SELECT ${COLUMNS} FROM teams WHERE id = $1 AND user_id = $2`, [teamId, userId]);
    if (!row) throw notFound('team', teamId);
    return toTeam(row, (await membersOf([row.id])).get(row.id) ?? [], models.defaults.chat);
  };

  return {
    get,

    /** The team's MCP servers with their headers, for its leader to call them. */
    async mcpServers(userId: string, teamId: string): Promise<McpServerConfig[]> {
      return (await storedServers(userId, teamId)).map((server) => openMcpServer(server, sealer));
    },

    async create(userId: string, input: TeamCreate): Promise<Team> {
      await checkMembers(userId, input.members);
      checkLeaderModel(input.leader_model);
      if (input.mcp_servers) checkMcpServers(input.mcp_servers, 'mcp_servers', checkUrl);
      const id = newId('team');
      const limit = await resourceLimit(userId, 'teams');
      await db.transaction(async (tx) => {
        await holdQuota(tx, { userId, metric: 'teams', limit, count: () => owned.count(userId, tx) });
        await tx.query(
          `INSERT INTO teams (id, user_id, name, description, instructions, mode, leader_model, max_steps, metadata, mcp_servers)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          [
            id,
            userId,
            input.name,
            input.description ?? null,
            input.instructions ?? null,
            input.mode ?? 'coordinate',
            input.leader_model ?? null,
            input.max_steps ?? DEFAULT_TEAM_MAX_STEPS,
            JSON.stringify(input.metadata ?? {}),
            JSON.stringify(storeMcpServers(input.mcp_servers ?? [], [], sealer)),
          ],
        );
        await writeMembers(tx, id, input.members);
      });
      return get(userId, id);
    },

    async list(userId: string, request: PageRequest): Promise<Page<Team>> {
      const limit = limitOf(request);
      const rows = await db.query<TeamRow>(
        `SELECT ${COLUMNS} FROM teams WHERE user_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
        [userId, cursorOf(request, 'team'), limit + 1],
      );
      const members = await membersOf(rows.map((row) => row.id));
      return toPage(rows, limit, (row) => toTeam(row, members.get(row.id) ?? [], models.defaults.chat));
    },

    async update(userId: string, teamId: string, patch: TeamUpdate): Promise<Team> {
      const current = await get(userId, teamId);
      if (patch.members) await checkMembers(userId, patch.members);
      checkLeaderModel(patch.leader_model);
      const { mcp_servers: servers, ...rest } = patch;
      if (servers) checkMcpServers(servers, 'mcp_servers', checkUrl);
      const next = { ...current, ...rest };
      const mcpServers = servers === undefined ? undefined : storeMcpServers(servers, await storedServers(userId, teamId), sealer);
      await db.transaction(async (tx) => {
        await tx.query(
          `UPDATE teams SET name = $3, description = $4, instructions = $5, mode = $6, leader_model = $7, max_steps = $8,
                  metadata = $9, mcp_servers = coalesce($10::jsonb, mcp_servers), updated_at = now()
           WHERE id = $1 AND user_id = $2`,
          [
            teamId,
            userId,
            next.name,
            next.description ?? null,
            next.instructions ?? null,
            next.mode,
            next.leader_model ?? null,
            next.max_steps,
            JSON.stringify(next.metadata),
            mcpServers === undefined ? null : JSON.stringify(mcpServers),
          ],
        );
        if (patch.members) await writeMembers(tx, teamId, patch.members);
      });
      return get(userId, teamId);
    },

    ...owned,

    /** The teams an agent belongs to: deleting it would break them. */
    async teamsOfAgent(agentId: string): Promise<string[]> {
      return (await db.query<{ team_id: string }>('SELECT team_id FROM team_members WHERE agent_id = $1', [agentId])).map((row) => row.team_id);
    },

    /** The member agents, in order, with their roles. */
    async memberAgents(userId: string, team: Team): Promise<{ agent: Agent; role: string | null; isLeader: boolean }[]> {
      return Promise.all(
        team.members.map(async (member) => ({ agent: await agents.get(userId, member.agent_id), role: member.role, isLeader: member.is_leader })),
      );
    },
  };
}

export type TeamStore = ReturnType<typeof createTeamStore>;
