// A2A's task operations over the run engine, the same for both bindings. A task is a top-level run of the
// agent or team the URL names, visible only to its owner: a task of another user, of another agent, or a
// team member's run is not found, exactly as a missing one. Nothing is stored here: the run, its events
// and its session's messages are the task.
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError, invalidRequest } from '../errors.ts';
import type { ChatMessage } from '../models/types.ts';
import type { RunEngine, RunHandle, TurnInput } from '../runs/engine.ts';
import type { RunEvent } from '../runs/events.ts';
import type { RunRow, RunStore } from '../runs/store.ts';
import { agentTurn, teamTurn, type OwnedTarget, type StartTurn } from '../runs/turns.ts';
import type { SessionTarget } from '../sessions/store.ts';
import type { Queryable } from '../store/db.ts';
import type { TeamRunner } from '../teams/runner.ts';
import { A2aError, taskNotFound } from './errors.ts';
import { toApprovals, toChatMessages } from './messages.ts';
import type { A2aPush } from './push.ts';
import {
  foldTask,
  runStatusesOf,
  statusOfRun,
  TaskProjection,
  TERMINAL_STATES,
  type A2aMessage,
  type A2aStreamResponse,
  type A2aTask,
  type A2aTaskState,
  type TaskRef,
} from './projection.ts';

type Schemas = components['schemas'];
export type A2aSendMessageRequest = Schemas['A2aSendMessageRequest'];
export type A2aListTasksRequest = Schemas['A2aListTasksRequest'];
export type A2aListTasksResponse = Schemas['A2aListTasksResponse'];

export interface Caller {
  userId: string;
  apiKeyId: string | null;
}

export interface A2aTaskDeps {
  db: Queryable;
  runs: RunStore;
  engine: RunEngine;
  teamRunner: TeamRunner;
  /** Checks that the caller owns the agent or team (another user's is not found); answers what it read. */
  ownTarget(userId: string, targetId: string): Promise<OwnedTarget>;
  /** Push notifications: configs given with a message, and the watch of a task's next turn. */
  push: A2aPush;
}

const EVENT_PAGE = 500;
const DEFAULT_PAGE_SIZE = 50;

function targetOf(targetId: string): SessionTarget {
  return targetId.startsWith('team_') ? { agentId: null, teamId: targetId } : { agentId: targetId, teamId: null };
}

const refOf = (row: Pick<RunRow, 'id' | 'session_id'>): TaskRef => ({ taskId: row.id, contextId: row.session_id });

const isTerminal = (state: A2aTaskState) => TERMINAL_STATES.includes(state);

/** A session message as an A2A message of the task's history. */
function historyMessage(ref: TaskRef, message: ChatMessage, position: number): A2aMessage | undefined {
  const base = { messageId: `${ref.taskId}-m${position}`, taskId: ref.taskId, contextId: ref.contextId };
  switch (message.role) {
    case 'user': {
      const content = message.content;
      const parts =
        typeof content === 'string' ? [{ text: content }]
        : content.map((part) => (part.type === 'text' ? { text: part.text } : part.type === 'image_url' ? { url: part.image_url.url, mediaType: 'image/*' } : { text: `[${part.type}]` }));
      return { ...base, role: 'ROLE_USER', parts };
    }
    case 'tool':
      return { ...base, role: 'ROLE_USER', parts: [{ data: { toolCallId: message.tool_call_id, output: message.content }, mediaType: 'application/json' }] };
    case 'assistant': {
      const parts = [
        ...(typeof message.content === 'string' && message.content ? [{ text: message.content }] : []),
        ...(message.tool_calls ?? []).map((call) => ({ data: { toolCallId: call.id, name: call.function.name, arguments: call.function.arguments }, mediaType: 'application/json' })),
      ];
      return parts.length ? { ...base, role: 'ROLE_AGENT', parts } : undefined;
    }
    default:
      return undefined;
  }
}

function encodeToken(at: string, id: string): string {
  return Buffer.from(JSON.stringify([at, id])).toString('base64url');
}

