// Background work on a durable job queue: pg-boss, in the same database as everything else (PostgreSQL,
// or the embedded PGlite in-process). A job is stored before `enqueue` resolves (or with the transaction
// it was enqueued in), is held by one worker at a time, and outlives the process that held it: a worker
// refreshes a heartbeat while a job runs, and a job whose heartbeat stops (kill -9, a lost machine) is
// handed to another worker. Delivery is at least once, so a handler must be idempotent: doing its job
// twice has the effect of doing it once (conditional updates, claims, idempotency keys). Why pg-boss,
// and not graphile-worker or BullMQ: see the README's "Scaling out".
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { fromPglite, PgBoss, type Db as BossDb, type Job } from 'pg-boss';
import type { Db, Queryable } from '../store/db.ts';

/** The schema pg-boss keeps its tables in. */
export const JOBS_SCHEMA = 'pgboss';

export interface JobContext {
  id: string;
  /** 0 the first time, then one more at every retry (after a failure or a dead worker). */
  attempt: number;
  /** Aborted when the server stops: give up early, the job runs again elsewhere. */
  signal: AbortSignal;
}

export type JobHandler<P> = (payload: P, job: JobContext) => Promise<void>;

export interface JobKindOptions {
  /** Jobs of this kind running at once in this process. Default 2. */
  concurrency?: number;
  /** Retries after a failed attempt before the job is given up. Default 5. */
  retryLimit?: number;
  /** Seconds before the first retry; doubled (with jitter) at each. Default 2. */
  retryDelaySeconds?: number;
  /** How long one attempt may run before it counts as failed. Default 15 minutes. */
  timeoutSeconds?: number;
}

export interface EnqueueOptions {
  /**
   * At most one job per key is waiting or running: enqueueing a key that is pending does nothing and
   * answers null. Without a key every job is its own.
   */
  key?: string;
  /** Not before this many seconds from now. */
  delaySeconds?: number;
  /** Enqueues in this transaction: the job exists if and only if it commits. */
  tx?: Queryable;
}

export interface Jobs {
  /** Declares a kind of job and starts working on it here. Every process that enqueues a kind registers it. */
  register<P extends object>(name: string, handler: JobHandler<P>, options?: JobKindOptions): Promise<void>;
  /** Stops working on a kind here (after its running jobs end); its jobs wait for another worker. */
  unregister(name: string): Promise<void>;
  /** Stores a job; answers its id, or null when a job with the same key is pending. */
  enqueue<P extends object>(name: string, payload: P, options?: EnqueueOptions): Promise<string | null>;
  /** Waiting and running jobs of a kind (tests and metrics). */
  pending(name: string): Promise<number>;
  start(): Promise<void>;
  /** Stops taking jobs and waits (bounded) for running ones; what does not finish runs again elsewhere. */
  stop(timeoutMs?: number): Promise<void>;
}

export interface JobsDeps {
  db: Db;
  logger: Logger;
  /** Recorded with pg-boss's instance registry, to tell servers apart. */
  instanceId: string;
}

/** A job's heartbeat: a worker that stops refreshing it for this long is taken for dead. pg-boss's minimum. */
const HEARTBEAT_SECONDS = 10;
/** How often expired heartbeats and timeouts are looked for (one server does it at a time). */
const SUPERVISE_SECONDS = 2;
/**
 * How often this process asks, in one statement for every kind it works on, whether a job is due (a
 * retry or a delayed job coming of age, or a new job whose NOTIFY was missed), and wakes that many idle
 * workers. A new job's NOTIFY wakes the workers at once.
 */
const DUE_CHECK_SECONDS = 2;
/**
 * How often an idle worker polls on its own, as a backstop only. pg-boss polls per worker: with every
 * worker polling every 2 s, as before, an idle server ran 13 fetches a second (27 workers, 20 of them
 * A2A push watchers), about 1.8 ms each on PGlite: half of the time its idle PGlite was busy.
 */
const BACKSTOP_POLL_SECONDS = 60;

/** Runs pg-boss's statements inside one of our transactions. */
function inTransaction(tx: Queryable): BossDb {
  return { executeSql: async (text, values) => ({ rows: await tx.query(text, values as never) }) };
}

function bossFor(deps: JobsDeps, supervise: boolean): PgBoss {
  const common = {
    schema: JOBS_SCHEMA,
    supervise,
    superviseIntervalSeconds: SUPERVISE_SECONDS,
    monitorIntervalSeconds: SUPERVISE_SECONDS,
    instanceName: deps.instanceId,
    // A new job wakes a worker at once (NOTIFY) instead of at its next poll.
    useListenNotify: true,
    // No cron schedules here: no timekeeper polling for them.
    schedule: false,
  };
  const native = deps.db.native;
  return native.engine === 'pglite'
    ? new PgBoss({ ...common, db: fromPglite(native.pglite), backend: 'pglite' })
    : new PgBoss({ ...common, connectionString: native.connectionString, max: 4, application_name: 'open-agent-api jobs' });
}

/** Creates pg-boss's schema (for test templates; servers do it at start when it is missing). */
export async function installJobs(db: Db, logger: Logger): Promise<void> {
  const boss = bossFor({ db, logger, instanceId: 'install' }, false);
  boss.on('error', (error) => logger.warn({ err: error }, 'job queue error'));
  await boss.start();
  await boss.stop({ graceful: false, close: db.native.engine === 'postgres' });
}

