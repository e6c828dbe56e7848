// Renders a Transcript: messages, tool-call cards (arguments, result, who called), notices, and what the
// run waits for. Used by the live chat and by the replay alike.
import type { FunctionComponent } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { Schemas } from '../api.ts';
import { prettyJson } from '../ui.tsx';
import { ActionView, type ActionAnswer } from './actions.tsx';
import type { Item, Speaker, Transcript } from './transcript.ts';

export interface TranscriptViewProps {
  transcript: Transcript;
  tools: Map<string, Schemas['FunctionTool']>;
  /** Answers a pending action; absent in a replay. */
  answer?: (actionKey: string, answer: ActionAnswer) => void;
  busy?: boolean;
  /** Who the person talks to, for the label of unattributed replies. */
  targetName: string;
  /** Keeps the end of the conversation in view as it grows (the live chat). */
  follow?: boolean;
}

function SpeakerLabel({ from, member, fallback }: { from: Speaker | undefined; member: boolean; fallback: string }) {
  if (!from) return <span class="speaker">{fallback}</span>;
  return (
    <span class="speaker">
      {from.name}
      {from.is_leader && <span class="badge">leader</span>}
      {member && <span class="badge">member's own work</span>}
      {from.role && !from.is_leader && <span class="muted"> · {from.role}</span>}
    </span>
  );
}

type ItemProps<K extends Item['kind']> = { item: Extract<Item, { kind: K }> } & Omit<TranscriptViewProps, 'transcript' | 'follow'>;

const itemViews: { [K in Item['kind']]: FunctionComponent<ItemProps<K>> } = {
  user: ({ item }) => (
    <div class="message user">
      <span class="speaker">You</span>
      <div class="text">{item.text}</div>
    </div>
  ),
  assistant: ({ item, targetName }) => (
    <div class={`message assistant${item.memberRunId ? ' relayed' : ''}`} aria-busy={item.streaming}>
      <SpeakerLabel from={item.from} member={Boolean(item.memberRunId)} fallback={targetName} />
      <div class="text">
        {item.text}
        {item.streaming && <span class="cursor" aria-hidden="true" />}
      </div>
    </div>
  ),
  tool_call: ({ item, targetName }) => (
    <div class={`tool-card ${item.state}${item.isError ? ' failed' : ''}${item.memberRunId ? ' relayed' : ''}`}>
      <div class="tool-head">
        <code class="tool-name">{item.name}</code>
        <span class="badge">{item.side === 'server' ? 'server tool' : item.side === 'client' ? 'client tool' : 'tool'}</span>
        <span class="tool-state">{item.state === 'running' ? 'running…' : item.state === 'requested' ? 'waiting for a result' : item.isError ? 'failed' : 'done'}</span>
        <SpeakerLabel from={item.from} member={Boolean(item.memberRunId)} fallback={targetName} />
      </div>
      {item.arguments && (
        <details open>
          <summary>Arguments</summary>
          <pre class="json">{prettyJson(item.arguments)}</pre>
        </details>
      )}
      {item.output !== undefined && (
        <details open>
          <summary>Result</summary>
          <pre class="json">{prettyJson(item.output)}</pre>
        </details>
      )}
    </div>
  ),
  action: ({ item, tools, answer, busy }) => (
    <ActionView action={item.action} settled={item.answered} tools={tools} busy={busy} {...(answer ? { answer: (given: ActionAnswer) => answer(item.key, given) } : {})} />
  ),
  notice: ({ item }) => (
    <p class={`notice ${item.tone}`} role={item.tone === 'error' ? 'alert' : undefined}>
      {item.text}
    </p>
  ),
};

export function TranscriptView(props: TranscriptViewProps) {
  const last = props.transcript.items.at(-1);
  const lastLength = last?.kind === 'assistant' ? last.text.length : 0;
  // Follows the conversation while the person is at its end; leaves them be when they scrolled up to read.
  const atEnd = useRef(true);
  useEffect(() => {
    if (!props.follow) return;
    const measure = () => {
      const page = document.documentElement;
      atEnd.current = page.scrollHeight - page.scrollTop - page.clientHeight < 200;
    };
    addEventListener('scroll', measure, { passive: true });
    return () => removeEventListener('scroll', measure);
  }, [props.follow]);
  useEffect(() => {
    if (props.follow && atEnd.current) scrollTo({ top: document.documentElement.scrollHeight });
  }, [props.follow, props.transcript.items.length, lastLength, props.transcript.status, props.busy]);
  return (
    <div class="transcript" aria-label="Conversation">
      {props.transcript.items.map((item) => {
        const View = itemViews[item.kind] as FunctionComponent<ItemProps<Item['kind']>>;
        return <View key={item.key} item={item} tools={props.tools} targetName={props.targetName} {...(props.answer ? { answer: props.answer } : {})} busy={props.busy ?? false} />;
      })}
    </div>
  );
}
