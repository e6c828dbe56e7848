import { ApiError } from '../errors.ts';

export interface Page<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface PageRequest {
  limit?: number;
  after?: string;
}

/** The `after` cursor of a list whose ids start with `prefix`, checked so a stray value is a clear 400. */
export function cursorOf(request: PageRequest, prefix: string): string | null {
  if (request.after === undefined) return null;
  if (!request.after.startsWith(`${prefix}_`)) {
    throw new ApiError('invalid_request', 'after must be the next_cursor of a previous page of this list.', {
      details: [{ field: 'after', message: 'not a cursor of this list' }],
    });
  }
  return request.after;
}

export function limitOf(request: PageRequest): number {
  return request.limit ?? 20;
}

/** Builds a page from up to `limit + 1` rows fetched newest first. */
export function toPage<R extends { id: string }, T>(rows: R[], limit: number, map: (row: R) => T): Page<T> {
  const hasMore = rows.length > limit;
  const kept = hasMore ? rows.slice(0, limit) : rows;
  return {
    object: 'list',
    data: kept.map(map),
    has_more: hasMore,
    next_cursor: hasMore ? kept[kept.length - 1]!.id : null,
  };
}
