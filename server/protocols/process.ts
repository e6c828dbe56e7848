// A `/process` call (AgentScope) is a turn of the agent or team, projected onto the protocol's objects.
import { randomUUID } from 'node:crypto';
import { ApiError } from '../errors.ts';
import type { Caller } from '../runs/tools.ts';
import type { StartTurn } from '../runs/turns.ts';
import type { SessionStore, SessionTarget } from '../sessions/store.ts';
import * as agentscope from './agentscope.ts';
import { namedConversation } from './threads.ts';

export interface ProcessDeps {
  chatSessions: SessionStore;
  audio: agentscope.AudioResolver;
  clock: () => number;
}

export type ProcessAnswer =
  | { status: 200; stream: AsyncIterable<{ data: agentscope.AgentScopeObject }> }
  | { status: 200; body: agentscope.AgentScopeResponse };

/**
 * Runs an AgentScope request: a stream of protocol objects, or the final response as JSON. The client
 * cannot resume, so its going away (`signal`) cancels the run.
 */
export async function processTurn(
  deps: ProcessDeps,
  request: { caller: Caller; body: agentscope.AgentScopeRequest; signal: AbortSignal },
  target: SessionTarget,
  start: StartTurn,
): Promise<ProcessAnswer> {
  const { caller, body } = request;
  if (body.n != null && body.n > 1) {
    throw new ApiError('invalid_request', 'One answer per request: n above 1 is not supported.', { details: [{ field: 'n', message: 'must be 1' }] });
  }
  // An empty session_id names no session, as an absent one does; stored, it would clash with the next.
  const sessionName = body.session_id || undefined;
  // The reference client echoes earlier output back; a stored session already holds it.
  const conversation = await namedConversation(deps.chatSessions, caller.userId, target, sessionName, await agentscope.toChatMessages(body.input, deps.audio));
  const approvals = agentscope.toApprovals(body.input);
  const handle = await start(
    {
      ...caller,
      conversation,
      tools: agentscope.toFunctionTools(body.tools),
      modelSettings: agentscope.toModelSettings(body),
      ...(approvals.length ? { approvals } : {}),
    },
    { resumable: false },
  );
  request.signal.addEventListener('abort', () => handle.cancel(), { once: true });
  const projection = new agentscope.AgentScopeProjection(
    body.id ?? `response_${randomUUID().replaceAll('-', '')}`,
    sessionName ?? handle.sessionId,
    Math.floor(deps.clock() / 1000),
  );
  const objects = async function* () {
    yield* projection.start();
    for await (const event of handle.events) yield* projection.project(event);
  };
  if (body.stream !== false) {
    return {
      status: 200,
      stream: (async function* () {
        for await (const data of objects()) yield { data };
      })(),
    };
  }
  for await (const _ of objects()) {
    // The final response object holds everything; the objects before it are the stream's.
  }
  return { status: 200, body: projection.response };
}
