// The run engine: starts and resumes runs, executes them in the background while clients watch their
// events, cancels them, and fails the runs of servers that died.
import type { Logger } from 'pino';
import type { Agent, AgentStore, FunctionTool } from '../agents/agents.ts';
import { checkToolNames } from '../agents/agents.ts';
import { ApiError } from '../errors.ts';
import type { ModelGateway } from '../models/gateway.ts';
import type { AssistantMessage, ChatMessage, ToolCall } from '../models/types.ts';
import type { SessionStore } from '../sessions/store.ts';
import type { Db } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import { serverTool, type KnowledgeSearcher, type KnowledgeSource } from '../tools/registry.ts';
import type { UsageMeter } from '../usage/meter.ts';
import type { RunMetrics } from '../metrics/metrics.ts';
import { isTerminal, zeroUsage, type RunEvent, type Speaker, type TokenUsage } from './events.ts';
import { runLoop, type LoopIO, type LoopOutcome, type LoopSpec, type LoopState, type LoopTool, type ModelSettings } from './loop.ts';
import { AsyncQueue } from './queue.ts';
import { createEventSink, RunRecorder } from './recorder.ts';
import type { RequiredAction, RunErrorInfo, RunRow, RunStatus, RunStore } from './store.ts';

const HEARTBEAT_MS = 5_000;
const SWEEP_MS = 30_000;
const REPLAY_POLL_MS = 250;
/**
 * Events reach live clients before they are stored (in batches), so a client of a server that died may
 * have seen numbers past the last stored one. The final event the sweep stores for such a run comes this
 * far past it, so that a client resuming from the last event it saw still receives it: more than a run
 * emits (one event per token) in the time its last batches could have been in flight.
 */
const LOST_EVENTS_MARGIN = 100_000;

/** Why a run's signal was aborted. */
type StopReason = 'canceled' | 'timeout' | 'shutdown';

export interface TurnResult {
  run: RunRow;
  status: RunStatus;
  /** Everything the turn produced, assistant and tool messages, in order. */
  messages: ChatMessage[];
  message: AssistantMessage | null;
  finishReason: 'stop' | 'length' | 'content_filter' | 'tool_calls' | 'canceled' | null;
  requiredAction: RequiredAction | null;
  usage: TokenUsage;
  sources: KnowledgeSource[];
  error: RunErrorInfo | null;
  /** For team runs, the usage of each member run. */
  usageBreakdown?: { agent_id: string | null; name: string; role: string | null; run_id: string; usage: TokenUsage }[];
}

export interface RunHandle {
  run: RunRow;
  sessionId: string;
  /** This turn's events, from RunStarted to the terminal event. */
  events: AsyncIterable<RunEvent>;
  result: Promise<TurnResult>;
  /** Stops the run (a client that cannot resume went away). */
  cancel(): void;
}

/**
 * Where a turn's history comes from. A stored session is named by our id or by the client's own
 * (`externalId`); a new one may start from a whole transcript. A `stateless` protocol (OpenAI chat
 * completions, Connexity) sends the whole transcript every time: a new session records it, and a run that
 * calls client-side tools ends there, as the next request carries the results in a new transcript.
 */
export interface Conversation {
  sessionId?: string | undefined;
  externalId?: string | undefined;
  messages: ChatMessage[];
  stateless?: boolean;
}

/** What a turn's plan sees: its run, its history, and the means to emit, persist and meter. */
export interface TurnContext {
  run: RunRow;
  sessionId: string;
  resumed: boolean;
  /** The conversation so far, the new messages included (unless they answer a team member's calls). */
  history: ChatMessage[];
  newMessages: ChatMessage[];
  io: LoopIO;
  state: LoopState;
  recorder: RunRecorder;
}

export interface TurnExtras {
  usageBreakdown?: TurnResult['usageBreakdown'];
}

export interface TurnSpec {
  input: AgentTurnInput | TeamTurnInput;
  target: { agentId: string | null; teamId: string | null };
  model: string;
  timeoutSeconds: number;
  /** Whether a resumed turn's new messages answer a member's calls, and so go to the member, not the session. */
  resultsGoToMember?: (pending: RunRow) => boolean;
  execute(context: TurnContext): Promise<{ outcome: LoopOutcome; speaker?: Speaker; state?: unknown; extras?: TurnExtras }>;
  /** Lets a plan finish what it started (a team's member runs) when the turn is cancelled or fails. */
  onStop?(context: TurnContext, status: 'canceled' | 'failed'): Promise<void>;
}

