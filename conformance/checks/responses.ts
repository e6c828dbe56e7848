// OpenAI's Responses API and Conversations: a response as JSON and as a stream in the exact grammar (the
// `event:` line equal to the type, numbers from 0, `data: [DONE]` last), retrieved and replayed alike, a
// chain that carries a function call and its output, cancel and delete; conversations and their items;
// and another user's responses and conversations answering 404.
import type { Check, Context, Schemas } from '../context.ts';
import { TOOL_NAME, TOOL_PROMPT } from '../context.ts';
import type { SseEvent } from '../http.ts';
import { checkResponseStream } from '../responses-stream.ts';

type Response = Schemas['Response'];
type StreamEvent = Schemas['ResponseStreamEvent'];

const TOOL = { type: 'function', name: TOOL_NAME, description: 'Looks a word up.', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } };

/** The stream's JSON events, after checking that each names its type on its `event:` line and that [DONE] ends it. */
function streamOf(t: Context, id: 'createResponse' | 'getResponse', events: SseEvent[] | undefined, options: { from?: number } = {}): StreamEvent[] {
  const all = events ?? [];
  t.check(id, all.at(-1)?.data === '[DONE]', 'the stream does not end with data: [DONE]');
  const parsed = all.filter((event) => event.json !== undefined).map((event) => {
    const json = event.json as StreamEvent;
    t.check(id, event.event === json.type, `an event line says ${event.event} for a ${json.type}`);
    return json;
  });
  for (const problem of checkResponseStream(parsed, options)) t.check(id, false, `the stream: ${problem}`);
  return parsed;
}

const isAssistantMessage = (item: Schemas['ResponseItem']) => item.type === 'message' && item.role === 'assistant';

