// Agents and teams as OpenAI models: `agent:<agentId>` and `team:<teamId>` in /v1/models, and
// /v1/chat/completions with one of them runs a turn, projected onto OpenAI's completion (the fold of the
// turn's events) or its chunks (the events as they come). OpenAI clients send the whole transcript every
// time, so each call is a stateless turn; a client-side tool call comes back as OpenAI's `tool_calls`.
// A server-side call that waits for approval comes back among them too, its id under `approval_`: the
// client answers it with a tool message whose content is `{"approve": true}` or `{"approve": false,
// "reason": "…"}`, and the next turn runs (or refuses) the call on the server first. The answer is a
// decision, never the tool's result: the model reads what the tool itself returned, or the denial.
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/openapi.gen.ts';
import type { AgentStore } from '../agents/agents.ts';
import { ApiError } from '../errors.ts';
import { field } from '../errors.ts';
import { textOf, type ChatCompletion, type ChatCompletionChunk, type ChatCompletionRequest, type ChatMessage, type ToolCall } from '../models/types.ts';
import { unknownModel, type ModelCaller, type VirtualModels } from '../models/virtual.ts';
import type { RunEngine, RunHandle, TeamTurnInput, TurnOptions } from '../runs/engine.ts';
import type { ApprovalAnswer, ModelSettings } from '../runs/loop.ts';
import { checkTurnTarget, collectTurn, succeeded } from '../runs/turns.ts';
import type { TeamStore } from '../teams/teams.ts';

type Model = components['schemas']['Model'];

export interface OpenAIModelDeps {
  agents: AgentStore;
  teams: TeamStore;
  engine: Pick<RunEngine, 'startAgentTurn'>;
  teamRunner: { startTeamTurn(input: TeamTurnInput, options: TurnOptions): Promise<RunHandle> };
  /** Runs per day are a quota of agent and team turns; the guard cannot see the model before the body. */
  checkRunQuota(userId: string): Promise<void>;
}

function settingsOf(request: ChatCompletionRequest): ModelSettings {
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  const stop = request.stop === null || request.stop === undefined ? undefined : Array.isArray(request.stop) ? request.stop : [request.stop];
  return {
    ...(request.temperature != null ? { temperature: request.temperature } : {}),
    ...(request.top_p != null ? { top_p: request.top_p } : {}),
    ...(maxTokens != null ? { max_tokens: maxTokens } : {}),
    ...(request.seed != null ? { seed: request.seed } : {}),
    ...(request.presence_penalty != null ? { presence_penalty: request.presence_penalty } : {}),
    ...(request.frequency_penalty != null ? { frequency_penalty: request.frequency_penalty } : {}),
    ...(request.parallel_tool_calls != null ? { parallel_tool_calls: request.parallel_tool_calls } : {}),
    ...(request.tool_choice ? { tool_choice: request.tool_choice } : {}),
    ...(request.response_format ? { response_format: request.response_format } : {}),
    ...(stop?.length ? { stop } : {}),
  };
}

function toolCallDeltas(calls: ToolCall[]) {
  return calls.map((call, index) => ({ index, id: call.id, type: 'function' as const, function: { name: call.function.name, arguments: call.function.arguments } }));
}

type FinishReason = ChatCompletion['choices'][number]['finish_reason'];

/** The id prefix of a call that waits for approval, as the client sees it. */
export const APPROVAL_CALL_PREFIX = 'approval_';

/** The calls a turn halted for, those waiting for approval under the approval prefix. */
function presentedCalls(calls: ToolCall[], approvals: readonly { tool_call_id: string }[] | undefined): ToolCall[] {
  const asking = new Set((approvals ?? []).map((approval) => approval.tool_call_id));
  return calls.map((call) => (asking.has(call.id) ? { ...call, id: `${APPROVAL_CALL_PREFIX}${call.id}` } : call));
}

const unprefixed = (id: string) => (id.startsWith(APPROVAL_CALL_PREFIX) ? id.slice(APPROVAL_CALL_PREFIX.length) : id);

