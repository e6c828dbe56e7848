import { callerOf } from '../http/auth.ts';
import { ApiError } from '../errors.ts';
import type { AppHandlers } from '../http/operations.ts';
import { chatTurn } from '../runs/chat.ts';
import type { RunEngine } from '../runs/engine.ts';
import { agentTurn } from '../runs/turns.ts';
import type { AgentStore } from './agents.ts';

export function agentHandlers(deps: { agents: AgentStore; engine: RunEngine; teams: { teamsOfAgent(agentId: string): Promise<string[]> } }) {
  return {
    async createAgent({ auth, body }) {
      return { status: 201, body: await deps.agents.create(auth.userId, body) };
    },

    async listAgents({ auth, query }) {
      return { status: 200, body: await deps.agents.list(auth.userId, query) };
    },

    async getAgent({ auth, params }) {
      return { status: 200, body: await deps.agents.get(auth.userId, params.agentId) };
    },

    async updateAgent({ auth, params, body }) {
      return { status: 200, body: await deps.agents.update(auth.userId, params.agentId, body) };
    },

    async deleteAgent({ auth, params }) {
      await deps.agents.get(auth.userId, params.agentId);
      const teams = await deps.teams.teamsOfAgent(params.agentId);
      if (teams.length > 0) {
        throw new ApiError('conflict', `The agent is a member of team ${teams.join(', ')}; remove it from the team or delete the team first.`);
      }
      await deps.engine.cancelAll(auth.userId, { agentId: params.agentId });
      await deps.agents.remove(auth.userId, params.agentId);
      return { status: 204 };
    },

    async chatWithAgent({ auth, body, params, signal, acceptsEventStream }) {
      const stream = body.stream === true || acceptsEventStream;
      return chatTurn(callerOf(auth), body, { stream, signal }, agentTurn(deps.engine, params.agentId));
    },
  } satisfies Partial<AppHandlers>;
}
