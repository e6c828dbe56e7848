// Agents and teams as OpenAI models: `agent:<agentId>` and `team:<teamId>` in /v1/models, and
// /v1/chat/completions with one of them runs a turn. OpenAI clients send the whole transcript every time,
// so each call is a stateless turn; a client-side tool call comes back as OpenAI's `tool_calls`.
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/openapi.gen.ts';
import type { AgentStore } from '../agents/agents.ts';
import { failure } from '../agents/handlers.ts';
import type { Principal } from '../http/auth.ts';
import { ApiError } from '../errors.ts';
import type { VirtualModels } from '../models/handlers.ts';
import { textOf, type ChatCompletion, type ChatCompletionChunk, type ChatCompletionRequest, type ToolCall } from '../models/types.ts';
import type { RunEngine, RunHandle } from '../runs/engine.ts';
import type { ModelSettings } from '../runs/loop.ts';
import type { TeamRunner } from '../teams/runner.ts';
import type { TeamStore } from '../teams/teams.ts';

type Model = components['schemas']['Model'];

export interface OpenAIModelDeps {
  agents: AgentStore;
  teams: TeamStore;
  engine: RunEngine;
  teamRunner: TeamRunner;
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

  const start = async (principal: Principal, request: ChatCompletionRequest, signal: AbortSignal): Promise<RunHandle> => {
    const target = split(request.model);
    if (!target) throw new ApiError('not_found', `The model ${request.model} does not exist.`);
    await deps.checkRunQuota(principal.userId);
    const common = {
      userId: principal.userId,
      apiKeyId: principal.credential.kind === 'api_key' ? principal.credential.id : null,
      conversation: { messages: request.messages, stateless: true },
      tools: request.tools,
      modelSettings: settingsOf(request),
      metadata: { protocol: 'openai' },
    };
    const handle =
      target.kind === 'agent'
        ? await deps.engine.startAgentTurn({ ...common, agentId: target.id }, { resumable: false })
        : await deps.teamRunner.startTeamTurn({ ...common, teamId: target.id }, { resumable: false });
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

    async chat(principal, request, { signal }): Promise<ChatCompletion> {
      const handle = await start(principal, request, signal);
      const result = await handle.result;
      if (result.status === 'failed') throw failure(result);
      const calls = result.requiredAction?.tool_calls ?? [];
      const content = result.message && calls.length === 0 ? textOf(result.message.content) : (result.message?.content ?? null);
      return {
        id: `chatcmpl-${result.run.id}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: request.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: typeof content === 'string' ? content : null, refusal: null, ...(calls.length ? { tool_calls: calls } : {}) },
            finish_reason: calls.length ? 'tool_calls' : result.finishReason === 'length' ? 'length' : result.finishReason === 'content_filter' ? 'content_filter' : 'stop',
            logprobs: null,
          },
        ],
        usage: result.usage,
      };
    },

    async *chatStream(principal, request, { signal }): AsyncGenerator<ChatCompletionChunk, unknown> {
      const handle = await start(principal, request, signal);
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
      const team = request.model.startsWith('team:');
      yield chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
      for await (const event of handle.events) {
        // An agent's text streams as it comes; a team's answer may be any member's, so it comes whole.
        if (event.type === 'RunResponse' && event.delta && !team) {
          yield chunk([{ index: 0, delta: { content: event.delta }, finish_reason: null }]);
        } else if (event.type === 'ToolRequest') {
          yield chunk([{ index: 0, delta: { tool_calls: toolCallDeltas(event.tool_calls) }, finish_reason: 'tool_calls' }]);
          yield chunk([], event.usage);
        } else if (event.type === 'RunCompleted') {
          if (team && event.message) yield chunk([{ index: 0, delta: { content: textOf(event.message.content) }, finish_reason: null }]);
          yield chunk([{ index: 0, delta: {}, finish_reason: event.finish_reason === 'length' ? 'length' : 'stop' }]);
          yield chunk([], event.usage);
        } else if (event.type === 'RunError') {
          throw new ApiError(event.error.code, event.error.message);
        }
      }
      return undefined;
    },
  };
}
