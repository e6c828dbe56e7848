// The search queries. Vector: cosine distance on `embedding::vector(n)`, cast exactly as the partial HNSW
// index for dimension n is built, so the planner can use it. Keyword: PostgreSQL full-text search over the
// generated tsvector (GIN index), ranked by ts_rank, leaving out words that many chunks hold. Hybrid:
// reciprocal rank fusion of the two lists.
import type { components } from '../../generated/openapi.gen.ts';
import type { Queryable, SqlValue } from '../store/db.ts';
import { vectorLiteral, type Metadata } from './store.ts';

export type SearchResult = components['schemas']['KnowledgeSearchResult'];

/** The constant of reciprocal rank fusion: 60, as in Cormack et al., which damps the top ranks' weight. */
export const RRF_K = 60;

const RESULT_COLUMNS = 'c.id, c.document_id, c.collection, c.text, d.title, d.source, d.metadata';

export interface Scope {
  userId: string;
  collections: string[];
  filter: Metadata | undefined;
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

/** The question's words: letters and digits only, so that no operator of any query syntax reaches SQL. */
export function queryWords(query: string): string {
  return (query.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 64).join(' ');
}

/**
 * A lexeme in more than this share of the chunks searched is left out of the keyword query, as an inverse
 * document frequency would weigh it near zero: ranking every chunk that holds it is most of a slow keyword
 * search's time (a word in half of 100k chunks means 50k ranked rows), and it barely moves the top results.
 */
export const COMMON_WORD_SHARE = 0.1;
/** ...unless it is in fewer chunks than this: ranking that many is cheap, and small collections keep every word. */
export const COMMON_WORD_MIN_CHUNKS = 1000;

/** knowledge_terms counts the lexemes of one chunk in eight (migration 0015): a count times this estimates the chunks. */
export const TERM_COUNT_SAMPLE = 8;

export interface QueryTerm {
  lexeme: string;
  /** The chunks in the searched collections that hold it (estimated from a sample). */
  chunks: number;
}

/** A lexeme as a quoted tsquery operand: quotes and backslashes doubled. */
function operand(lexeme: string): string {
  return `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

/**
 * The tsquery for a question's terms: any of them may match, as a question rarely shares all of its words
 * with the passage that answers it, but the common ones are left out. When every term is common, a chunk
 * must hold them all. `keepCommon` keeps every term (what the bench compares with).
 */
export function keywordQuery(terms: QueryTerm[], totalChunks: number, keepCommon = false): string {
  const limit = Math.max(COMMON_WORD_MIN_CHUNKS, COMMON_WORD_SHARE * totalChunks);
  const rare = terms.filter((term) => term.chunks <= limit);
  if (keepCommon || rare.length === terms.length) return terms.map((term) => operand(term.lexeme)).join(' | ');
  if (rare.length > 0) return rare.map((term) => operand(term.lexeme)).join(' | ');
  return terms.map((term) => operand(term.lexeme)).join(' & ');
}

/** The question's lexemes (stemmed, stop words out) with about how many chunks in scope hold each, and the chunks in scope. */
async function queryTerms(db: Queryable, scope: Scope, words: string): Promise<{ terms: QueryTerm[]; totalChunks: number }> {
  const rows = await db.query<QueryTerm & { total: number }>(
    `SELECT l.lexeme, (coalesce(sum(t.chunks), 0) * ${TERM_COUNT_SAMPLE})::int8 AS chunks,
            (SELECT coalesce(sum(chunk_count), 0) FROM knowledge_collections WHERE user_id = $2 AND name = ANY($3::text[]))::int8 AS total
     FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS l(lexeme)
     LEFT JOIN knowledge_terms t ON t.user_id = $2 AND t.collection = ANY($3::text[]) AND t.lexeme = l.lexeme
     GROUP BY l.lexeme ORDER BY l.lexeme`,
    [words, scope.userId, scope.collections],
  );
  return { terms: rows.map(({ lexeme, chunks }) => ({ lexeme, chunks })), totalChunks: rows[0]?.total ?? 0 };
}

async function rankedMatches(db: Queryable, scope: Scope, tsquery: string, limit: number): Promise<SearchResult[]> {
  const params: SqlValue[] = [tsquery];
  const where = scopeClause(scope, params);
  params.push(limit);
  return db.query<SearchResult>(
    `SELECT ${RESULT_COLUMNS}, ts_rank(c.tsv, $1::tsquery) AS score
     FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
     WHERE ${where} AND c.tsv @@ $1::tsquery
     ORDER BY score DESC, c.id LIMIT $${params.length}`,
    params,
  );
}

/**
 * Full-text search ranked by ts_rank, over the question's words less the common ones (see keywordQuery).
 * Where that finds nothing, any of the words may match after all, common ones included.
 */
export async function keywordSearch(db: Queryable, scope: Scope, query: string, limit: number, options: { keepCommon?: boolean } = {}): Promise<SearchResult[]> {
  const words = queryWords(query);
  if (!words) return [];
  const { terms, totalChunks } = await queryTerms(db, scope, words);
  if (terms.length === 0) return [];
  const anyTerm = keywordQuery(terms, totalChunks, true);
  const tsquery = options.keepCommon ? anyTerm : keywordQuery(terms, totalChunks);
  const results = await rankedMatches(db, scope, tsquery, limit);
  return results.length > 0 || tsquery === anyTerm ? results : rankedMatches(db, scope, anyTerm, limit);
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
