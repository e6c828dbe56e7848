// Cursor pagination as the contract defines it once for every list: `limit` and `after` in,
// `{object: "list", data, has_more, next_cursor}` out.
import type { OperationId } from '../contract.ts';
import type { Context } from '../context.ts';

interface Page {
  data: { id?: string; name?: string; sequence_number?: number }[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface Paged {
  /** Each item's id (or name, or sequence number), in the order the pages gave them. */
  ids: string[];
  /** Whether the last page was reached. */
  complete: boolean;
}

/** Follows `next_cursor` from the first page to the last, checking each page on the way. */
export async function pageThrough(
  t: Context,
  operationId: OperationId,
  input: { params?: Record<string, string>; query?: Record<string, string>; accept?: string; limit?: number; maxPages?: number },
): Promise<Paged> {
  const limit = input.limit ?? 2;
  const maxPages = input.maxPages ?? 50;
  const ids: string[] = [];
  let after: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const answer = await t.call(operationId, {
      params: input.params,
      query: { ...input.query, limit, ...(after === undefined ? {} : { after }) },
      ...(input.accept ? { accept: input.accept } : {}),
      expect: 200,
    });
    const list = answer.json as Page;
    t.check(operationId, list.data.length <= limit, `a page holds ${list.data.length} items, more than limit=${limit}`);
    for (const item of list.data) {
      const key = item.id ?? item.name ?? String(item.sequence_number);
      t.check(operationId, !ids.includes(key), `${key} appears on two pages`);
      ids.push(key);
    }
    if (!list.has_more) {
      t.check(operationId, list.next_cursor === null, 'the last page (has_more false) still has a next_cursor');
      return { ids, complete: true };
    }
    t.require(operationId, typeof list.next_cursor === 'string' && list.next_cursor.length > 0, 'has_more is true but there is no next_cursor');
    t.require(operationId, list.data.length > 0, 'has_more is true on an empty page');
    after = list.next_cursor!;
  }
  t.note(operationId, `stopped following next_cursor after ${maxPages} pages of ${limit}`);
  return { ids, complete: false };
}
