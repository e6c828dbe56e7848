import type { components } from '../../generated/openapi.gen.ts';
import type { SseFrame } from '../../generated/server.gen.ts';

type Schemas = components['schemas'];
export type RunEvent = Schemas['RunEvent'];
export type RunEventType = RunEvent['type'];
export type Speaker = Schemas['Speaker'];
export type TokenUsage = Schemas['TokenUsage'];

/** An event before the recorder stamps it with the run id, sequence number and time. */
export type RunEventBody = RunEvent extends infer E
  ? E extends RunEvent
    ? Omit<E, 'run_id' | 'sequence_number' | 'created_at'>
    : never
  : never;

/** The events that end a stream: the run finished, failed, or waits for client-side tools. */
export function isTerminal(event: Pick<RunEvent, 'type'>): boolean {
  return event.type === 'RunCompleted' || event.type === 'RunError' || event.type === 'ToolRequest';
}

export function toFrame(event: RunEvent): SseFrame<RunEvent> {
  return { id: String(event.sequence_number), event: event.type, data: event };
}

export const zeroUsage = (): TokenUsage => ({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

export function addUsage(total: TokenUsage, more: { prompt_tokens: number; completion_tokens: number }): void {
  total.prompt_tokens += more.prompt_tokens;
  total.completion_tokens += more.completion_tokens;
  total.total_tokens = total.prompt_tokens + total.completion_tokens;
}
