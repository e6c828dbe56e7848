import { callerOf } from '../http/auth.ts';
import type { AppHandlers } from '../http/operations.ts';
import { chatTurn } from '../runs/chat.ts';
import type { RunEngine } from '../runs/engine.ts';
import { teamTurn } from '../runs/turns.ts';
import type { TeamRunner } from './runner.ts';
import type { TeamStore } from './teams.ts';

export function teamHandlers(deps: { engine: RunEngine; teams: TeamStore; teamRunner: TeamRunner }) {
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

    async chatWithTeam({ auth, body, params, signal, acceptsEventStream }) {
      const stream = body.stream === true || acceptsEventStream;
      return chatTurn(callerOf(auth), body, { stream, signal }, teamTurn(deps.teamRunner, params.teamId));
    },
  } satisfies Partial<AppHandlers>;
}
