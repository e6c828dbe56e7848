// A run's events are durable before anyone sees them. A recorder stamps each event with the run's next
// sequence number; the sink shared by every run stores them in batches (group commit: while one batch
// is being written the next one gathers, so a thousand token streams make a few writes, not a thousand)
// and only then hands them to the run's live listeners. So a client never sees an event that a restart
// could take back, and a stream, a replay and a follower on another server all read the same log.
import type { Logger } from 'pino';
import type { RunEvent, RunEventBody } from './events.ts';

const BATCH_LIMIT = 1_000;

export interface EventLog {
  /** Stores events of any runs at once; throws when any of them cannot be stored. */
  appendEvents(events: RunEvent[]): Promise<void>;
}

interface Pending {
  recorder: RunRecorder;
  event: RunEvent;
}

export class EventSink {
  #log: EventLog;
  #logger: Logger;
  #buffer: Pending[] = [];
  #writing = false;
  #added = 0;
  #done = 0;
  #waiters: { upTo: number; resolve: () => void }[] = [];

  constructor(log: EventLog, logger: Logger) {
    this.#log = log;
    this.#logger = logger;
  }

  add(recorder: RunRecorder, event: RunEvent): void {
    this.#buffer.push({ recorder, event });
    this.#added += 1;
    if (!this.#writing) {
      this.#writing = true;
      // The events emitted in this turn of the event loop go out together.
      setImmediate(() => void this.#drain());
    }
  }

  /** Resolves once every event added so far has been stored and published (or given up as lost). */
  flush(): Promise<void> {
    if (this.#done >= this.#added) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ upTo: this.#added, resolve }));
  }

  async #drain(): Promise<void> {
    try {
      while (this.#buffer.length > 0) {
        const batch = this.#buffer.splice(0, BATCH_LIMIT);
        await this.#write(batch);
        this.#done += batch.length;
        this.#waiters = this.#waiters.filter((waiter) => {
          if (waiter.upTo > this.#done) return true;
          waiter.resolve();
          return false;
        });
      }
    } finally {
      this.#writing = false;
    }
  }

  /** Stores a batch; when that fails, each run's events on their own, so one run's fault loses no other's. */
  async #write(batch: Pending[]): Promise<void> {
    const live = batch.filter((item) => !item.recorder.lost);
    try {
      await this.#log.appendEvents(live.map((item) => item.event));
      for (const item of live) item.recorder.published(item.event);
      return;
    } catch (error) {
      this.#logger.warn({ err: error, events: live.length }, 'storing a batch of run events failed; storing each run on its own');
    }
    const byRun = new Map<RunRecorder, RunEvent[]>();
    for (const item of live) byRun.set(item.recorder, [...(byRun.get(item.recorder) ?? []), item.event]);
    for (const [recorder, events] of byRun) {
      if (recorder.lost) continue;
      try {
        await this.#log.appendEvents(events);
        for (const event of events) recorder.published(event);
      } catch (error) {
        this.#logger.error({ err: error, runId: recorder.runId }, 'storing run events failed; the run stops');
        recorder.lose(error);
      }
    }
  }
}

export class RunRecorder {
  readonly runId: string;
  #sequence: number;
  #stored: number;
  #listeners = new Set<(event: RunEvent) => void>();
  #sink: EventSink;
  #clock: () => number;
  #lost: unknown;
  #onLost: ((error: unknown) => void) | undefined;

  constructor(sink: EventSink, runId: string, lastSequence: number, clock: () => number) {
    this.runId = runId;
    this.#sequence = lastSequence;
    this.#stored = lastSequence;
    this.#sink = sink;
    this.#clock = clock;
  }

  /** The number of the last event emitted. */
  get lastSequence(): number {
    return this.#sequence;
  }

  /** The number of the last event stored, which every listener has seen. */
  get lastStored(): number {
    return this.#stored;
  }

  get lost(): boolean {
    return this.#lost !== undefined;
  }

  /** Hears events once they are stored. */
  subscribe(listener: (event: RunEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Called when this run's events could not be stored: it must stop. */
  onLost(handler: (error: unknown) => void): void {
    this.#onLost = handler;
  }

  /** Numbers an event and queues it for storage; listeners hear it once it is stored. */
  emit(body: RunEventBody): RunEvent {
    // A run whose events cannot be stored is stopping: what it still says is dropped, unnumbered.
    if (this.lost) return { ...body, run_id: this.runId, sequence_number: this.#stored, created_at: new Date(this.#clock()).toISOString() } as RunEvent;
    const event = this.stamp(body);
    this.#sink.add(this, event);
    return event;
  }

  /** Numbers an event without queueing it: the run's last event, which its ending stores itself. */
  stamp(body: RunEventBody): RunEvent {
    this.#sequence += 1;
    return { ...body, run_id: this.runId, sequence_number: this.#sequence, created_at: new Date(this.#clock()).toISOString() } as RunEvent;
  }

  /** Hands a stored event to the listeners. */
  published(event: RunEvent): void {
    this.#stored = event.sequence_number;
    for (const listener of this.#listeners) listener(event);
  }

  /**
   * Gives up on events that could not be stored: numbering goes back to the last stored event, which no
   * listener has gone past, so the run's log stays gapless.
   */
  lose(error: unknown): void {
    if (this.#lost !== undefined) return;
    this.#lost = error;
    this.#sequence = this.#stored;
    this.#onLost?.(error);
  }

  /** Stores this run's events (and any other run's buffered with them). */
  flush(): Promise<void> {
    return this.#sink.flush();
  }
}
