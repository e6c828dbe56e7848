// A2A tasks as a projection of run events. A task is a run (its id the run's id) and its context the run's
// session. Each message the run says is an artifact (its id the message's id), streamed as artifact
// updates while its text is produced; the run's end is a status update:
//   - RunStarted (the run, or its continuation after tool results): TASK_STATE_WORKING;
//   - ToolRequest: TASK_STATE_INPUT_REQUIRED, its status message an agent message with a `data` part per
//     pending call of a client-side tool, `{toolCallId, name, arguments}`, and per server-side call waiting
//     for approval, `{toolCallId, name, arguments, approvalRequired: true, mcpServer?}`;
//   - RunCompleted: TASK_STATE_COMPLETED, or TASK_STATE_CANCELED;
//   - RunError: TASK_STATE_FAILED, its status message the error's text.
// A team member's own work is the member's conversation, not the team's answer: it is left out, as the
// turn fold leaves it out. The same fold answers GetTask, so a stream and a later read cannot disagree.
import type { components } from '../../generated/openapi.gen.ts';
import type { ToolCall } from '../models/types.ts';
import type { RunEvent } from '../runs/events.ts';
import type { RunRow, RunStatus } from '../runs/store.ts';

type Schemas = components['schemas'];
export type A2aTask = Schemas['A2aTask'];
export type A2aTaskState = Schemas['A2aTaskState'];
export type A2aTaskStatus = Schemas['A2aTaskStatus'];
export type A2aMessage = Schemas['A2aMessage'];
export type A2aPart = Schemas['A2aPart'];
export type A2aArtifact = Schemas['A2aArtifact'];
export type A2aStreamResponse = Schemas['A2aStreamResponse'];

export interface TaskRef {
  taskId: string;
  contextId: string;
}

/** The states after which a task takes no more messages. */
export const TERMINAL_STATES: readonly A2aTaskState[] = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];

const STATE_OF_RUN: Record<RunStatus, A2aTaskState> = {
  queued: 'TASK_STATE_SUBMITTED',
  in_progress: 'TASK_STATE_WORKING',
  requires_action: 'TASK_STATE_INPUT_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  canceled: 'TASK_STATE_CANCELED',
};

export const stateOfRun = (status: RunStatus): A2aTaskState => STATE_OF_RUN[status];

/** The run statuses a task state stands for (none for states a run never has). */
export function runStatusesOf(state: A2aTaskState): RunStatus[] {
  return (Object.keys(STATE_OF_RUN) as RunStatus[]).filter((status) => STATE_OF_RUN[status] === state);
}

function parsedArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The agent's request for input: one `data` part per pending client-side tool call. */
export function inputRequest(ref: TaskRef, calls: ToolCall[], approvals: readonly Schemas['ApprovalRequest'][] = []): A2aMessage {
  const asking = new Map(approvals.map((approval) => [approval.tool_call_id, approval]));
  const approvalOf = (call: ToolCall) => {
    const approval = asking.get(call.id);
    return approval ? { approvalRequired: true, ...(approval.mcp ? { mcpServer: approval.mcp.server } : {}) } : {};
  };
  return {
    messageId: `${ref.taskId}-input-${calls[0]?.id ?? 'none'}`,
    taskId: ref.taskId,
    contextId: ref.contextId,
    role: 'ROLE_AGENT',
    parts: calls.map((call) => ({
      data: { toolCallId: call.id, name: call.function.name, arguments: parsedArguments(call.function.arguments), ...approvalOf(call) },
      mediaType: 'application/json',
    })),
  };
}

function failureMessage(ref: TaskRef, text: string): A2aMessage {
  return { messageId: `${ref.taskId}-error`, taskId: ref.taskId, contextId: ref.contextId, role: 'ROLE_AGENT', parts: [{ text }] };
}

/** A task's status as its stored run has it, for lists, which do not read each run's events. */
export function statusOfRun(ref: TaskRef, row: Pick<RunRow, 'status' | 'required_action' | 'error' | 'updated_at'>): A2aTaskStatus {
  const state = stateOfRun(row.status);
  const message =
    state === 'TASK_STATE_INPUT_REQUIRED' && row.required_action ? inputRequest(ref, row.required_action.tool_calls, row.required_action.approvals)
    : state === 'TASK_STATE_FAILED' && row.error ? failureMessage(ref, row.error.message)
    : undefined;
  return { state, timestamp: row.updated_at.toISOString(), ...(message ? { message } : {}) };
}

interface OpenArtifact {
  artifact: A2aArtifact;
  streamed: boolean;
  complete: boolean;
}

/**
 * Folds one task's run events into its state and artifacts, and answers each event as the A2A stream
 * events it becomes. Stateful only in what the run said so far.
 */