export function createJobs(deps: JobsDeps): Jobs {
  const { logger } = deps;
  const boss = bossFor(deps, true);
  // Without a listener an 'error' event would end the process; pg-boss reconnects by itself.
  boss.on('error', (error) => logger.warn({ err: error }, 'job queue error'));
  boss.on('warning', (warning) => logger.debug({ warning: warning.message }, 'job queue warning'));
  const kinds = new Map<string, { handler: JobHandler<object>; options: JobKindOptions }>();
  /** Kinds whose queue exists, worked on here or not: they can be enqueued. */
  const known = new Set<string>();
  let started = false;
  let stopped = false;
  // Aborted at stop: handlers give up early, and their jobs run again elsewhere or after the restart.
  const stopping = new AbortController();

  /** The workers of each kind worked on here, each with whether it is running a job. */
  const workers = new Map<string, { id: string; busy: boolean }[]>();
  let dueCheck: NodeJS.Timeout | undefined;

  async function work(name: string): Promise<void> {
    const kind = kinds.get(name)!;
    known.add(name);
    await boss.createQueue(name, {
      // With a key at most one job is waiting or running; every job gets a key (its own by default).
      policy: 'exclusive',
      notify: true,
      heartbeatSeconds: HEARTBEAT_SECONDS,
      retryLimit: kind.options.retryLimit ?? 5,
      retryDelay: kind.options.retryDelaySeconds ?? 2,
      retryBackoff: true,
      retryDelayMax: 300,
      expireInSeconds: kind.options.timeoutSeconds ?? 15 * 60,
    });
    // One pg-boss worker per unit of concurrency, each its own work() call, so that the due check can
    // wake just as many as there are jobs due, and only idle ones.
    const ofKind: { id: string; busy: boolean }[] = [];
    workers.set(name, ofKind);
    for (let index = 0; index < (kind.options.concurrency ?? 2); index++) {
      const worker = { id: '', busy: false };
      ofKind.push(worker);
      worker.id = await boss.work<object>(
        name,
        { localConcurrency: 1, batchSize: 1, pollingIntervalSeconds: BACKSTOP_POLL_SECONDS, notifyPollingIntervalSeconds: BACKSTOP_POLL_SECONDS },
        async (jobs: Job<object>[]) => {
          worker.busy = true;
          try {
            for (const job of jobs) {
              try {
                // pg-boss aborts job.signal when this worker lost the job (its claim lapsed, it timed out).
                await kind.handler(job.data, { id: job.id, attempt: job.retryCount, signal: AbortSignal.any([job.signal, stopping.signal]) });
              } catch (error) {
                if (!stopped) logger.warn({ err: error, job: name, jobId: job.id, attempt: job.retryCount }, 'a job failed; it will be retried');
                throw error;
              }
            }
          } finally {
            worker.busy = false;
            // Fetch again as soon as this job is done: the next of a backlog starts at once, and an empty
            // queue sends the worker back to waiting.
            boss.notifyWorker(worker.id);
          }
        },
      );
    }
  }

  /** Wakes an idle worker for each job due now, of every kind worked on here. */
  async function wakeForDueJobs(): Promise<void> {
    const names = [...workers.keys()];
    if (names.length === 0) return;
    // pg-boss's own condition for a job it would fetch; the limit bounds the count under a backlog.
    const due = await deps.db.query<{ name: string; due: number }>(
      `SELECT name, count(*)::int AS due FROM (
         SELECT j.name FROM ${JOBS_SCHEMA}.job j
         WHERE j.name = ANY($1::text[]) AND j.state < 'active' AND NOT j.blocked AND j.start_after <= ${JOBS_SCHEMA}.job_now()
         LIMIT 1000
       ) d GROUP BY name`,
      [names],
    );
    for (const { name, due: count } of due) {
      for (const worker of (workers.get(name) ?? []).filter((w) => !w.busy).slice(0, count)) boss.notifyWorker(worker.id);
    }
  }

  return {
    async register(name, handler, options = {}) {
      if (kinds.has(name)) throw new Error(`The job ${name} is registered twice.`);
      kinds.set(name, { handler: handler as JobHandler<object>, options });
      if (started) await work(name);
    },

    async unregister(name) {
      if (!kinds.delete(name)) return;
      workers.delete(name);
      if (started && !stopped) await boss.offWork(name, { wait: true });
    },

    async enqueue(name, payload, options = {}) {
      if (!kinds.has(name) && !known.has(name)) throw new Error(`The job ${name} is not registered.`);
      if (!started) throw new Error('The job queue is not started.');
      return boss.send(name, payload, {
        singletonKey: options.key ?? randomUUID(),
        ...(options.delaySeconds ? { startAfter: options.delaySeconds } : {}),
        ...(options.tx ? { db: inTransaction(options.tx) } : {}),
      });
    },

    async pending(name) {
      const rows = await deps.db.query<{ count: number }>(
        `SELECT count(*)::int AS count FROM ${JOBS_SCHEMA}.job WHERE name = $1 AND state IN ('created', 'retry', 'active')`,
        [name],
      );
      return rows[0]?.count ?? 0;
    },

    async start() {
      if (started) return;
      await boss.start();
      started = true;
      for (const name of kinds.keys()) await work(name);
      dueCheck = setInterval(() => {
        if (!stopped) void wakeForDueJobs().catch((error: unknown) => logger.warn({ err: error }, 'looking for due jobs failed'));
      }, DUE_CHECK_SECONDS * 1000);
      dueCheck.unref();
    },

    async stop(timeoutMs = 10_000) {
      if (!started || stopped) return;
      stopped = true;
      clearInterval(dueCheck);
      stopping.abort(new Error('The server is shutting down.'));
      await boss.stop({ graceful: true, timeout: timeoutMs, close: true });
    },
  };
}
