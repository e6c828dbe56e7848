// What the chat view shows, as a pure fold over run events (and over a session's stored messages): the
// live stream, a replay of stored events and a reopened session all go through these functions, so they
// look the same. Rendering lives in transcript-view.tsx.
import type { RunEvent, Schemas } from '../api.ts';

export type Speaker = Schemas['Speaker'];
export type ToolCall = Schemas['ToolCall'];
export type ChatMessage = Schemas['ChatMessage'];
export type TokenUsage = Schemas['TokenUsage'];

/**
 * Something the run waits for the person to do: client-side tools to run in the page, and server-side
 * tool calls to approve or deny. One halt may ask both, and one answer gives both, so they are one action.
 * Another kind joins as a member of this union, with a reducer case and a view in actions.tsx.
 */
export type PendingAction = {
  type: 'client_tools';
  runId: string;
  sessionId: string;
  /** Every call the run waits for; those named in `approvals` are approved or denied, not run here. */
  calls: ToolCall[];
  approvals: Schemas['ApprovalRequest'][];
  from?: Speaker;
};

/** What the page answers: results of the client-side calls, decisions on the approvals. */
export interface ActionAnswer {
  results: { callId: string; output: string }[];
  approvals: Schemas['ApprovalAnswer'][];
}

export type Item =
  | { kind: 'user'; key: string; text: string }
  | {
      kind: 'assistant';
      key: string;
      text: string;
      from?: Speaker;
      /** The member run this relays, when a team shows a member's own work. */
      memberRunId?: string;
      streaming: boolean;
    }
  | {
      kind: 'tool_call';
      key: string;
      callId: string;
      name: string;
      arguments: string;
      /** `server` tools run on the server; `client` ones are answered by this page. */
      side: 'server' | 'client' | 'unknown';
      state: 'requested' | 'running' | 'done';
      output?: string;
      isError?: boolean;
      from?: Speaker;
      memberRunId?: string;
    }
  | { kind: 'action'; key: string; action: PendingAction; answered: boolean }
  | { kind: 'notice'; key: string; tone: 'info' | 'error'; text: string };

export type TranscriptStatus = 'idle' | 'running' | 'requires_action' | 'completed' | 'canceled' | 'failed';

export interface Transcript {
  items: Item[];
  sessionId: string | null;
  /** The run in progress, or the last one. */
  runId: string | null;
  status: TranscriptStatus;
  /** The last run's usage, once it ends or halts. */
  usage: TokenUsage | null;
  model: string | null;
}

export const emptyTranscript: Transcript = { items: [], sessionId: null, runId: null, status: 'idle', usage: null, model: null };

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part: { type?: string; text?: string }) => (part.type === 'text' ? (part.text ?? '') : `[${part.type ?? 'part'}]`)).join('');
  }
  return '';
}

function replaceItem(items: Item[], index: number, item: Item): Item[] {
  const next = items.slice();
  next[index] = item;
  return next;
}

function findCall(items: Item[], callId: string): number {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!;
    if (item.kind === 'tool_call' && item.callId === callId) return i;
  }
  return -1;
}

function speakerOf(event: { from?: Speaker; member_run_id?: string }): { from?: Speaker; memberRunId?: string } {
  return { ...(event.from ? { from: event.from } : {}), ...(event.member_run_id ? { memberRunId: event.member_run_id } : {}) };
}

/** The person's own message, shown at once, before the run answers. */
export function addUserMessage(state: Transcript, text: string, key: string): Transcript {
  return { ...state, items: [...state.items, { kind: 'user', key, text }], status: 'running' };
}

/** The page's answers to client-side tool calls: the cards get their results, the form is done. */
export function answerAction(state: Transcript, actionKey: string, { results }: ActionAnswer): Transcript {
  let items = state.items.map((item) => (item.kind === 'action' && item.key === actionKey ? { ...item, answered: true } : item));
  for (const result of results) {
    const at = findCall(items, result.callId);
    if (at >= 0) items = replaceItem(items, at, { ...(items[at] as Extract<Item, { kind: 'tool_call' }>), state: 'done', output: result.output });
  }
  return { ...state, items, status: 'running' };
}

