// Agent cards: how an A2A client learns what an agent or team is, where to call it and with which
// credential. A card is public (a client reads it before it can authenticate), so it holds what a
// directory listing would: the name, the description, skills by name (tools and knowledge collections),
// never the instructions, a tool's parameters, the model or the owner. The extended card, for the owner
// alone, says more: the parameters of the tools the client runs, the remote MCP servers by name and the
// tools they offer, which tools wait for approval, the model; still never the instructions, an MCP
// server's URL or headers.
import { createHash } from 'node:crypto';
import type { components } from '../../generated/openapi.gen.ts';
import { notFound } from '../errors.ts';
import { one, type Queryable } from '../store/db.ts';

export type A2aAgentCard = components['schemas']['A2aAgentCard'];
type Skill = components['schemas']['A2aAgentSkill'];
type Agent = components['schemas']['Agent'];

export const A2A_PROTOCOL_VERSION = '1.0';

const INPUT_MODES = ['text/plain', 'application/json', 'image/png', 'image/jpeg', 'image/webp', 'image/gif'];
const OUTPUT_MODES = ['text/plain', 'application/json'];

interface AgentFacts {
  kind: 'agent';
  id: string;
  name: string;
  description: string | null;
  tools: { function: { name: string; description?: string } }[];
  server_tools: string[];
  knowledge_collections: string[];
}

interface TeamFacts {
  kind: 'team';
  id: string;
  name: string;
  description: string | null;
  members: { name: string; role: string | null; description: string | null }[];
}

/** What a card says of an agent or team, read without an owner: the id is the capability. */
export async function cardFacts(db: Queryable, id: string): Promise<AgentFacts | TeamFacts> {
  if (id.startsWith('team_')) {
    const team = await one<{ id: string; name: string; description: string | null }>(db, 'SELECT id, name, description FROM teams WHERE id = $1', [id]);
    if (!team) throw notFound('agent or team', id);
    const members = await db.query<{ name: string; role: string | null; description: string | null }>(
      'SELECT a.name, m.role, a.description FROM team_members m JOIN agents a ON a.id = m.agent_id WHERE m.team_id = $1 ORDER BY m.position',
      [id],
    );
    return { kind: 'team', ...team, members };
  }
  const agent = await one<Omit<AgentFacts, 'kind'>>(db, 'SELECT id, name, description, tools, server_tools, knowledge_collections FROM agents WHERE id = $1', [id]);
  if (!agent) throw notFound('agent or team', id);
  return { kind: 'agent', ...agent };
}

function skillsOf(facts: AgentFacts | TeamFacts): Skill[] {
  const description = facts.description ?? `Talk with ${facts.name}.`;
  const conversation: Skill = { id: 'conversation', name: facts.name, description, tags: [facts.kind, 'chat'] };
  if (facts.kind === 'team') {
    return [
      conversation,
      ...facts.members.map((member) => ({
        id: `member:${member.name}`,
        name: member.name,
        description: member.role ?? member.description ?? `A member of ${facts.name}.`,
        tags: ['team-member'],
      })),
    ];
  }
  return [
    conversation,
    ...facts.tools.map((tool) => ({
      id: `tool:${tool.function.name}`,
      name: tool.function.name,
      description: tool.function.description ?? `A tool the client runs: the task asks for it as input.`,
      tags: ['tool', 'client-side'],
    })),
    ...facts.server_tools.map((name) => ({ id: `tool:${name}`, name, description: `The ${name} tool, run by the agent itself.`, tags: ['tool'] })),
    ...facts.knowledge_collections.map((name) => ({ id: `knowledge:${name}`, name, description: `Answers from the knowledge collection ${name}.`, tags: ['knowledge'] })),
  ];
}

