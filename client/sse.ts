// Reads a text/event-stream response as typed events, with eventsource-parser doing the framing.
import { EventSourceParserStream } from 'eventsource-parser/stream';

export interface ServerSentEvent<T> {
  /** The `event:` field, when the stream sends one (agent runs do; OpenAI-style streams do not). */
  event: string | undefined;
  /** The `id:` field; pass it as `Last-Event-ID` to resume. */
  id: string | undefined;
  data: T;
}

/**
 * Yields each event of `body` with its `data` parsed as JSON. A `data: [DONE]` sentinel ends the
 * iteration. Breaking out of the loop cancels the underlying response.
 */
export async function* readEventStream<T>(body: ReadableStream<BufferSource>): AsyncGenerator<ServerSentEvent<T>> {
  const events = body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  const reader = events.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      if (value.data === '[DONE]') return;
      yield { event: value.event, id: value.id, data: JSON.parse(value.data) as T };
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