export function addNotice(state: Transcript, tone: 'info' | 'error', text: string, key: string): Transcript {
  return { ...state, items: [...state.items, { kind: 'notice', key, tone, text }] };
}

/** One event folded into the transcript. */
export function applyEvent(state: Transcript, event: RunEvent): Transcript {
  const items = state.items;
  switch (event.type) {
    case 'RunStarted': {
      // A member run's own start is relayed only through its work; the team's start is the one that counts.
      const started = { ...state, runId: event.run_id, sessionId: event.session_id, status: 'running' as const, model: event.model };
      if (!event.resumed) return started;
      // Going on after a halt means the client answered: a replay, which never saw the answer, says so.
      return {
        ...started,
        items: items.map((item) =>
          item.kind === 'action' && item.action.runId === event.run_id && !item.answered
            ? { ...item, answered: true }
            : item.kind === 'tool_call' && item.side === 'client' && item.state === 'requested'
              ? { ...item, state: 'done' as const }
              : item,
        ),
      };
    }
    case 'RunResponse': {
      const key = `${event.member_run_id ?? event.run_id}:${event.message_id}`;
      const at = items.findIndex((item) => item.kind === 'assistant' && item.key === key);
      if (event.delta !== undefined) {
        if (at >= 0) {
          const item = items[at] as Extract<Item, { kind: 'assistant' }>;
          return { ...state, items: replaceItem(items, at, { ...item, text: item.text + event.delta }) };
        }
        return { ...state, items: [...items, { kind: 'assistant', key, text: event.delta, streaming: true, ...speakerOf(event) }] };
      }
      if (!event.message) return state;
      const text = textOf(event.message.content);
      let next = items;
      if (at >= 0) {
        next = replaceItem(next, at, { ...(next[at] as Extract<Item, { kind: 'assistant' }>), text, streaming: false });
      } else if (text) {
        next = [...next, { kind: 'assistant', key, text, streaming: false, ...speakerOf(event) }];
      }
      for (const call of event.message.tool_calls ?? []) {
        if (findCall(next, call.id) >= 0) continue;
        next = [
          ...next,
          {
            kind: 'tool_call',
            key: `${key}:${call.id}`,
            callId: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
            side: 'unknown',
            state: 'requested',
            ...speakerOf(event),
          },
        ];
      }
      return { ...state, items: next };
    }
    case 'ToolCallStarted': {
      const at = findCall(items, event.tool_call.id);
      const started = {
        kind: 'tool_call' as const,
        key: `${event.member_run_id ?? event.run_id}:${event.tool_call.id}`,
        callId: event.tool_call.id,
        name: event.tool_call.function.name,
        arguments: event.tool_call.function.arguments,
        side: 'server' as const,
        state: 'running' as const,
        ...speakerOf(event),
      };
      return { ...state, items: at >= 0 ? replaceItem(items, at, { ...(items[at] as typeof started), side: 'server', state: 'running' }) : [...items, started] };
    }
    case 'ToolCallCompleted': {
      const at = findCall(items, event.tool_call_id);
      const done = { state: 'done' as const, output: event.output, isError: event.is_error };
      if (at >= 0) return { ...state, items: replaceItem(items, at, { ...(items[at] as Extract<Item, { kind: 'tool_call' }>), side: 'server', ...done }) };
      return {
        ...state,
        items: [
          ...items,
          {
            kind: 'tool_call',
            key: `${event.member_run_id ?? event.run_id}:${event.tool_call_id}`,
            callId: event.tool_call_id,
            name: event.name,
            arguments: '',
            side: 'server',
            ...done,
            ...speakerOf(event),
          },
        ],
      };
    }
    case 'ToolRequest': {
      let next = items;
      const asked = new Set((event.approvals ?? []).map((approval) => approval.tool_call_id));
      for (const call of event.tool_calls) {
        // A call waiting for approval runs on the server once approved: its card shows the server's result.
        if (asked.has(call.id)) {
          const at = findCall(next, call.id);
          const card = { kind: 'tool_call' as const, key: `${event.run_id}:${call.id}`, callId: call.id, name: call.function.name, arguments: call.function.arguments, side: 'server' as const, state: 'requested' as const, ...(event.from ? { from: event.from } : {}) };
          next = at >= 0 ? replaceItem(next, at, { ...(next[at] as typeof card), side: 'server' }) : [...next, card];
          continue;
        }
        const at = findCall(next, call.id);
        const card = {
          kind: 'tool_call' as const,
          key: `${event.run_id}:${call.id}`,
          callId: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
          side: 'client' as const,
          state: 'requested' as const,
          ...(event.from ? { from: event.from } : {}),
        };
        next = at >= 0 ? replaceItem(next, at, { ...(next[at] as typeof card), side: 'client' }) : [...next, card];
      }
      const action: PendingAction = {
        type: 'client_tools',
        runId: event.run_id,
        sessionId: event.session_id,
        calls: event.tool_calls,
        approvals: event.approvals ?? [],
        ...(event.from ? { from: event.from } : {}),
      };
      return {
        ...state,
        items: [...next, { kind: 'action', key: `${event.run_id}:${event.sequence_number}`, action, answered: false }],
        sessionId: event.session_id,
        status: 'requires_action',
        usage: event.usage,
      };
    }
    case 'RunCompleted': {
      const settled = items.map((item) => (item.kind === 'assistant' && item.streaming ? { ...item, streaming: false } : item));
      const canceled = event.status === 'canceled';
      return {
        ...state,
        items: canceled ? [...settled, { kind: 'notice', key: `${event.run_id}:${event.sequence_number}`, tone: 'info', text: 'The run was cancelled.' }] : settled,
        status: canceled ? 'canceled' : 'completed',
        usage: event.usage,
      };
    }
    case 'RunError': {
      const settled = items.map((item) => (item.kind === 'assistant' && item.streaming ? { ...item, streaming: false } : item));
      return {
        ...state,
        items: [...settled, { kind: 'notice', key: `${event.run_id}:${event.sequence_number}`, tone: 'error', text: event.error.message }],
        status: 'failed',
      };
    }
  }
}

