// Runs and their stored events.
import type { components } from '../../generated/openapi.gen.ts';
import { notFound } from '../errors.ts';
import { one, type Queryable } from '../store/db.ts';
import { groupCommit } from '../store/group-commit.ts';
import { newId } from '../store/ids.ts';
import { cursorOf, limitOf, toPage, type Page, type PageRequest } from '../store/pagination.ts';
import type { SessionStatus } from '../sessions/store.ts';
import type { RunEvent, TokenUsage } from './events.ts';
import { storableJson } from '../store/json.ts';
import { RUN_CANCEL_CHANNEL, RUN_EVENTS_CHANNEL } from './signals.ts';

type Schemas = components['schemas'];
export type Run = Schemas['Run'];
export type RunStatus = Schemas['RunStatus'];
export type RequiredAction = Schemas['RequiredAction'];
export type RunErrorInfo = Schemas['RunErrorInfo'];

export interface RunRow {
  id: string;
  user_id: string;
  session_id: string;
  agent_id: string | null;
  team_id: string | null;
  parent_run_id: string | null;
  status: RunStatus;
  model: string;
  usage: TokenUsage;
  error: RunErrorInfo | null;
  required_action: RequiredAction | null;
  state: unknown;
  last_sequence_number: number;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

/** Runs named by one notification of stored events: about 40 bytes each, under PostgreSQL's 8,000-byte payload. */
const NOTIFIED_RUNS = 150;

const ENDED_COLUMNS =
  'id, user_id, session_id, agent_id, team_id, parent_run_id, status, model, usage, error, required_action, state, created_at, updated_at, completed_at';
/** ENDED_COLUMNS named by table, for a statement that also reads other tables' columns of those names. */
const ENDED_RUN_COLUMNS = ENDED_COLUMNS.split(', ').map((column) => `runs.${column}`).join(', ');
const COLUMNS = `${ENDED_COLUMNS}, (SELECT coalesce(max(e.sequence_number), 0) FROM run_events e WHERE e.run_id = runs.id) AS last_sequence_number`;

export function toRun(row: RunRow): Run {
  return {
    id: row.id,
    object: 'run',
    session_id: row.session_id,
    agent_id: row.agent_id,
    team_id: row.team_id,
    parent_run_id: row.parent_run_id,
    status: row.status,
    model: row.model,
    usage: row.usage,
    error: row.error,
    required_action: row.required_action,
    last_sequence_number: row.last_sequence_number,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    completed_at: row.completed_at?.toISOString() ?? null,
  };
}

export const FINISHED: readonly RunStatus[] = ['completed', 'failed', 'canceled'];

export interface NewRun {
  userId: string;
  sessionId: string;
  agentId: string | null;
  teamId: string | null;
  parentRunId: string | null;
  model: string;
  owner: string;
}

export interface RunUpdate {
  status: RunStatus;
  usage: TokenUsage;
  error?: RunErrorInfo | null;
  requiredAction?: RequiredAction | null;
  /** What the run needs to go on after tool results; cleared when omitted. */
  state?: unknown;
}

interface RunClose {
  runId: string;
  update: RunUpdate;
  from: readonly RunStatus[];
  ending: { owner?: string | undefined; event: RunEvent; sessionStatus: SessionStatus | null };
}

export function createRunStore(db: Queryable) {
  // Runs that start at once are inserted together (see store/group-commit.ts).
  const insert = groupCommit(async (runs: readonly (NewRun & { id: string })[]) => {
    const rows = await db.query<RunRow>(
      `INSERT INTO runs (id, user_id, session_id, agent_id, team_id, parent_run_id, status, model, owner)
       SELECT id, user_id, session_id, agent_id, team_id, parent_run_id, 'in_progress', model, owner
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
         AS t(id, user_id, session_id, agent_id, team_id, parent_run_id, model, owner)
       RETURNING ${COLUMNS}`,
      [
        runs.map((run) => run.id),
        runs.map((run) => run.userId),
        runs.map((run) => run.sessionId),
        runs.map((run) => run.agentId),
        runs.map((run) => run.teamId),
        runs.map((run) => run.parentRunId),
        runs.map((run) => run.model),
        runs.map((run) => run.owner),
      ],
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    return runs.map((run) => byId.get(run.id)!);
  });

  /**
   * Ends runs, each in one of its `from` statuses (and, given an owner, still held by that server): its
   * final state, conditionally, so that of two servers ending one run only one does; and, only if it
   * ended, its terminal event and its session's new status (`sessionStatus`, for a top-level run). One
   * statement for the runs that end at once, so all of a run's ending or none is stored. Answers each run
   * ended, or undefined for one that had already ended or moved on. Two endings of one run never share a
   * statement: the batch is refused and each goes alone, in order.
   */
  const closeAll = groupCommit(async (closes: readonly RunClose[]) => {
    if (new Set(closes.map((close) => close.runId)).size < closes.length) throw new Error('one run ended twice in a batch');
    const input = closes.map(({ runId, update, from, ending }) => ({
      run_id: runId,
      status: update.status,
      usage: update.usage,
      error: update.error ?? undefined,
      required_action: update.requiredAction ?? undefined,
      state: update.state ?? undefined,
      finished: FINISHED.includes(update.status),
      from,
      owner: ending.owner ?? undefined,
      event: ending.event,
      session_status: ending.sessionStatus ?? undefined,
    }));
    const rows = await db.query<RunRow & { event: RunEvent }>(
      `WITH input AS (
         SELECT c->>'run_id' AS run_id, c->>'status' AS status, c->'usage' AS usage, c->'error' AS error,
                c->'required_action' AS required_action, c->'state' AS state, (c->>'finished')::boolean AS finished,
                c->'from' AS from_statuses, c->>'owner' AS owner, c->'event' AS event, c->>'session_status' AS session_status
         FROM jsonb_array_elements($1::jsonb) AS c),
       ended AS (
         UPDATE runs SET status = input.status, usage = input.usage, error = input.error, required_action = input.required_action,
                state = input.state, updated_at = now(), completed_at = CASE WHEN input.finished THEN now() ELSE NULL END
         FROM input
         WHERE runs.id = input.run_id AND runs.status IN (SELECT jsonb_array_elements_text(input.from_statuses))
           AND (input.owner IS NULL OR runs.owner = input.owner)
         RETURNING ${ENDED_RUN_COLUMNS}, input.event, input.session_status),
       stored AS (
         INSERT INTO run_events (run_id, sequence_number, type, payload)
         SELECT id, (event->>'sequence_number')::int, event->>'type', event FROM ended
         RETURNING pg_notify('${RUN_EVENTS_CHANNEL}', run_id || ' ' || sequence_number)),
       session AS (
         UPDATE sessions SET status = ended.session_status, updated_at = now()
         FROM ended WHERE ended.session_status IS NOT NULL AND sessions.id = ended.session_id)
       SELECT ${ENDED_COLUMNS}, event FROM ended`,
      [storableJson(input)],
    );
    const byId = new Map(rows.map(({ event, ...row }) => [row.id, { ...row, last_sequence_number: event.sequence_number }]));
    return closes.map((close) => byId.get(close.runId));
  });

  return {
    create(run: NewRun): Promise<RunRow> {
      return insert({ ...run, id: newId('run') });
    },

    async get(userId: string, runId: string): Promise<RunRow> {
      const row = await one<RunRow>(db, `SELECT ${COLUMNS} FROM runs WHERE id = $1 AND user_id = $2`, [runId, userId]);
      if (!row) throw notFound('run', runId);
      return row;
    },

    /** The run of a session that waits for client-side tool results, if any. */
    async pendingIn(sessionId: string): Promise<RunRow | undefined> {
      return one<RunRow>(db, `SELECT ${COLUMNS} FROM runs WHERE session_id = $1 AND status = 'requires_action' AND parent_run_id IS NULL`, [sessionId]);
    },

    /** Takes a waiting run back into progress, on this server. */
    async resume(runId: string, owner: string): Promise<RunRow | undefined> {
      return one<RunRow>(
        db,
        `UPDATE runs SET status = 'in_progress', required_action = NULL, owner = $2, heartbeat_at = now(), updated_at = now()
         WHERE id = $1 AND status = 'requires_action' RETURNING ${COLUMNS}`,
        [runId, owner],
      );
    },

    /**
     * Ends a run that is in one of `from` (and, given `owner`, still held by that server): its final
     * state, conditionally, so that of two servers ending one run only one does; and, only if it ended,
     * its terminal event and its session's new status (`sessionStatus`, for a top-level run). One
     * statement, so all of it or none is stored. Answers the ended run, or undefined when it had already
     * ended or moved on.
     */
    close(
      runId: string,
      update: RunUpdate,
      from: readonly RunStatus[],
      ending: { owner?: string | undefined; event: RunEvent; sessionStatus: SessionStatus | null },
    ): Promise<RunRow | undefined> {
      return closeAll({ runId, update, from, ending });
    },

    /**
     * Stores events of any runs in one statement, which also tells every server that listens which runs
     * have new events (delivered when the statement, or the transaction it is part of, commits): one
     * notification per NOTIFIED_RUNS runs, not one per run, each `<runId> <last sequence>,…`.
     */
    async appendEvents(events: RunEvent[]): Promise<void> {
      if (events.length === 0) return;
      await db.query(
        `WITH stored AS (
           INSERT INTO run_events (run_id, sequence_number, type, payload)
           SELECT e.value->>'run_id', (e.value->>'sequence_number')::int, e.value->>'type', e.value FROM jsonb_array_elements($1::jsonb) AS e
           RETURNING run_id, sequence_number),
         last AS (SELECT run_id || ' ' || max(sequence_number) AS said, row_number() OVER () AS n FROM stored GROUP BY run_id)
         SELECT pg_notify('${RUN_EVENTS_CHANNEL}', string_agg(said, ',')) FROM last GROUP BY n / ${NOTIFIED_RUNS}`,
        [storableJson(events)],
      );
    },

    async events(runId: string, after: number, limit: number): Promise<RunEvent[]> {
      const rows = await db.query<{ payload: RunEvent }>(
        'SELECT payload FROM run_events WHERE run_id = $1 AND sequence_number > $2 ORDER BY sequence_number LIMIT $3',
        [runId, after, limit],
      );
      return rows.map((row) => row.payload);
    },

    async status(runId: string): Promise<RunStatus | undefined> {
      return (await one<{ status: RunStatus }>(db, 'SELECT status FROM runs WHERE id = $1', [runId]))?.status;
    },

    /** Refreshes the heartbeat of live runs; answers those whose cancellation was asked elsewhere. */
    async heartbeat(runIds: string[]): Promise<string[]> {
      if (runIds.length === 0) return [];
      const rows = await db.query<{ id: string }>(
        `UPDATE runs SET heartbeat_at = now() WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb)) RETURNING id, cancel_requested`,
        [JSON.stringify(runIds)],
      );
      return rows.filter((row) => (row as { cancel_requested?: boolean }).cancel_requested).map((row) => row.id);
    },

    /**
     * Marks an unfinished run for cancellation and tells its server at once (its heartbeat would find the
     * mark too). Answers the server executing it, or undefined when the run is no longer in progress.
     */
    async requestCancel(runId: string): Promise<string | undefined> {
      const row = await one<{ owner: string }>(
        db,
        `WITH asked AS (
           UPDATE runs SET cancel_requested = true WHERE id = $1 AND status IN ('queued', 'in_progress') RETURNING id, owner)
         SELECT owner, pg_notify('${RUN_CANCEL_CHANNEL}', id) FROM asked`,
        [runId],
      );
      return row?.owner;
    },

    /** Runs still marked in progress whose server is not this one, grouped by that server. */
    async activeOwners(me: string): Promise<string[]> {
      const rows = await db.query<{ owner: string }>(
        "SELECT DISTINCT owner FROM runs WHERE status IN ('queued', 'in_progress') AND owner <> $1",
        [me],
      );
      return rows.map((row) => row.owner);
    },

    /** The unfinished runs of a dead server, members before the team runs they belong to. */
    async orphansOf(owner: string): Promise<RunRow[]> {
      return db.query<RunRow>(
        `SELECT ${COLUMNS} FROM runs WHERE owner = $1 AND status IN ('queued', 'in_progress') ORDER BY parent_run_id IS NULL, id`,
        [owner],
      );
    },

    /** The waiting member run of a team run, if any. */
    async pendingChild(parentRunId: string): Promise<RunRow | undefined> {
      return one<RunRow>(db, `SELECT ${COLUMNS} FROM runs WHERE parent_run_id = $1 AND status = 'requires_action'`, [parentRunId]);
    },

    /** Runs of an agent or a session that are not finished, waiting ones included. */
    async unfinished(userId: string, where: { agentId?: string; teamId?: string; sessionId?: string }): Promise<string[]> {
      const rows = await db.query<{ id: string }>(
        `SELECT id FROM runs WHERE user_id = $1 AND status IN ('queued', 'in_progress', 'requires_action') AND parent_run_id IS NULL
         AND ($2::text IS NULL OR agent_id = $2) AND ($3::text IS NULL OR session_id = $3) AND ($4::text IS NULL OR team_id = $4)`,
        [userId, where.agentId ?? null, where.sessionId ?? null, where.teamId ?? null],
      );
      return rows.map((row) => row.id);
    },

    /** A session's top-level runs (one per turn; member runs are their team run's), newest first. */
    async inSession(userId: string, sessionId: string, request: PageRequest): Promise<Page<Run>> {
      const limit = limitOf(request);
      const rows = await db.query<RunRow>(
        `SELECT ${COLUMNS} FROM runs
         WHERE session_id = $1 AND user_id = $2 AND parent_run_id IS NULL AND ($3::text IS NULL OR id < $3)
         ORDER BY id DESC LIMIT $4`,
        [sessionId, userId, cursorOf(request, 'run'), limit + 1],
      );
      return toPage(rows, limit, toRun);
    },

    /** The runs a team run started for its members. */
    async children(parentRunId: string): Promise<RunRow[]> {
      return db.query<RunRow>(`SELECT ${COLUMNS} FROM runs WHERE parent_run_id = $1 ORDER BY id`, [parentRunId]);
    },
  };
}

export type RunStore = ReturnType<typeof createRunStore>;