/** The card of an agent or team served at `baseUrl` (the server's public URL). */
export function agentCard(facts: AgentFacts | TeamFacts, baseUrl: string, version: string): A2aAgentCard {
  const url = `${baseUrl.replace(/\/+$/, '')}/a2a/${facts.id}`;
  return {
    name: facts.name,
    description: facts.description ?? `${facts.kind === 'team' ? 'A team' : 'An agent'} of Open Agent API.`,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION },
      { url, protocolBinding: 'HTTP+JSON', protocolVersion: A2A_PROTOCOL_VERSION },
      // Requests without A2A-Version are A2A 0.3, which the JSON-RPC endpoint answers too; 0.3's HTTP+JSON
      // binding lives under `{url}/v1/…`.
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      { url, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3' },
    ],
    // What a 0.3 client reads of a card: where to call, over which transport, in which version.
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [
      { url, transport: 'JSONRPC' },
      { url, transport: 'HTTP+JSON' },
    ],
    protocolVersion: '0.3.0',
    provider: { organization: 'Open Agent API', url: baseUrl },
    version,
    documentationUrl: `${baseUrl.replace(/\/+$/, '')}/docs`,
    capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: true },
    supportsAuthenticatedExtendedCard: true,
    securitySchemes: {
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'An API key (oaa_…) or a session access token of the agent’s owner.' } },
      apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key', description: 'An API key of the agent’s owner.' } },
      basic: { httpAuthSecurityScheme: { scheme: 'Basic', description: 'HTTP Basic with an API key as the user name or the password.' } },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }, { schemes: { apiKey: { list: [] } } }, { schemes: { basic: { list: [] } } }],
    defaultInputModes: INPUT_MODES,
    defaultOutputModes: OUTPUT_MODES,
    skills: skillsOf(facts),
  };
}

/** A strong tag of the card's content. */
export function etagOf(card: A2aAgentCard): string {
  return `"${createHash('sha256').update(JSON.stringify(card)).digest('base64url').slice(0, 32)}"`;
}

/** Whether `If-None-Match` names this tag (or is `*`). */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}

/** What the owner's credential reveals of an agent, or of each member of a team. */
export type ExtendedFacts = { kind: 'agent'; agent: Agent } | { kind: 'team'; members: Agent[] };

const asksApproval = (policy: unknown) => policy !== undefined && policy !== 'always_allow';

/** `q (string), limit (integer)`: a tool's parameters as its JSON Schema names them. */
function parametersOf(parameters: Record<string, unknown> | undefined): string {
  const properties = (parameters?.properties ?? {}) as Record<string, { type?: unknown }>;
  const required = new Set(Array.isArray(parameters?.required) ? (parameters.required as string[]) : []);
  const names = Object.entries(properties).map(([name, schema]) => `${name}${required.has(name) ? '' : '?'} (${typeof schema?.type === 'string' ? schema.type : 'any'})`);
  return names.length ? names.join(', ') : 'none';
}

function agentSkills(card: A2aAgentCard, agent: Agent): Skill[] {
  const skills = card.skills.map((skill): Skill => {
    if (skill.id === 'conversation') return { ...skill, tags: [...skill.tags, `model:${agent.model}`] };
    const tool = agent.tools.find((item) => `tool:${item.function.name}` === skill.id);
    if (tool) return { ...skill, description: `${skill.description} Parameters: ${parametersOf(tool.function.parameters as Record<string, unknown> | undefined)}.` };
    const serverTool = agent.server_tools.find((name) => `tool:${name}` === skill.id);
    if (serverTool && asksApproval(agent.server_tool_approvals[serverTool])) return { ...skill, tags: [...skill.tags, 'needs-approval'] };
    return skill;
  });
  const mcp = agent.mcp_servers.map(
    (server): Skill => ({
      id: `mcp:${server.name}`,
      name: server.name,
      description: `Tools of the remote MCP server ${server.name}: ${server.allowed_tools ? server.allowed_tools.join(', ') || 'none' : 'every tool it offers'}.`,
      tags: ['tool', 'mcp', ...(asksApproval(server.approval) ? ['needs-approval'] : [])],
    }),
  );
  return [...skills, ...mcp];
}

/** A team member's skill, with what the member can do as tags. */
function memberSkill(skill: Skill, member: Agent | undefined): Skill {
  if (!member) return skill;
  const tools = [...member.tools.map((tool) => tool.function.name), ...member.server_tools, ...member.mcp_servers.map((server) => `mcp:${server.name}`)];
  return { ...skill, tags: [...skill.tags, `model:${member.model}`, ...tools.map((name) => `tool:${name}`), ...member.knowledge_collections.map((name) => `knowledge:${name}`)] };
}

/** The extended card: the public card, and what only the owner may read. */
export function extendedAgentCard(card: A2aAgentCard, facts: ExtendedFacts): A2aAgentCard {
  if (facts.kind === 'agent') return { ...card, skills: agentSkills(card, facts.agent) };
  return { ...card, skills: card.skills.map((skill) => memberSkill(skill, facts.members.find((member) => `member:${member.name}` === skill.id))) };
}
