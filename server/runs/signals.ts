// What servers tell each other about runs, over the database's own LISTEN/NOTIFY: no Redis needed, and
// no message can outrun the data it is about, because PostgreSQL delivers a notification only when the
// transaction that sent it commits. Two channels:
// - `oaa_run_events`, payload `<runId> <last sequence number>[,<runId> <last sequence number>…]`: events
//   of these runs were stored (sent by the statement that stores them, so by every server and by the
//   lifecycle's final transaction alike);
// - `oaa_run_cancel`, payload `<runId>`: a cancel arrived at a server that does not execute the run.
// A notification only says "look at the store": the store stays the one log, so a missed notification
// (the listening connection dropped and came back) costs a look, never an event.
import type { Logger } from 'pino';
import type { Db } from '../store/db.ts';

export const RUN_EVENTS_CHANNEL = 'oaa_run_events';
export const RUN_CANCEL_CHANNEL = 'oaa_run_cancel';

/** Told that a run's events up to `sequence` are stored; `undefined` when notifications may have been missed. */
export type Wake = (sequence: number | undefined) => void;

export interface RunSignals {
  /** Wakes `wake` whenever events of the run are stored, by any server. Answers the unwatch. */
  watch(runId: string, wake: Wake): () => void;
  /** Calls `handler` with the id of every run whose cancellation was asked at any server. */
  onCancel(handler: (runId: string) => void): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createRunSignals(db: Db, logger: Logger): RunSignals {
  const watchers = new Map<string, Set<Wake>>();
  const cancelHandlers: ((runId: string) => void)[] = [];
  const unlisten: (() => Promise<void>)[] = [];

  function wakeAll(): void {
    for (const set of watchers.values()) for (const wake of set) wake(undefined);
  }

  function stored(payload: string): void {
    for (const said of payload.split(',')) {
      const space = said.indexOf(' ');
      const set = watchers.get(space < 0 ? said : said.slice(0, space));
      if (!set) continue;
      const sequence = space < 0 ? undefined : Number(said.slice(space + 1));
      for (const wake of set) wake(Number.isFinite(sequence) ? sequence : undefined);
    }
  }

  function cancelled(runId: string): void {
    for (const handler of cancelHandlers) handler(runId);
  }

  return {
    watch(runId, wake) {
      let set = watchers.get(runId);
      if (!set) watchers.set(runId, (set = new Set()));
      set.add(wake);
      return () => {
        set.delete(wake);
        if (set.size === 0 && watchers.get(runId) === set) watchers.delete(runId);
      };
    },
    onCancel(handler) {
      cancelHandlers.push(handler);
    },
    async start() {
      unlisten.push(await db.listen(RUN_EVENTS_CHANNEL, stored, wakeAll));
      // A cancel missed while the connection was away is still found by the owner's heartbeat.
      unlisten.push(await db.listen(RUN_CANCEL_CHANNEL, cancelled));
      logger.debug('listening for run events and cancellations of other servers');
    },
    async stop() {
      const pending = unlisten.splice(0);
      await Promise.allSettled(pending.map((stop) => stop()));
    },
  };
}
