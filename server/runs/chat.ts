// POST /v1/agents/{agentId}/chat and POST /v1/teams/{teamId}/chat: a turn over the request's messages,
// answered as a stream of its run events or, blocking, as the fold of those same events.
import type { components } from '../../generated/openapi.gen.ts';
import type { SseFrame } from '../../generated/server.gen.ts';
import { toFrame, type RunEvent } from './events.ts';
import { ApiError } from '../errors.ts';
import { requestMcpServer } from '../mcp/config.ts';
import type { Caller } from './tools.ts';
import { collectTurn, succeeded, type StartTurn } from './turns.ts';

type ChatRequest = components['schemas']['ChatRequest'];
type ChatTurn = components['schemas']['ChatTurn'];

export type ChatAnswer = { status: 200; stream: AsyncIterable<SseFrame<RunEvent>> } | { status: 200; body: ChatTurn };

/**
 * A streaming client can resume from GET /v1/runs/{runId}/events, so its going away leaves the run
 * running; a blocking client cannot, so the run is cancelled when it goes away (`signal`).
 */
export async function chatTurn(caller: Caller, body: ChatRequest, options: { stream: boolean; signal: AbortSignal }, start: StartTurn): Promise<ChatAnswer> {
  // The contract lets `messages` be empty only for a turn that answers approvals.
  if (body.messages.length === 0 && !body.approvals?.length) {
    throw new ApiError('invalid_request', 'A turn needs at least one message, unless it answers approvals.', {
      details: [{ field: 'messages', message: 'must not be empty' }],
    });
  }
  const handle = await start(
    {
      ...caller,
      conversation: { sessionId: body.session_id, messages: body.messages },
      tools: body.tools,
      modelSettings: body.model_settings,
      metadata: body.metadata,
      mcpServers: body.mcp_servers?.map(requestMcpServer),
      approvals: body.approvals,
    },
    { resumable: options.stream },
  );
  if (options.stream) {
    return {
      status: 200,
      stream: (async function* () {
        for await (const event of handle.events) yield toFrame(event);
      })(),
    };
  }
  return { status: 200, body: succeeded(await collectTurn(handle, options.signal)) };
}
