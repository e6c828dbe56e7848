// A run's events are durable before anyone sees them. A recorder keeps what its run says; the sink
// shared by every run takes it, numbers it, stores it in one batch with every other run's (group commit:
// while one batch is being written the next one gathers) and only then hands it to the run's listeners.
// So a client never sees an event that a restart could take back, and a stream, a replay and a follower
// on another server all read the same log.
//
// What the store cannot keep up with is coalesced, not queued: text deltas of one message that arrive
// while the previous batch is being written join into one event. A stream then gets fewer, larger deltas
// under load instead of falling behind, and the number of rows written per second follows what the store
// can take rather than how fast models produce tokens.
import type { Logger } from 'pino';
import type { RunEvent, RunEventBody } from './events.ts';

/** The most events one statement stores; the rest wait for the next. */
const BATCH_LIMIT = 2_000;

export interface EventLog {
  /** Stores events of any runs at once; throws when any of them cannot be stored. */
  appendEvents(events: RunEvent[]): Promise<void>;
}

type Said = { body: RunEventBody; at: number };

export class EventSink {
  #log: EventLog;
  #logger: Logger;
  /** Recorders with something to store, in the order they first had it. */
  #waiting = new Set<RunRecorder>();
  #writing = false;
  /** Batches written so far, and flushes waiting for a batch to be written. */
  #cycles = 0;
  #waiters: { cycle: number; resolve: () => void }[] = [];

  constructor(log: EventLog, logger: Logger) {
    this.#log = log;
    this.#logger = logger;
  }

  /** A recorder has something new to store. */
  schedule(recorder: RunRecorder): void {
    this.#waiting.add(recorder);
    if (this.#writing) return;
    this.#writing = true;
    // What is said in this turn of the event loop goes out together.
    setImmediate(() => void this.#drain());
  }

  /** Resolves once everything said so far has been stored and published (or given up as lost). */
  flush(): Promise<void> {
    if (!this.#writing && this.#waiting.size === 0) return Promise.resolve();
    // A batch being written took what was said before it; what was said since goes in the one after.
    const cycle = this.#cycles + (this.#writing ? 2 : 1);
    return new Promise((resolve) => this.#waiters.push({ cycle, resolve }));
  }

  async #drain(): Promise<void> {
    try {
      while (this.#waiting.size > 0) {
        const batch: { recorder: RunRecorder; events: RunEvent[] }[] = [];
        let size = 0;
        for (const recorder of this.#waiting) {
          if (size >= BATCH_LIMIT) break;
          this.#waiting.delete(recorder);
          const events = recorder.take();
          if (events.length === 0) continue;
          batch.push({ recorder, events });
          size += events.length;
        }
        if (batch.length > 0) await this.#write(batch);
        this.#cycles += 1;
        this.#release();
      }
    } finally {
      this.#writing = false;
      this.#cycles += 1;
      this.#release();
    }
  }

  #release(): void {
    this.#waiters = this.#waiters.filter((waiter) => {
      if (waiter.cycle > this.#cycles) return true;
      waiter.resolve();
      return false;
    });
  }

  /** Stores a batch; when that fails, each run's events on their own, so one run's fault loses no other's. */
  async #write(batch: { recorder: RunRecorder; events: RunEvent[] }[]): Promise<void> {
    try {
      await this.#log.appendEvents(batch.flatMap((item) => item.events));
      for (const { recorder, events } of batch) for (const event of events) recorder.published(event);
      return;
    } catch (error) {
      this.#logger.warn({ err: error, runs: batch.length }, 'storing a batch of run events failed; storing each run on its own');
    }
    for (const { recorder, events } of batch) {
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

/** Two pieces of text of the same message from the same speaker, which one event can carry. */
function joinable(previous: RunEventBody, next: RunEventBody): boolean {
  return (
    previous.type === 'RunResponse' &&
    next.type === 'RunResponse' &&
    previous.delta !== undefined &&
    previous.message === undefined &&
    next.delta !== undefined &&
    next.message === undefined &&
    previous.message_id === next.message_id &&
    previous.member_run_id === next.member_run_id &&
    previous.from?.agent_id === next.from?.agent_id &&
    previous.from?.name === next.from?.name
  );
}

export class RunRecorder {
  readonly runId: string;
  #sequence: number;
  #stored: number;
  #said: Said[] = [];
  #listeners = new Set<(event: RunEvent) => void>();
  #sink: EventSink;
  #clock: () => number;
  #lost: unknown;
  #onLost: ((error: unknown) => void) | undefined;
  /** Events taken for storage and not yet stored, and flushes waiting for this run to be stored. */
  #inFlight = 0;
  #flushes: (() => void)[] = [];

  constructor(sink: EventSink, runId: string, lastSequence: number, clock: () => number) {
    this.runId = runId;
    this.#sequence = lastSequence;
    this.#stored = lastSequence;
    this.#sink = sink;
    this.#clock = clock;
  }

  /** The number of the last event numbered (taken for storage). */
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

  /** Keeps what the run says, to be numbered and stored with the next batch; listeners hear it then. */
  emit(body: RunEventBody): void {
    // A run whose events cannot be stored is stopping: what it still says is dropped.
    if (this.lost) return;
    const last = this.#said.at(-1);
    if (last && joinable(last.body, body)) {
      last.body = { ...last.body, delta: `${(last.body as { delta: string }).delta}${(body as { delta: string }).delta}` } as RunEventBody;
      return;
    }
    this.#said.push({ body, at: this.#clock() });
    if (this.#said.length === 1) this.#sink.schedule(this);
  }

  /** What was said since the last batch, numbered: the sink's part. */
  take(): RunEvent[] {
    const said = this.#said;
    this.#said = [];
    if (this.lost) return [];
    this.#inFlight += said.length;
    return said.map(({ body, at }) => this.#number(body, at));
  }

  /** Numbers an event at once, outside any batch: the run's last event, which its ending stores itself. */
  stamp(body: RunEventBody): RunEvent {
    return this.#number(body, this.#clock());
  }

  #number(body: RunEventBody, at: number): RunEvent {
    this.#sequence += 1;
    return { ...body, run_id: this.runId, sequence_number: this.#sequence, created_at: new Date(at).toISOString() } as RunEvent;
  }

  /** Hands a stored event to the listeners. */
  published(event: RunEvent): void {
    this.#stored = event.sequence_number;
    if (this.#inFlight > 0) this.#inFlight -= 1;
    for (const listener of this.#listeners) listener(event);
    this.#settle();
  }

  #settle(): void {
    if (this.#said.length > 0 || this.#inFlight > 0) return;
    const flushes = this.#flushes;
    this.#flushes = [];
    for (const resolve of flushes) resolve();
  }

  /**
   * Gives up on events that could not be stored: numbering goes back to the last stored event, which no
   * listener has gone past, so the run's log stays gapless.
   */
  lose(error: unknown): void {
    if (this.#lost !== undefined) return;
    this.#lost = error;
    this.#said = [];
    this.#inFlight = 0;
    this.#sequence = this.#stored;
    this.#onLost?.(error);
    this.#settle();
  }

  /** Resolves once everything this run has said is stored and published (or given up as lost). */
  flush(): Promise<void> {
    if (this.#said.length === 0 && this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#flushes.push(resolve));
  }
}
