// The knowledge tables: collections, documents and chunks. Every read and write names the owner.
import type { components } from '../../generated/openapi.gen.ts';
import type { Queryable, SqlValue } from '../store/db.ts';
import { one } from '../store/db.ts';

export type KnowledgeDocument = components['schemas']['KnowledgeDocument'];
export type KnowledgeCollection = components['schemas']['KnowledgeCollection'];
export type Metadata = components['schemas']['KnowledgeMetadata'];
export type DocumentStatus = components['schemas']['KnowledgeDocumentStatus'];

export interface CollectionRow {
  name: string;
  embedding_model: string;
  dimensions: number;
  created_at: Date;
}

export interface DocumentRow {
  id: string;
  user_id: string;
  collection: string;
  title: string | null;
  source: string | null;
  content_type: string;
  bytes: number;
  content_sha256: string;
  metadata: Metadata;
  status: DocumentStatus;
  error: string | null;
  chunk_count: number;
  embedding_model: string;
  api_key_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns of a document row, without its (possibly large) text. */
export const DOCUMENT_COLUMNS =
  'id, user_id, collection, title, source, content_type, bytes, content_sha256, metadata, status, error, chunk_count, embedding_model, api_key_id, created_at, updated_at';

/** A pgvector literal. */
export function vectorLiteral(vector: readonly number[]): string {
  return `[${vector.join(',')}]`;
}

export function toDocument(row: DocumentRow): KnowledgeDocument {
  return {
    id: row.id,
    object: 'knowledge.document',
    collection: row.collection,
    title: row.title,
    source: row.source,
    content_type: row.content_type,
    bytes: row.bytes,
    chunk_count: row.chunk_count,
    status: row.status,
    error: row.error,
    metadata: row.metadata,
    content_sha256: row.content_sha256,
    embedding_model: row.embedding_model,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export async function findCollection(db: Queryable, userId: string, name: string): Promise<CollectionRow | undefined> {
  return one<CollectionRow>(
    db,
    'SELECT name, embedding_model, dimensions, created_at FROM knowledge_collections WHERE user_id = $1 AND name = $2',
    [userId, name],
  );
}

/** The user's collections among `names`, or all of them when `names` is undefined. */
export async function findCollections(db: Queryable, userId: string, names: string[] | undefined): Promise<CollectionRow[]> {
  const params: SqlValue[] = [userId];
  let where = 'user_id = $1';
  if (names) {
    params.push(names);
    where += ' AND name = ANY($2::text[])';
  }
  return db.query<CollectionRow>(`SELECT name, embedding_model, dimensions, created_at FROM knowledge_collections WHERE ${where} ORDER BY name`, params);
}

/** Creates the collection unless it exists (a concurrent request may have made it); returns what is stored. */
export async function insertCollection(db: Queryable, userId: string, collection: CollectionRow): Promise<CollectionRow> {
  await db.query(
    `INSERT INTO knowledge_collections (user_id, name, embedding_model, dimensions, created_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (user_id, name) DO NOTHING`,
    [userId, collection.name, collection.embedding_model, collection.dimensions, collection.created_at],
  );
  return (await findCollection(db, userId, collection.name))!;
}

export async function listCollections(db: Queryable, userId: string, after: string | null, limit: number) {
  return db.query<CollectionRow & { id: string; document_count: number }>(
    `SELECT c.name AS id, c.name, c.embedding_model, c.dimensions, c.created_at,
            (SELECT count(*) FROM knowledge_documents d WHERE d.user_id = c.user_id AND d.collection = c.name)::int8 AS document_count
     FROM knowledge_collections c
     WHERE c.user_id = $1 AND ($2::text IS NULL OR c.name > $2)
     ORDER BY c.name LIMIT $3`,
    [userId, after, limit + 1],
  );
}

export function toCollection(row: CollectionRow & { document_count: number }): KnowledgeCollection {
  return {
    name: row.name,
    object: 'knowledge.collection',
    embedding_model: row.embedding_model,
    dimensions: row.dimensions,
    document_count: row.document_count,
    created_at: row.created_at.toISOString(),
  };
}

export async function findDocument(db: Queryable, userId: string, id: string): Promise<DocumentRow | undefined> {
  return one<DocumentRow>(db, `SELECT ${DOCUMENT_COLUMNS} FROM knowledge_documents WHERE user_id = $1 AND id = $2`, [userId, id]);
}

export async function findDocumentByContent(db: Queryable, userId: string, collection: string, sha256: string): Promise<DocumentRow | undefined> {
  return one<DocumentRow>(
    db,
    `SELECT ${DOCUMENT_COLUMNS} FROM knowledge_documents WHERE user_id = $1 AND collection = $2 AND content_sha256 = $3`,
    [userId, collection, sha256],
  );
}

export interface NewDocumentRow {
  id: string;
  userId: string;
  collection: string;
  title: string | null;
  source: string | null;
  contentType: string;
  content: string;
  bytes: number;
  sha256: string;
  metadata: Metadata;
  embeddingModel: string;
  apiKeyId: string | null;
  /** Set when this instance processes the document right away; null leaves it to the background worker. */
  leaseUntil: Date | null;
  now: Date;
}

/** Inserts a document in `processing`; undefined when the same content is already in the collection. */
export async function insertDocument(db: Queryable, doc: NewDocumentRow): Promise<DocumentRow | undefined> {
  return one<DocumentRow>(
    db,
    `INSERT INTO knowledge_documents (id, user_id, collection, title, source, content_type, content, bytes, content_sha256, metadata,
       status, embedding_model, api_key_id, lease_until, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'processing', $11, $12, $13, $14, $14)
     ON CONFLICT (user_id, collection, content_sha256) DO NOTHING
     RETURNING ${DOCUMENT_COLUMNS}`,
    [
      doc.id, doc.userId, doc.collection, doc.title, doc.source, doc.contentType, doc.content, doc.bytes, doc.sha256,
      JSON.stringify(doc.metadata), doc.embeddingModel, doc.apiKeyId, doc.leaseUntil, doc.now,
    ],
  );
}

export async function listDocuments(db: Queryable, userId: string, collection: string | undefined, after: string | null, limit: number) {
  return db.query<DocumentRow>(
    `SELECT ${DOCUMENT_COLUMNS} FROM knowledge_documents
     WHERE user_id = $1 AND ($2::text IS NULL OR collection = $2) AND ($3::text IS NULL OR id < $3)
     ORDER BY id DESC LIMIT $4`,
    [userId, collection ?? null, after, limit + 1],
  );
}

export interface NewChunks {
  documentId: string;
  userId: string;
  collection: string;
  dimensions: number;
  ids: string[];
  /** The position of the first; the others follow in order. */
  first: number;
  texts: string[];
  /** One per text; undefined where vectors cannot be stored (no pgvector). */
  embeddings: number[][] | undefined;
}

/** Stores a document's chunks, in one statement. */
export async function insertChunks(db: Queryable, chunks: NewChunks): Promise<void> {
  const positions = chunks.texts.map((_, i) => chunks.first + i);
  const params: SqlValue[] = [chunks.documentId, chunks.userId, chunks.collection, chunks.dimensions, chunks.ids, positions, chunks.texts];
  if (chunks.embeddings) {
    await db.query(
      `INSERT INTO knowledge_chunks (id, document_id, user_id, collection, dimensions, position, text, embedding)
       SELECT t.id, $1, $2, $3, $4, t.position, t.text, t.embedding::vector
       FROM unnest($5::text[], $6::int[], $7::text[], $8::text[]) AS t(id, position, text, embedding)`,
      [...params, chunks.embeddings.map(vectorLiteral)],
    );
  } else {
    await db.query(
      `INSERT INTO knowledge_chunks (id, document_id, user_id, collection, dimensions, position, text)
       SELECT t.id, $1, $2, $3, $4, t.position, t.text FROM unnest($5::text[], $6::int[], $7::text[]) AS t(id, position, text)`,
      params,
    );
  }
}

/** Deletes the document; its chunks and their vectors go with it (ON DELETE CASCADE). */
export async function deleteDocument(db: Queryable, userId: string, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM knowledge_documents WHERE user_id = $1 AND id = $2 RETURNING id', [userId, id]);
  return rows.length > 0;
}

export async function countForUser(db: Queryable, userId: string): Promise<{ documents: number; bytes: number }> {
  const row = await one<{ documents: number; bytes: number }>(
    db,
    'SELECT count(*)::int8 AS documents, coalesce(sum(bytes), 0)::int8 AS bytes FROM knowledge_documents WHERE user_id = $1',
    [userId],
  );
  return { documents: row?.documents ?? 0, bytes: row?.bytes ?? 0 };
}
