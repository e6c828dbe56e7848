// The one owner of a run's life. Every run is opened here (new, resumed after tool results, or a team
// member's) and ended here (completed, waiting for the client, cancelled, failed): this is the only code
// that builds terminal events, stores a run's final state, and applies the rules for top-level runs
// (session status, metrics). Ending is one statement: the final state and the terminal event are stored
// together, conditionally, and the terminal event is published only after, so a client that reads it
// finds the run finished, and of two servers ending one run exactly one does.
import type { Logger } from 'pino';
import { ApiError } from '../errors.ts';
import type { AssistantMessage, ToolCall } from '../models/types.ts';
import type { RunMetrics } from '../metrics/metrics.ts';
import type { KnowledgeSource } from '../tools/registry.ts';
import type { ApprovalRequest } from './loop.ts';
import { AsyncQueue } from './queue.ts';
import { isTerminal, zeroUsage, type RunEvent, type RunEventBody, type Speaker, type TokenUsage } from './events.ts';
import { RunRecorder, type EventSink } from './recorder.ts';
import { type RequiredAction, type RunErrorInfo, type RunRow, type RunStatus, type RunStore } from './store.ts';

export type MemberUsage = { agent_id: string | null; name: string; role: string | null; run_id: string; usage: TokenUsage };

/** How a run ends. */
export type RunEnding =
  | {
      status: 'completed';
      message: AssistantMessage | null;
      finishReason: 'stop' | 'length' | 'content_filter';
      from?: Speaker | undefined;
      usageBreakdown?: MemberUsage[] | undefined;
      sources?: KnowledgeSource[] | undefined;
    }
  | {
      status: 'requires_action';
      toolCalls: ToolCall[];
      /** Which of `toolCalls` are server-side calls waiting for approval. */
      approvals?: ApprovalRequest[] | undefined;
      from?: Speaker | undefined;
      /** What the run needs to go on when the results come. */
      state?: unknown;
      usageBreakdown?: MemberUsage[] | undefined;
      sources?: KnowledgeSource[] | undefined;
    }
  | { status: 'canceled' }
  | { status: 'failed'; error: RunErrorInfo };

/** What opens a new run. */
export interface RunOpening {
  userId: string;
  sessionId: string;
  agentId: string | null;
  teamId: string | null;
  /** The team run a member run belongs to. */
  parentRunId?: string | null;
  model: string;
  /**
   * A turn of a protocol that sends the whole transcript every time (OpenAI chat completions,
   * Connexity): nothing will resume it, so a run that ends waiting for client-side tools is complete.
   */
  stateless?: boolean;
}

/** A run open on this server. */
export interface OpenRun {
  row: RunRow;
  recorder: RunRecorder;
  resumed: boolean;
  stateless: boolean;
  /** This turn's events from RunStarted to the terminal one, when the opener asked to watch them. */
  events: AsyncQueue<RunEvent> | undefined;
}

const OPEN: readonly RunStatus[] = ['queued', 'in_progress'];

export interface LifecycleDeps {
  runs: RunStore;
  sink: EventSink;
  clock: () => number;
  logger: Logger;
  metrics?: RunMetrics | undefined;
  /** This server's id: the owner of the runs it opens. */
  owner: string;
}

