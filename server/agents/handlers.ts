import type { components } from '../../generated/openapi.gen.ts';
import { ApiError } from '../errors.ts';
import type { AppHandlers, RequestContext } from '../http/operations.ts';
import type { Principal } from '../http/auth.ts';
import type { AgentTurnInput, RunEngine, RunHandle, TurnResult } from '../runs/engine.ts';
import { toFrame } from '../runs/events.ts';
import type { AgentStore } from './agents.ts';

export type ChatTurn = components['schemas']['ChatTurn'];

/** A turn's input as the request that starts it gives it, whichever agent or team the route names. */
export type TurnRequest = Omit<AgentTurnInput, 'agentId'>;

/** Starts a turn of the agent or team a route names. */
export type StartTurn = (input: TurnRequest, options: { resumable: boolean }) => Promise<RunHandle>;

export function agentTurn(engine: RunEngine, agentId: string): StartTurn {
  return (input, options) => engine.startAgentTurn({ ...input, agentId }, options);
}

export function toChatTurn(result: TurnResult): ChatTurn {
  return {
    object: 'chat.turn',
    run_id: result.run.id,
    session_id: result.run.session_id,
    agent_id: result.run.agent_id,
    team_id: result.run.team_id,
    status: result.status,
    messages: result.messages,
    message: result.message,
    finish_reason: result.finishReason,
    required_action: result.requiredAction,
    usage: result.usage,
    ...(result.usageBreakdown ? { usage_breakdown: result.usageBreakdown } : {}),
    ...(result.sources.length ? { sources: result.sources } : {}),
  };
}

export function apiKeyOf(auth: Principal): string | null {
  return auth.credential.kind === 'api_key' ? auth.credential.id : null;
}

/** A failed turn answers the error envelope, naming the run so that its events can be inspected. */
export function failure(result: TurnResult): ApiError {
  const error = result.error ?? { code: 'internal_error' as const, message: 'The run failed.' };
  return new ApiError(error.code, error.message, { details: [{ message: `Run ${result.run.id} failed.`, run_id: result.run.id }] });
}

/**
 * Answers a started turn as a stream of run events or, blocking, as the whole turn. A streaming client
 * can resume from GET /v1/runs/{runId}/events, so its going away leaves the run running; a blocking
 * client cannot, so the run is cancelled when it goes away.
 */
export async function answerTurn(handle: RunHandle, stream: boolean, request: RequestContext) {
  if (stream) {
    return {
      status: 200 as const,
      stream: (async function* () {
        for await (const event of handle.events) yield toFrame(event);
      })(),
    };
  }
  const onAbort = () => handle.cancel();
  request.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await handle.result;
    if (result.status === 'failed') throw failure(result);
    return { status: 200 as const, body: toChatTurn(result) };
  } finally {
    request.signal.removeEventListener('abort', onAbort);
  }
}

/** POST /v1/agents/{agentId}/chat and POST /v1/teams/{teamId}/chat: a turn over the request's messages. */
export async function chat(request: { auth: Principal; body: components['schemas']['ChatRequest'] } & RequestContext, start: StartTurn) {
  const { auth, body } = request;
  const stream = body.stream === true || request.acceptsEventStream;
  const handle = await start(
    {
      userId: auth.userId,
      apiKeyId: apiKeyOf(auth),
      conversation: { sessionId: body.session_id, messages: body.messages },
      tools: body.tools,
      modelSettings: body.model_settings,
      metadata: body.metadata,
    },
    { resumable: stream },
  );
  return answerTurn(handle, stream, request);
}

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

    async chatWithAgent(request) {
      return chat(request, agentTurn(deps.engine, request.params.agentId));
    },
  } satisfies Partial<AppHandlers>;
}
