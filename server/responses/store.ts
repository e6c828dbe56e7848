// The responses and conversations tables. Every read is scoped to the owner: another user's id is as
// absent as a missing one.
import { ApiError } from '../errors.ts';
import { one, type Queryable } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import type { CreateResponseRequest, Item } from './items.ts';

export interface ResponseRow {
  id: string;
  user_id: string;
  run_id: string;
  previous_response_id: string | null;
  conversation_id: string | null;
  stored: boolean;
  background: boolean;
  /** The request's fields a response echoes. */
  request: EchoedRequest;
  input_items: Item[];
  output: Item[] | null;
  created_at: Date;
}

/** What a response repeats of its request. */
export interface EchoedRequest {
  model: string;
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  temperature: number | null;
  top_p: number | null;
  text: NonNullable<CreateResponseRequest['text']>;
  tool_choice: NonNullable<CreateResponseRequest['tool_choice']>;
  tools: NonNullable<CreateResponseRequest['tools']>;
  truncation: 'disabled' | 'auto';
}

export interface ConversationRow {
  id: string;
  user_id: string;
  metadata: Record<string, string>;
  created_at: Date;
}

const RESPONSE_COLUMNS = 'id, user_id, run_id, previous_response_id, conversation_id, stored, background, request, input_items, output, created_at';

const noResponse = (id: string) => new ApiError('not_found', `No response ${id}.`);
const noConversation = (id: string) => new ApiError('not_found', `No conversation ${id}.`);

export function createResponseStore(db: Queryable) {
  return {
    async insert(row: Omit<ResponseRow, 'created_at' | 'output'>): Promise<ResponseRow> {
      const inserted = await one<ResponseRow>(
        db,
        `INSERT INTO responses (id, user_id, run_id, previous_response_id, conversation_id, stored, background, request, input_items)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${RESPONSE_COLUMNS}`,
        [row.id, row.user_id, row.run_id, row.previous_response_id, row.conversation_id, row.stored, row.background, JSON.stringify(row.request), JSON.stringify(row.input_items)],
      );
      return inserted!;
    },

    /** A stored response of the user's; one created with `store: false` is as absent as a missing one. */
    async get(userId: string, id: string): Promise<ResponseRow> {
      const row = await one<ResponseRow>(db, `SELECT ${RESPONSE_COLUMNS} FROM responses WHERE id = $1 AND user_id = $2 AND stored`, [id, userId]);
      if (!row) throw noResponse(id);
      return row;
    },

    /** Any response of the user's, stored or not (a cancel names it). */
    async getAny(userId: string, id: string): Promise<ResponseRow> {
      const row = await one<ResponseRow>(db, `SELECT ${RESPONSE_COLUMNS} FROM responses WHERE id = $1 AND user_id = $2`, [id, userId]);
      if (!row) throw noResponse(id);
      return row;
    },

    async setOutput(id: string, output: Item[]): Promise<void> {
      await db.query('UPDATE responses SET output = $2 WHERE id = $1', [id, JSON.stringify(output)]);
    },

    async remove(userId: string, id: string): Promise<void> {
      const rows = await db.query('DELETE FROM responses WHERE id = $1 AND user_id = $2 AND stored RETURNING id', [id, userId]);
      if (rows.length === 0) throw noResponse(id);
    },

    /** Items of the user's stored responses with these ids, for `item_reference`. */
    async itemsById(userId: string, ids: string[]): Promise<Item[]> {
      if (ids.length === 0) return [];
      const rows = await db.query<{ item: Item }>(
        `SELECT item FROM responses, jsonb_array_elements(input_items || coalesce(output, '[]'::jsonb)) AS item
         WHERE user_id = $1 AND stored AND item->>'id' = ANY($2::text[])`,
        [userId, ids],
      );
      return rows.map((row) => row.item);
    },
  };
}

