// A past run replayed from its stored events (GET /v1/runs/{id}/events): a timeline to step or play
// through, and beside it the conversation as it stood at that event, folded by the same code as the live
// chat. A run still going can be followed live.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { allPages, data, failureOf, guardStream, type RunEvent, type Schemas } from '../api.ts';
import { applyEvent, emptyTranscript, isTerminal } from '../chat/transcript.ts';
import { TranscriptView } from '../chat/transcript-view.tsx';
import { href } from '../router.ts';
import { ErrorMessage, formatNumber, formatTime, Loading, useFocusHeading, useLoad, useSession } from '../ui.tsx';
import { loadTarget } from './chat.tsx';

/** The longest pause played back between two events; a run that waited an hour for a tool replays in a second. */
const MAX_GAP_MS = 1000;

function summary(event: RunEvent): string {
  switch (event.type) {
    case 'RunStarted':
      return `${event.resumed ? 'resumed' : 'started'} on ${event.model}`;
    case 'RunResponse':
      return event.delta !== undefined ? JSON.stringify(event.delta) : `message${event.message?.tool_calls?.length ? ` with ${event.message.tool_calls.map((call) => call.function.name).join(', ')}` : ''}`;
    case 'ToolCallStarted':
      return `${event.tool_call.function.name} ${event.tool_call.function.arguments}`;
    case 'ToolCallCompleted':
      return `${event.name}${event.is_error ? ' failed' : ''}: ${event.output.slice(0, 80)}`;
    case 'ToolRequest':
      return `waits for ${event.tool_calls.map((call) => call.function.name).join(', ')}`;
    case 'RunCompleted':
      return `${event.status}, ${formatNumber(event.usage.total_tokens)} tokens`;
    case 'RunError':
      return event.error.message;
  }
}

export function RunReplay({ runId }: { runId: string }) {
  const { client } = useSession();
  const loaded = useLoad(async () => {
    const [run, events] = await Promise.all([
      data(client.GET('/v1/runs/{runId}', { params: { path: { runId } } })),
      allPages(
        (after) => client.GET('/v1/runs/{runId}/events', { params: { path: { runId }, query: { limit: 100, ...(after ? { after } : {}) } }, headers: { Accept: 'application/json' } }),
        10_000,
      ),
    ]);
    const kind = run.team_id ? 'team' : 'agent';
    // The agent or team may be gone since; the replay does not need it, only its tool definitions.
    const target = await loadTarget(client, kind, (run.team_id ?? run.agent_id)!).catch(() => null);
    return { run, events, target };
  }, [runId]);
  const heading = useFocusHeading<HTMLHeadingElement>([loaded.data !== undefined]);
  if (loaded.error) return <ErrorMessage error={loaded.error} />;
  if (!loaded.data) return <Loading what="the run's events" />;
  return (
    <section class="replay">
      <h1 ref={heading} tabIndex={-1}>
        Replay of <code>{runId}</code>
      </h1>
      <Player run={loaded.data.run} initialEvents={loaded.data.events} target={loaded.data.target} />
    </section>
  );
}

