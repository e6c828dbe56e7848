// Sessions keep a conversation's history on the server. A session runs one run at a time: `claim` moves
// it to `running` atomically, so two concurrent turns on one session cannot interleave.
import type { components } from '../../generated/openapi.gen.ts';
import { ApiError, notFound } from '../errors.ts';
import { textOf, type ChatMessage } from '../models/types.ts';
import { one, type Queryable } from '../store/db.ts';
import { groupCommit } from '../store/group-commit.ts';
import { newId } from '../store/ids.ts';
import { cursorOf, limitOf, toPage, type Page, type PageRequest } from '../store/pagination.ts';
import { storableJson } from '../store/json.ts';

export type Session = components['schemas']['Session'];
export type SessionStatus = Session['status'];

interface SessionRow {
  id: string;
  user_id: string;
  agent_id: string | null;
  team_id: string | null;
  title: string | null;
  status: SessionStatus;
  message_count: number;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, user_id, agent_id, team_id, title, status, message_count, metadata, created_at, updated_at';
const UNIQUE_VIOLATION = '23505';

export function toSession(row: SessionRow): Session {
  return {
    id: row.id,
    object: 'session',
    agent_id: row.agent_id,
    team_id: row.team_id,
    title: row.title,
    status: row.status,
    message_count: row.message_count,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export interface SessionTarget {
  agentId: string | null;
  teamId: string | null;
}

function titleOf(messages: ChatMessage[]): string | null {
  const first = messages.find((message) => message.role === 'user');
  const text = first ? textOf(first.content).trim().replace(/\s+/g, ' ') : '';
  return text ? text.slice(0, 80) : null;
}

interface NewSession {
  id: string;
  userId: string;
  agentId: string | null;
  teamId: string | null;
  title: string | null;
  metadata: string;
  externalId: string | null;
}

export function createSessionStore(db: Queryable) {
  // Sessions that open at once are inserted together (see store/group-commit.ts).
  const insert = groupCommit(async (sessions: readonly NewSession[]) => {
    const rows = await db.query<SessionRow>(
      `INSERT INTO sessions (id, user_id, agent_id, team_id, title, status, metadata, external_id)
       SELECT id, user_id, agent_id, team_id, title, 'running', metadata::jsonb, external_id
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS t(id, user_id, agent_id, team_id, title, metadata, external_id)
       RETURNING ${COLUMNS}`,
      [
        sessions.map((session) => session.id),
        sessions.map((session) => session.userId),
        sessions.map((session) => session.agentId),
        sessions.map((session) => session.teamId),
        sessions.map((session) => session.title),
        sessions.map((session) => session.metadata),
        sessions.map((session) => session.externalId),
      ],
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    return sessions.map((session) => byId.get(session.id)!);
  });

  // Each session's count grows by all its messages of the batch, and the messages take the positions after
  // the count it had, in the order of the calls and of the messages in each.
  const appendAll = groupCommit(async (appends: readonly { sessionId: string; runId: string | null; messages: ChatMessage[] }[]) => {
    const rows = appends.flatMap((append) => append.messages.map((message) => [append.sessionId, append.runId, storableJson(message)] as const));
    await db.query(
      `WITH input AS (
         SELECT t.session_id, t.run_id, t.message::jsonb AS message, t.ord
         FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS t(session_id, run_id, message, ord)
       ),
       totals AS (SELECT session_id, count(*)::int AS added FROM input GROUP BY session_id),
       counted AS (
         UPDATE sessions SET message_count = sessions.message_count + totals.added, updated_at = now()
         FROM totals WHERE sessions.id = totals.session_id
         RETURNING sessions.id, sessions.message_count - totals.added AS start
       )
       INSERT INTO session_messages (session_id, position, run_id, message)
       SELECT input.session_id, counted.start + row_number() OVER (PARTITION BY input.session_id ORDER BY input.ord) - 1, input.run_id, input.message
       FROM input JOIN counted ON counted.id = input.session_id`,
      [rows.map((row) => row[0]), rows.map((row) => row[1]), rows.map((row) => row[2])],
    );
    return appends.map(() => undefined);
  });

  return {
    /** A new session, already claimed for its first run. */
    async create(
      userId: string,
      target: SessionTarget,
      firstMessages: ChatMessage[],
      metadata: Record<string, string> = {},
      externalId: string | null = null,
    ) {
      try {
        return await insert({ id: newId('ses'), userId, agentId: target.agentId, teamId: target.teamId, title: titleOf(firstMessages), metadata: JSON.stringify(metadata), externalId });
      } catch (error) {
        // Two first turns naming the same new session at once: the other one made it, and holds it.
        if (externalId !== null && (error as { code?: unknown }).code === UNIQUE_VIOLATION) {
          throw new ApiError('conflict', `Another request is starting the session ${externalId}; retry when it has finished.`);
        }
        throw error;
      }
    },

    /** The session of this agent or team that a client names, by our id or by its own, if there is one. */
    async findNamed(userId: string, target: SessionTarget, name: string): Promise<SessionRow | undefined> {
      return one<SessionRow>(
        db,
        `SELECT ${COLUMNS} FROM sessions WHERE user_id = $1 AND coalesce(agent_id, team_id) = $2 AND (id = $3 OR external_id = $3)`,
        [userId, target.agentId ?? target.teamId, name],
      );
    },

    /** The session a client names by its own id, if there is one. */
    async findExternal(userId: string, target: SessionTarget, externalId: string): Promise<SessionRow | undefined> {
      return one<SessionRow>(
        db,
        `SELECT ${COLUMNS} FROM sessions WHERE user_id = $1 AND coalesce(agent_id, team_id) = $2 AND external_id = $3`,
        [userId, target.agentId ?? target.teamId, externalId],
      );
    },

    /**
     * Claims an existing session for a run: 404 when it is not the caller's or not this agent's or team's,
     * 409 while another run is in progress. Answers the status it had.
     */
    async claim(userId: string, sessionId: string, target: SessionTarget): Promise<{ session: SessionRow; previous: SessionStatus }> {
      const existing = await one<SessionRow>(db, `SELECT ${COLUMNS} FROM sessions WHERE id = $1 AND user_id = $2`, [sessionId, userId]);
      if (!existing || existing.agent_id !== target.agentId || existing.team_id !== target.teamId) {
        throw new ApiError('not_found', `No session ${sessionId} with this ${target.teamId ? 'team' : 'agent'}.`);
      }
      const claimed = await one<SessionRow>(
        db,
        `UPDATE sessions SET status = 'running', updated_at = now()
         WHERE id = $1 AND user_id = $2 AND status <> 'running' RETURNING ${COLUMNS}`,
        [sessionId, userId],
      );
      if (!claimed) throw new ApiError('conflict', `Session ${sessionId} has a run in progress; wait for it or cancel it.`);
      return { session: claimed, previous: existing.status };
    },

    async setStatus(sessionId: string, status: SessionStatus): Promise<void> {
      await db.query('UPDATE sessions SET status = $2, updated_at = now() WHERE id = $1', [sessionId, status]);
    },

    /**
     * Appends messages in order; answers nothing, as positions follow the stored count. Appends made at
     * once, to any sessions, go in one statement.
     */
    async append(sessionId: string, runId: string | null, messages: ChatMessage[]): Promise<void> {
      if (messages.length === 0) return;
      await appendAll({ sessionId, runId, messages });
    },

    async messages(sessionId: string): Promise<ChatMessage[]> {
      const rows = await db.query<{ message: ChatMessage }>(
        'SELECT message FROM session_messages WHERE session_id = $1 ORDER BY position',
        [sessionId],
      );
      return rows.map((row) => row.message);
    },

    async get(userId: string, sessionId: string): Promise<SessionRow> {
      const row = await one<SessionRow>(db, `SELECT ${COLUMNS} FROM sessions WHERE id = $1 AND user_id = $2`, [sessionId, userId]);
      if (!row) throw notFound('session', sessionId);
      return row;
    },

    async list(userId: string, request: PageRequest & { agent_id?: string; team_id?: string }): Promise<Page<Session>> {
      const limit = limitOf(request);
      const rows = await db.query<SessionRow>(
        `SELECT ${COLUMNS} FROM sessions
         WHERE user_id = $1 AND ($2::text IS NULL OR id < $2) AND ($3::text IS NULL OR agent_id = $3) AND ($4::text IS NULL OR team_id = $4)
         ORDER BY id DESC LIMIT $5`,
        [userId, cursorOf(request, 'ses'), request.agent_id ?? null, request.team_id ?? null, limit + 1],
      );
      return toPage(rows, limit, toSession);
    },

    async remove(userId: string, sessionId: string): Promise<void> {
      const rows = await db.query('DELETE FROM sessions WHERE id = $1 AND user_id = $2 RETURNING id', [sessionId, userId]);
      if (rows.length === 0) throw notFound('session', sessionId);
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
export type { SessionRow };
