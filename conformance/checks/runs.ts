// Shared steps of the chat checks: a streamed turn judged as a run stream, and the replay of a run's
// stored events compared with what was streamed live.
import type { OperationId } from '../contract.ts';
import type { Context, Schemas } from '../context.ts';
import { analyseRunStream, type RunStream } from '../streams.ts';
import { pageThrough } from './pagination.ts';

export type RunEvent = Schemas['RunEvent'];

/** Posts a chat turn as a stream and checks it as one turn of a run. */
export async function streamTurn(
  t: Context,
  operationId: Extract<OperationId, 'chatWithAgent' | 'chatWithTeam'>,
  params: Record<string, string>,
  body: Record<string, unknown>,
  how: 'stream: true' | 'Accept: text/event-stream' = 'stream: true',
): Promise<RunStream> {
  const answer = await t.call(operationId, {
    params,
    body: how === 'stream: true' ? { ...body, stream: true } : body,
    ...(how === 'stream: true' ? {} : { accept: 'text/event-stream' }),
    expect: 200,
  });
  t.require(operationId, answer.mediaType === 'text/event-stream', `a chat with ${how} answered ${answer.mediaType}, not text/event-stream`);
  const stream = analyseRunStream(answer.events ?? [], 'turn');
  for (const problem of stream.problems) t.check(operationId, false, `the run stream (${how}): ${problem}`);
  if (stream.terminal?.type === 'RunError') {
    const error = (stream.terminal as Schemas['RunErrorEvent']).error;
    t.check(operationId, false, `the run failed: ${error.code}: ${error.message}`);
  }
  return stream;
}

/** Replays a run's events as a stream, from the start or after `lastEventId`. */
export async function replay(t: Context, runId: string, lastEventId?: number): Promise<RunStream> {
  const answer = await t.call('listRunEvents', {
    params: { runId },
    accept: 'text/event-stream',
    ...(lastEventId === undefined ? {} : { headers: { 'Last-Event-ID': String(lastEventId) } }),
    expect: 200,
  });
  t.require('listRunEvents', answer.mediaType === 'text/event-stream', `GET /v1/runs/{runId}/events answered ${answer.mediaType} to Accept: text/event-stream`);
  const stream = analyseRunStream(answer.events ?? [], lastEventId === undefined ? 'replay' : 'tail');
  for (const problem of stream.problems) t.check('listRunEvents', false, `the replay of ${runId}${lastEventId === undefined ? '' : ` after ${lastEventId}`}: ${problem}`);
  return stream;
}

const sequence = (stream: RunStream) => stream.events.map((event) => `${event.sequence_number}:${event.type}`).join(' ');

/** The run's stored events, streamed and paged, are exactly the events its turns streamed live. */
export async function checkReplay(t: Context, runId: string, live: RunStream[]): Promise<void> {
  const expected = live.flatMap((stream) => stream.events);
  const liveSequence = expected.map((event) => `${event.sequence_number}:${event.type}`).join(' ');
  const full = await replay(t, runId);
  t.check('listRunEvents', sequence(full) === liveSequence, `the replay (${sequence(full)}) differs from the live stream (${liveSequence})`);

  const middle = expected[Math.floor(expected.length / 2)];
  if (middle) {
    const tail = expected.filter((event) => event.sequence_number > middle.sequence_number);
    const resumed = await replay(t, runId, middle.sequence_number);
    const tailSequence = tail.map((event) => `${event.sequence_number}:${event.type}`).join(' ');
    t.check('listRunEvents', sequence(resumed) === tailSequence, `with Last-Event-ID: ${middle.sequence_number} the replay is (${sequence(resumed)}), expected (${tailSequence})`);
  }
  const paged = await pageThrough(t, 'listRunEvents', { params: { runId }, accept: 'application/json' });
  const numbers = expected.map((event) => String(event.sequence_number));
  t.check('listRunEvents', paged.ids.join(' ') === numbers.join(' '), `the JSON pages list events ${paged.ids.join(' ')}, expected ${numbers.join(' ')}`);
}

/** The tool messages answering every call of a `ToolRequest`. */
export function toolResults(toolCalls: Schemas['ToolCall'][]): { role: 'tool'; tool_call_id: string; content: string }[] {
  return toolCalls.map((call) => ({ role: 'tool', tool_call_id: call.id, content: '{"answer": "conformance result"}' }));
}
