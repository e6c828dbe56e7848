// The run engine: starts turns (a new run, or a waiting one resumed with tool results), executes them in
// the background while clients watch their events, cancels them, follows them for replaying clients, and
// fails the runs of servers that died. How a run opens and ends belongs to the lifecycle; what a turn
// does (an agent's loop, a team's plan) belongs to the plan it is given.
import type { Logger } from 'pino';
import type { Agent, AgentStore, FunctionTool } from '../agents/agents.ts';
import type { Team } from '../teams/teams.ts';
import { checkToolNames } from '../agents/agents.ts';
import { ApiError } from '../errors.ts';
import type { ModelGateway } from '../models/gateway.ts';
import type { ChatMessage } from '../models/types.ts';
import type { SessionStore, SessionTarget } from '../sessions/store.ts';
import type { Db } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import type { UsageMeter } from '../usage/meter.ts';
import { isTerminal, zeroUsage, type RunEvent, type Speaker } from './events.ts';
import type { MemberUsage, OpenRun, RunEnding, RunLifecycle } from './lifecycle.ts';
import { runLoop, type LoopIO, type LoopOutcome, type LoopSpec, type LoopState, type ModelSettings } from './loop.ts';
import { AsyncQueue } from './queue.ts';
import { approvalCalls, checkApprovals, checkNewMessages, checkTranscript, clientCalls, mergeClientTools } from './rules.ts';
import type { ApprovalAnswer } from './loop.ts';
import { turnMcpServers, type McpServerConfig } from '../mcp/config.ts';
import { remoteTools, type RemoteToolsDeps } from '../mcp/remote.ts';
import type { ToolCall } from '../models/types.ts';
import type { RunRow, RunStore } from './store.ts';
import type { RunSignals } from './signals.ts';
import type { ServerToolsFor } from './tools.ts';
import type { Jobs } from '../jobs/jobs.ts';

const HEARTBEAT_MS = 5_000;
/** How often a server looks for runs whose server died (an indexed look at the open runs, and a lock try per owner). */
const DEATH_CHECK_MS = 2_000;
/**
 * A follower of a run on another server is woken by the database's notifications; this is only how long
 * it waits at most between two looks at the store, should a notification never come.
 */
const FOLLOW_SAFETY_MS = 15_000;
/** How long a cancel waits for the run's server to end the run before answering. */
const CANCEL_WAIT_MS = 5_000;
/** The job that fails the runs of a server that died: one per dead server, done by whichever server takes it. */
export const FAIL_ORPHANS_JOB = 'runs.fail-orphans';

/** Why a run's signal was aborted. */
type StopReason = 'canceled' | 'timeout' | 'shutdown' | 'storage';

export interface RunHandle {
  run: RunRow;
  sessionId: string;
  /** This turn's events, from RunStarted to the terminal event, each once it is stored. */
  events: AsyncIterable<RunEvent>;
  /** Stops the run when its client cannot resume (a blocking request, a protocol without replay) went away. */
  cancel(): void;
}

