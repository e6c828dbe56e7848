// The built-in server-side tools an agent runs, as tools of the run loop.
import type { Agent } from '../agents/agents.ts';
import { serverTool, type KnowledgeSearcher } from '../tools/registry.ts';
import { needsApproval } from '../mcp/approvals.ts';
import type { LoopTool } from './loop.ts';

export interface Caller {
  userId: string;
  apiKeyId: string | null;
}

/** Makes an agent's server-side tools: those it names, and knowledge_search when it has collections. */
export type ServerToolsFor = (agent: Agent, caller: Caller, signal: () => AbortSignal) => LoopTool[];

export function createServerTools(deps: { clock: () => number; knowledge: KnowledgeSearcher }): ServerToolsFor {
  return (agent, caller, signal) => {
    const names = new Set<string>(agent.server_tools);
    if (agent.knowledge_collections.length > 0) names.add('knowledge_search');
    return [...names].flatMap((name) => {
      const tool = serverTool(name);
      if (!tool) return [];
      // Built-in tools run without asking unless the agent says otherwise.
      const policy = agent.server_tool_approvals?.[tool.name];
      return [
        {
          definition: { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } },
          run: (args: Record<string, unknown>) =>
            tool.run(args, { ...caller, collections: agent.knowledge_collections, clock: deps.clock, knowledge: deps.knowledge, signal: signal() }),
          ...(policy && policy !== 'always_allow' ? { approval: (args: Record<string, unknown>) => needsApproval(policy, args) } : {}),
        },
      ];
    });
  };
}