function decodeToken(token: string): [string, string] {
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(decoded) && decoded.length === 2 && typeof decoded[0] === 'string' && !Number.isNaN(Date.parse(decoded[0])) && typeof decoded[1] === 'string') {
      return [decoded[0], decoded[1]];
    }
  } catch {
    // Falls through to the error below.
  }
  throw invalidRequest('The page token is not one this server gave out.', 'pageToken');
}

export function createA2aTasks(deps: A2aTaskDeps) {
  const { runs, engine, db } = deps;

  const starterOf = (targetId: string, owned: OwnedTarget): StartTurn =>
    targetId.startsWith('team_') ? teamTurn(deps.teamRunner, targetId, owned.team) : agentTurn(engine, targetId, owned.agent);

  /** The caller's task of this agent or team, or TaskNotFound. */
  async function taskRow(userId: string, targetId: string, taskId: string): Promise<RunRow> {
    let row: RunRow;
    try {
      row = await runs.get(userId, taskId);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') throw taskNotFound(taskId);
      throw error;
    }
    const target = targetOf(targetId);
    if (row.parent_run_id !== null || row.agent_id !== target.agentId || row.team_id !== target.teamId) throw taskNotFound(taskId);
    return row;
  }

  async function allEvents(runId: string, upTo = Number.POSITIVE_INFINITY): Promise<RunEvent[]> {
    const out: RunEvent[] = [];
    for (let after = 0; ; ) {
      const page = await runs.events(runId, after, EVENT_PAGE);
      for (const event of page) if (event.sequence_number <= upTo) out.push(event);
      if (page.length < EVENT_PAGE || (page.at(-1)?.sequence_number ?? 0) >= upTo) return out;
      after = page.at(-1)!.sequence_number;
    }
  }

  async function history(ref: TaskRef, length: number | undefined): Promise<A2aMessage[] | undefined> {
    if (length === 0) return undefined;
    const rows = await db.query<{ message: ChatMessage; position: number }>(
      'SELECT message, position FROM session_messages WHERE session_id = $1 AND run_id = $2 ORDER BY position',
      [ref.contextId, ref.taskId],
    );
    const messages = rows.flatMap((row) => historyMessage(ref, row.message, row.position) ?? []);
    return length === undefined ? messages : messages.slice(-length);
  }

  async function withHistory(task: A2aTask, length: number | undefined): Promise<A2aTask> {
    const messages = await history({ taskId: task.id, contextId: task.contextId ?? '' }, length);
    return messages ? { ...task, history: messages } : task;
  }

  /** The projection of a task whose turn is starting: what its run said before this turn, folded. */
  async function primed(handle: RunHandle, firstSequence: number): Promise<TaskProjection> {
    const ref = refOf(handle.run);
    return firstSequence > 1 ? foldTask(ref, await allEvents(handle.run.id, firstSequence - 1)) : new TaskProjection(ref);
  }

  /** Starts the turn a message asks for: a new task, or the next turn of the one it names. */
  async function startTurn(caller: Caller, targetId: string, request: A2aSendMessageRequest): Promise<RunHandle> {
    const owned = await deps.ownTarget(caller.userId, targetId);
    const message = request.message;
    if (message.role !== 'ROLE_USER') throw invalidRequest('A message to an agent has the role ROLE_USER.', 'message.role');
    let sessionId = message.contextId || undefined;
    const pushConfig = request.configuration?.taskPushNotificationConfig;
    if (pushConfig) deps.push.checkUrl(pushConfig.url);
    let resumeAfter: number | undefined;
    if (message.taskId) {
      const row = await taskRow(caller.userId, targetId, message.taskId);
      if (sessionId && sessionId !== row.session_id) throw invalidRequest(`Task ${row.id} belongs to context ${row.session_id}, not ${sessionId}.`, 'message.contextId');
      if (row.status !== 'requires_action') {
        throw new A2aError('UnsupportedOperation', `Task ${row.id} is ${statusOfRun(refOf(row), row).state}; only a task that asks for input takes another message.`, {
          taskId: row.id,
        });
      }
      sessionId = row.session_id;
      resumeAfter = await deps.push.resumePoint(row.id);
    }
    const messages = toChatMessages(message);
    const approvals = toApprovals(message);
    if (messages.length === 0 && approvals.length === 0) throw invalidRequest('The message has no parts.', 'message.parts');
    const input: TurnInput = {
      userId: caller.userId,
      apiKeyId: caller.apiKeyId,
      conversation: { sessionId, messages },
      metadata: { protocol: 'a2a' },
      ...(approvals.length > 0 ? { approvals } : {}),
    };
    try {
      const handle = await starterOf(targetId, owned)(input, { resumable: true });
      if (pushConfig) await deps.push.create(caller.userId, handle.run.id, { ...pushConfig, taskId: handle.run.id }, { watchAfter: resumeAfter ?? 0 });
      else if (resumeAfter !== undefined) await deps.push.watch(caller.userId, handle.run.id, resumeAfter);
      return handle;
    } catch (error) {
      // A context that is not one of this agent's sessions: A2A asks to refuse it rather than start another.
      if (error instanceof ApiError && error.code === 'not_found' && sessionId && !message.taskId) {
        throw invalidRequest(`No context ${sessionId} with this ${targetId.startsWith('team_') ? 'team' : 'agent'}.`, 'message.contextId');
      }
      throw error;
    }
  }

  /** A turn's events as A2A stream events: the task first, then its updates up to the end of the turn. */
  async function* turnStream(handle: RunHandle, onEnd?: (task: TaskProjection) => void): AsyncGenerator<A2aStreamResponse> {
    const iterator = handle.events[Symbol.asyncIterator]();
    const first = await iterator.next();
    if (first.done) return;
    const projection = await primed(handle, first.value.sequence_number);
    // RunStarted makes the task working; the snapshot after it says so, and a continued task's artifacts.
    projection.project(first.value);
    yield { task: projection.task() };
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      yield* projection.project(next.value);
      if (projection.ended) break;
    }
    onEnd?.(projection);
  }

  return {
    ownTarget: deps.ownTarget,
    taskRow,

    /** SendMessage: blocks until the task ends or asks for input, or answers at once with `returnImmediately`. */
    async send(caller: Caller, targetId: string, request: A2aSendMessageRequest): Promise<A2aTask> {
      const handle = await startTurn(caller, targetId, request);
      const stream = turnStream(handle);
      const first = await stream.next();
      const snapshot = first.done ? undefined : first.value.task;
      if (request.configuration?.returnImmediately && snapshot) {
        // The run goes on without the caller; its events still need a reader until it ends.
        void (async () => {
          for await (const event of stream) void event;
        })();
        return withHistory(snapshot, request.configuration.historyLength);
      }
      for await (const event of stream) void event;
      const row = await runs.get(caller.userId, handle.run.id);
      return withHistory(foldTask(refOf(row), await allEvents(row.id)).task(), request.configuration?.historyLength);
    },

    /** SendStreamingMessage: the task, then its updates until it ends or asks for input. */
    async stream(caller: Caller, targetId: string, request: A2aSendMessageRequest): Promise<AsyncGenerator<A2aStreamResponse>> {
      const handle = await startTurn(caller, targetId, request);
      return turnStream(handle);
    },

    async get(caller: Caller, targetId: string, taskId: string, historyLength?: number): Promise<A2aTask> {
      await deps.ownTarget(caller.userId, targetId);
      const row = await taskRow(caller.userId, targetId, taskId);
      return withHistory(foldTask(refOf(row), await allEvents(row.id)).task(), historyLength);
    },

    /** The caller's tasks of this agent or team, most recently updated first. */
    async list(caller: Caller, targetId: string, request: A2aListTasksRequest): Promise<A2aListTasksResponse> {
      await deps.ownTarget(caller.userId, targetId);
      const pageSize = request.pageSize ?? DEFAULT_PAGE_SIZE;
      const statuses = request.status && request.status !== 'TASK_STATE_UNSPECIFIED' ? runStatusesOf(request.status) : undefined;
      const cursor = request.pageToken ? decodeToken(request.pageToken) : undefined;
      const target = targetOf(targetId);
      const filters = `user_id = $1 AND parent_run_id IS NULL AND agent_id IS NOT DISTINCT FROM $2 AND team_id IS NOT DISTINCT FROM $3
         AND ($4::text IS NULL OR session_id = $4) AND ($5::jsonb IS NULL OR status IN (SELECT jsonb_array_elements_text($5::jsonb)))
         AND ($6::timestamptz IS NULL OR updated_at > $6)`;
      const params = [caller.userId, target.agentId, target.teamId, request.contextId || null, statuses ? JSON.stringify(statuses) : null, request.statusTimestampAfter ?? null];
      const rows = await db.query<Pick<RunRow, 'id' | 'session_id' | 'status' | 'required_action' | 'error' | 'updated_at'> & { at: string }>(
        `SELECT id, session_id, status, required_action, error, updated_at,
                to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
         FROM runs WHERE ${filters} AND ($7::timestamptz IS NULL OR (updated_at, id) < ($7::timestamptz, $8::text))
         ORDER BY updated_at DESC, id DESC LIMIT $9`,
        [...params, cursor?.[0] ?? null, cursor?.[1] ?? null, pageSize + 1],
      );
      const [count] = await db.query<{ total: number }>(`SELECT count(*)::int AS total FROM runs WHERE ${filters}`, params);
      const page = rows.slice(0, pageSize);
      const tasks: A2aTask[] = [];
      for (const row of page) {
        const ref = refOf(row);
        let task: A2aTask;
        if (request.includeArtifacts) task = foldTask(ref, await allEvents(row.id)).task();
        else task = { id: ref.taskId, contextId: ref.contextId, status: statusOfRun(ref, row) };
        tasks.push(request.historyLength !== undefined && request.historyLength > 0 ? await withHistory(task, request.historyLength) : task);
      }
      const last = page.at(-1);
      return { tasks, nextPageToken: rows.length > pageSize && last ? encodeToken(last.at, last.id) : '', pageSize, totalSize: count?.total ?? 0 };
    },

    /** CancelTask: cancels the run; a task already finished is not cancelable. */
    async cancel(caller: Caller, targetId: string, taskId: string): Promise<A2aTask> {
      await deps.ownTarget(caller.userId, targetId);
      const row = await taskRow(caller.userId, targetId, taskId);
      const state = statusOfRun(refOf(row), row).state;
      if (isTerminal(state)) throw new A2aError('TaskNotCancelable', `Task ${taskId} is already ${state}.`, { taskId });
      await engine.cancel(caller.userId, taskId);
      return foldTask(refOf(row), await allEvents(row.id)).task();
    },

    /** SubscribeToTask: the task as it is, then its updates from whichever server runs it, until it ends or asks for input. */
    async subscribe(caller: Caller, targetId: string, taskId: string, signal: AbortSignal): Promise<AsyncGenerator<A2aStreamResponse>> {
      await deps.ownTarget(caller.userId, targetId);
      const row = await taskRow(caller.userId, targetId, taskId);
      const state = statusOfRun(refOf(row), row).state;
      if (isTerminal(state)) throw new A2aError('UnsupportedOperation', `Task ${taskId} is ${state}; there is nothing left to follow.`, { taskId });
      const stored = await allEvents(row.id);
      const projection = foldTask(refOf(row), stored);
      const after = stored.at(-1)?.sequence_number ?? 0;
      return (async function* () {
        yield { task: projection.task() };
        if (projection.ended) return;
        for await (const event of engine.follow(caller.userId, taskId, after, signal)) {
          yield* projection.project(event);
          if (projection.ended) return;
        }
      })();
    },
  };
}

export type A2aTasks = ReturnType<typeof createA2aTasks>;