export class TaskProjection {
  readonly ref: TaskRef;
  #state: A2aTaskState = 'TASK_STATE_SUBMITTED';
  #message: A2aMessage | undefined;
  #timestamp: string | undefined;
  #artifacts = new Map<string, OpenArtifact>();
  /** Whether the last event folded ended the stream: the task finished or waits for input. */
  ended = false;

  constructor(ref: TaskRef) {
    this.ref = ref;
  }

  get state(): A2aTaskState {
    return this.#state;
  }

  /** The task as the events folded so far make it. */
  task(options: { artifacts?: boolean } = {}): A2aTask {
    const status: A2aTaskStatus = { state: this.#state, ...(this.#timestamp ? { timestamp: this.#timestamp } : {}), ...(this.#message ? { message: structuredClone(this.#message) } : {}) };
    return {
      id: this.ref.taskId,
      contextId: this.ref.contextId,
      status,
      ...(options.artifacts === false ? {} : { artifacts: [...this.#artifacts.values()].map((open) => structuredClone(open.artifact)) }),
    };
  }

  /** Folds an event; answers what a stream of the task sends for it. */
  project(event: RunEvent): A2aStreamResponse[] {
    if ('member_run_id' in event && event.member_run_id !== undefined) return [];
    switch (event.type) {
      case 'RunStarted': {
        const resumed = this.#state === 'TASK_STATE_INPUT_REQUIRED';
        this.#setStatus('TASK_STATE_WORKING', undefined, event.created_at);
        this.ended = false;
        return resumed ? [this.#statusUpdate()] : [];
      }
      case 'RunResponse':
        return this.#response(event);
      case 'ToolRequest':
        this.#setStatus('TASK_STATE_INPUT_REQUIRED', inputRequest(this.ref, event.tool_calls, event.approvals), event.created_at);
        return this.#end();
      case 'RunCompleted':
        this.#setStatus(event.status === 'canceled' ? 'TASK_STATE_CANCELED' : 'TASK_STATE_COMPLETED', undefined, event.created_at);
        return this.#end();
      case 'RunError':
        this.#setStatus('TASK_STATE_FAILED', failureMessage(this.ref, event.error.message), event.created_at);
        return this.#end();
      default:
        return [];
    }
  }

  #response(event: Extract<RunEvent, { type: 'RunResponse' }>): A2aStreamResponse[] {
    let open = this.#artifacts.get(event.message_id);
    if (!open) {
      open = { artifact: { artifactId: event.message_id, ...(event.from?.name ? { name: event.from.name } : {}), parts: [] }, streamed: false, complete: false };
      this.#artifacts.set(event.message_id, open);
    }
    if (event.delta !== undefined) {
      const append = open.streamed;
      const part = open.artifact.parts[0];
      if (part && typeof part.text === 'string') part.text += event.delta;
      else open.artifact.parts = [{ text: event.delta }];
      open.streamed = true;
      return [this.#artifactUpdate(open.artifact, [{ text: event.delta }], append, false)];
    }
    if (!event.message || open.complete) return [];
    open.complete = true;
    const text = typeof event.message.content === 'string' ? event.message.content : '';
    if (open.streamed) {
      // The text came in deltas; the whole message says that it is all there.
      open.artifact.parts = [{ text }];
      return [this.#artifactUpdate(open.artifact, [{ text: '' }], true, true)];
    }
    if (!text) {
      // A message of tool calls only: nothing to show; its artifact is not one.
      this.#artifacts.delete(event.message_id);
      return [];
    }
    open.artifact.parts = [{ text }];
    return [this.#artifactUpdate(open.artifact, [{ text }], false, true)];
  }

  #artifactUpdate(artifact: A2aArtifact, parts: A2aPart[], append: boolean, lastChunk: boolean): A2aStreamResponse {
    return {
      artifactUpdate: {
        taskId: this.ref.taskId,
        contextId: this.ref.contextId,
        artifact: { artifactId: artifact.artifactId, ...(artifact.name ? { name: artifact.name } : {}), parts },
        append,
        lastChunk,
      },
    };
  }

  #setStatus(state: A2aTaskState, message: A2aMessage | undefined, timestamp: string): void {
    this.#state = state;
    this.#message = message;
    this.#timestamp = timestamp;
  }

  #statusUpdate(): A2aStreamResponse {
    const { status } = this.task({ artifacts: false });
    return { statusUpdate: { taskId: this.ref.taskId, contextId: this.ref.contextId, status } };
  }

  #end(): A2aStreamResponse[] {
    this.ended = true;
    return [this.#statusUpdate()];
  }
}

/** A task from all of its run's events. */
export function foldTask(ref: TaskRef, events: Iterable<RunEvent>): TaskProjection {
  const projection = new TaskProjection(ref);
  for (const event of events) projection.project(event);
  return projection;
}