export interface TurnOptions {
  /** Whether the client can come back for the run's events; if not, its going away cancels the run. */
  resumable: boolean;
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

export interface TurnInput {
  userId: string;
  apiKeyId: string | null;
  conversation: Conversation;
  /** Client-side tools declared by this request, besides the agent's own. */
  tools?: FunctionTool[] | undefined;
  /** False when no client can run tools (Connexity): the model is offered server-side tools only. */
  clientTools?: boolean;
  modelSettings?: ModelSettings | undefined;
  metadata?: Record<string, string> | undefined;
  /** What the client tells the model for this turn only (a protocol's context), after the agent's own instructions. */
  instructions?: string | undefined;
  /** Remote MCP servers for this turn, besides the agent's own. */
  mcpServers?: McpServerConfig[] | undefined;
  /** The client's answers to the approvals the run waits for. */
  approvals?: ApprovalAnswer[] | undefined;
  /**
   * For a stateless protocol (the Responses API), whose next request carries the transcript rather than
   * resuming the halted run: the server-side calls of the transcript's last step that waited for
   * approval, with the client's answers. The agent's (or team leader's) run executes (or refuses) them
   * before it calls the model again, as a resumed run does.
   */
  answeredCalls?: { calls: ToolCall[]; answers: ApprovalAnswer[] } | undefined;
  /**
   * Why this protocol cannot ask its client for approval (Connexity's contract has no way to): a call
   * that would ask is refused with this reason, never run unasked and never left waiting.
   */
  cannotAsk?: string | undefined;
}

/** An agent's instructions with a turn's own after them. */
export function withTurnInstructions(own: string | null, input: Pick<TurnInput, 'instructions'>): string | null {
  return [own, input.instructions].filter(Boolean).join('\n\n') || null;
}

export interface AgentTurnInput extends TurnInput {
  agentId: string;
  /** The agent, where the caller has just read it as this user: the turn runs with it instead of reading it again. */
  agent?: Agent;
}

export interface TeamTurnInput extends TurnInput {
  teamId: string;
  /** The team, where the caller has just read it as this user: the turn runs with it instead of reading it again. */
  team?: Team;
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
}

/** What a plan's execution comes to: the loop's outcome, who spoke last, and what a halted run keeps. */
export interface TurnOutcome {
  outcome: LoopOutcome;
  speaker?: Speaker;
  state?: unknown;
  usageBreakdown?: MemberUsage[];
}

export interface TurnSpec {
  input: TurnInput;
  target: SessionTarget;
  model: string;
  timeoutSeconds: number;
  /** Whether a resumed turn's new messages answer a member's calls, and so go to the member, not the session. */
  resultsGoToMember?: (pending: RunRow) => boolean;
  execute(context: TurnContext): Promise<TurnOutcome>;
  /** Lets a plan finish what it started (a team's member runs) when the turn is cancelled or fails. */
  onStop?(context: TurnContext, status: 'canceled' | 'failed'): Promise<void>;
}

export interface EngineDeps {
  db: Db;
  agents: AgentStore;
  sessions: SessionStore;
  runs: RunStore;
  models: ModelGateway;
  usage: UsageMeter;
  lifecycle: RunLifecycle;
  serverTools: ServerToolsFor;
  /** How remote MCP servers are reached. */
  remoteTools: RemoteToolsDeps;
  /** This server's id, the owner of the runs it executes. */
  instanceId: string;
  /** How servers hear of each other's run events and cancellations. */
  signals: RunSignals;
  /** When given, the runs of dead servers are failed by a durable job, taken by exactly one server. */
  jobs?: Jobs | undefined;
  clock: () => number;
  logger: Logger;
}

export interface RunEngine {
  readonly instanceId: string;
  startTurn(turn: TurnSpec, options: TurnOptions): Promise<RunHandle>;
  startAgentTurn(input: AgentTurnInput, options: TurnOptions): Promise<RunHandle>;
  /** Cancels a run wherever it is: live here, live elsewhere, or waiting for tool results. */
  cancel(userId: string, runId: string): Promise<RunRow>;
  /** Cancels what an agent, a team or a session still has running or waiting, before it is deleted. */
  cancelAll(userId: string, where: { agentId?: string; teamId?: string; sessionId?: string }): Promise<void>;
  /** A run's stored events after `after`, then the rest as they are stored, up to its terminal event. */
  follow(userId: string, runId: string, after: number, signal: AbortSignal): AsyncGenerator<RunEvent>;
  /** Fails the runs of servers that are gone. */
  sweep(): Promise<number>;
  isLive(runId: string): boolean;
  liveRuns(): number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A new id for a server process. */
export const newInstanceId = () => newId('inst');

interface LiveRun {
  controller: AbortController;
  done: Promise<unknown>;
  recorder: OpenRun['recorder'];
}

/** How a failure that is not the plan's own reads in the run's RunError. */
function failureOf(error: unknown, reason: StopReason | undefined, timeoutSeconds: number): { code: ApiError['code']; message: string } {
  if (reason === 'timeout') return { code: 'upstream_timeout', message: `The run did not finish within its timeout of ${timeoutSeconds} seconds.` };
  if (reason === 'shutdown') return { code: 'service_unavailable', message: 'The server shut down while the run was in progress.' };
  if (reason === 'storage') return { code: 'service_unavailable', message: 'The run could not be stored.' };
  if (error instanceof ApiError) return { code: error.code, message: error.message };
  return { code: 'internal_error', message: 'The run failed unexpectedly.' };
}

function endingOf(executed: TurnOutcome, sources: LoopState['sources']): RunEnding {
  const { outcome } = executed;
  if (outcome.kind === 'requires_action') {
    return {
      status: 'requires_action',
      toolCalls: outcome.toolCalls,
      approvals: outcome.approvals,
      from: outcome.from ?? executed.speaker,
      state: executed.state,
      usageBreakdown: executed.usageBreakdown,
      sources,
    };
  }
  return { status: 'completed', message: outcome.message, finishReason: outcome.finishReason, from: executed.speaker, usageBreakdown: executed.usageBreakdown, sources };
}

/** What a run halted for approvals keeps: the calls to execute once they are answered. */
function approvalState(calls: ToolCall[], approvals: { tool_call_id: string }[] | undefined): { approval_calls: ToolCall[] } | undefined {
  return approvals?.length ? { approval_calls: approvalCalls(calls, approvals) } : undefined;
}

function approvalCallsOf(state: unknown): ToolCall[] {
  const calls = (state as { approval_calls?: unknown } | null)?.approval_calls;
  return Array.isArray(calls) ? (calls as ToolCall[]) : [];
}

export function createRunEngine(deps: EngineDeps): RunEngine {
  const { runs, sessions, logger, lifecycle } = deps;
  const live = new Map<string, LiveRun>();
  let heartbeat: NodeJS.Timeout | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  /** Set by stop(): a turn whose request got in before shutdown but starts after it ends at once. */
  let stopping = false;

  async function openSession(input: TurnInput, target: SessionTarget) {
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
    checkTranscript(conversation.messages);
    const session = await sessions.create(input.userId, target, conversation.messages, input.metadata, conversation.externalId ?? null);
    return { sessionId: session.id, previous: 'idle' as const, fresh: true };
  }

  /** Opens the turn's run: the session's waiting one, resumed with the new messages, or a new one. */
  async function openTurnRun(turn: TurnSpec, sessionId: string, previous: string, fresh: boolean) {
    const input = turn.input;
    const stateless = input.conversation.stateless === true;
    try {
      const pending = previous === 'requires_action' ? await runs.pendingIn(sessionId) : undefined;
      // A new session's first messages were checked as a transcript; later ones must fit what is pending.
      const action = pending?.required_action;
      if (!fresh) checkNewMessages(input.conversation.messages, clientCalls(action?.tool_calls, action?.approvals));
      checkApprovals(input.approvals ?? [], action?.approvals);
      if (pending) {
        return { open: await lifecycle.resume(pending.id, { watch: true, stateless }), toMember: turn.resultsGoToMember?.(pending) === true };
      }
      const open = await lifecycle.open(
        { userId: input.userId, sessionId, agentId: turn.target.agentId, teamId: turn.target.teamId, model: turn.model, stateless },
        { watch: true },
      );
      return { open, toMember: false };
    } catch (error) {
      await sessions.setStatus(sessionId, previous === 'running' ? 'idle' : (previous as 'idle' | 'requires_action'));
      throw error;
    }
  }

  async function startTurn(turn: TurnSpec, options: TurnOptions): Promise<RunHandle> {
    const input = turn.input;
    const { sessionId, previous, fresh } = await openSession(input, turn.target);
    const { open, toMember } = await openTurnRun(turn, sessionId, previous, fresh);
    const run = open.row;
    const newMessages = input.conversation.messages;
    const state: LoopState = { usage: open.resumed ? { ...run.usage } : zeroUsage(), sources: [] };

    // From here on the run exists: whatever fails ends it failed.
    let history: ChatMessage[];
    try {
      // The day's run count is written beside the session's history, read before the new messages join it.
      [, history] = await Promise.all([
        open.resumed ? undefined : deps.usage.recordRun(input.userId),
        (async () => {
          // A session made for this turn holds nothing yet but the messages below.
          const earlier = fresh ? [] : await sessions.messages(sessionId);
          // Tool results for a team member's calls belong to the member's conversation, not the session's.
          if (toMember) return earlier;
          await sessions.append(sessionId, run.id, newMessages);
          return [...earlier, ...newMessages];
        })(),
      ]);
    } catch (error) {
      await lifecycle.end(open, { status: 'failed', error: failureOf(error, undefined, turn.timeoutSeconds) }, state.usage).catch(() => undefined);
      throw error;
    }

    const controller = new AbortController();
    open.recorder.onLost(() => controller.abort('storage' satisfies StopReason));
    const timeout = setTimeout(() => controller.abort('timeout' satisfies StopReason), turn.timeoutSeconds * 1000);
    const io: LoopIO = {
      gateway: deps.models,
      emit: (body) => open.recorder.emit(body),
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
    const context: TurnContext = { run, sessionId, resumed: open.resumed, history, newMessages, io, state };

    const done = (async () => {
      let ending: RunEnding;
      try {
        ending = endingOf(await turn.execute(context), state.sources);
      } catch (error) {
        const reason = controller.signal.aborted ? (controller.signal.reason as StopReason) : undefined;
        const status = reason === 'canceled' ? 'canceled' : 'failed';
        await turn.onStop?.(context, status).catch((stopError: unknown) => logger.error({ err: stopError, runId: run.id }, 'stopping a turn failed'));
        if (status === 'canceled') {
          ending = { status: 'canceled' };
        } else {
          if (!(error instanceof ApiError) && !reason) logger.error({ err: error, runId: run.id }, 'run failed');
          ending = { status: 'failed', error: failureOf(error, reason, turn.timeoutSeconds) };
        }
      } finally {
        clearTimeout(timeout);
      }
      try {
        await lifecycle.end(open, ending, state.usage);
      } finally {
        live.delete(run.id);
      }
    })();
    live.set(run.id, { controller, done, recorder: open.recorder });
    // Otherwise a run that started while stop() was failing the others would hold the drain to its end.
    if (stopping) controller.abort('shutdown' satisfies StopReason);
    void done.catch((error: unknown) => logger.error({ err: error, runId: run.id }, 'ending a run failed'));

    return {
      run,
      sessionId,
      events: open.events!,
      cancel: () => {
        if (!options.resumable) controller.abort('canceled' satisfies StopReason);
      },
    };
  }

  async function startAgentTurn(input: AgentTurnInput, options: TurnOptions): Promise<RunHandle> {
    const agent = input.agent?.id === input.agentId ? input.agent : await deps.agents.get(input.userId, input.agentId);
    const requestTools = input.tools ?? [];
    checkToolNames(requestTools, 'tools');
    const clientTools = mergeClientTools(agent.tools, requestTools);
    return startTurn(
      {
        input,
        target: { agentId: agent.id, teamId: null },
        model: agent.model,
        timeoutSeconds: agent.run_timeout_seconds,
        execute: async (context) => {
          // A request's server replaces the agent's of the same name for this turn.
          const own = agent.mcp_servers.length > 0 ? await deps.agents.mcpServers(input.userId, agent.id) : [];
          const servers = turnMcpServers(own, input.mcpServers);
          const remote = servers.length > 0 ? await remoteTools(servers, deps.remoteTools, context.io.signal) : undefined;
          try {
            const spec: LoopSpec = {
              model: agent.model,
              instructions: withTurnInstructions(agent.instructions, { instructions: [input.instructions, ...(remote?.unavailable ?? [])].filter(Boolean).join('\n') }),
              settings: { ...agent.model_settings, ...input.modelSettings },
              clientTools: input.clientTools === false ? [] : clientTools,
              serverTools: [...deps.serverTools(agent, input, () => context.io.signal), ...(remote?.tools ?? [])],
              maxSteps: agent.max_steps,
              decisions: new Map([...(input.approvals ?? []), ...(input.answeredCalls?.answers ?? [])].map((answer) => [answer.tool_call_id, answer])),
              cannotAsk: input.cannotAsk,
            };
            // Calls that waited for approval run (or are refused) first, as the answers say.
            const waiting = context.resumed ? approvalCallsOf(context.run.state) : (input.answeredCalls?.calls ?? []);
            const outcome = await runLoop(spec, context.history, context.io, context.state, waiting);
            return { outcome, state: outcome.kind === 'requires_action' ? approvalState(outcome.toolCalls, outcome.approvals) : undefined };
          } finally {
            await remote?.close();
          }
        },
      },
      options,
    );
  }

  async function cancel(userId: string, runId: string): Promise<RunRow> {
    const run = await runs.get(userId, runId);
    // A team's member run is cancelled through its team run, which cancels all of its members.
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
      if (member) await lifecycle.endStored(member, { status: 'canceled' }, { from: ['requires_action'] });
      await lifecycle.endStored(run, { status: 'canceled' }, { from: ['requires_action'] });
      return runs.get(userId, runId);
    }
    if (run.status !== 'in_progress' && run.status !== 'queued') return run;
    return cancelElsewhere(userId, run);
  }

  /**
   * Cancels a run another server executes: its server hears of it at once and ends the run; the answer
   * waits (bounded) for that end, so that it shows the run cancelled. A run whose server is gone is
   * cancelled here, on the same condition as the job that fails such runs, so only one of them ends it.
   */
  async function cancelElsewhere(userId: string, run: RunRow): Promise<RunRow> {
    let woken: () => void = () => undefined;
    const unwatch = deps.signals.watch(run.id, () => woken());
    try {
      const owner = await runs.requestCancel(run.id);
      if (owner === undefined) return await runs.get(userId, run.id);
      if (owner !== deps.instanceId && (await ownerIsGone(owner))) {
        await endOrphan(run, owner, { status: 'canceled' });
        for (const member of await runs.children(run.id)) await endOrphan(member, owner, { status: 'canceled' });
        return await runs.get(userId, run.id);
      }
      const deadline = performance.now() + CANCEL_WAIT_MS;
      for (;;) {
        const wake = new Promise<void>((resolve) => (woken = resolve));
        const current = await runs.get(userId, run.id);
        const left = deadline - performance.now();
        if ((current.status !== 'in_progress' && current.status !== 'queued') || left <= 0) return current;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          void wake.then(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    } finally {
      unwatch();
    }
  }

  async function* follow(userId: string, runId: string, after: number, signal: AbortSignal): AsyncGenerator<RunEvent> {
    let run = await runs.get(userId, runId);
    let last = after;
    const local = live.get(runId);
    const buffered = new AsyncQueue<RunEvent>();
    // Listening before reading the store: an event stored in between arrives twice and is skipped once.
    const unsubscribe = local?.recorder.subscribe((event) => {
      buffered.push(event);
      if (isTerminal(event)) buffered.close();
    });
    // A run executing elsewhere (or nowhere any more): every server's stored events are announced.
    let pending: boolean;
    let woken: (() => void) | undefined;
    const wake = () => {
      pending = true;
      woken?.();
    };
    const unwatch = local ? undefined : deps.signals.watch(runId, (sequence) => {
      if (sequence === undefined || sequence > last) wake();
    });
    signal.addEventListener('abort', wake);
    try {
      for (;;) {
        pending = false;
        const stored = await runs.events(runId, last, 500);
        for (const event of stored) {
          last = event.sequence_number;
          yield event;
          // A run that waited for tools and went on has several terminal events; its stream ends at the last.
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
        if (signal.aborted) return;
        if (!pending) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, FOLLOW_SAFETY_MS);
            woken = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          woken = undefined;
        }
        if (signal.aborted) return;
      }
    } finally {
      unsubscribe?.();
      unwatch?.();
      signal.removeEventListener('abort', wake);
    }
  }

  const orphanError = { code: 'internal_error' as const, message: 'The server running this run stopped before it finished.' };

  /** Ends a dead server's run, if it is still that server's and unfinished: of all who try, one does. */
  async function endOrphan(run: RunRow, owner: string, ending: RunEnding = { status: 'failed', error: orphanError }): Promise<boolean> {
    return (await lifecycle.endStored(run, ending, { from: ['queued', 'in_progress'], owner })) !== undefined;
  }

  /** Fails every unfinished run of a dead server. Safe to repeat and to run on several servers at once. */
  async function failOrphansOf(owner: string): Promise<number> {
    let failed = 0;
    for (const orphan of await runs.orphansOf(owner)) if (await endOrphan(orphan, owner)) failed += 1;
    if (failed > 0) logger.warn({ failed, owner }, 'marked the runs of a stopped server failed');
    return failed;
  }

  /** The servers that own unfinished runs and are gone. */
  async function deadOwners(): Promise<string[]> {
    const dead: string[] = [];
    for (const owner of await runs.activeOwners(deps.instanceId)) {
      if (deps.db.engine === 'pglite' || (await ownerIsGone(owner))) dead.push(owner);
    }
    return dead;
  }

  /** Fails the runs of servers that are gone, here and now. */
  async function sweep(): Promise<number> {
    let failed = 0;
    for (const owner of await deadOwners()) failed += await failOrphansOf(owner);
    return failed;
  }

  /** Hands each dead server's runs to the job queue; whichever server takes the job fails them. */
  async function detectDeaths(): Promise<void> {
    if (!deps.jobs) {
      await sweep();
      return;
    }
    for (const owner of await deadOwners()) await deps.jobs.enqueue(FAIL_ORPHANS_JOB, { owner }, { key: owner });
  }

  /** A server holds a session advisory lock on its id while it lives; if we can take it, it is gone. */
  async function ownerIsGone(owner: string): Promise<boolean> {
    if (deps.db.engine === 'pglite') return owner !== deps.instanceId;
    return deps.db.transaction(async (tx) => {
      const [row] = await tx.query<{ free: boolean }>('SELECT pg_try_advisory_xact_lock(hashtext($1)) AS free', [owner]);
      return row?.free === true;
    });
  }

  let releaseOwnership: (() => void) | undefined;
  let ownershipHeld: Promise<unknown> | undefined;

  return {
    instanceId: deps.instanceId,
    startTurn,
    startAgentTurn,
    cancel,
    follow,
    sweep,
    isLive: (runId) => live.has(runId),
    liveRuns: () => live.size,

    async cancelAll(userId, where) {
      for (const runId of await runs.unfinished(userId, where)) await cancel(userId, runId);
    },

    /** Takes this server's liveness lock, fails orphaned runs, and starts the heartbeat and the sweeper. */
    async start() {
      if (deps.db.engine === 'postgres') {
        await new Promise<void>((held) => {
          ownershipHeld = deps.db.withAdvisoryLock(deps.instanceId, () => {
            held();
            return new Promise<void>((release) => (releaseOwnership = release));
          });
        });
      }
      deps.signals.onCancel((runId) => live.get(runId)?.controller.abort('canceled' satisfies StopReason));
      await deps.signals.start();
      await deps.jobs?.register<{ owner: string }>(
        FAIL_ORPHANS_JOB,
        async ({ owner }) => {
          // Checked again by whoever takes the job: a server that only lost its connection for a moment keeps its runs.
          if (await ownerIsGone(owner)) await failOrphansOf(owner);
        },
        { concurrency: 1 },
      );
      await sweep();
      heartbeat = setInterval(() => {
        void runs
          .heartbeat([...live.keys()])
          .then((cancelled) => {
            for (const runId of cancelled) live.get(runId)?.controller.abort('canceled' satisfies StopReason);
          })
          .catch((error: unknown) => logger.warn({ err: error }, 'run heartbeat failed'));
      }, HEARTBEAT_MS);
      // PGlite serves one process: the only dead server is the one before this, swept above.
      if (deps.db.engine === 'postgres') {
        sweeper = setInterval(() => void detectDeaths().catch((error: unknown) => logger.warn({ err: error }, 'looking for dead servers failed')), DEATH_CHECK_MS);
        sweeper.unref();
      }
      heartbeat.unref();
    },

    /** Ends every live run with a final event (shutdown) and stops the timers. */
    async stop() {
      stopping = true;
      clearInterval(heartbeat);
      clearInterval(sweeper);
      const pending = [...live.values()];
      for (const run of pending) run.controller.abort('shutdown' satisfies StopReason);
      await Promise.allSettled(pending.map((run) => run.done));
      await deps.signals.stop();
      releaseOwnership?.();
      await ownershipHeld?.catch(() => undefined);
    },
  };
}