function Player({ run, initialEvents, target }: { run: Schemas['Run']; initialEvents: RunEvent[]; target: Awaited<ReturnType<typeof loadTarget>> | null }) {
  const { client } = useSession();
  const [events, setEvents] = useState(initialEvents);
  const [position, setPosition] = useState(initialEvents.length);
  const [playing, setPlaying] = useState(false);
  const [following, setFollowing] = useState(false);
  const [followError, setFollowError] = useState<ReturnType<typeof failureOf> | null>(null);
  const ended = events.length > 0 && isTerminal(events.at(-1)!) && events.at(-1)!.type !== 'ToolRequest';

  const transcript = useMemo(() => events.slice(0, position).reduce(applyEvent, emptyTranscript), [events, position]);
  const start = events[0] ? Date.parse(events[0].created_at) : 0;
  const span = Math.max(1, (events.at(-1) ? Date.parse(events.at(-1)!.created_at) : 0) - start);

  // Plays from the current position with the run's own pauses, each at most MAX_GAP_MS.
  useEffect(() => {
    if (!playing) return;
    if (position >= events.length) {
      setPlaying(false);
      return;
    }
    const previous = events[position - 1];
    const gap = previous ? Math.min(MAX_GAP_MS, Math.max(0, Date.parse(events[position]!.created_at) - Date.parse(previous.created_at))) : 0;
    const timer = setTimeout(() => setPosition((p) => p + 1), gap);
    return () => clearTimeout(timer);
  }, [playing, position, events]);

  // The current event stays in sight in the timeline as the replay moves.
  const timeline = useRef<HTMLOListElement>(null);
  useEffect(() => {
    timeline.current?.querySelector('[aria-current="step"]')?.scrollIntoView({ block: 'nearest' });
  }, [position]);

  const follow = async () => {
    setFollowing(true);
    setFollowError(null);
    try {
      const last = events.at(-1)?.sequence_number;
      for await (const event of guardStream(client.runs.events(run.id, last === undefined ? undefined : String(last)))) {
        setEvents((current) => [...current, event]);
        setPosition((p) => p + 1);
      }
    } catch (error) {
      setFollowError(failureOf(error));
    } finally {
      setFollowing(false);
    }
  };

  return (
    <>
      <p class="meta">
        <span>{run.status}</span>
        <span>{target ? `${target.kind} ${target.name}` : (run.agent_id ?? run.team_id)}</span>
        <span>model {run.model}</span>
        <span>{formatNumber(run.usage.total_tokens)} tokens</span>
        <span>started {formatTime(run.created_at)}</span>
        <a href={href('sessions', run.session_id)}>Session</a>
        {run.parent_run_id && <a href={href('runs', run.parent_run_id)}>Team run</a>}
      </p>
      <div class="player">
        <div class="controls">
          <button type="button" onClick={() => setPosition(0)} disabled={position === 0}>
            Start
          </button>
          <button type="button" onClick={() => setPosition((p) => Math.max(0, p - 1))} disabled={position === 0}>
            Back
          </button>
          <button
            type="button"
            class="primary"
            onClick={() => {
              if (!playing && position >= events.length) setPosition(0);
              setPlaying(!playing);
            }}
          >
            {playing ? 'Pause' : 'Play'}
          </button>
          <button type="button" onClick={() => setPosition((p) => Math.min(events.length, p + 1))} disabled={position >= events.length}>
            Next
          </button>
          <label class="position">
            Event {position} of {events.length}
            <input type="range" min={0} max={events.length} value={position} onInput={(event) => { setPlaying(false); setPosition(Number(event.currentTarget.value)); }} />
          </label>
          {!ended && (
            <button type="button" onClick={() => void follow()} disabled={following}>
              {following ? 'Following…' : 'Follow live'}
            </button>
          )}
        </div>
        <div class="track" aria-hidden="true">
          {events.map((event, index) => (
            <span
              key={event.sequence_number}
              class={`dot ${event.type}${index < position ? ' seen' : ''}`}
              style={{ left: `${((Date.parse(event.created_at) - start) / span) * 100}%` }}
            />
          ))}
        </div>
      </div>
      <ErrorMessage error={followError} />
      <div class="replay-panes">
        <ol class="timeline" aria-label="Events" ref={timeline}>
          {events.map((event, index) => (
            <li key={event.sequence_number} class={index < position ? 'seen' : ''} aria-current={index === position - 1 ? 'step' : undefined}>
              <button type="button" onClick={() => { setPlaying(false); setPosition(index + 1); }}>
                <span class="seq">#{event.sequence_number}</span>
                <span class="offset">+{((Date.parse(event.created_at) - start) / 1000).toFixed(3)}s</span>
                <span class={`type ${event.type}`}>{event.type}</span>
                {event.from && <span class="muted">{event.from.name}</span>}
                <span class="summary">{summary(event)}</span>
              </button>
            </li>
          ))}
        </ol>
        <TranscriptView transcript={transcript} tools={target?.tools ?? new Map()} targetName={target?.name ?? 'Agent'} />
      </div>
    </>
  );
}
