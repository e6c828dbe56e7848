// The AgentScope (`/process`) and Connexity (`/respond`) adapters, for agents (and teams, which start
// their turns the same way).
import { randomUUID } from 'node:crypto';
import { agentTurn, apiKeyOf, failure, type StartTurn } from '../agents/handlers.ts';
import type { Principal } from '../http/auth.ts';
import type { AppHandlers, RequestContext } from '../http/operations.ts';
import type { ModelGateway } from '../models/gateway.ts';
import type { Conversation, RunEngine, RunHandle } from '../runs/engine.ts';
import type { SessionStore, SessionTarget } from '../sessions/store.ts';
import * as agentscope from './agentscope.ts';
import * as connexity from './connexity.ts';

export interface ProtocolDeps {
  engine: RunEngine;
  chatSessions: SessionStore;
  models: ModelGateway;
  clock: () => number;
}

/** Clients of these protocols cannot resume a stream: when they go away, the run is cancelled. */
function cancelOnDisconnect(handle: RunHandle, request: RequestContext): void {
  request.signal.addEventListener('abort', () => handle.cancel(), { once: true });
}

/** Runs an AgentScope request: a stream of protocol objects, or the final response as JSON. */
export async function processAgentScope(
  deps: ProtocolDeps,
  request: { auth: Principal; body: agentscope.AgentScopeRequest } & RequestContext,
  target: SessionTarget,
  start: StartTurn,
) {
  const { auth, body } = request;
  const userId = auth.userId;
  // An empty session_id names no session, as an absent one does; stored, it would clash with the next.
  const sessionName = body.session_id || undefined;
  const named = sessionName ? await deps.chatSessions.findNamed(userId, target, sessionName) : undefined;
  let messages = agentscope.toChatMessages(body.input);
  // The reference client echoes earlier output back; a stored session already holds it.
  if (named) messages = agentscope.newMessages(messages, await deps.chatSessions.messages(named.id));
  const conversation: Conversation = named ? { sessionId: named.id, messages } : { externalId: sessionName, messages };
  const handle = await start(
    { userId, apiKeyId: apiKeyOf(auth), conversation, tools: agentscope.toFunctionTools(body.tools), modelSettings: agentscope.toModelSettings(body) },
    { resumable: false },
  );
  cancelOnDisconnect(handle, request);
  const translator = new agentscope.AgentScopeTranslator(
    body.id ?? `response_${randomUUID().replaceAll('-', '')}`,
    sessionName ?? handle.sessionId,
    Math.floor(deps.clock() / 1000),
  );
  const objects = async function* () {
    yield* translator.start();
    for await (const event of handle.events) yield* translator.translate(event);
  };
  if (body.stream !== false) {
    return {
      status: 200 as const,
      stream: (async function* () {
        for await (const data of objects()) yield { data };
      })(),
    };
  }
  for await (const _ of objects()) {
    // The final response object accumulates everything; the intermediate objects are not needed here.
  }
  return { status: 200 as const, body: translator.response };
}

/** Runs a Connexity turn over the whole transcript, with server-side tools only. */
export async function respondConnexity(
  deps: ProtocolDeps,
  request: { auth: Principal; body: connexity.ConnexityRequest } & RequestContext,
  start: StartTurn,
) {
  const { auth, body } = request;
  const metadata: Record<string, string> = { protocol: 'connexity' };
  if (body.metadata?.test_case_id) metadata.test_case_id = body.metadata.test_case_id;
  if (body.metadata?.turn_index !== undefined && body.metadata.turn_index !== null) metadata.turn_index = String(body.metadata.turn_index);
  const handle = await start(
    { userId: auth.userId, apiKeyId: apiKeyOf(auth), conversation: { messages: connexity.toChatMessages(body.messages), stateless: true }, clientTools: false, metadata },
    { resumable: false },
  );
  cancelOnDisconnect(handle, request);
  const result = await handle.result;
  if (result.status === 'failed') throw failure(result);
  return {
    status: 200 as const,
    body: {
      messages: connexity.endWithAssistant(connexity.toConnexityMessages(result.messages)),
      model: result.run.model,
      provider: deps.models.get(result.run.model)?.provider ?? null,
      usage: connexity.toConnexityUsage(result.usage),
      metadata: {
        run_id: result.run.id,
        session_id: result.run.session_id,
        ...(body.metadata?.test_case_id ? { test_case_id: body.metadata.test_case_id } : {}),
        ...(body.metadata?.turn_index !== undefined && body.metadata.turn_index !== null ? { turn_index: body.metadata.turn_index } : {}),
      },
    },
  };
}

export function agentProtocolHandlers(deps: ProtocolDeps) {
  return {
    async processAgentRequest(request) {
      return processAgentScope(deps, request, { agentId: request.params.agentId, teamId: null }, agentTurn(deps.engine, request.params.agentId));
    },

    async respondWithAgent(request) {
      return respondConnexity(deps, request, agentTurn(deps.engine, request.params.agentId));
    },
  } satisfies Partial<AppHandlers>;
}
