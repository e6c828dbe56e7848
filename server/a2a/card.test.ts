// The extended agent card: what it adds to the public card (tool parameters, MCP servers and their tools,
// approvals, the model) and what it never says (instructions, an MCP server's URL or headers).
import { describe, expect, it } from 'vitest';
import type { components } from '../../generated/openapi.gen.ts';
import { agentCard, extendedAgentCard } from './card.ts';

type Agent = components['schemas']['Agent'];

const agent: Agent = {
  id: 'agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D',
  object: 'agent',
  name: 'Helper',
  description: 'Helps.',
  instructions: 'SECRET-INSTRUCTIONS',
  model: 'gpt-4o-mini',
  model_settings: {},
  tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks up.', parameters: { type: 'object', properties: { q: { type: 'string' }, limit: { type: 'integer' } }, required: ['q'] } } }],
  server_tools: ['calculator', 'web_fetch'],
  knowledge_collections: ['handbook'],
  mcp_servers: [
    { name: 'files', url: 'https://mcp.example.com/SECRET-PATH', headers: { Authorization: '********' }, allowed_tools: ['read', 'list'], approval: 'always_ask', tool_approvals: {} },
    { name: 'open', url: 'https://open.example.com/mcp', headers: {}, allowed_tools: null, approval: 'always_allow', tool_approvals: {} },
  ],
  server_tool_approvals: { web_fetch: 'always_ask' },
  max_steps: 10,
  run_timeout_seconds: 600,
  metadata: {},
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
} as Agent;

const publicCard = agentCard(
  { kind: 'agent', id: agent.id, name: agent.name, description: agent.description, tools: agent.tools, server_tools: agent.server_tools, knowledge_collections: agent.knowledge_collections },
  'https://api.example.com',
  '1.0.0',
);

describe('extended agent card', () => {
  const card = extendedAgentCard(publicCard, { kind: 'agent', agent });
  const skill = (id: string) => card.skills.find((item) => item.id === id);

  it('declares itself on the public card, in 1.0 and 0.3 terms', () => {
    expect(publicCard.capabilities.extendedAgentCard).toBe(true);
    expect(publicCard.supportsAuthenticatedExtendedCard).toBe(true);
  });

  it('adds tool parameters, the model, approvals and MCP servers with their tools', () => {
    expect(skill('tool:lookup')?.description).toBe('Looks up. Parameters: q (string), limit? (integer).');
    expect(skill('conversation')?.tags).toContain('model:gpt-4o-mini');
    expect(skill('tool:web_fetch')?.tags).toContain('needs-approval');
    expect(skill('tool:calculator')?.tags).not.toContain('needs-approval');
    expect(skill('mcp:files')).toMatchObject({ name: 'files', description: 'Tools of the remote MCP server files: read, list.', tags: ['tool', 'mcp', 'needs-approval'] });
    expect(skill('mcp:open')?.description).toBe('Tools of the remote MCP server open: every tool it offers.');
    expect(skill('knowledge:handbook')).toBeDefined();
  });

  it('keeps everything else of the public card, and says nothing secret', () => {
    const { skills: _extendedSkills, ...rest } = card;
    const { skills: _publicSkills, ...publicRest } = publicCard;
    expect(rest).toEqual(publicRest);
    const text = JSON.stringify(card);
    for (const secret of ['SECRET-INSTRUCTIONS', 'SECRET-PATH', 'mcp.example.com', '********', 'Authorization:']) expect(text).not.toContain(secret);
    expect(JSON.stringify(publicCard)).not.toContain('Parameters:');
    expect(JSON.stringify(publicCard)).not.toContain('mcp:files');
  });
});
