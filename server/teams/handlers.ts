import { chat, type StartTurn } from '../agents/handlers.ts';
import type { AppHandlers } from '../http/operations.ts';
import { processAgentScope, respondConnexity, type ProtocolDeps } from '../protocols/handlers.ts';
import type { TeamRunner } from './runner.ts';
import type { TeamStore } from './teams.ts';

export function teamHandlers(deps: ProtocolDeps & { teams: TeamStore; teamRunner: TeamRunner }) {
  const teamTurn = (teamId: string): StartTurn => (input, options) => deps.teamRunner.startTeamTurn({ ...input, teamId }, options);

  return {
    async createTeam({ auth, body }) {
      return { status: 201, body: await deps.teams.create(auth.userId, body) };
    },

    async listTeams({ auth, query }) {
      return { status: 200, body: await deps.teams.list(auth.userId, query) };
    },

    async getTeam({ auth, params }) {
      return { status: 200, body: await deps.teams.get(auth.userId, params.teamId) };
    },

    async updateTeam({ auth, params, body }) {
      return { status: 200, body: await deps.teams.update(auth.userId, params.teamId, body) };
    },

    async deleteTeam({ auth, params }) {
      await deps.teams.get(auth.userId, params.teamId);
      await deps.engine.cancelAll(auth.userId, { teamId: params.teamId });
      await deps.teams.remove(auth.userId, params.teamId);
      return { status: 204 };
    },

    async chatWithTeam(request) {
      return chat(request, teamTurn(request.params.teamId));
    },

    async processTeamRequest(request) {
      return processAgentScope(deps, request, { agentId: null, teamId: request.params.teamId }, teamTurn(request.params.teamId));
    },

    async respondWithTeam(request) {
      return respondConnexity(deps, request, teamTurn(request.params.teamId));
    },
  } satisfies Partial<AppHandlers>;
}
