// A turn as the surfaces use it: start one for the agent or team a request names, and answer it blocking
// as the fold of its events (the same fold the typed client applies to a stream).
import { foldTurnStream, type FoldedTurn } from '../../client/turn.ts';
import type { Agent } from '../agents/agents.ts';
import { ApiError } from '../errors.ts';
import type { Team } from '../teams/teams.ts';
import type { RunEvent } from './events.ts';
import type { AgentTurnInput, RunEngine, RunHandle, TeamTurnInput, TurnInput, TurnOptions } from './engine.ts';

export type { FoldedTurn } from '../../client/turn.ts';

/** Starts a turn of the agent or team a route names. */
export type StartTurn = (input: TurnInput, options: TurnOptions) => Promise<RunHandle>;

/** `agent`, where the caller has just read it, is the one the turn runs with. */
export function agentTurn(engine: Pick<RunEngine, 'startAgentTurn'>, agentId: string, agent?: Agent): StartTurn {
  return (input, options) => engine.startAgentTurn({ ...input, agentId, agent } satisfies AgentTurnInput, options);
}

/** `team`, where the caller has just read it, is the one the turn runs with. */
export function teamTurn(runner: { startTeamTurn(input: TeamTurnInput, options: TurnOptions): Promise<RunHandle> }, teamId: string, team?: Team): StartTurn {
  return (input, options) => runner.startTeamTurn({ ...input, teamId, team }, options);
}

/** The agent or team a surface has just read as the caller, for its turn to run with instead of reading it again. */
export interface OwnedTarget {
  agent?: Agent;
  team?: Team;
}

/** What a surface that names its agent or team in the request checks before a turn. */
export interface TurnTargetDeps {
  agents: { get(userId: string, agentId: string): Promise<Agent> };
  teams: { get(userId: string, teamId: string): Promise<Team> };
  checkRunQuota(userId: string): Promise<void>;
}

/**
 * Checks that the caller owns the agent or team and may run it today. Both are read side by side; a
 * target the caller does not own fails first, as `missing()` (another user's looks like none at all),
 * then the quota. Answers what it read, which the turn runs with (`AgentTurnInput.agent`, `TeamTurnInput.team`).
 */
export async function checkTurnTarget(deps: TurnTargetDeps, userId: string, target: { kind: 'agent' | 'team'; id: string }, missing: () => ApiError): Promise<OwnedTarget> {
  const [owned, quota] = await Promise.allSettled([
    target.kind === 'agent' ? deps.agents.get(userId, target.id).then((agent) => ({ agent })) : deps.teams.get(userId, target.id).then((team) => ({ team })),
    deps.checkRunQuota(userId),
  ]);
  if (owned.status === 'rejected') throw owned.reason instanceof ApiError && owned.reason.code === 'not_found' ? missing() : owned.reason;
  if (quota.status === 'rejected') throw quota.reason;
  return owned.value;
}

/** The turn, blocking: the fold of its events. A client that goes away (`signal`) cancels the run. */
export async function collectTurn(handle: RunHandle, signal?: AbortSignal, onEvent?: (event: RunEvent) => void): Promise<FoldedTurn> {
  const onAbort = () => handle.cancel();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await foldTurnStream(handle.events, onEvent);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/** A failed turn answers the error envelope, naming the run so that its events can be inspected. */
export function turnFailure(folded: FoldedTurn): ApiError {
  const error = folded.error ?? { code: 'internal_error' as const, message: 'The run ended without a final event.' };
  return new ApiError(error.code, error.message, { details: [{ message: `Run ${folded.turn.run_id} failed.`, run_id: folded.turn.run_id }] });
}

/** The folded turn when it succeeded (completed, cancelled or waiting for tools); its error otherwise. */
export function succeeded(folded: FoldedTurn): FoldedTurn['turn'] {
  if (folded.error || !folded.ended) throw turnFailure(folded);
  return folded.turn;
}
