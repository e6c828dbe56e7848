import { answerTurn, apiKeyOf } from '../agents/handlers.ts';
import type { AppHandlers } from '../http/operations.ts';
import { processAgentScope, respondConnexity, type ProtocolDeps } from '../protocols/handlers.ts';
import type { TeamRunner } from './runner.ts';
import type { TeamStore } from './teams.ts';

export function teamHandlers(deps: ProtocolDeps & { teams: TeamStore; teamRunner: TeamRunner }) {
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
      const { auth, params, body } = request;
      const stream = body.stream === true || request.acceptsEventStream;
      const handle = await deps.teamRunner.startTeamTurn(
        {
          userId: auth.userId,
          apiKeyId: apiKeyOf(auth),
          teamId: params.teamId,
          conversation: { sessionId: body.session_id, messages: body.messages },
          tools: body.tools,
          modelSettings: body.model_settings,
          metadata: body.metadata,
        },
        { resumable: stream },
      );
      return answerTurn(handle, stream, request);
    },

    async processTeamRequest(request) {
      const { auth, params, body } = request;
      return processAgentScope(deps, auth.userId, { agentId: null, teamId: params.teamId }, body, request, (conversation, extra) =>
        deps.teamRunner.startTeamTurn(
          { userId: auth.userId, apiKeyId: apiKeyOf(auth), teamId: params.teamId, conversation, tools: extra.tools, modelSettings: extra.modelSettings },
          { resumable: false },
        ),
      );
    },

    async respondWithTeam(request) {
      const { auth, params, body } = request;
      return respondConnexity(deps, body, request, (conversation, metadata) =>
        deps.teamRunner.startTeamTurn(
          { userId: auth.userId, apiKeyId: apiKeyOf(auth), teamId: params.teamId, conversation, clientTools: false, metadata },
          { resumable: false },
        ),
      );
    },
  } satisfies Partial<AppHandlers>;
}
