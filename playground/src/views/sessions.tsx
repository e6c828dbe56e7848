// Sessions: every conversation, newest first; one opened shows its messages and its runs, each of which
// can be replayed.
import { useState } from 'preact/hooks';
import { allPages, data, type Schemas } from '../api.ts';
import { fromMessages } from '../chat/transcript.ts';
import { TranscriptView } from '../chat/transcript-view.tsx';
import { href, navigate } from '../router.ts';
import { DeleteButton, ErrorMessage, formatNumber, formatTime, Loading, useAction, useFocusHeading, useLoad, useSession } from '../ui.tsx';

type Session = Schemas['Session'];

/** Names of the caller's agents and teams by id, to label sessions and runs. */
function useNames() {
  const { client } = useSession();
  return useLoad(async () => {
    const [agents, teams] = await Promise.all([
      allPages((after) => client.GET('/v1/agents', { params: { query: { limit: 100, ...(after ? { after } : {}) } } })),
      allPages((after) => client.GET('/v1/teams', { params: { query: { limit: 100, ...(after ? { after } : {}) } } })),
    ]);
    return new Map<string, string>([...agents.map((a) => [a.id, a.name] as const), ...teams.map((t) => [t.id, t.name] as const)]);
  }, []);
}

function targetOf(session: { agent_id: string | null; team_id: string | null }): { kind: 'agent' | 'team'; id: string } | null {
  if (session.agent_id) return { kind: 'agent', id: session.agent_id };
  if (session.team_id) return { kind: 'team', id: session.team_id };
  return null;
}

export function SessionList() {
  const { client } = useSession();
  const names = useNames();
  const heading = useFocusHeading<HTMLHeadingElement>([]);
  const [pages, setPages] = useState<Session[][]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const first = useLoad(async () => {
    const page = await data(client.GET('/v1/sessions', { params: { query: { limit: 25 } } }));
    setPages([page.data]);
    setCursor(page.has_more ? page.next_cursor : null);
    return page;
  }, []);
  const more = useAction(async () => {
    const page = await data(client.GET('/v1/sessions', { params: { query: { limit: 25, after: cursor! } } }));
    setPages((current) => [...current, page.data]);
    setCursor(page.has_more ? page.next_cursor : null);
  });
  const sessions = pages.flat();
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>
        Sessions
      </h1>
      <ErrorMessage error={first.error ?? names.error} />
      {first.loading && !first.data && <Loading what="sessions" />}
      {first.data && sessions.length === 0 && (
        <p class="empty">
          No conversations yet. <a href={href('chat')}>Start one</a>.
        </p>
      )}
      {sessions.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Conversation</th>
                <th scope="col">With</th>
                <th scope="col">Messages</th>
                <th scope="col">Status</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {sessions.map((session) => {
                const target = targetOf(session);
                return (
                  <tr key={session.id}>
                    <td>
                      <a href={href('sessions', session.id)}>{session.title ?? session.id}</a>
                    </td>
                    <td>{target ? (names.data?.get(target.id) ?? target.id) : '—'}</td>
                    <td>{session.message_count}</td>
                    <td>{session.status}</td>
                    <td>{formatTime(session.updated_at)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <ErrorMessage error={more.error} />
      {cursor && (
        <button type="button" onClick={() => void more.run()} disabled={more.busy}>
          Show older sessions
        </button>
      )}
    </section>
  );
}

export function SessionDetail({ sessionId }: { sessionId: string }) {
  const { client } = useSession();
  const names = useNames();
  const loaded = useLoad(
    () =>
      Promise.all([
        data(client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId } } })),
        allPages((after) => client.GET('/v1/sessions/{sessionId}/runs', { params: { path: { sessionId }, query: { limit: 100, ...(after ? { after } : {}) } } })),
      ]),
    [sessionId],
  );
  const heading = useFocusHeading<HTMLHeadingElement>([loaded.data !== undefined]);
  const remove = useAction(async () => {
    await data(client.DELETE('/v1/sessions/{sessionId}', { params: { path: { sessionId } } }));
    navigate(href('sessions'));
  });
  if (loaded.error) return <ErrorMessage error={loaded.error} />;
  if (!loaded.data) return <Loading what="the session" />;
  const [session, runs] = loaded.data;
  const target = targetOf(session);
  const targetName = target ? (names.data?.get(target.id) ?? target.id) : 'Agent';
  return (
    <section>
      <div class="title-row">
        <h1 ref={heading} tabIndex={-1}>
          {session.title ?? session.id}
        </h1>
        <div class="actions">
          {target && (
            <a class="button primary" href={`${href('chat', target.kind, target.id)}?session=${encodeURIComponent(session.id)}`}>
              Continue the conversation
            </a>
          )}
          <DeleteButton label="Delete session" busy={remove.busy} onConfirm={() => void remove.run()} />
        </div>
      </div>
      <p class="meta">
        <span>
          With {targetName} ({target?.kind ?? 'nobody'})
        </span>
        <span>{session.message_count} messages</span>
        <span>{session.status}</span>
        <span>started {formatTime(session.created_at)}</span>
      </p>
      <ErrorMessage error={remove.error} />

      <h2>Runs</h2>
      {runs.length === 0 ? (
        <p class="muted">No runs.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Model</th>
                <th scope="col">Tokens</th>
                <th scope="col">Events</th>
                <th scope="col">Started</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((run) => (
                <tr key={run.id}>
                  <td>
                    <a href={href('runs', run.id)} aria-label={`Replay run ${run.id}`}>
                      Replay <code>{run.id}</code>
                    </a>
                  </td>
                  <td>{run.status}</td>
                  <td>{run.model}</td>
                  <td>{formatNumber(run.usage.total_tokens)}</td>
                  <td>{run.last_sequence_number}</td>
                  <td>{formatTime(run.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h2>Messages</h2>
      <TranscriptView transcript={fromMessages(session.messages, session.id)} tools={new Map()} targetName={targetName} />
    </section>
  );
}