/** A team turn's input: as an agent's, naming the team. */
export interface TeamTurnInput extends Omit<AgentTurnInput, 'agentId' | 'clientTools'> {
  teamId: string;
  clientTools?: boolean;
}

export interface AgentTurnInput {
  userId: string;
  apiKeyId: string | null;
  agentId: string;
  conversation: Conversation;
  /** Client-side tools declared by this request, besides the agent's own. */
  tools?: FunctionTool[] | undefined;
  /** False when no client can run tools (Connexity): the model is offered server-side tools only. */
  clientTools?: boolean;
  modelSettings?: ModelSettings | undefined;
  metadata?: Record<string, string> | undefined;
}

interface LiveRun {
  userId: string;
  recorder: RunRecorder;
  controller: AbortController;
  done: Promise<unknown>;
}

export interface EngineDeps {
  db: Db;
  agents: AgentStore;
  sessions: SessionStore;
  runs: RunStore;
  models: ModelGateway;
  usage: UsageMeter;
  knowledge: KnowledgeSearcher;
  clock: () => number;
  logger: Logger;
  metrics?: RunMetrics;
}

export function createRunEngine(deps: EngineDeps) {
  const { runs, sessions, logger } = deps;
  const instanceId = newId('inst');
  const live = new Map<string, LiveRun>();
  const sink = createEventSink(runs, logger);
  const recorderFor = (run: { id: string; last_sequence_number: number }) => new RunRecorder(sink, run.id, run.last_sequence_number, deps.clock);
  let heartbeat: NodeJS.Timeout | undefined;
  /** Set by stop(): a turn whose request got in before shutdown but starts after it ends at once. */
  let stopping = false;
  let sweeper: NodeJS.Timeout | undefined;

  /** The built-in tools an agent has: those it names, and knowledge_search when it has collections. */
  function serverToolsOf(agent: Agent, caller: { userId: string; apiKeyId: string | null }, signalFor: () => AbortSignal): LoopTool[] {
    const names = new Set<string>(agent.server_tools);
    if (agent.knowledge_collections.length > 0) names.add('knowledge_search');
    return [...names].flatMap((name) => {
      const tool = serverTool(name);
      if (!tool) return [];
      return [
        {
          definition: { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } },
          run: (args: Record<string, unknown>) =>
            tool.run(args, { ...caller, collections: agent.knowledge_collections, clock: deps.clock, knowledge: deps.knowledge, signal: signalFor() }),
        },
      ];
    });
  }

  function validateNewMessages(messages: ChatMessage[], pending: ToolCall[] | undefined): void {
    if (!pending) {
      const index = messages.findIndex((message) => message.role === 'tool');
      if (index !== -1) {
        throw new ApiError('invalid_request', 'A tool message answers a pending tool call, and this session has none.', {
          details: [{ field: `messages[${index}]`, message: 'no pending tool call' }],
        });
      }
      return;
    }
    const expected = new Set(pending.map((call) => call.id));
    const answered = new Set<string>();
    messages.forEach((message, index) => {
      if (message.role !== 'tool' || !expected.has(message.tool_call_id) || answered.has(message.tool_call_id)) {
        throw new ApiError('invalid_request', 'The run waits for tool results: send one tool message for each pending tool call, and nothing else.', {
          details: [{ field: `messages[${index}]`, message: message.role === 'tool' ? `unexpected tool_call_id ${message.tool_call_id}` : 'expected a tool message' }],
        });
      }
      answered.add(message.tool_call_id);
    });
    const missing = [...expected].filter((id) => !answered.has(id));
    if (missing.length > 0) {
      throw new ApiError('invalid_request', `Tool results are missing for: ${missing.join(', ')}.`, {
        details: missing.map((id) => ({ field: 'messages', message: `no result for ${id}` })),
      });
    }
  }

  /** In a transcript, every tool message answers a call of an earlier assistant message. */
  function validateTranscript(messages: ChatMessage[]): void {
    const calls = new Set<string>();
    messages.forEach((message, index) => {
      if (message.role === 'assistant') for (const call of message.tool_calls ?? []) calls.add(call.id);
      if (message.role === 'tool' && !calls.has(message.tool_call_id)) {
        throw new ApiError('invalid_request', `The tool message answers ${message.tool_call_id}, which no earlier assistant message called.`, {
          details: [{ field: `messages[${index}].tool_call_id`, message: 'no matching tool call' }],
        });
      }
    });
  }

  async function openSession(input: AgentTurnInput | TeamTurnInput, target: { agentId: string | null; teamId: string | null }) {
    const conversation = input.conversation;
    const existing =
      conversation.stateless ? undefined
      : conversation.sessionId ? conversation.sessionId
      : conversation.externalId ? (await sessions.findExternal(input.userId, target, conversation.externalId))?.id
      : undefined;
    if (existing) {
      const claimed = await sessions.claim(input.userId, existing, target);
      return { sessionId: claimed.session.id, previous: claimed.previous, fresh: false };
    }
    validateTranscript(conversation.messages);
    const session = await sessions.create(input.userId, target, conversation.messages, input.metadata, conversation.externalId ?? null);
    return { sessionId: session.id, previous: 'idle' as const, fresh: true };
  }

  /**
   * Starts (or, on a session waiting for tool results, resumes) a turn: claims the session, creates the
   * run, stores the new messages, and executes `plan` in the background while the handle's events stream.
   */
  async function startTurn(turn: TurnSpec, options: { resumable: boolean }): Promise<RunHandle> {
    const input = turn.input;
    const { sessionId, previous, fresh } = await openSession(input, turn.target);
    const stateless = input.conversation.stateless === true;
    const newMessages = input.conversation.messages;

    let run: RunRow;
    let history: ChatMessage[];
    let resumed = false;
    let toMember: boolean;
    try {
      const pending = previous === 'requires_action' ? await runs.pendingIn(sessionId) : undefined;
      // A new session's first messages were checked as a transcript; later ones must fit what is pending.
      if (!fresh) validateNewMessages(newMessages, pending?.required_action?.tool_calls);
      toMember = pending !== undefined && turn.resultsGoToMember?.(pending) === true;
      if (pending) {
        const taken = await runs.resume(pending.id, instanceId);
        if (!taken) throw new ApiError('conflict', `The run ${pending.id} is no longer waiting for tool results.`);
        run = taken;
        resumed = true;
      } else {
        run = await runs.create({
          userId: input.userId,
          sessionId,
          agentId: turn.target.agentId,
          teamId: turn.target.teamId,
          parentRunId: null,
          model: turn.model,
          owner: instanceId,
        });
        await deps.usage.recordRun(input.userId);
      }
      // A session made for this turn holds nothing yet but the messages below.
      history = fresh ? [] : await sessions.messages(sessionId);
      // Tool results for a team member's calls belong to the member's conversation, not the session's.
      if (!toMember) {
        await sessions.append(sessionId, run.id, newMessages);
        history.push(...newMessages);
      }
    } catch (error) {
      await sessions.setStatus(sessionId, previous === 'running' ? 'idle' : previous);
      throw error;
    }

    const recorder = recorderFor(run);
    const controller = new AbortController();
    const queue = new AsyncQueue<RunEvent>(() => unsubscribe());
    const unsubscribe = recorder.subscribe((event) => {
      queue.push(event);
      if (isTerminal(event)) queue.close();
    });
    const timeout = setTimeout(() => controller.abort('timeout' satisfies StopReason), turn.timeoutSeconds * 1000);
    const state: LoopState = { usage: resumed ? { ...run.usage } : zeroUsage(), produced: [], sources: [] };
    const io: LoopIO = {
      gateway: deps.models,
      emit: (body) => recorder.emit(body),
      persist: (messages) => sessions.append(sessionId, run.id, messages),
      // Batched with other records: a run does not wait on its meter, and the batch is flushed on close.
      meter: (model, usage) =>
        deps.usage.record(
          {
            userId: input.userId,
            apiKeyId: input.apiKeyId,
            model: typeof model === 'string' ? model : model.id,
            kind: 'run',
            promptTokens: usage.prompt_tokens,
            completionTokens: usage.completion_tokens,
          },
          { defer: true },
        ),
      log: logger,
      signal: controller.signal,
    };
    const context: TurnContext = { run, sessionId, resumed, history, newMessages, io, state, recorder };

    recorder.emit({
      type: 'RunStarted',
      session_id: sessionId,
      agent_id: turn.target.agentId,
      team_id: turn.target.teamId,
      parent_run_id: null,
      model: turn.model,
      resumed,
    });

    const result = (async (): Promise<TurnResult> => {
      let extra: TurnExtras = {};
      const finish = async (status: RunStatus, fields: Partial<TurnResult>, runState?: unknown): Promise<TurnResult> => {
        const outcome: TurnResult = {
          run,
          status,
          messages: state.produced,
          message: null,
          finishReason: null,
          requiredAction: null,
          usage: state.usage,
          sources: state.sources,
          error: null,
          ...extra,
          ...fields,
        };
        await recorder.flush();
        await runs.finish(run.id, { status, usage: state.usage, error: outcome.error, requiredAction: outcome.requiredAction, state: runState });
        deps.metrics?.runFinished(status);
        await sessions.setStatus(sessionId, status === 'requires_action' ? 'requires_action' : 'idle');
        outcome.run = { ...run, status, usage: state.usage, error: outcome.error, required_action: outcome.requiredAction, last_sequence_number: recorder.lastSequence };
        return outcome;
      };
      try {
        const executed = await turn.execute(context);
        const outcome = executed.outcome;
        extra = executed.extras ?? {};
        const speaker = executed.speaker ? { from: executed.speaker } : {};
        if (outcome.kind === 'requires_action') {
          const from = outcome.from ? { from: outcome.from } : speaker;
          const requiredAction: RequiredAction = { type: 'submit_tool_outputs', tool_calls: outcome.toolCalls, ...from };
          recorder.emit({ type: 'ToolRequest', ...from, session_id: sessionId, tool_calls: outcome.toolCalls, usage: state.usage });
          const last = state.produced.findLast((message) => message.role === 'assistant') as AssistantMessage | undefined;
          const fields = { requiredAction, message: last ?? null, finishReason: 'tool_calls' as const };
          // Nothing will resume a stateless turn: it is complete, with tool calls for its client to answer.
          if (stateless) return { ...(await finish('completed', { ...fields, requiredAction: null })), requiredAction };
          return await finish('requires_action', fields, executed.state);
        }
        recorder.emit({
          type: 'RunCompleted',
          ...speaker,
          status: 'completed',
          message: outcome.message,
          finish_reason: outcome.finishReason,
          usage: state.usage,
          ...(extra.usageBreakdown ? { usage_breakdown: extra.usageBreakdown } : {}),
          ...(state.sources.length ? { sources: state.sources } : {}),
        });
        return await finish('completed', { message: outcome.message, finishReason: outcome.finishReason });
      } catch (error) {
        const reason = controller.signal.aborted ? (controller.signal.reason as StopReason) : undefined;
        await turn.onStop?.(context, reason ? (reason === 'canceled' ? 'canceled' : 'failed') : 'failed');
        if (reason === 'canceled') {
          recorder.emit({ type: 'RunCompleted', status: 'canceled', message: null, finish_reason: 'canceled', usage: state.usage });
          return await finish('canceled', { finishReason: 'canceled' });
        }
        const failure: RunErrorInfo =
          reason === 'timeout'
            ? { code: 'upstream_timeout', message: `The run did not finish within its timeout of ${turn.timeoutSeconds} seconds.` }
            : reason === 'shutdown'
              ? { code: 'service_unavailable', message: 'The server shut down while the run was in progress.' }
              : error instanceof ApiError
                ? { code: error.code, message: error.message }
                : { code: 'internal_error', message: 'The run failed unexpectedly.' };
        if (!(error instanceof ApiError) && !reason) logger.error({ err: error, runId: run.id }, 'run failed');
        recorder.emit({ type: 'RunError', status: 'failed', error: failure });
        return await finish('failed', { error: failure });
      } finally {
        clearTimeout(timeout);
        live.delete(run.id);
      }
    })();
    live.set(run.id, { userId: input.userId, recorder, controller, done: result });
    // Otherwise a run that started while stop() was failing the others would hold the drain to its end.
    if (stopping) controller.abort('shutdown' satisfies StopReason);
    void result.catch((error: unknown) => logger.error({ err: error, runId: run.id }, 'finishing a run failed'));

    return {
      run,
      sessionId,
      events: queue,
      result,
      cancel: () => {
        if (!options.resumable) controller.abort('canceled' satisfies StopReason);
      },
    };
  }

  async function startAgentTurn(input: AgentTurnInput, options: { resumable: boolean }): Promise<RunHandle> {
    const agent = await deps.agents.get(input.userId, input.agentId);
    const requestTools = input.tools ?? [];
    checkToolNames([...agent.tools, ...requestTools], 'tools');
    return startTurn(
      {
        input,
        target: { agentId: agent.id, teamId: null },
        model: agent.model,
        timeoutSeconds: agent.run_timeout_seconds,
        execute: async (context) => {
          const spec: LoopSpec = {
            model: agent.model,
            instructions: agent.instructions,
            settings: { ...agent.model_settings, ...input.modelSettings },
            clientTools: input.clientTools === false ? [] : [...agent.tools, ...requestTools],
            serverTools: serverToolsOf(agent, input, () => context.io.signal),
            maxSteps: agent.max_steps,
          };
          return { outcome: await runLoop(spec, context.history, context.io, context.state) };
        },
      },
      options,
    );
  }

  /** Ends a waiting run as cancelled, with its final event. */
  async function cancelWaiting(run: RunRow): Promise<void> {
    const recorder = recorderFor(run);
    recorder.emit({ type: 'RunCompleted', status: 'canceled', message: null, finish_reason: 'canceled', usage: run.usage });
    await recorder.flush();
    await runs.finish(run.id, { status: 'canceled', usage: run.usage, error: null, requiredAction: null });
    // A team's member runs end with their team run, which is the one counted.
    if (!run.parent_run_id) deps.metrics?.runFinished('canceled');
  }

  /**
   * Cancels a run: live here, live on another server (which notices at its heartbeat), or waiting for
   * tools. A team's member run is cancelled through its team run, which cancels all of its members.
   */
  async function cancel(userId: string, runId: string): Promise<RunRow> {
    const run = await runs.get(userId, runId);
    if (run.parent_run_id) {
      await cancel(userId, run.parent_run_id);
      return runs.get(userId, runId);
    }
    const local = live.get(runId);
    if (local) {
      local.controller.abort('canceled' satisfies StopReason);
      await local.done.catch(() => undefined);
      return runs.get(userId, runId);
    }
    if (run.status === 'requires_action') {
      const member = await runs.pendingChild(run.id);
      if (member) await cancelWaiting(member);
      await cancelWaiting(run);
      await sessions.setStatus(run.session_id, 'idle');
      return runs.get(userId, runId);
    }
    if (run.status === 'in_progress' || run.status === 'queued') await runs.requestCancel(runId);
    return run;
  }

  /**
   * The stored events after `after`, then, while the run is live, the rest as they happen, up to its
   * terminal event. Works for runs executing on another server too, by polling the store.
   */
  async function* replay(userId: string, runId: string, after: number, signal: AbortSignal): AsyncGenerator<RunEvent> {
    let run = await runs.get(userId, runId);
    let last = after;
    const local = live.get(runId);
    const buffered = new AsyncQueue<RunEvent>();
    const unsubscribe = local?.recorder.subscribe((event) => buffered.push(event));
    try {
      if (local) await local.recorder.flush();
      for (;;) {
        const stored = await runs.events(runId, last, 500);
        for (const event of stored) {
          last = event.sequence_number;
          yield event;
          if (isTerminal(event) && !live.has(runId) && event.sequence_number >= run.last_sequence_number) return;
        }
        if (stored.length === 500) continue;
        if (local && live.has(runId)) {
          for await (const event of buffered) {
            if (event.sequence_number <= last) continue;
            last = event.sequence_number;
            yield event;
            if (isTerminal(event)) return;
          }
          return;
        }
        run = await runs.get(userId, runId);
        if (run.status !== 'in_progress' && run.status !== 'queued' && last >= run.last_sequence_number) return;
        await new Promise((resolve) => setTimeout(resolve, REPLAY_POLL_MS));
        if (signal.aborted) return;
      }
    } finally {
      unsubscribe?.();
    }
  }

  /** Fails the runs of servers that are gone, so that none is left dangling. */
  async function sweep(): Promise<number> {
    let failed = 0;
    for (const owner of await runs.activeOwners(instanceId)) {
      const dead = deps.db.engine === 'pglite' || (await ownerIsGone(owner));
      if (!dead) continue;
      for (const orphan of await runs.orphansOf(owner)) {
        const recorder = recorderFor({ id: orphan.id, last_sequence_number: orphan.last_sequence_number + LOST_EVENTS_MARGIN });
        recorder.emit({ type: 'RunError', status: 'failed', error: { code: 'internal_error', message: 'The server running this run stopped before it finished.' } });
        await recorder.flush();
        const row = await deps.db.query<{ usage: TokenUsage }>('SELECT usage FROM runs WHERE id = $1', [orphan.id]);
        await runs.finish(orphan.id, {
          status: 'failed',
          usage: row[0]?.usage ?? zeroUsage(),
          error: { code: 'internal_error', message: 'The server running this run stopped before it finished.' },
        });
        if (!orphan.parent_run_id) {
          await sessions.setStatus(orphan.session_id, 'idle');
          deps.metrics?.runFinished('failed');
        }
        failed += 1;
      }
    }
    if (failed > 0) logger.warn({ failed }, 'marked the runs of stopped servers failed');
    return failed;
  }

  /** A server holds a session advisory lock on its id while it lives; if we can take it, it is gone. */
  async function ownerIsGone(owner: string): Promise<boolean> {
    return deps.db.transaction(async (tx) => {
      const [row] = await tx.query<{ free: boolean }>('SELECT pg_try_advisory_xact_lock(hashtext($1)) AS free', [owner]);
      return row?.free === true;
    });
  }

  let releaseOwnership: (() => void) | undefined;
  let ownershipHeld: Promise<unknown> | undefined;

  return {
    instanceId,
    recorderFor,
    serverToolsOf,
    startTurn,
    startAgentTurn,
    cancel,
    replay,
    sweep,
    isLive: (runId: string) => live.has(runId),
    /** How many runs execute on this server now. */
    liveRuns: () => live.size,

    /** Cancels what an agent, a team or a session still has running or waiting, before it is deleted. */
    async cancelAll(userId: string, where: { agentId?: string; teamId?: string; sessionId?: string }): Promise<void> {
      for (const runId of await runs.unfinished(userId, where)) await cancel(userId, runId);
    },

    /** Takes this server's liveness lock, fails orphaned runs, and starts the heartbeat and the sweeper. */
    async start(): Promise<void> {
      if (deps.db.engine === 'postgres') {
        await new Promise<void>((held) => {
          ownershipHeld = deps.db.withAdvisoryLock(instanceId, () => {
            held();
            return new Promise<void>((release) => (releaseOwnership = release));
          });
        });
      }
      await sweep();
      heartbeat = setInterval(() => {
        void runs
          .heartbeat([...live.keys()])
          .then((cancelled) => {
            for (const runId of cancelled) live.get(runId)?.controller.abort('canceled' satisfies StopReason);
          })
          .catch((error: unknown) => logger.warn({ err: error }, 'run heartbeat failed'));
      }, HEARTBEAT_MS);
      sweeper = setInterval(() => void sweep().catch((error: unknown) => logger.warn({ err: error }, 'run sweep failed')), SWEEP_MS);
      heartbeat.unref();
      sweeper.unref();
    },

    /** Ends every live run with a final event (shutdown) and stops the timers. */
    async stop(): Promise<void> {
      stopping = true;
      clearInterval(heartbeat);
      clearInterval(sweeper);
      const pending = [...live.values()];
      for (const run of pending) run.controller.abort('shutdown' satisfies StopReason);
      await Promise.allSettled(pending.map((run) => run.done));
      releaseOwnership?.();
      await ownershipHeld?.catch(() => undefined);
    },
  };
}

export type RunEngine = ReturnType<typeof createRunEngine>;
