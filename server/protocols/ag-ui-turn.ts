// An AG-UI run is a turn of the agent or team, projected onto AG-UI events.
import type { Caller } from '../runs/tools.ts';
import type { StartTurn } from '../runs/turns.ts';
import type { SessionStore, SessionTarget } from '../sessions/store.ts';
import * as agui from './ag-ui.ts';
import type { AudioResolver } from './agentscope.ts';
import { namedConversation } from './threads.ts';

export interface AgUiDeps {
  chatSessions: SessionStore;
  audio: AudioResolver;
}

/**
 * Streams one AG-UI run. The thread is the conversation: the client's whole history comes each time and
 * what the session holds is skipped, so tool results for a run that waits continue it. An AG-UI client
 * cannot resume a stream, so its going away (`signal`) cancels the run.
 */
export async function agUiTurn(
  deps: AgUiDeps,
  request: { caller: Caller; body: agui.AgUiInput; signal: AbortSignal },
  target: SessionTarget,
  start: StartTurn,
): Promise<{ status: 200; stream: AsyncIterable<{ data: agui.AgUiEvent }> }> {
  const { caller, body } = request;
  // Interrupts are tool approvals: a resume answers them, and the run checks each answer against what it waits for.
  const approvals = body.resume?.length ? agui.toApprovals(body.resume) : undefined;
  const conversation = await namedConversation(deps.chatSessions, caller.userId, target, body.threadId, await agui.toChatMessages(body.messages, deps.audio));
  const handle = await start(
    { ...caller, conversation, tools: agui.toFunctionTools(body.tools), instructions: agui.turnInstructions(body), metadata: { protocol: 'ag-ui' }, ...(approvals ? { approvals } : {}) },
    { resumable: false },
  );
  request.signal.addEventListener('abort', () => handle.cancel(), { once: true });
  const projection = new agui.AgUiProjection(body);
  return {
    status: 200,
    stream: (async function* () {
      for await (const event of handle.events) for (const data of projection.project(event)) yield { data };
    })(),
  };
}
