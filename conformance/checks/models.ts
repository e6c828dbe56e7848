// The OpenAI-compatible endpoints, in the shapes stock OpenAI clients read: models, chat completions
// (plain, streamed, with tools), legacy completions and embeddings; and agents served as models.
import type { Check, Context, Schemas } from '../context.ts';
import { TOOL, TOOL_NAME, TOOL_PROMPT } from '../context.ts';
import type { Exchange } from '../http.ts';

type Chunk = Schemas['ChatCompletionChunk'];

function chunksOf(answer: Exchange): Chunk[] {
  return (answer.events ?? []).map((event) => event.json as Chunk | undefined).filter((chunk): chunk is Chunk => !!chunk && 'choices' in chunk);
}

function checkChatStream(t: Context, answer: Exchange, how: string): Chunk[] {
  const chunks = chunksOf(answer);
  if (!t.check('createChatCompletion', answer.mediaType === 'text/event-stream', `${how} did not answer text/event-stream (${answer.mediaType})`)) return [];
  t.check('createChatCompletion', chunks.length > 0, `${how} sent no chunks`);
  t.check('createChatCompletion', new Set(chunks.map((chunk) => chunk.id)).size <= 1, `${how}: the chunks carry different ids`);
  t.check('createChatCompletion', chunks.some((chunk) => chunk.choices.some((choice) => choice.finish_reason)), `${how}: no chunk has a finish_reason`);
  return chunks;
}

