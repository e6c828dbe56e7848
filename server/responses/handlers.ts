// OpenAI's Responses API (`/v1/responses`) and Conversations (`/v1/conversations`).
import type { SseFrame } from '../../generated/server.gen.ts';
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
      return { status: 200, body: await started.done };
    },

    async getResponse({ auth, params, query, signal }) {
      if (query.stream === true) {
        const events = await responses.stream(auth.userId, params.responseId, query.starting_after ?? -1, signal);
        return { status: 200, stream: framesOf(events) };
      }
      return { status: 200, body: await responses.retrieve(auth.userId, params.responseId) };
    },

    async deleteResponse({ auth, params }) {
      await responses.remove(auth.userId, params.responseId);
      return { status: 200, body: { id: params.responseId, object: 'response', deleted: true } };
    },

    async cancelResponse({ auth, params }) {
      return { status: 200, body: await responses.cancel(auth.userId, params.responseId) };
    },

    async listResponseInputItems({ auth, params, query }) {
      return { status: 200, body: pageOf(await responses.inputItems(auth.userId, params.responseId), query) };
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

    async createConversationItems({ auth, params, body }) {
      const items = inputItems(body.items, new Map(), 'items');
      await conversations.append(auth.userId, params.conversationId, items);
      return { status: 200, body: { object: 'list', data: items, first_id: items[0]?.id ?? null, last_id: items.at(-1)?.id ?? null, has_more: false } };
    },

    async listConversationItems({ auth, params, query }) {
      return { status: 200, body: pageOf(await conversations.items(auth.userId, params.conversationId), query) };
    },

    async getConversationItem({ auth, params }) {
      return { status: 200, body: await conversations.item(auth.userId, params.conversationId, params.itemId) };
    },

    async deleteConversationItem({ auth, params }) {
      await conversations.removeItem(auth.userId, params.conversationId, params.itemId);
      return { status: 200, body: conversationOf(await conversations.get(auth.userId, params.conversationId)) };
    },
  } satisfies Partial<AppHandlers>;
}
