import { ApiError, type FieldLocation } from '../errors.ts';
import type { AppHandlers } from '../http/operations.ts';
import type { RunEngine } from './engine.ts';
import { toFrame } from './events.ts';
import { toRun, type RunStore } from './store.ts';

// Sequence numbers are stored as 32-bit integers; a larger one, which ten digits allow, means "after
// every event" and must not reach the store, which would refuse it.
const LAST_SEQUENCE = 2 ** 31 - 1;

function sequenceOf(value: string | undefined, field: string, where: FieldLocation): number {
  if (value === undefined) return 0;
  if (!/^\d{1,10}$/.test(value)) {
    throw new ApiError('invalid_request', `${field} must be an event's sequence number.`, { details: [{ field, in: where, message: 'not a sequence number' }] });
  }
  return Math.min(Number(value), LAST_SEQUENCE);
}

export function runHandlers(deps: { runs: RunStore; engine: RunEngine }) {
  return {
    async getRun({ auth, params }) {
      return { status: 200, body: toRun(await deps.runs.get(auth.userId, params.runId)) };
    },

    async cancelRun({ auth, params }) {
      return { status: 200, body: toRun(await deps.engine.cancel(auth.userId, params.runId)) };
    },

    async listRunEvents({ auth, params, query, headers, signal, shuttingDown }) {
      const accept = headers.accept ?? '';
      if (accept.includes('application/json') && !accept.includes('text/event-stream')) {
        await deps.runs.get(auth.userId, params.runId);
        const limit = query.limit ?? 20;
        const events = await deps.runs.events(params.runId, sequenceOf(query.after, 'after', 'query'), limit + 1);
        const page = events.slice(0, limit);
        const hasMore = events.length > limit;
        return {
          status: 200,
          body: { object: 'list', data: page, has_more: hasMore, next_cursor: hasMore ? String(page[page.length - 1]!.sequence_number) : null },
        };
      }
      const after = sequenceOf(headers['last-event-id'], 'last-event-id', 'headers');
      // Checks ownership before the stream starts, so that a stranger gets a 404, not an empty stream.
      await deps.runs.get(auth.userId, params.runId);
      // A run executing on another server outlives this one's shutdown: its replay ends there, and the
      // client resumes from its Last-Event-ID elsewhere rather than hold up the drain.
      const events = deps.engine.follow(auth.userId, params.runId, after, AbortSignal.any([signal, shuttingDown]));
      return {
        status: 200,
        stream: (async function* () {
          for await (const event of events) yield toFrame(event);
        })(),
      };
    },
  } satisfies Partial<AppHandlers>;
}
