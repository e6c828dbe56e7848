// Chatting with an agent or a team over the run event stream (POST …/chat, text/event-stream): the reply
// streams in, tool calls become cards, a client-side tool request is answered in the page, a run can be
// cancelled, and the session goes on turn after turn.
import { useEffect, useRef, useState } from 'preact/hooks';
import { allPages, data, failureOf, guardStream, type Schemas } from '../api.ts';
import type { ActionAnswer } from '../chat/actions.tsx';
import {
  addNotice,
  addUserMessage,
  answerAction,
  applyEvent,
  emptyTranscript,
  fromMessages,
  withPendingRun,
  type Transcript,
} from '../chat/transcript.ts';
import { TranscriptView } from '../chat/transcript-view.tsx';
import { href } from '../router.ts';
import { ErrorMessage, Loading, formatNumber, useFocusHeading, useLoad, useSession } from '../ui.tsx';

type Kind = 'agent' | 'team';
type ChatRequest = Schemas['ChatRequest'];

export function ChatPicker() {
  const { client } = useSession();
  const heading = useFocusHeading<HTMLHeadingElement>([]);
  const targets = useLoad(
    () =>
      Promise.all([
        allPages((after) => client.GET('/v1/agents', { params: { query: { limit: 100, ...(after ? { after } : {}) } } })),
        allPages((after) => client.GET('/v1/teams', { params: { query: { limit: 100, ...(after ? { after } : {}) } } })),
      ]),
    [],
  );
  const [agents, teams] = targets.data ?? [[], []];
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>
        Chat
      </h1>
      <ErrorMessage error={targets.error} />
      {targets.loading && !targets.data && <Loading what="agents and teams" />}
      {targets.data && agents.length + teams.length === 0 && (
        <p class="empty">
          Nothing to chat with yet: <a href={href('agents', 'new')}>make an agent</a>.
        </p>
      )}
      {agents.length > 0 && (
        <>
          <h2>Agents</h2>
          <ul class="pick">
            {agents.map((agent) => (
              <li key={agent.id}>
                <a href={href('chat', 'agent', agent.id)}>{agent.name}</a> <span class="muted">{agent.model}</span>
              </li>
            ))}
          </ul>
        </>
      )}
      {teams.length > 0 && (
        <>
          <h2>Teams</h2>
          <ul class="pick">
            {teams.map((team) => (
              <li key={team.id}>
                <a href={href('chat', 'team', team.id)}>{team.name}</a> <span class="muted">{team.mode}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

interface Target {
  kind: Kind;
  id: string;
  name: string;
  /** Client tools by name: the agent's, or every member's for a team. */
  tools: Map<string, Schemas['FunctionTool']>;
}

export async function loadTarget(client: ReturnType<typeof useSession>['client'], kind: Kind, id: string): Promise<Target> {
  if (kind === 'agent') {
    const agent = await data(client.GET('/v1/agents/{agentId}', { params: { path: { agentId: id } } }));
    return { kind, id, name: agent.name, tools: new Map(agent.tools.map((tool) => [tool.function.name, tool])) };
  }
  const team = await data(client.GET('/v1/teams/{teamId}', { params: { path: { teamId: id } } }));
  const members = await Promise.all(team.members.map((member) => data(client.GET('/v1/agents/{agentId}', { params: { path: { agentId: member.agent_id } } }))));
  return { kind, id, name: team.name, tools: new Map(members.flatMap((agent) => agent.tools.map((tool) => [tool.function.name, tool] as const))) };
}

export function ChatView({ kind, targetId, sessionId }: { kind: Kind; targetId: string; sessionId: string | null }) {
  const { client } = useSession();
  const loaded = useLoad(async () => {
    const target = await loadTarget(client, kind, targetId);
    if (!sessionId) return { target, transcript: emptyTranscript };
    const session = await data(client.GET('/v1/sessions/{sessionId}', { params: { path: { sessionId } } }));
    let transcript = fromMessages(session.messages, session.id);
    if (session.status === 'requires_action') {
      const runs = await data(client.GET('/v1/sessions/{sessionId}/runs', { params: { path: { sessionId }, query: { limit: 1 } } }));
      if (runs.data[0]) transcript = withPendingRun(transcript, runs.data[0]);
    }
    return { target, transcript };
  }, [kind, targetId, sessionId]);
  if (loaded.error) return <ErrorMessage error={loaded.error} />;
  if (!loaded.data) return <Loading what="the conversation" />;
  return <Conversation target={loaded.data.target} initial={loaded.data.transcript} />;
}

let keys = 0;
const nextKey = () => `local:${++keys}`;

function Conversation({ target, initial }: { target: Target; initial: Transcript }) {
  const { client } = useSession();
  const [transcript, setTranscript] = useState(initial);
  const [streaming, setStreaming] = useState(false);
  const [text, setText] = useState('');
  const [announcement, setAnnouncement] = useState('');
  const [cancelError, setCancelError] = useState<ReturnType<typeof failureOf> | null>(null);
  const heading = useFocusHeading<HTMLHeadingElement>([]);
  const composer = useRef<HTMLTextAreaElement>(null);
  const mounted = useRef(true);
  useEffect(() => () => void (mounted.current = false), []);

  const update = (change: (state: Transcript) => Transcript) => mounted.current && setTranscript(change);

  /** One request to the chat endpoint, its events folded into the transcript as they come. */
  const stream = async (body: ChatRequest) => {
    setStreaming(true);
    setCancelError(null);
    setAnnouncement(`${target.name} is answering…`);
    try {
      const events = target.kind === 'agent' ? client.agents.chat(target.id, { ...body, stream: true }) : client.teams.chat(target.id, { ...body, stream: true });
      for await (const event of guardStream(events)) {
        if (!mounted.current) break;
        update((state) => applyEvent(state, event));
        if (event.type === 'RunStarted' && !body.session_id) {
          // The address names the session from now on: a reload or a shared link reopens it.
          history.replaceState(null, '', `${location.pathname}${href('chat', target.kind, target.id)}?session=${encodeURIComponent(event.session_id)}`);
        } else if (event.type === 'ToolRequest') {
          setAnnouncement(`${event.from?.name ?? target.name} asks to run ${event.tool_calls.map((call) => call.function.name).join(', ')}; answer below.`);
        } else if (event.type === 'RunCompleted') {
          setAnnouncement(event.status === 'canceled' ? 'The run was cancelled.' : `${target.name} has answered.`);
        } else if (event.type === 'RunError') {
          setAnnouncement(`The run failed: ${event.error.message}`);
        }
      }
    } catch (error) {
      const failure = failureOf(error);
      update((state) => ({ ...addNotice(state, 'error', failure.message, nextKey()), status: state.status === 'running' ? 'failed' : state.status }));
      setAnnouncement(failure.message);
    } finally {
      if (mounted.current) setStreaming(false);
    }
  };

  const waiting = transcript.status === 'requires_action';
  // Reads the field itself: a key pressed right after typing can come before the state holds the text.
  const send = (value: string) => {
    const message = value.trim();
    if (!message || streaming || waiting) return;
    setText('');
    update((state) => addUserMessage(state, message, nextKey()));
    void stream({ messages: [{ role: 'user', content: message }], ...(transcript.sessionId ? { session_id: transcript.sessionId } : {}) });
  };

  const answer = (actionKey: string, given: ActionAnswer) => {
    update((state) => answerAction(state, actionKey, given));
    void stream({
      session_id: transcript.sessionId!,
      messages: given.results.map((result) => ({ role: 'tool' as const, tool_call_id: result.callId, content: result.output })),
      ...(given.approvals.length ? { approvals: given.approvals } : {}),
    }).then(() => composer.current?.focus());
  };

  const cancel = async () => {
    const runId = transcript.runId;
    if (!runId) return;
    try {
      // The stream itself says that the run ended (RunCompleted, status canceled); only a refusal shows here.
      await data(client.POST('/v1/runs/{runId}/cancel', { params: { path: { runId } } }));
    } catch (error) {
      setCancelError(failureOf(error));
    }
  };

  const finished = !streaming && transcript.runId && (transcript.status === 'completed' || transcript.status === 'canceled' || transcript.status === 'failed');
  return (
    <section class="chat">
      <div class="title-row">
        <h1 ref={heading} tabIndex={-1}>
          {target.name}
          <span class="muted"> · {target.kind}</span>
        </h1>
        <div class="actions">
          {transcript.sessionId && (
            <a class="button" href={href('sessions', transcript.sessionId)}>
              Session
            </a>
          )}
          <button
            type="button"
            disabled={streaming}
            onClick={() => {
              setTranscript(emptyTranscript);
              setAnnouncement('');
              history.replaceState(null, '', `${location.pathname}${href('chat', target.kind, target.id)}`);
              composer.current?.focus();
            }}
          >
            New conversation
          </button>
          <a class="button" href={href(target.kind === 'agent' ? 'agents' : 'teams', target.id)}>
            Edit {target.kind}
          </a>
        </div>
      </div>
      {transcript.items.length === 0 && (
        <p class="empty">
          Say something. With the built-in <code>local</code> model, a message naming a tool calls it, with the first JSON object as its arguments
          {target.tools.size > 0 && (
            <>
              : try <code>{`${[...target.tools.keys()][0]} {"city": "Paris"}`}</code>
            </>
          )}
          .
        </p>
      )}
      <TranscriptView transcript={transcript} tools={target.tools} answer={answer} busy={streaming} targetName={target.name} follow />
      <p class="visually-hidden" role="status" aria-live="polite">
        {announcement}
      </p>
      {finished && (
        <p class="run-footer">
          <span>
            Run <code>{transcript.runId}</code> {transcript.status}
          </span>
          {transcript.model && <span>model {transcript.model}</span>}
          {transcript.usage && <span>{formatNumber(transcript.usage.total_tokens)} tokens</span>}
          <a href={href('runs', transcript.runId!)}>Replay this run</a>
        </p>
      )}
      <ErrorMessage error={cancelError} />
      <form
        class="composer"
        onSubmit={(event) => {
          event.preventDefault();
          send(composer.current?.value ?? text);
        }}
      >
        <label for="composer-text">Message {target.name}</label>
        <textarea
          id="composer-text"
          ref={composer}
          rows={2}
          value={text}
          placeholder={waiting ? 'Answer the tool request above first.' : 'Write a message; Enter sends, Shift+Enter starts a new line.'}
          aria-describedby="composer-hint"
          onInput={(event) => setText(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
              event.preventDefault();
              send(event.currentTarget.value);
            }
          }}
        />
        <p id="composer-hint" class="visually-hidden">
          Enter sends, Shift+Enter starts a new line.
        </p>
        <div class="composer-actions">
          {streaming ? (
            <button type="button" class="danger" onClick={() => void cancel()} disabled={!transcript.runId}>
              Cancel run
            </button>
          ) : (
            <button type="submit" class="primary" disabled={!text.trim() || waiting}>
              Send
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
