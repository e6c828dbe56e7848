// OpenAI's Responses API over the run core. A response is a run: of the agent or team its model names,
// or, for a catalog model, a run with no agent whose one step calls that model with the request's
// function tools as client-side tools. The transcript the run starts from is every item of the
// `previous_response_id` chain (or of the conversation), in order, function calls and their outputs
// included, then the new input. The run's events are projected onto the Responses stream as they come;
// the Response object is the same projection, so retrieving it on any server gives what was streamed.
import type { Logger } from 'pino';
import type { AgentStore } from '../agents/agents.ts';
import { ApiError } from '../errors.ts';
import type { ModelGateway } from '../models/gateway.ts';
import { unknownModel } from '../models/virtual.ts';
import type { RunEngine, RunHandle, TeamTurnInput, TurnInput, TurnOptions } from '../runs/engine.ts';
import type { RunEvent } from '../runs/events.ts';
import { runLoop } from '../runs/loop.ts';
import { checkTurnTarget, type OwnedTarget } from '../runs/turns.ts';
import { AsyncQueue } from '../runs/queue.ts';
import type { RunErrorInfo, RunStore } from '../runs/store.ts';
import type { Caller } from '../runs/tools.ts';
import type { TeamStore } from '../teams/teams.ts';
import type { Db } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import { answeredApprovals, clientTools, inputItems, modelSettings, referencedIds, toChatMessages, type CreateResponseRequest, type Item } from './items.ts';
import { project, ResponseProjector, type ResponseObject, type StreamEvent } from './projection.ts';
import { createConversationStore, createResponseStore, type EchoedRequest, type ResponseRow } from './store.ts';

/** How long a run of a catalog model may take; an agent's or team's run has its own limit. */
const MODEL_RUN_TIMEOUT_SECONDS = 600;
/** A chain longer than this is refused rather than replayed. */
const MAX_CHAIN = 1000;

export interface ResponsesDeps {
  db: Db;
  engine: Pick<RunEngine, 'startTurn' | 'startAgentTurn' | 'cancel' | 'follow'>;
  teamRunner: { startTeamTurn(input: TeamTurnInput, options: TurnOptions): Promise<RunHandle> };
  agents: Pick<AgentStore, 'get'>;
  teams: Pick<TeamStore, 'get'>;
  models: Pick<ModelGateway, 'list'>;
  runs: Pick<RunStore, 'get' | 'events'>;
  logger: Logger;
  /** Runs per day are a quota of agent and team turns, as on chat completions. */
  checkRunQuota(userId: string): Promise<void>;
}

/** A response being created: its first state, and its events as they come (when streamed). */
export interface StartedResponse {
  response: ResponseObject;
  events: AsyncIterable<StreamEvent> | undefined;
  /** Resolves with the finished response, and the run's own error when it failed. */
  done: Promise<{ response: ResponseObject; failure: RunErrorInfo | undefined }>;
}

type Target = { kind: 'agent' | 'team'; id: string } | { kind: 'model'; id: string };

function invalid(field: string, message: string): ApiError {
  return new ApiError('invalid_request', `${field}: ${message}`, { details: [{ field, message }] });
}

function targetOf(model: string): Target {
  const match = /^(agent|team):(.+)$/.exec(model);
  return match ? { kind: match[1] as 'agent' | 'team', id: match[2]! } : { kind: 'model', id: model };
}

/** What this server cannot honour is refused, naming the field; OpenAI's hints pass. */
function checkRequest(body: CreateResponseRequest): void {
  if (body.background && body.store === false) throw invalid('background', 'a background response must be stored (store: true)');
  if (body.include?.includes('message.output_text.logprobs')) throw invalid('include', 'message.output_text.logprobs is not available: these models give no log probabilities');
  if (body.previous_response_id && body.conversation) throw invalid('conversation', 'use either previous_response_id or conversation, not both');
  if (body.tool_choice && typeof body.tool_choice === 'object' && !(body.tools ?? []).some((tool) => tool.name === (body.tool_choice as { name: string }).name)) {
    throw invalid('tool_choice', 'names a function that is not in tools');
  }
}

function echoOf(body: CreateResponseRequest): EchoedRequest {
  return {
    model: body.model,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    temperature: body.temperature ?? null,
    top_p: body.top_p ?? null,
    text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    truncation: body.truncation === 'auto' ? 'auto' : 'disabled',
  };
}

