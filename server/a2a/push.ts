// A2A push notifications. A client leaves a config (a URL, a token, credentials) on a task; every status
// change of the task is then POSTed there as a StreamResponse, ending with the whole Task when it finishes
// or asks for input. Both halves are durable jobs: a watch job follows the task's run from wherever it runs
// (engine.follow) and enqueues one delivery job per config and update; a delivery is retried with backoff
// until the receiver answers 2xx. A restart loses neither: a watch whose worker died runs again (and may
// send an update twice: deliveries are at least once, as A2A allows). Receivers are reached only through
// the outbound policy, checked when the config is stored and again on every connection.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError, invalidRequest } from '../errors.ts';
import type { Jobs } from '../jobs/jobs.ts';
import type { Sealer } from '../mcp/secrets.ts';
import { OutboundRefused, type OutboundPolicy } from '../net/outbound.ts';
import type { RunEngine } from '../runs/engine.ts';
import type { RunRow, RunStore } from '../runs/store.ts';
import type { Queryable } from '../store/db.ts';
import { TaskProjection, type A2aStreamResponse } from './projection.ts';

type Schemas = components['schemas'];
export type A2aPushConfig = Schemas['A2aTaskPushNotificationConfig'];

export const PUSH_WATCH_JOB = 'a2a-push-watch';
export const PUSH_DELIVER_JOB = 'a2a-push-deliver';

/** The header a receiver finds the config's token in. */
export const TOKEN_HEADER = 'X-A2A-Notification-Token';

const EVENT_PAGE = 500;
const MAX_CONFIGS_PER_TASK = 32;

export interface PushOptions {
  /** How long a receiver may take to answer one delivery. */
  timeoutMs: number;
  /** Seconds before a failed delivery is tried again; doubled (with jitter) at each retry. */
  retryDelaySeconds: number;
  retryLimit: number;
}

export interface PushDeps {
  db: Queryable;
  jobs: Jobs;
  outbound: OutboundPolicy;
  engine: RunEngine;
  runs: RunStore;
  logger: Logger;
  /** Credentials are kept sealed at rest. */
  sealer: Sealer;
  options: PushOptions;
}

interface ConfigRow {
  task_id: string;
  id: string;
  user_id: string;
  url: string;
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
}

interface WatchPayload {
  userId: string;
  taskId: string;
  /** The last event already seen: updates after it are sent. */
  after: number;
}

interface DeliverPayload {
  taskId: string;
  configId: string;
  body: A2aStreamResponse;
}

function configOut(row: ConfigRow, sealer: Sealer): A2aPushConfig {
  const credentials = row.auth_credentials ? sealer.open(row.auth_credentials) : undefined;
  return {
    id: row.id,
    taskId: row.task_id,
    url: row.url,
    ...(row.token ? { token: row.token } : {}),
    ...(row.auth_scheme ? { authentication: { scheme: row.auth_scheme, ...(credentials ? { credentials } : {}) } } : {}),
  };
}

