// A turn is a fold over its run events. The server answers every blocking request with this fold over the
// very events a stream of the same turn carries, and the client folds a stream with it, so the three
// views of a turn (JSON, stream, client) cannot disagree. Pure: no I/O, no clock.
import type { components } from '../generated/openapi.gen.ts';

type Schemas = components['schemas'];
type RunEvent = Schemas['RunEvent'];
export type ChatTurn = Schemas['ChatTurn'];
export type RunErrorInfo = Schemas['RunErrorInfo'];

export interface FoldedTurn {
  turn: ChatTurn;
  /** Set when the run failed: the turn is then what it produced before. */
  error: RunErrorInfo | null;
  /** Whether a terminal event was folded: a turn without one is still going (or was cut off). */
  ended: boolean;
}

/**
 * Which events make a turn's messages: the run's own output (assistant messages and the results of the
 * tools it ran). A team run also relays its members' work, marked with `member_run_id`; that work is
 * shown (attributed by `from`) but is the member's conversation, not the team's, so it is left out.
 */
function ownOutput(event: RunEvent): boolean {
  return !('member_run_id' in event) || event.member_run_id === undefined;
}

export class TurnFolder {
  #turn: ChatTurn = {
    object: 'chat.turn',
    run_id: '',
    session_id: '',
    agent_id: null,
    team_id: null,
    status: 'in_progress',
    messages: [],
    message: null,
    finish_reason: null,
    required_action: null,
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
  #error: RunErrorInfo | null = null;
  #ended = false;
  #started = false;

  add(event: RunEvent): void {
    const turn = this.#turn;
    switch (event.type) {
      case 'RunStarted':
        if (this.#started) return;
        this.#started = true;
        Object.assign(turn, { run_id: event.run_id, session_id: event.session_id, agent_id: event.agent_id, team_id: event.team_id });
        return;
      case 'RunResponse':
        if (event.message && ownOutput(event)) turn.messages.push(event.message);
        return;
      case 'ToolCallCompleted':
        if (ownOutput(event)) turn.messages.push({ role: 'tool', tool_call_id: event.tool_call_id, content: event.output });
        return;
      case 'ToolRequest':
        this.#end({
          status: 'requires_action',
          finish_reason: 'tool_calls',
          required_action: {
            type: 'submit_tool_outputs',
            tool_calls: event.tool_calls,
            ...(event.approvals?.length ? { approvals: event.approvals } : {}),
            ...(event.from ? { from: event.from } : {}),
          },
          usage: event.usage,
          message: this.#lastAssistant(),
          ...(event.usage_breakdown ? { usage_breakdown: event.usage_breakdown } : {}),
          ...(event.sources?.length ? { sources: event.sources } : {}),
        });
        return;
      case 'RunCompleted':
        this.#end({
          status: event.status,
          finish_reason: event.finish_reason,
          usage: event.usage,
          message: event.status === 'canceled' ? null : this.#lastAssistant(),
          ...(event.usage_breakdown ? { usage_breakdown: event.usage_breakdown } : {}),
          ...(event.sources?.length ? { sources: event.sources } : {}),
        });
        return;
      case 'RunError':
        this.#error = event.error;
        this.#end({ status: 'failed', finish_reason: null, message: this.#lastAssistant() });
        return;
      default:
        return;
    }
  }

  #lastAssistant(): ChatTurn['message'] {
    return (this.#turn.messages.findLast((message) => message.role === 'assistant') as ChatTurn['message'] | undefined) ?? null;
  }

  #end(fields: Partial<ChatTurn>): void {
    Object.assign(this.#turn, fields);
    this.#ended = true;
  }

  get result(): FoldedTurn {
    return { turn: this.#turn, error: this.#error, ended: this.#ended };
  }
}

export function foldTurn(events: Iterable<RunEvent>): FoldedTurn {
  const folder = new TurnFolder();
  for (const event of events) folder.add(event);
  return folder.result;
}

/** Folds an event stream as it arrives; resolves when the stream ends. */
export async function foldTurnStream(events: AsyncIterable<RunEvent>, onEvent?: (event: RunEvent) => void): Promise<FoldedTurn> {
  const folder = new TurnFolder();
  for await (const event of events) {
    onEvent?.(event);
    folder.add(event);
  }
  return folder.result;
}