function isJsonObject(text: string | undefined): boolean {
  try {
    const value: unknown = JSON.parse(text ?? '');
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

export const modelChecks: Check[] = [
  {
    name: 'models',
    operations: ['listModels', 'getModel'],
    async run(t) {
      const models = await t.models();
      t.require('listModels', models.length > 0, 'GET /v1/models lists no model');
      const first = models[0]!;
      const model = (await t.call('getModel', { params: { model: first.id }, expect: 200 })).json as Schemas['Model'];
      t.check('getModel', model.id === first.id, `GET /v1/models/${first.id} answered model ${model.id}`);
      await t.call('getModel', { params: { model: `conformance-no-such-model-${t.nonce}` }, expect: 404, halt: false });

      const agent = await t.agent();
      const asModel = await t.call('getModel', { params: { model: `agent:${agent.id}` }, expect: 200, halt: false });
      if (asModel.status === 200) {
        t.check('getModel', (asModel.json as Schemas['Model']).owned_by === 'agent', `agent:${agent.id} is not owned_by agent`);
      }
      const listed = await t.call('listModels', { expect: 200 });
      t.check('listModels', (listed.json as Schemas['ModelList']).data.some((entry) => entry.id === `agent:${agent.id}`), `the caller's agent is not listed as agent:${agent.id}`);
    },
  },
  {
    name: 'chat completions',
    operations: ['createChatCompletion'],
    async run(t) {
      const model = await t.model();
      const messages = [{ role: 'user', content: `conformance ${t.nonce} say hello` }];
      const plain = (await t.call('createChatCompletion', { body: { model, messages }, expect: 200 })).json as Schemas['ChatCompletion'];
      t.check('createChatCompletion', plain.choices.length > 0 && plain.choices[0]!.message.role === 'assistant', 'the completion has no assistant choice');

      const streamed = await t.call('createChatCompletion', { body: { model, messages, stream: true, stream_options: { include_usage: true } }, accept: 'text/event-stream', expect: 200 });
      const chunks = checkChatStream(t, streamed, 'stream: true');
      const last = chunks.at(-1);
      t.check('createChatCompletion', !!last?.usage && last.choices.length === 0, 'with stream_options.include_usage the last chunk does not carry usage and no choices');

      const byAccept = await t.call('createChatCompletion', { body: { model, messages }, accept: 'text/event-stream', expect: 200 });
      checkChatStream(t, byAccept, 'Accept: text/event-stream');

      const withTools = (await t.call('createChatCompletion', { body: { model, messages: [{ role: 'user', content: TOOL_PROMPT }], tools: [TOOL] }, expect: 200 })).json as Schemas['ChatCompletion'];
      const choice = withTools.choices[0];
      if (choice?.finish_reason === 'tool_calls') {
        const call = choice.message.tool_calls?.[0];
        t.check('createChatCompletion', call?.function.name === TOOL_NAME, `finish_reason tool_calls, but the call is to ${call?.function.name}`);
        t.check('createChatCompletion', isJsonObject(call?.function.arguments), `the tool call's arguments are not a JSON object: ${call?.function.arguments}`);
        const toolStream = await t.call('createChatCompletion', { body: { model, messages: [{ role: 'user', content: TOOL_PROMPT }], tools: [TOOL], stream: true }, accept: 'text/event-stream', expect: 200 });
        const calls = checkChatStream(t, toolStream, 'a streamed tool call').flatMap((chunk) => chunk.choices.flatMap((c) => c.delta.tool_calls ?? []));
        t.check('createChatCompletion', calls.some((delta) => delta.function?.name === TOOL_NAME), 'the streamed tool call never names the tool');
      } else {
        t.note('createChatCompletion', `tool calls not applicable: ${model} answered without calling ${TOOL_NAME}`);
      }

      await t.call('createChatCompletion', { body: { model: `conformance-no-such-model-${t.nonce}`, messages }, expect: [400, 404], halt: false });
      await t.call('createChatCompletion', { body: { model, messages: [] }, expect: 400, halt: false });

      const agent = await t.agent();
      const viaAgent = await t.call('createChatCompletion', { body: { model: `agent:${agent.id}`, messages }, expect: 200, halt: false });
      if (viaAgent.status === 200) {
        t.check('createChatCompletion', (viaAgent.json as Schemas['ChatCompletion']).choices[0]?.message.role === 'assistant', 'an agent as a model gave no assistant message');
      }
    },
  },
  {
    name: 'legacy completions',
    operations: ['createCompletion'],
    async run(t) {
      const model = await t.model();
      const plain = (await t.call('createCompletion', { body: { model, prompt: `conformance ${t.nonce} once upon a time` }, expect: 200 })).json as Schemas['Completion'];
      t.check('createCompletion', plain.choices.length > 0, 'the completion has no choices');
      const streamed = await t.call('createCompletion', { body: { model, prompt: 'once upon a time', stream: true }, accept: 'text/event-stream', expect: 200 });
      t.check('createCompletion', streamed.mediaType === 'text/event-stream' && (streamed.events?.length ?? 0) > 1, 'stream: true did not answer a stream of completions');
    },
  },
  {
    name: 'embeddings',
    operations: ['createEmbedding'],
    async run(t) {
      const models = await t.models();
      const model = models.find((candidate) => candidate.capabilities?.includes('embeddings'));
      if (!model) {
        t.skip('createEmbedding', 'GET /v1/models lists no model with the embeddings capability');
        return;
      }
      const input = ['conformance kit', 'second input'];
      const list = (await t.call('createEmbedding', { body: { model: model.id, input }, expect: 200 })).json as Schemas['EmbeddingList'];
      t.check('createEmbedding', list.data.length === input.length, `${input.length} inputs gave ${list.data.length} embeddings`);
      t.check('createEmbedding', list.data.every((item, index) => item.index === index), 'the embeddings are not in input order');
      const vectors = list.data.map((item) => item.embedding);
      const dimension = Array.isArray(vectors[0]) ? vectors[0].length : 0;
      t.check('createEmbedding', dimension > 0 && vectors.every((vector) => Array.isArray(vector) && vector.length === dimension), 'the float vectors are empty or of different lengths');

      const packed = (await t.call('createEmbedding', { body: { model: model.id, input: input[0], encoding_format: 'base64' }, expect: 200 })).json as Schemas['EmbeddingList'];
      const encoded = packed.data[0]?.embedding;
      t.check(
        'createEmbedding',
        typeof encoded === 'string' && Buffer.from(encoded, 'base64').length === dimension * 4,
        `the base64 embedding is not ${dimension} little-endian float32 values`,
      );
      await t.call('createEmbedding', { body: { model: model.id, input: '' }, expect: 400, halt: false });
    },
  },
];
