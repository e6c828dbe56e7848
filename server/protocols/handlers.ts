// The AgentScope (`/process`), Connexity (`/respond`) and AG-UI (`/ag-ui`) protocols, for agents and teams.
import { callerOf } from '../http/auth.ts';
import type { AppHandlers } from '../http/operations.ts';
import type { ModelGateway } from '../models/gateway.ts';
import type { RunEngine } from '../runs/engine.ts';
import { agentTurn, teamTurn } from '../runs/turns.ts';
import type { TeamRunner } from '../teams/runner.ts';
import { agUiTurn, type AgUiDeps } from './ag-ui-turn.ts';
import { respondTurn } from './connexity.ts';
import { processTurn, type ProcessDeps } from './process.ts';

export function protocolHandlers(deps: ProcessDeps & AgUiDeps & { engine: RunEngine; teamRunner: TeamRunner; models: ModelGateway }) {
  return {
    async processAgentRequest({ auth, body, params, signal }) {
      return processTurn(deps, { caller: callerOf(auth), body, signal }, { agentId: params.agentId, teamId: null }, agentTurn(deps.engine, params.agentId));
    },

    async respondWithAgent({ auth, body, params, signal }) {
      return { status: 200, body: await respondTurn(deps, { caller: callerOf(auth), body, signal }, agentTurn(deps.engine, params.agentId)) };
    },

    async processTeamRequest({ auth, body, params, signal }) {
      return processTurn(deps, { caller: callerOf(auth), body, signal }, { agentId: null, teamId: params.teamId }, teamTurn(deps.teamRunner, params.teamId));
    },

    async respondWithTeam({ auth, body, params, signal }) {
      return { status: 200, body: await respondTurn(deps, { caller: callerOf(auth), body, signal }, teamTurn(deps.teamRunner, params.teamId)) };
    },

    async runAgentWithAgUi({ auth, body, params, signal }) {
      return agUiTurn(deps, { caller: callerOf(auth), body, signal }, { agentId: params.agentId, teamId: null }, agentTurn(deps.engine, params.agentId));
    },

    async runTeamWithAgUi({ auth, body, params, signal }) {
      return agUiTurn(deps, { caller: callerOf(auth), body, signal }, { agentId: null, teamId: params.teamId }, teamTurn(deps.teamRunner, params.teamId));
    },
  } satisfies Partial<AppHandlers>;
}