/** An approval answer's content as a decision, or undefined when it is not one. */
function decisionOf(content: unknown): Omit<ApprovalAnswer, 'tool_call_id'> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(textOf(content));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || typeof (value as { approve?: unknown }).approve !== 'boolean') return undefined;
  const { approve, reason } = value as { approve: boolean; reason?: unknown };
  if (reason !== undefined && typeof reason !== 'string') return undefined;
  return { decision: approve ? 'approve' : 'deny', ...(reason ? { reason } : {}) };
}

/**
 * A transcript's approval answers. Those after the last assistant message are this turn's: their calls
 * run (or are refused) first, and their tool messages leave the transcript, as the model is to read the
 * tool's own result. Earlier ones were carried out by an earlier turn, whose result the client never
 * held: the model reads what was decided. Ids lose the approval prefix either way.
 */
export function approvalAnswers(messages: ChatMessage[]): { messages: ChatMessage[]; answeredCalls?: { calls: ToolCall[]; answers: ApprovalAnswer[] } } {
  const lastAssistant = messages.findLastIndex((message) => message.role === 'assistant');
  const calls = new Map<string, ToolCall>();
  const answered: ToolCall[] = [];
  const answers: ApprovalAnswer[] = [];
  const kept: ChatMessage[] = [];
  messages.forEach((message, index) => {
    if (message.role === 'assistant' && message.tool_calls?.length) {
      const toolCalls = message.tool_calls.map((call) => ({ ...call, id: unprefixed(call.id) }));
      for (const call of toolCalls) calls.set(call.id, call);
      kept.push({ ...message, tool_calls: toolCalls });
      return;
    }
    if (message.role !== 'tool' || !message.tool_call_id.startsWith(APPROVAL_CALL_PREFIX)) {
      kept.push(message);
      return;
    }
    const id = unprefixed(message.tool_call_id);
    const decision = decisionOf(message.content);
    if (!decision) {
      throw new ApiError('invalid_request', `The call ${message.tool_call_id} waits for approval: answer it with {"approve": true} or {"approve": false, "reason": "…"}.`, {
        details: [{ field: field('messages', index, 'content'), message: 'not an approval decision' }],
      });
    }
    const call = calls.get(id);
    if (index > lastAssistant && call) {
      answered.push(call);
      answers.push({ tool_call_id: id, ...decision });
      return;
    }
    const said = decision.decision === 'approve' ? 'Approved: the tool ran on the server.' : `Denied${decision.reason ? `: ${decision.reason}` : '.'}`;
    kept.push({ ...message, tool_call_id: id, content: said });
  });
  return answered.length > 0 ? { messages: kept, answeredCalls: { calls: answered, answers } } : { messages: kept };
}

function finishReasonOf(reason: string | null): FinishReason {
  return reason === 'length' ? 'length' : reason === 'content_filter' ? 'content_filter' : 'stop';
}