export function createRunLifecycle(deps: LifecycleDeps) {
  const recorderFor = (row: Pick<RunRow, 'id' | 'last_sequence_number'>) => new RunRecorder(deps.sink, row.id, row.last_sequence_number, deps.clock);

  /** Subscribes before RunStarted is emitted, so that a watcher sees the turn from its first event. */
  function started(row: RunRow, resumed: boolean, stateless: boolean, watch: boolean): OpenRun {
    const recorder = recorderFor(row);
    let events: AsyncQueue<RunEvent> | undefined;
    if (watch) {
      const queue = new AsyncQueue<RunEvent>(() => unsubscribe());
      const unsubscribe = recorder.subscribe((event) => {
        queue.push(event);
        if (isTerminal(event)) queue.close();
      });
      events = queue;
    }
    recorder.emit({
      type: 'RunStarted',
      session_id: row.session_id,
      agent_id: row.agent_id,
      team_id: row.team_id,
      parent_run_id: row.parent_run_id,
      model: row.model,
      resumed,
    });
    return { row, recorder, resumed, stateless, events };
  }

  function terminalEvent(ending: RunEnding, usage: TokenUsage, sessionId: string): RunEventBody {
    switch (ending.status) {
      case 'completed':
        return {
          type: 'RunCompleted',
          ...(ending.from ? { from: ending.from } : {}),
          status: 'completed',
          message: ending.message,
          finish_reason: ending.finishReason,
          usage,
          ...(ending.usageBreakdown ? { usage_breakdown: ending.usageBreakdown } : {}),
          ...(ending.sources?.length ? { sources: ending.sources } : {}),
        };
      case 'requires_action':
        return {
          type: 'ToolRequest',
          ...(ending.from ? { from: ending.from } : {}),
          session_id: sessionId,
          tool_calls: ending.toolCalls,
          ...(ending.approvals?.length ? { approvals: ending.approvals } : {}),
          usage,
          ...(ending.usageBreakdown ? { usage_breakdown: ending.usageBreakdown } : {}),
          ...(ending.sources?.length ? { sources: ending.sources } : {}),
        };
      case 'canceled':
        return { type: 'RunCompleted', status: 'canceled', message: null, finish_reason: 'canceled', usage };
      case 'failed':
        return { type: 'RunError', status: 'failed', error: ending.error };
    }
  }

  /** The status a run is stored with: a stateless run that waits for client-side tools is complete. */
  function storedStatus(ending: RunEnding, stateless: boolean): RunStatus {
    return ending.status === 'requires_action' && stateless ? 'completed' : ending.status;
  }

  /**
   * Stores a run's end and its terminal event in one statement, if the run is still in one of `from`.
   * Answers the ended run and its terminal event, or undefined when someone else ended it first.
   */
  async function close(
    row: RunRow,
    recorder: RunRecorder,
    ending: RunEnding,
    usage: TokenUsage,
    options: { from: readonly RunStatus[]; owner?: string | undefined; stateless: boolean },
  ): Promise<{ row: RunRow; event: RunEvent } | undefined> {
    await recorder.flush();
    const event = recorder.stamp(terminalEvent(ending, usage, row.session_id));
    const status = storedStatus(ending, options.stateless);
    const waiting = status === 'requires_action' && ending.status === 'requires_action';
    const requiredAction: RequiredAction | null = waiting
      ? {
          type: 'submit_tool_outputs',
          tool_calls: ending.toolCalls,
          ...(ending.approvals?.length ? { approvals: ending.approvals } : {}),
          ...(ending.from ? { from: ending.from } : {}),
        }
      : null;
    const topLevel = row.parent_run_id === null;
    const closed = await deps.runs.close(
      row.id,
      { status, usage, error: ending.status === 'failed' ? ending.error : null, requiredAction, state: waiting ? ending.state : undefined },
      options.from,
      { owner: options.owner, event, sessionStatus: topLevel ? (status === 'requires_action' ? 'requires_action' : 'idle') : null },
    );
    if (!closed) return undefined;
    recorder.published(event);
    if (topLevel) deps.metrics?.runFinished(status);
    return { row: closed, event };
  }

  return {
    recorderFor,

    /** Opens a new run, in progress on this server, and emits its RunStarted. */
    async open(opening: RunOpening, options: { watch?: boolean } = {}): Promise<OpenRun> {
      const row = await deps.runs.create({
        userId: opening.userId,
        sessionId: opening.sessionId,
        agentId: opening.agentId,
        teamId: opening.teamId,
        parentRunId: opening.parentRunId ?? null,
        model: opening.model,
        owner: deps.owner,
      });
      return started(row, false, opening.stateless === true, options.watch === true);
    },

    /** Takes a run that waits for tool results back into progress on this server. */
    async resume(runId: string, options: { watch?: boolean; stateless?: boolean } = {}): Promise<OpenRun> {
      const row = await deps.runs.resume(runId, deps.owner);
      if (!row) throw new ApiError('conflict', `The run ${runId} is no longer waiting for tool results.`);
      return started(row, true, options.stateless === true, options.watch === true);
    },

    /** Ends a run open on this server. Answers the ended run, or undefined when it had already been ended elsewhere. */
    async end(run: OpenRun, ending: RunEnding, usage: TokenUsage): Promise<RunRow | undefined> {
      try {
        const closed = await close(run.row, run.recorder, ending, usage, { from: OPEN, owner: deps.owner, stateless: run.stateless });
        if (!closed) {
          deps.logger.warn({ runId: run.row.id }, 'a run this server executed was ended elsewhere first');
          run.events?.close();
        }
        return closed?.row;
      } catch (error) {
        // The store is away: watchers still learn that the run is over. The event is not stored; the run
        // stays open in the store until a server fails it, with the same number, after this one is gone.
        deps.logger.error({ err: error, runId: run.row.id }, 'storing the end of a run failed');
        run.recorder.published(
          run.recorder.stamp({ type: 'RunError', status: 'failed', error: { code: 'service_unavailable', message: 'The run could not be stored.' } }),
        );
        throw error;
      }
    },

    /**
     * Ends a run that is not executing here: one waiting for tool results (cancelled), a member left
     * behind by its team run, or a run of a server that died (`owner`). Answers undefined when it had
     * already ended.
     */
    async endStored(row: RunRow, ending: RunEnding, options: { from: readonly RunStatus[]; owner?: string }): Promise<RunRow | undefined> {
      const closed = await close(row, recorderFor(row), ending, row.usage ?? zeroUsage(), { ...options, stateless: false });
      return closed?.row;
    },
  };
}

export type RunLifecycle = ReturnType<typeof createRunLifecycle>;