export function createConversationStore(db: Queryable) {
  const store = {
    async create(userId: string, metadata: Record<string, string>): Promise<ConversationRow> {
      const row = await one<ConversationRow>(db, 'INSERT INTO conversations (id, user_id, metadata) VALUES ($1, $2, $3) RETURNING id, user_id, metadata, created_at', [
        newId('conv'),
        userId,
        JSON.stringify(metadata),
      ]);
      return row!;
    },

    async get(userId: string, id: string): Promise<ConversationRow> {
      const row = await one<ConversationRow>(db, 'SELECT id, user_id, metadata, created_at FROM conversations WHERE id = $1 AND user_id = $2', [id, userId]);
      if (!row) throw noConversation(id);
      return row;
    },

    async update(userId: string, id: string, metadata: Record<string, string>): Promise<ConversationRow> {
      const row = await one<ConversationRow>(db, 'UPDATE conversations SET metadata = $3 WHERE id = $1 AND user_id = $2 RETURNING id, user_id, metadata, created_at', [
        id,
        userId,
        JSON.stringify(metadata),
      ]);
      if (!row) throw noConversation(id);
      return row;
    },

    async remove(userId: string, id: string): Promise<void> {
      const rows = await db.query('DELETE FROM conversations WHERE id = $1 AND user_id = $2 RETURNING id', [id, userId]);
      if (rows.length === 0) throw noConversation(id);
    },

    /** Adds items at the end, in order; the positions are taken in one statement, so concurrent adds do not collide. */
    async append(userId: string, id: string, items: Item[]): Promise<void> {
      if (items.length === 0) return;
      const claimed = await one<{ start: number }>(
        db,
        'UPDATE conversations SET next_position = next_position + $3 WHERE id = $1 AND user_id = $2 RETURNING next_position - $3 AS start',
        [id, userId, items.length],
      );
      if (!claimed) throw noConversation(id);
      const values = items.map((_, index) => `($1, $${index * 3 + 2}, $${index * 3 + 3}, $${index * 3 + 4})`).join(', ');
      const params = items.flatMap((item, index) => [claimed.start + index, item.id, JSON.stringify(item)]);
      try {
        await db.query(`INSERT INTO conversation_items (conversation_id, position, id, item) VALUES ${values}`, [id, ...params]);
      } catch (error) {
        if ((error as { code?: string }).code === '23505') throw new ApiError('conflict', 'An item with one of these ids is already in the conversation.');
        throw error;
      }
    },

    /** Every item, oldest first. */
    async items(userId: string, id: string): Promise<Item[]> {
      await store.get(userId, id);
      const rows = await db.query<{ item: Item }>('SELECT item FROM conversation_items WHERE conversation_id = $1 ORDER BY position', [id]);
      return rows.map((row) => row.item);
    },

    async item(userId: string, id: string, itemId: string): Promise<Item> {
      await store.get(userId, id);
      const row = await one<{ item: Item }>(db, 'SELECT item FROM conversation_items WHERE conversation_id = $1 AND id = $2', [id, itemId]);
      if (!row) throw new ApiError('not_found', `No item ${itemId} in conversation ${id}.`);
      return row.item;
    },

    async removeItem(userId: string, id: string, itemId: string): Promise<void> {
      await store.get(userId, id);
      const rows = await db.query('DELETE FROM conversation_items WHERE conversation_id = $1 AND id = $2 RETURNING id', [id, itemId]);
      if (rows.length === 0) throw new ApiError('not_found', `No item ${itemId} in conversation ${id}.`);
    },
  };
  return store;
}

export type ResponseStore = ReturnType<typeof createResponseStore>;
export type ConversationStore = ReturnType<typeof createConversationStore>;

/** A page of items, OpenAI's way: newest first unless `asc`, starting after the item `after`. */
export function pageOf(items: Item[], query: { after?: string | undefined; limit?: number | undefined; order?: 'asc' | 'desc' | undefined }) {
  const ordered = query.order === 'asc' ? items : [...items].reverse();
  const start = query.after ? ordered.findIndex((item) => item.id === query.after) + 1 : 0;
  if (query.after && start === 0) throw new ApiError('invalid_request', `after: no item ${query.after}.`, { details: [{ field: 'after', message: 'unknown item', in: 'query' }] });
  const limit = query.limit ?? 20;
  const data = ordered.slice(start, start + limit);
  return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: start + limit < ordered.length };
}