export function createOpenAIModels(deps: OpenAIModelDeps): VirtualModels {
  const split = (id: string): { kind: 'agent' | 'team'; id: string } | undefined => {
    const match = /^(agent|team):(.+)$/.exec(id);
    return match ? { kind: match[1] as 'agent' | 'team', id: match[2]! } : undefined;
  };

  const asModel = (kind: 'agent' | 'team', resource: { id: string; created_at: string }): Model => ({
    id: `${kind}:${resource.id}`,
    object: 'model',
    created: Math.floor(Date.parse(resource.created_at) / 1000),
    owned_by: kind,
    capabilities: ['chat'],
  });

  const find = async (userId: string, id: string): Promise<Model | undefined> => {
    const target = split(id);
    if (!target) return undefined;
    try {
      return target.kind === 'agent'
        ? asModel('agent', await deps.agents.get(userId, target.id))
        : asModel('team', await deps.teams.get(userId, target.id));
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return undefined;
      throw error;
    }
  };

  const start = async (caller: ModelCaller, request: ChatCompletionRequest, signal: AbortSignal): Promise<RunHandle> => {
    const target = split(request.model);
    if (!target) throw unknownModel(request.model);
    // A run is one answer; silently answering one of several asked for would be a lie.
    if (request.n != null && request.n > 1) {
      throw new ApiError('invalid_request', 'Agents and teams give one answer per request: n above 1 is not supported for them.', {
        details: [{ field: 'n', message: 'must be 1 for agent: and team: models' }],
      });
    }
    const owned = await checkTurnTarget(deps, caller.userId, target, () => unknownModel(request.model));
    const { messages, answeredCalls } = approvalAnswers(request.messages);
    const common = {
      ...caller,
      conversation: { messages, stateless: true },
      ...(answeredCalls ? { answeredCalls } : {}),
      tools: request.tools,
      modelSettings: settingsOf(request),
      metadata: { protocol: 'openai' },
    };
    const handle =
      target.kind === 'agent'
        ? await deps.engine.startAgentTurn({ ...common, agentId: target.id, agent: owned.agent }, { resumable: false })
        : await deps.teamRunner.startTeamTurn({ ...common, teamId: target.id, team: owned.team }, { resumable: false });
    // An OpenAI client cannot resume: when it goes away, the run stops.
    signal.addEventListener('abort', () => handle.cancel(), { once: true });
    return handle;
  };

  return {
    async list(userId) {
      const [agents, teams] = await Promise.all([deps.agents.all(userId), deps.teams.all(userId)]);
      return [...agents.map((agent) => asModel('agent', agent)), ...teams.map((team) => asModel('team', team))];
    },

    get: find,

    async chat(caller, request, { signal }): Promise<ChatCompletion> {
      const handle = await start(caller, request, signal);
      const turn = succeeded(await collectTurn(handle, signal));
      const calls = presentedCalls(turn.required_action?.tool_calls ?? [], turn.required_action?.approvals);
      const content = turn.message ? textOf(turn.message.content) : null;
      return {
        id: `chatcmpl-${turn.run_id}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: request.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: content || (calls.length ? null : ''), refusal: null, ...(calls.length ? { tool_calls: calls } : {}) },
            finish_reason: calls.length ? 'tool_calls' : finishReasonOf(turn.finish_reason),
            logprobs: null,
          },
        ],
        usage: turn.usage,
      };
    },

    /**
     * The turn's own output as it is stored: its text deltas (a message said without deltas, such as a
     * team's adoption of a member's answer, whole), then, as OpenAI sends them, the tool calls, the finish
     * reason in a last chunk of its own with an empty delta, and the usage.
     */
    async *chatStream(caller, request, { signal }): AsyncGenerator<ChatCompletionChunk, unknown> {
      const handle = await start(caller, request, signal);
      const id = `chatcmpl-${handle.run.id}-${randomUUID().slice(0, 8)}`;
      const created = Math.floor(Date.now() / 1000);
      const chunk = (choices: ChatCompletionChunk['choices'], usage: ChatCompletionChunk['usage'] = null): ChatCompletionChunk => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model: request.model,
        choices,
        usage,
      });
      const streamed = new Set<string>();
      yield chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
      for await (const event of handle.events) {
        if (event.type === 'RunResponse' && event.member_run_id === undefined) {
          if (event.delta) {
            streamed.add(event.message_id);
            yield chunk([{ index: 0, delta: { content: event.delta }, finish_reason: null }]);
          } else if (event.message && !streamed.has(event.message_id)) {
            const text = textOf(event.message.content);
            if (text) yield chunk([{ index: 0, delta: { content: text }, finish_reason: null }]);
          }
        } else if (event.type === 'ToolRequest') {
          yield chunk([{ index: 0, delta: { tool_calls: toolCallDeltas(presentedCalls(event.tool_calls, event.approvals)) }, finish_reason: null }]);
          yield chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]);
          yield chunk([], event.usage);
        } else if (event.type === 'RunCompleted') {
          yield chunk([{ index: 0, delta: {}, finish_reason: finishReasonOf(event.finish_reason) }]);
          yield chunk([], event.usage);
        } else if (event.type === 'RunError') {
          throw new ApiError(event.error.code, event.error.message);
        }
      }
      return undefined;
    },
  };
}