/** A session's stored history as a transcript: the same items a live run would have produced. */
export function fromMessages(messages: ChatMessage[], sessionId: string): Transcript {
  let items: Item[] = [];
  messages.forEach((message, index) => {
    const key = `history:${index}`;
    if (message.role === 'user') {
      items.push({ kind: 'user', key, text: textOf(message.content) });
    } else if (message.role === 'assistant') {
      const text = textOf(message.content);
      if (text) items.push({ kind: 'assistant', key, text, streaming: false });
      for (const call of message.tool_calls ?? []) {
        items.push({
          kind: 'tool_call',
          key: `${key}:${call.id}`,
          callId: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
          side: 'unknown',
          state: 'requested',
        });
      }
    } else if (message.role === 'tool') {
      const at = findCall(items, message.tool_call_id);
      if (at >= 0) items = replaceItem(items, at, { ...(items[at] as Extract<Item, { kind: 'tool_call' }>), state: 'done', output: textOf(message.content) });
    }
  });
  return { ...emptyTranscript, items, sessionId };
}

/** Whether an event ends a stream: after it, the run completed, failed or waits for the client. */
export function isTerminal(event: RunEvent): boolean {
  return event.type === 'RunCompleted' || event.type === 'RunError' || event.type === 'ToolRequest';
}

/** A reopened session whose last run still waits: its request, as the stream had shown it. */
export function withPendingRun(state: Transcript, run: Schemas['Run']): Transcript {
  if (run.status !== 'requires_action' || !run.required_action) return state;
  const event: RunEvent = {
    type: 'ToolRequest',
    run_id: run.id,
    sequence_number: run.last_sequence_number,
    created_at: run.updated_at,
    session_id: run.session_id,
    tool_calls: run.required_action.tool_calls,
    ...(run.required_action.approvals ? { approvals: run.required_action.approvals } : {}),
    usage: run.usage,
    ...(run.required_action.from ? { from: run.required_action.from } : {}),
  };
  return applyEvent({ ...state, runId: run.id }, event);
}
