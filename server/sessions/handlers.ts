import type { AppHandlers } from '../http/operations.ts';
import type { RunEngine } from '../runs/engine.ts';
import type { RunStore } from '../runs/store.ts';
import { toSession, type SessionStore } from './store.ts';

export function sessionHandlers(deps: { sessions: SessionStore; runs: RunStore; engine: RunEngine }) {
  return {
    async listSessions({ auth, query }) {
      return { status: 200, body: await deps.sessions.list(auth.userId, query) };
    },

    async getSession({ auth, params }) {
      const session = await deps.sessions.get(auth.userId, params.sessionId);
      return { status: 200, body: { ...toSession(session), messages: await deps.sessions.messages(session.id) } };
    },

    async listSessionRuns({ auth, params, query }) {
      await deps.sessions.get(auth.userId, params.sessionId);
      return { status: 200, body: await deps.runs.inSession(auth.userId, params.sessionId, query) };
    },

    async deleteSession({ auth, params }) {
      await deps.sessions.get(auth.userId, params.sessionId);
      await deps.engine.cancelAll(auth.userId, { sessionId: params.sessionId });
      await deps.sessions.remove(auth.userId, params.sessionId);
      return { status: 204 };
    },
  } satisfies Partial<AppHandlers>;
}