export const responseChecks: Check[] = [
  {
    name: 'responses',
    operations: ['createResponse', 'getResponse', 'listResponseInputItems', 'cancelResponse', 'deleteResponse'],
    async run(t) {
      const model = await t.model();
      const text = `conformance ${t.nonce} responses`;
      const made = (await t.call('createResponse', { body: { model, input: text }, expect: 200 })).json as Response;
      t.check('createResponse', made.object === 'response' && made.status === 'completed', `answered a ${made.object} with status ${made.status}`);
      t.check('createResponse', made.output.some(isAssistantMessage), 'the output has no assistant message');

      const streamed = await t.call('createResponse', { body: { model, input: text, stream: true }, accept: 'text/event-stream', expect: 200 });
      t.require('createResponse', streamed.mediaType === 'text/event-stream', `stream: true answered ${streamed.mediaType}`);
      const events = streamOf(t, 'createResponse', streamed.events);
      const final = events.at(-1) as Schemas['ResponseLifecycleEvent'] | undefined;
      t.require('createResponse', final?.type === 'response.completed', `the stream ended with ${final?.type}`);
      const id = final!.response.id;

      const fetched = (await t.call('getResponse', { params: { responseId: id }, expect: 200 })).json as Response;
      t.check('getResponse', JSON.stringify(fetched.output) === JSON.stringify(final!.response.output), 'the retrieved output differs from the streamed one');
      const replay = await t.call('getResponse', { params: { responseId: id }, query: { stream: 'true' }, accept: 'text/event-stream', expect: 200 });
      const replayed = streamOf(t, 'getResponse', replay.events);
      t.check('getResponse', JSON.stringify(replayed) === JSON.stringify(events), 'stream=true replays other events than were streamed');
      const tail = await t.call('getResponse', { params: { responseId: id }, query: { stream: 'true', starting_after: 2 }, accept: 'text/event-stream', expect: 200 });
      t.check('getResponse', JSON.stringify(streamOf(t, 'getResponse', tail.events, { from: 3 })) === JSON.stringify(events.slice(3)), 'starting_after=2 does not resume at sequence number 3');

      const items = (await t.call('listResponseInputItems', { params: { responseId: id }, expect: 200 })).json as Schemas['ResponseItemList'];
      const first = items.data[0];
      t.check('listResponseInputItems', first?.type === 'message' && first.role === 'user' && JSON.stringify(first.content).includes(text), 'the input items do not hold the input');

      // A chain: a function call, its output sent with previous_response_id, and the model goes on.
      const asked = (await t.call('createResponse', { body: { model, input: TOOL_PROMPT, tools: [TOOL] }, expect: 200 })).json as Response;
      const call = asked.output.find((item) => item.type === 'function_call');
      if (call?.type === 'function_call') {
        t.check('createResponse', asked.status === 'completed', `a response ending in a function call has status ${asked.status}, not completed`);
        const next = (await t.call('createResponse', {
          body: { model, previous_response_id: asked.id, tools: [TOOL], input: [{ type: 'function_call_output', call_id: call.call_id, output: 'conformance' }] },
          expect: 200,
        })).json as Response;
        t.check('createResponse', next.status === 'completed' && next.output.some(isAssistantMessage), `the follow-up with the function output ended ${next.status}`);
      } else {
        t.note('createResponse', `the model did not call ${TOOL_NAME}; the function-call chain was not exercised`);
      }
      await t.call('createResponse', { body: { model, input: text, conformance_unknown_field: true }, expect: 400, halt: false });

      const cancelled = (await t.call('cancelResponse', { params: { responseId: made.id }, expect: 200 })).json as Response;
      t.check('cancelResponse', cancelled.status === 'completed', `cancelling a finished response changed its status to ${cancelled.status}`);
      const deleted = (await t.call('deleteResponse', { params: { responseId: made.id }, expect: 200 })).json as Schemas['ResponseDeleted'];
      t.check('deleteResponse', deleted.deleted && deleted.id === made.id, 'the deletion does not say deleted');
      await t.call('getResponse', { params: { responseId: made.id }, expect: 404, halt: false });
      await t.call('deleteResponse', { params: { responseId: made.id }, expect: 404, halt: false });

      if (t.hasSecondUser) {
        const responseId = { responseId: id };
        for (const [operation, extra] of [
          ['getResponse', {}],
          ['listResponseInputItems', {}],
          ['cancelResponse', {}],
          ['deleteResponse', {}],
        ] as const) {
          const answer = await t.call(operation, { params: responseId, ...extra, as: 'secondary', expect: 404, halt: false });
          t.check(operation, answer.status === 404, `user 2 got ${answer.status} for user 1's response`);
        }
        const chained = await t.call('createResponse', { body: { model, input: text, previous_response_id: id }, as: 'secondary', expect: 404, halt: false });
        t.check('createResponse', chained.status === 404, `user 2 chained onto user 1's response (${chained.status})`);
        await t.call('getResponse', { params: responseId, expect: 200, halt: false });
      }
    },
  },
  {
    name: 'conversations',
    operations: ['createConversation', 'getConversation', 'updateConversation', 'deleteConversation', 'createConversationItems', 'listConversationItems', 'getConversationItem', 'deleteConversationItem'],
    async run(t) {
      const model = await t.model();
      const made = (await t.call('createConversation', { body: { metadata: { kit: t.nonce }, items: [{ role: 'user', content: `conformance ${t.nonce} first` }] }, expect: 200 })).json as Schemas['Conversation'];
      const conversationId = { conversationId: made.id };
      t.check('createConversation', made.object === 'conversation' && made.metadata.kit === t.nonce, 'the conversation does not keep its metadata');
      const fetched = (await t.call('getConversation', { params: conversationId, expect: 200 })).json as Schemas['Conversation'];
      t.check('getConversation', fetched.id === made.id, 'GET answers another conversation');
      const updated = (await t.call('updateConversation', { params: conversationId, body: { metadata: { kit: 'updated' } }, expect: 200 })).json as Schemas['Conversation'];
      t.check('updateConversation', updated.metadata.kit === 'updated', 'the metadata did not change');

      const added = (await t.call('createConversationItems', { params: conversationId, body: { items: [{ type: 'message', role: 'user', content: 'second' }] }, expect: 200 })).json as Schemas['ResponseItemList'];
      t.check('createConversationItems', added.data.length === 1 && typeof added.data[0]?.id === 'string', 'the added item is not answered with an id');
      const response = (await t.call('createResponse', { body: { model, conversation: made.id, input: 'third' }, expect: 200, halt: false })).json as Response | undefined;
      const listed = (await t.call('listConversationItems', { params: conversationId, query: { order: 'asc' }, expect: 200 })).json as Schemas['ResponseItemList'];
      t.check('listConversationItems', listed.data.length >= 3, `the conversation lists ${listed.data.length} items, not at least 3`);
      if (response) t.check('createResponse', listed.data.some(isAssistantMessage), "a response's output was not added to its conversation");

      const itemId = added.data[0]!.id;
      const item = (await t.call('getConversationItem', { params: { ...conversationId, itemId }, expect: 200 })).json as Schemas['ResponseItem'];
      t.check('getConversationItem', item.id === itemId, 'GET answers another item');
      await t.call('deleteConversationItem', { params: { ...conversationId, itemId }, expect: 200 });
      await t.call('getConversationItem', { params: { ...conversationId, itemId }, expect: 404, halt: false });

      if (t.hasSecondUser) {
        for (const operation of ['getConversation', 'listConversationItems', 'deleteConversation'] as const) {
          const answer = await t.call(operation, { params: conversationId, as: 'secondary', expect: 404, halt: false });
          t.check(operation, answer.status === 404, `user 2 got ${answer.status} for user 1's conversation`);
        }
      }
      const deleted = (await t.call('deleteConversation', { params: conversationId, expect: 200 })).json as Schemas['ConversationDeleted'];
      t.check('deleteConversation', deleted.deleted, 'the deletion does not say deleted');
      await t.call('getConversation', { params: conversationId, expect: 404, halt: false });
    },
  },
];
