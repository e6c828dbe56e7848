// Streamed chat chunks relayed as an OpenAI-compatible upstream wrote them: what the client gets is what
// parsing each chunk, setting the public model id and OpenAI's usage convention, and serialising it again
// would write, byte for byte; chunks that need more than those edits are read the slow way.
import { describe, expect, it } from 'vitest';
import { passThroughPayload, payloadOf, type UsageField } from './handlers.ts';
import { sniffChunk } from './openai.ts';
import { SerializedJson } from '../http/sse.ts';
import { chunkText } from './upstream.ts';
import type { ChatCompletionChunk } from './types.ts';

const PUBLIC = 'gpt-public';
const MODES: UsageField[] = ['keep', 'null', 'drop'];

/** What the gateway wrote before chunks were passed through: the parsed chunk, edited, serialised again. */
function parsedAndWritten(data: string, usage: UsageField): string {
  const chunk = JSON.parse(data) as ChatCompletionChunk;
  for (const choice of chunk.choices) choice.delta ??= {};
  return JSON.stringify(payloadOf({ ...chunk, model: PUBLIC }, usage));
}

const written = (payload: unknown) => (payload instanceof SerializedJson ? payload.text : JSON.stringify(payload));

const head = '"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18"';
/** Chunks that are relayed as written. */
const relayed = [
  `{${head},"system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
  `{${head},"service_tier":"default","choices":[{"index":0,"delta":{"content":" Hello"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"xyz"}`,
  `{${head},"choices":[{"index":0,"delta":{"content":"say \\"hi\\"\\n\\u00e9 – ünïcode"},"finish_reason":null}]}`,
  `{"usage":null,${head},"choices":[{"index":0,"delta":{"content":"usage first"},"finish_reason":null}]}`,
  `{${head},"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null},{"index":1,"delta":{"content":"b"},"finish_reason":null}],"usage":null}`,
];
/** Chunks that need parsing: usage, tool calls, the finish (where a delta may be missing), another layout, an error. */
const parsed = [
  `{${head},"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`,
  `{${head},"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":1}"}}]},"finish_reason":null}]}`,
  `{${head},"choices":[{"index":0,"finish_reason":"stop"}]}`,
  `{${head},"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
  `{${head},"choices":[],"prompt_filter_results":[]}`,
  `{\n"id":"x","model":"m","choices":[]}`,
  `{"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"content": "spaced"}}]}`,
  `{${head},"choices":[{"index":0,"delta":{"content":"escaped model"}}],"usage":null,"x":{"model":"other"}}`,
  `{"error":{"message":"boom"}}`,
  `{${head},"choices":[{"index":0,"delta":{"content":"bad \\x escape"},"finish_reason":null}]}`,
];

describe('chunks passed through', () => {
  it('are written byte for byte as parsing and serialising them again would, in every usage mode', () => {
    for (const data of relayed) {
      const chunk = sniffChunk(data);
      expect(chunk, data).toBeDefined();
      expect(chunk!.model).toBe('gpt-4o-mini-2024-07-18');
      for (const usage of MODES) {
        const out = written(passThroughPayload({ ...chunk!, model: PUBLIC }, usage));
        // Escapes the upstream chose (\u00e9 for é) stay as it wrote them: the same JSON, other bytes.
        if (JSON.stringify(JSON.parse(data)) === data) expect(out, `${usage}: ${data}`).toBe(parsedAndWritten(data, usage));
        else expect(JSON.parse(out), `${usage}: ${data}`).toEqual(JSON.parse(parsedAndWritten(data, usage)));
      }
    }
  });

  it('carry the text and the finish that metering and the completeness check read', () => {
    for (const data of relayed) {
      const chunk = sniffChunk(data)!;
      const value = JSON.parse(data) as ChatCompletionChunk;
      expect(chunk.text).toBe(chunkText({ ...value, choices: value.choices.map((choice) => ({ ...choice, delta: choice.delta ?? {} })) }));
      expect(chunk.finished).toBe(value.choices.some((choice) => choice.finish_reason !== null && choice.finish_reason !== undefined));
      expect(chunk.usageOnly).toBe(false);
    }
  });

  it('leave to parsing what needs more than a model name and a null usage changed', () => {
    for (const data of parsed) expect(sniffChunk(data), data).toBeUndefined();
  });

  it('of legacy completions carry their text and are written as parsing would write them', () => {
    const completion = '"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"gpt-3.5-turbo-instruct"';
    const data = `{${completion},"choices":[{"text":" say \\"hi\\"","index":0,"logprobs":null,"finish_reason":null}]}`;
    const chunk = sniffChunk(data, 'completion')!;
    expect(chunk.text).toBe(' say "hi"');
    for (const usage of MODES) expect(written(passThroughPayload({ ...chunk, model: PUBLIC }, usage))).toBe(JSON.stringify(payloadOf({ ...JSON.parse(data), model: PUBLIC }, usage)));
    // A chat chunk's markers are not a completion's, nor the other way round; the finish is parsed.
    expect(sniffChunk(data, 'chat')).toBeUndefined();
    expect(sniffChunk(relayed[1]!, 'completion')).toBeUndefined();
    expect(sniffChunk(`{${completion},"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}`, 'completion')).toBeUndefined();
  });
});
