// Stamps a run's events with strictly increasing sequence numbers and hands them to live listeners at
// once; an event sink shared by every run stores them in batches. One insert per batch for all runs keeps
// a thousand concurrent token streams from becoming a thousand single-row writes every few milliseconds.
import type { Logger } from 'pino';
import type { RunEvent, RunEventBody } from './events.ts';
import type { RunStore } from './store.ts';

const FLUSH_DELAY_MS = 25;
const FLUSH_SIZE = 500;

export interface EventSink {
  add(event: RunEvent): void;
  /** Stores everything added so far; batches are written in order. */
  flush(): Promise<void>;
}

export function createEventSink(store: RunStore, log: Logger): EventSink {
  let buffer: RunEvent[] = [];
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    const batch = buffer;
    buffer = [];
    // A failed batch is logged and reported to its caller; later batches still go out.
    flushing = flushing
      .catch(() => undefined)
      .then(async () => {
        if (batch.length === 0) return;
        try {
          await store.appendEvents(batch);
        } catch (error) {
          log.error({ err: error, events: batch.length }, 'storing run events failed');
          throw error;
        }
      });
    return flushing;
  };
  return {
    add(event) {
      buffer.push(event);
      if (buffer.length >= FLUSH_SIZE) void flush().catch(() => undefined);
      else timer ??= setTimeout(() => void flush().catch(() => undefined), FLUSH_DELAY_MS);
    },
    flush,
  };
}

export class RunRecorder {
  readonly runId: string;
  #sequence: number;
  #listeners = new Set<(event: RunEvent) => void>();
  #sink: EventSink;
  #clock: () => number;

  constructor(sink: EventSink, runId: string, lastSequence: number, clock: () => number) {
    this.runId = runId;
    this.#sequence = lastSequence;
    this.#sink = sink;
    this.#clock = clock;
  }

  get lastSequence(): number {
    return this.#sequence;
  }

  subscribe(listener: (event: RunEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(body: RunEventBody): RunEvent {
    this.#sequence += 1;
    const event = {
      ...body,
      run_id: this.runId,
      sequence_number: this.#sequence,
      created_at: new Date(this.#clock()).toISOString(),
    } as RunEvent;
    this.#sink.add(event);
    for (const listener of this.#listeners) listener(event);
    return event;
  }

  /** Stores this run's events (and any other run's buffered with them). */
  flush(): Promise<void> {
    return this.#sink.flush();
  }
}