export function createA2aPush(deps: PushDeps) {
  const { db, jobs } = deps;
  const closing = new AbortController();

  async function configsOf(taskId: string): Promise<ConfigRow[]> {
    return db.query<ConfigRow>('SELECT * FROM a2a_push_configs WHERE task_id = $1 ORDER BY created_at, id', [taskId]);
  }

  async function lastSequence(taskId: string): Promise<number> {
    const [row] = await db.query<{ last: number }>('SELECT coalesce(max(sequence_number), 0)::int AS last FROM run_events WHERE run_id = $1', [taskId]);
    return row?.last ?? 0;
  }

  async function announce(taskId: string, body: A2aStreamResponse): Promise<void> {
    for (const config of await configsOf(taskId)) {
      await jobs.enqueue<DeliverPayload>(PUSH_DELIVER_JOB, { taskId, configId: config.id, body });
    }
  }

  /** Follows a task's run and announces its status changes, then the task when it ends or waits for input. */
  async function watchJob(payload: WatchPayload, job: { signal: AbortSignal }): Promise<void> {
    let row: RunRow;
    try {
      row = await deps.runs.get(payload.userId, payload.taskId);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return; // The task is gone, and its configs with it.
      throw error;
    }
    const projection = new TaskProjection({ taskId: row.id, contextId: row.session_id });
    for (let after = 0; after < payload.after; ) {
      const page = await deps.runs.events(row.id, after, EVENT_PAGE);
      for (const event of page) if (event.sequence_number <= payload.after) projection.project(event);
      if (page.length < EVENT_PAGE) break;
      after = page.at(-1)!.sequence_number;
    }
    const signal = AbortSignal.any([job.signal, closing.signal]);
    let followed = false;
    for await (const event of deps.engine.follow(payload.userId, row.id, payload.after, signal)) {
      followed = true;
      const before = projection.state;
      projection.project(event);
      if (projection.ended) break;
      if (projection.state !== before) await announce(row.id, { statusUpdate: { taskId: row.id, contextId: row.session_id, status: projection.task().status } });
    }
    if (followed && projection.ended) await announce(row.id, { task: projection.task() });
  }

  async function deliverJob(payload: DeliverPayload): Promise<void> {
    const [config] = await db.query<ConfigRow>('SELECT * FROM a2a_push_configs WHERE task_id = $1 AND id = $2', [payload.taskId, payload.configId]);
    if (!config) return; // Deleted since: nobody wants it any more.
    const headers: Record<string, string> = { 'Content-Type': 'application/a2a+json' };
    if (config.token) headers[TOKEN_HEADER] = config.token;
    if (config.auth_scheme && config.auth_credentials) headers.Authorization = `${config.auth_scheme} ${deps.sealer.open(config.auth_credentials)}`;
    const response = await deps.outbound.fetch(config.url, {
      method: 'POST',
      headers,
      body: JSON.stringify(payload.body),
      redirect: 'manual',
      signal: AbortSignal.any([AbortSignal.timeout(deps.options.timeoutMs), closing.signal]),
    });
    await response.body?.cancel();
    if (response.status < 200 || response.status > 299) throw new Error(`The push receiver answered ${response.status}.`);
  }

  /** The receiver's URL, when the outbound policy lets it be called; a refused one is the caller's error. */
  function checkUrl(value: string): URL {
    let url: URL;
    try {
      url = deps.outbound.check(value);
    } catch (error) {
      if (error instanceof OutboundRefused || error instanceof TypeError) throw invalidRequest(`The push URL is refused: ${error.message}`, 'url');
      throw error;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidRequest('The push URL must be http or https.', 'url');
    return url;
  }

  return {
    async start(): Promise<void> {
      // A watch lasts as long as its task's turn; its heartbeat, not this timeout, tells a dead worker.
      await jobs.register<WatchPayload>(PUSH_WATCH_JOB, watchJob, { concurrency: 20, retryLimit: 10, retryDelaySeconds: 2, timeoutSeconds: 24 * 3600 });
      await jobs.register<DeliverPayload>(PUSH_DELIVER_JOB, deliverJob, {
        concurrency: 4,
        retryLimit: deps.options.retryLimit,
        retryDelaySeconds: deps.options.retryDelaySeconds,
        timeoutSeconds: Math.ceil(deps.options.timeoutMs / 1000) + 30,
      });
    },

    async close(): Promise<void> {
      closing.abort(new Error('The server is shutting down.'));
      await jobs.unregister(PUSH_WATCH_JOB);
      await jobs.unregister(PUSH_DELIVER_JOB);
    },

    /** Stores a config on a task the caller owns (checked by the caller) and starts sending it updates. */
    checkUrl,

    async create(userId: string, taskId: string, config: A2aPushConfig, options: { watchAfter?: number; finished?: boolean } = {}): Promise<A2aPushConfig> {
      const url = checkUrl(config.url);
      const id = config.id || randomUUID();
      const [count] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM a2a_push_configs WHERE task_id = $1 AND id <> $2', [taskId, id]);
      if ((count?.n ?? 0) >= MAX_CONFIGS_PER_TASK) throw invalidRequest(`A task takes at most ${MAX_CONFIGS_PER_TASK} push configs.`, 'id');
      const [row] = await db.query<ConfigRow>(
        `INSERT INTO a2a_push_configs (task_id, id, user_id, url, token, auth_scheme, auth_credentials) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, token = excluded.token, auth_scheme = excluded.auth_scheme, auth_credentials = excluded.auth_credentials
         RETURNING *`,
        [taskId, id, userId, url.href, config.token || null, config.authentication?.scheme || null, config.authentication?.credentials ? deps.sealer.seal(config.authentication.credentials) : null],
      );
      if (!options.finished) await this.watch(userId, taskId, options.watchAfter ?? (await lastSequence(taskId)));
      return configOut(row!, deps.sealer);
    },

    /** Follows a task's turn from after an event, when it has configs. */
    async watch(userId: string, taskId: string, after: number): Promise<void> {
      await jobs.enqueue<WatchPayload>(PUSH_WATCH_JOB, { userId, taskId, after }, { key: `${taskId}:${after}` });
    },

    /** Whether a task has configs, and its last event (where the watch of its next turn starts). */
    async resumePoint(taskId: string): Promise<number | undefined> {
      return (await configsOf(taskId)).length ? lastSequence(taskId) : undefined;
    },

    async get(taskId: string, id: string): Promise<A2aPushConfig | undefined> {
      const [row] = await db.query<ConfigRow>('SELECT * FROM a2a_push_configs WHERE task_id = $1 AND id = $2', [taskId, id]);
      return row ? configOut(row, deps.sealer) : undefined;
    },

    async list(taskId: string): Promise<A2aPushConfig[]> {
      return (await configsOf(taskId)).map((row) => configOut(row, deps.sealer));
    },

    async remove(taskId: string, id: string): Promise<boolean> {
      const rows = await db.query<{ id: string }>('DELETE FROM a2a_push_configs WHERE task_id = $1 AND id = $2 RETURNING id', [taskId, id]);
      return rows.length > 0;
    },
  };
}

export type A2aPush = ReturnType<typeof createA2aPush>;
