// OpenAI's Responses API (`/v1/responses`) and Conversations (`/v1/conversations`).
import type { SseFrame } from '../../generated/server.gen.ts';
import { ApiError } from '../errors.ts';
import { callerOf } from '../http/auth.ts';
import type { AppHandlers } from '../http/operations.ts';
import { inputItems } from './items.ts';
import type { StreamEvent } from './projection.ts';
import { createResponses, type ResponsesDeps } from './responses.ts';
import { pageOf, type ConversationRow } from './store.ts';

/** OpenAI's streams name each event twice: the SSE `event:` line is the JSON `type`. */
async function* framesOf(events: AsyncIterable<StreamEvent>): AsyncGenerator<SseFrame<StreamEvent>> {
  for await (const event of events) yield { event: event.type, data: event };
}

/** What `include` may ask for on reads: what exists here (no log probabilities) or names items this server never makes. */
const INCLUDABLE = new Set([
  'message.input_image.image_url',
  'reasoning.encrypted_content',
  'web_search_call.results',
  'web_search_call.action.sources',
  'file_search_call.results',
  'code_interpreter_call.outputs',
  'computer_call_output.output.image_url',
]);

/** Checked after the resource is found, so that a missing one answers 404 whatever else is asked. */
function checkInclude(query: { include?: string[] | undefined; 'include[]'?: string[] | undefined }): void {
  for (const value of [...(query.include ?? []), ...(query['include[]'] ?? [])]) {
    if (!INCLUDABLE.has(value)) throw new ApiError('invalid_request', `include: ${value} cannot be included.`, { details: [{ field: 'include', message: `${value} is not available`, in: 'query' }] });
  }
}

function conversationOf(row: ConversationRow) {
  return { id: row.id, object: 'conversation' as const, created_at: Math.floor(row.created_at.getTime() / 1000), metadata: row.metadata };
}

export function responseHandlers(deps: ResponsesDeps) {
  const responses = createResponses(deps);
  const { conversations } = responses;

  return {
    async createResponse(request) {
      const { auth, body, signal } = request;
      const stream = body.stream === true || request.acceptsEventStream;
      const started = await responses.create(callerOf(auth), body, { stream, signal });
      if (started.events) return { status: 200, stream: framesOf(started.events) };
      if (body.background) return { status: 200, body: started.response };
      // A client waiting for the answer gets a failure as an error, as OpenAI's do; the failed response stays retrievable.
      const { response, failure } = await started.done;
      if (failure) throw new ApiError(failure.code, failure.message, { details: [{ message: `Response ${response.id} failed; it can be retrieved.` }] });
      return { status: 200, body: response };
    },

    async getResponse({ auth, params, query, signal }) {
      if (query.stream === true) {
        const events = await responses.stream(auth.userId, params.responseId, query.starting_after ?? -1, signal);
        checkInclude(query);
        return { status: 200, stream: framesOf(events) };
      }
      const response = await responses.retrieve(auth.userId, params.responseId);
      checkInclude(query);
      return { status: 200, body: response };
    },

    async deleteResponse({ auth, params }) {
      await responses.remove(auth.userId, params.responseId);
      return { status: 200, body: { id: params.responseId, object: 'response', deleted: true } };
    },

    async cancelResponse({ auth, params }) {
      return { status: 200, body: await responses.cancel(auth.userId, params.responseId) };
    },

    async listResponseInputItems({ auth, params, query }) {
      const items = await responses.inputItems(auth.userId, params.responseId);
      checkInclude(query);
      return { status: 200, body: pageOf(items, query) };
    },

    async createConversation({ auth, body }) {
      const items = inputItems(body?.items ?? undefined, new Map(), 'items');
      const row = await conversations.create(auth.userId, body?.metadata ?? {});
      await conversations.append(auth.userId, row.id, items);
      return { status: 200, body: conversationOf(row) };
    },

    async getConversation({ auth, params }) {
      return { status: 200, body: conversationOf(await conversations.get(auth.userId, params.conversationId)) };
    },

    async updateConversation({ auth, params, body }) {
      return { status: 200, body: conversationOf(await conversations.update(auth.userId, params.conversationId, body.metadata ?? {})) };
    },

    async deleteConversation({ auth, params }) {
      await conversations.remove(auth.userId, params.conversationId);
      return { status: 200, body: { id: params.conversationId, object: 'conversation.deleted', deleted: true } };
    },

    async createConversationItems({ auth, params, body, query }) {
      await conversations.get(auth.userId, params.conversationId);
      checkInclude(query);
      const items = inputItems(body.items, new Map(), 'items');
      await conversations.append(auth.userId, params.conversationId, items);
      return { status: 200, body: { object: 'list', data: items, first_id: items[0]?.id ?? null, last_id: items.at(-1)?.id ?? null, has_more: false } };
    },

    async listConversationItems({ auth, params, query }) {
      const items = await conversations.items(auth.userId, params.conversationId);
      checkInclude(query);
      return { status: 200, body: pageOf(items, query) };
    },

    async getConversationItem({ auth, params, query }) {
      const item = await conversations.item(auth.userId, params.conversationId, params.itemId);
      checkInclude(query);
      return { status: 200, body: item };
    },

    async deleteConversationItem({ auth, params }) {
      await conversations.removeItem(auth.userId, params.conversationId, params.itemId);
      return { status: 200, body: conversationOf(await conversations.get(auth.userId, params.conversationId)) };
    },
  } satisfies Partial<AppHandlers>;
}
