// The search queries. Vector: cosine distance on `embedding::vector(n)`, cast exactly as the partial HNSW
// index for dimension n is built, so the planner can use it. Keyword: PostgreSQL full-text search over the
// generated tsvector (GIN index), ranked by ts_rank. Hybrid: reciprocal rank fusion of the two lists.
import type { components } from '../../generated/openapi.gen.ts';
import type { Queryable, SqlValue } from '../store/db.ts';
import type { Metadata } from './store.ts';

export type SearchResult = components['schemas']['KnowledgeSearchResult'];

/** The constant of reciprocal rank fusion: 60, as in Cormack et al., which damps the top ranks' weight. */
export const RRF_K = 60;

const RESULT_COLUMNS = 'c.id, c.document_id, c.collection, c.text, d.title, d.source, d.metadata';

export interface Scope {
  userId: string;
  collections: string[];
  filter: Metadata | undefined;
}

/** A pgvector literal. */
export function vectorLiteral(vector: readonly number[]): string {
  return `[${vector.join(',')}]`;
}

function scopeClause(scope: Scope, params: SqlValue[]): string {
  params.push(scope.userId, scope.collections);
  let clause = `c.user_id = $${params.length - 1} AND c.collection = ANY($${params.length}::text[]) AND d.status = 'ready'`;
  if (scope.filter && Object.keys(scope.filter).length > 0) {
    params.push(JSON.stringify(scope.filter));
    clause += ` AND d.metadata @> $${params.length}::jsonb`;
  }
  return clause;
}

/** The `limit` chunks nearest to `vector` among those of `dimensions`, with cosine similarity as the score. */
export async function vectorSearch(db: Queryable, scope: Scope, dimensions: number, vector: readonly number[], limit: number): Promise<SearchResult[]> {
  if (!Number.isInteger(dimensions) || dimensions <= 0) throw new Error(`bad dimension ${dimensions}`);
  const params: SqlValue[] = [vectorLiteral(vector)];
  const where = scopeClause(scope, params);
  params.push(limit);
  const distance = `c.embedding::vector(${dimensions}) <=> $1::vector(${dimensions})`;
  return db.query<SearchResult>(
    `SELECT ${RESULT_COLUMNS}, 1 - (${distance}) AS score
     FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
     WHERE ${where} AND c.dimensions = ${dimensions} AND c.embedding IS NOT NULL
     ORDER BY ${distance} LIMIT $${params.length}`,
    params,
  );
}

/**
 * The query's words, any of which may match: full-text search would otherwise demand every word, and a
 * question rarely shares all of its words with the passage that answers it. websearch_to_tsquery never
 * fails on user input; only letters and digits reach it, so its operators cannot be injected.
 */
export function anyWordQuery(query: string): string {
  return (query.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 64).join(' or ');
}

export async function keywordSearch(db: Queryable, scope: Scope, query: string, limit: number): Promise<SearchResult[]> {
  const words = anyWordQuery(query);
  if (!words) return [];
  const params: SqlValue[] = [words];
  const where = scopeClause(scope, params);
  params.push(limit);
  return db.query<SearchResult>(
    `SELECT ${RESULT_COLUMNS}, ts_rank(c.tsv, q.query) AS score
     FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id,
          websearch_to_tsquery('english', $1) AS q(query)
     WHERE ${where} AND c.tsv @@ q.query
     ORDER BY score DESC, c.id LIMIT $${params.length}`,
    params,
  );
}

/** Fuses ranked lists: each result scores the sum of 1 / (RRF_K + rank) over the lists it appears in. */
export function reciprocalRankFusion(lists: SearchResult[][], limit: number): SearchResult[] {
  const fused = new Map<string, SearchResult>();
  for (const list of lists) {
    list.forEach((result, index) => {
      const score = 1 / (RRF_K + index + 1);
      const seen = fused.get(result.id);
      fused.set(result.id, seen ? { ...seen, score: seen.score + score } : { ...result, score });
    });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score || a.id.localeCompare(b.id)).slice(0, limit);
}