/** The response as it is before its run says anything. */
export function baseOf(row: ResponseRow): ResponseObject {
  const { request } = row;
  return {
    id: row.id,
    object: 'response',
    created_at: Math.floor(row.created_at.getTime() / 1000),
    completed_at: null,
    status: 'in_progress',
    background: row.background,
    error: null,
    incomplete_details: null,
    instructions: request.instructions,
    max_output_tokens: request.max_output_tokens,
    metadata: request.metadata,
    model: request.model,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls,
    previous_response_id: row.previous_response_id,
    conversation: row.conversation_id ? { id: row.conversation_id } : null,
    store: row.stored,
    temperature: request.temperature,
    text: request.text,
    tool_choice: request.tool_choice,
    tools: request.tools,
    top_p: request.top_p,
    truncation: request.truncation,
    usage: null,
  };
}

export function createResponses(deps: ResponsesDeps) {
  const responses = createResponseStore(deps.db);
  const conversations = createConversationStore(deps.db);

  async function allEvents(runId: string): Promise<RunEvent[]> {
    const events: RunEvent[] = [];
    for (let after = -1; ; ) {
      const page = await deps.runs.events(runId, after, 500);
      events.push(...page);
      if (page.length < 500) return events;
      after = page.at(-1)!.sequence_number;
    }
  }

  /** The response its run's stored events make. */
  async function projected(row: ResponseRow): Promise<ResponseObject> {
    return project(baseOf(row), await allEvents(row.run_id)).response;
  }

  /** A finished response's output items: kept when its run ended, or (a server died first) projected now. */
  async function outputOf(row: ResponseRow, field: string): Promise<Item[]> {
    if (row.output) return row.output;
    const response = await projected(row);
    if (response.status === 'in_progress' || response.status === 'queued') {
      throw new ApiError('conflict', `${field}: the response ${row.id} is still in progress.`, { details: [{ field, message: 'still in progress' }] });
    }
    await responses.setOutput(row.id, response.output);
    return response.output;
  }

  /** Every item of a chain, oldest first: each response's input, then its output. */
  async function chainItems(userId: string, lastId: string): Promise<Item[]> {
    const rows: ResponseRow[] = [];
    for (let id: string | null = lastId; id; ) {
      if (rows.length >= MAX_CHAIN) throw invalid('previous_response_id', `the chain is longer than ${MAX_CHAIN} responses`);
      const row: ResponseRow = await responses.get(userId, id).catch((error: unknown) => {
        if (error instanceof ApiError && error.code === 'not_found') {
          throw new ApiError('not_found', `previous_response_id: no response ${id}.`, { details: [{ field: 'previous_response_id', message: 'unknown response' }] });
        }
        throw error;
      });
      rows.unshift(row);
      id = row.previous_response_id;
    }
    const items: Item[] = [];
    for (const row of rows) items.push(...row.input_items, ...(await outputOf(row, 'previous_response_id')));
    return items;
  }

  /** Checks that the caller may run `target` today; answers the agent or team read, if it names one. */
  async function checkTarget(userId: string, target: Target): Promise<OwnedTarget> {
    const missing = () => unknownModel(target.kind === 'model' ? target.id : `${target.kind}:${target.id}`);
    if (target.kind !== 'model') return checkTurnTarget(deps, userId, target, missing);
    if (!deps.models.list().some((model) => model.id === target.id)) throw missing();
    await deps.checkRunQuota(userId);
    return {};
  }

  function startRun(target: Target, owned: OwnedTarget, input: TurnInput, body: CreateResponseRequest, options: TurnOptions): Promise<RunHandle> {
    if (target.kind === 'agent') return deps.engine.startAgentTurn({ ...input, agentId: target.id, agent: owned.agent }, options);
    if (target.kind === 'team') return deps.teamRunner.startTeamTurn({ ...input, teamId: target.id, team: owned.team }, options);
    return deps.engine.startTurn(
      {
        input,
        target: { agentId: null, teamId: null },
        model: target.id,
        timeoutSeconds: MODEL_RUN_TIMEOUT_SECONDS,
        execute: async (context) => ({
          outcome: await runLoop(
            { model: target.id, instructions: body.instructions ?? null, settings: input.modelSettings ?? {}, clientTools: input.tools ?? [], serverTools: [], maxSteps: 1 },
            context.history,
            context.io,
            context.state,
          ),
        }),
      },
      options,
    );
  }

  return {
    conversations,

    async create(caller: Caller, body: CreateResponseRequest, options: { stream: boolean; signal: AbortSignal }): Promise<StartedResponse> {
      checkRequest(body);
      const target = targetOf(body.model);
      const conversationId = typeof body.conversation === 'string' ? body.conversation : (body.conversation?.id ?? null);
      const history =
        body.previous_response_id ? await chainItems(caller.userId, body.previous_response_id)
        : conversationId ? await conversations.items(caller.userId, conversationId)
        : [];
      const wanted = referencedIds(body.input);
      const references = new Map<string, Item>();
      for (const item of [...history, ...(await responses.itemsById(caller.userId, wanted))]) if (wanted.includes(item.id)) references.set(item.id, item);
      const input = inputItems(body.input, references);
      if (input.length === 0) throw invalid('input', 'send at least one input item');
      const answeredCalls = answeredApprovals(history, input);
      // Only an agent or a team asks for approvals, and only the one that asked runs what it asked for.
      if (answeredCalls && (target.kind === 'model' || (body.previous_response_id && (await responses.get(caller.userId, body.previous_response_id)).request.model !== body.model))) {
        throw invalid('model', 'approval answers go to the agent or team that asked for them: the model of the previous response');
      }
      const owned = await checkTarget(caller.userId, target);

      const id = newId('resp');
      const background = body.background === true;
      const turn: TurnInput = {
        ...caller,
        conversation: { messages: toChatMessages([...history, ...input]), stateless: true },
        tools: clientTools(body.tools),
        modelSettings: modelSettings(body),
        metadata: { protocol: 'responses', response_id: id },
        ...(answeredCalls ? { answeredCalls } : {}),
        ...(body.instructions && target.kind !== 'model' ? { instructions: body.instructions } : {}),
      };
      // A background response is followed by retrieving it; any other is cancelled when its client leaves.
      const handle = await startRun(target, owned, turn, body, { resumable: background });
      let row: ResponseRow;
      try {
        row = await responses.insert({
          id,
          user_id: caller.userId,
          run_id: handle.run.id,
          previous_response_id: body.previous_response_id ?? null,
          conversation_id: conversationId,
          stored: body.store !== false,
          background,
          request: echoOf(body),
          input_items: input,
        });
        if (conversationId) await conversations.append(caller.userId, conversationId, input);
      } catch (error) {
        await deps.engine.cancel(caller.userId, handle.run.id).catch(() => undefined);
        throw error;
      }
      options.signal.addEventListener('abort', () => handle.cancel(), { once: true });

      const projector = new ResponseProjector(baseOf(row));
      const live = options.stream ? new AsyncQueue<StreamEvent>() : undefined;
      const done = (async () => {
        let failure: RunErrorInfo | undefined;
        try {
          for await (const event of handle.events) {
            if (event.type === 'RunError') failure = event.error;
            for (const streamed of projector.add(event)) live?.push(streamed);
          }
        } finally {
          live?.close();
        }
        const response = projector.response;
        try {
          await responses.setOutput(row.id, response.output);
          if (conversationId) await conversations.append(caller.userId, conversationId, response.output);
        } catch (error) {
          deps.logger.error({ err: error, responseId: row.id }, 'keeping the output of a response failed');
        }
        return { response, failure };
      })();
      // Nobody may be waiting (a background response); the failure is logged, not lost.
      done.catch((error: unknown) => deps.logger.error({ err: error, responseId: row.id }, 'a response run failed'));
      return { response: structuredClone(projector.response), events: live, done };
    },

    async retrieve(userId: string, id: string): Promise<ResponseObject> {
      return projected(await responses.get(userId, id));
    },

    /** The response's stream events after `startingAfter`, following its run until it ends. */
    async stream(userId: string, id: string, startingAfter: number, signal: AbortSignal): Promise<AsyncIterable<StreamEvent>> {
      const row = await responses.get(userId, id);
      const projector = new ResponseProjector(baseOf(row));
      const events = deps.engine.follow(userId, row.run_id, -1, signal);
      return (async function* () {
        for await (const event of events) {
          for (const streamed of projector.add(event)) if (streamed.sequence_number > startingAfter) yield streamed;
          if (projector.ended) return;
        }
      })();
    },

    async cancel(userId: string, id: string): Promise<ResponseObject> {
      const row = await responses.getAny(userId, id);
      await deps.engine.cancel(userId, row.run_id);
      return projected(row);
    },

    async remove(userId: string, id: string): Promise<void> {
      const row = await responses.get(userId, id);
      const run = await deps.runs.get(userId, row.run_id);
      if (run.status === 'in_progress' || run.status === 'queued') await deps.engine.cancel(userId, row.run_id);
      await deps.db.transaction(async (tx) => {
        await createResponseStore(tx).remove(userId, id);
        // The run kept the transcript in a session of its own; it goes with the response.
        await tx.query('DELETE FROM sessions WHERE id = $1 AND user_id = $2', [run.session_id, userId]);
      });
    },

    async inputItems(userId: string, id: string): Promise<Item[]> {
      return (await responses.get(userId, id)).input_items;
    },
  };
}

export type Responses = ReturnType<typeof createResponses>;
