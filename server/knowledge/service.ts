// Knowledge as a domain service: documents in, chunks embedded with their collection's model, search out.
// Small documents are processed while the request waits; larger ones by a durable job (server/jobs),
// stored in the transaction that stores the document, so that whichever server takes it processes it,
// and a job whose server died (kill -9) is taken again by another. A small document gets a job too, one
// that waits out the request's lease: if the request's server dies while embedding, the job finishes
// it; if not, the job finds the document done and does nothing. Processing is idempotent (the chunks
// are replaced, the final update is conditional), so a job that runs twice has the effect of one.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { ApiError, notFound } from '../errors.ts';
import type { Jobs } from '../jobs/jobs.ts';
import type { ModelGateway } from '../models/gateway.ts';
import { one, type Db, type Queryable } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import { cursorOf, limitOf, toPage, type Page, type PageRequest } from '../store/pagination.ts';
import type { UsageMeter } from '../usage/meter.ts';
import { chunkText, type Chunk } from './chunk.ts';
import type { DocumentType } from './extract.ts';
import { keywordSearch, reciprocalRankFusion, vectorSearch, type Scope, type SearchResult } from './search.ts';
import * as store from './store.ts';
import { buildOptions, builtAs, createVectorIndex, vectorIndexes } from './vector-indexes.ts';
import type { CollectionRow, DocumentRow, KnowledgeCollection, KnowledgeDocument, Metadata } from './store.ts';
import { holdQuota, type ResourceLimit } from '../limits/quotas.ts';

export type { SearchResult } from './search.ts';
export type { KnowledgeDocument, Metadata } from './store.ts';

export interface KnowledgeConfig {
  /** Largest document accepted, in bytes (a file as uploaded, or JSON text). */
  maxBytes: number;
  /** Documents whose text is larger are processed in the background (202) instead of inline (201). */
  inlineMaxBytes: number;
  chunkTokens: number;
  chunkOverlapTokens: number;
  /** Inputs per embedding call. */
  embedBatchSize: number;
  /** Candidates an HNSW scan keeps (pgvector's hnsw.ef_search): higher finds more true neighbours, slower. */
  hnswEfSearch: number;
  /**
   * How an HNSW index is built (pgvector's m and ef_construction): neighbours per node, and candidates
   * weighed for them. Higher finds more true neighbours at a given ef_search, and makes every insert and
   * the build slower. They apply to indexes made after they change; the start-up log names any index
   * built otherwise.
   */
  hnswM: number;
  hnswEfConstruction: number;
}

export interface KnowledgeDeps {
  db: Db;
  models: ModelGateway;
  usage: UsageMeter;
  logger: Logger;
  clock: () => number;
  config: KnowledgeConfig;
  jobs: Jobs;
  /** The user's plan limits on documents and bytes, held atomically with each insert; none without it. */
  limitOf?: ResourceLimit;
}

/** The job that processes one document. */
export const INGEST_JOB = 'knowledge.ingest';

export const DEFAULT_COLLECTION = 'default';
export const DEFAULT_TOP_K = 5;
export type SearchMode = 'hybrid' | 'vector' | 'keyword';

export interface NewDocument {
  text: string;
  contentType: DocumentType;
  title?: string | undefined;
  source?: string | undefined;
  collection?: string | undefined;
  metadata?: Metadata | undefined;
  /** Only for a new collection; an existing collection keeps the model it was made with. */
  embeddingModel?: string | undefined;
}

export interface CallContext {
  /** The API key the call came with, for metering; null for a session. */
  apiKeyId: string | null;
  signal?: AbortSignal;
}

export interface SearchRequest {
  query: string;
  top_k?: number | undefined;
  /** Searched collections; all of the user's when omitted. */
  collections?: string[] | undefined;
  /** Only documents whose metadata holds these values. */
  filter?: Metadata | undefined;
  mode?: SearchMode | undefined;
}

export interface SearchResponse {
  /** The mode actually used: `hybrid` becomes `keyword` where pgvector is missing. */
  mode: SearchMode;
  results: SearchResult[];
}

export interface AddedDocument {
  /** 200: the same content was already there; 201: stored and ready; 202: processing in the background. */
  status: 200 | 201 | 202;
  document: KnowledgeDocument;
}

/** How long a request processing a document holds it before a job may take it over; renewed after every batch. */
const LEASE_MS = 2 * 60_000;
/** How long a job holds a document it processes; renewed after every batch. */
const JOB_LEASE_MS = 30_000;
/** pgvector's HNSW indexes `vector` columns of up to 2,000 dimensions; beyond that search scans exactly. */
const HNSW_MAX_DIMENSIONS = 2000;
/** Candidates each list contributes to hybrid fusion, per result asked for. */
const HYBRID_DEPTH = 4;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function reasonOf(error: unknown): string {
  return error instanceof ApiError ? error.message : 'An unexpected error occurred while processing the document.';
}

function isForeignKeyViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === '23503';
}

/** A PostgreSQL "already exists" race: two servers creating the same index at once. */
function isDuplicateObject(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: string }).code : undefined;
  return code === '42P07' || code === '23505';
}

export async function createKnowledge(deps: KnowledgeDeps) {
  const { db, models, usage, logger, clock, config, jobs } = deps;

  // Vectors need pgvector and the column the migration adds where pgvector exists.
  const vectors =
    db.hasVector &&
    (await db.query(
      `SELECT 1 FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = 'knowledge_chunks' AND column_name = 'embedding'`,
    )).length > 0;
  const [extension] = vectors ? await db.query<{ extversion: string }>("SELECT extversion FROM pg_extension WHERE extname = 'vector'") : [];
  const [major = 0, minor = 0] = (extension?.extversion ?? '0.0').split('.').map(Number);
  // Iterative index scans (pgvector 0.8) keep an HNSW scan going past rows the WHERE clause drops (other
  // users', other collections'), so a filtered search still returns `top_k` results.
  const iterativeScans = major > 0 || minor >= 8;
  const existing = vectors ? await vectorIndexes(db) : [];
  const indexed = new Set(existing.map((index) => index.dimensions));
  for (const index of existing) {
    if (!builtAs(index, config)) {
      logger.warn(
        { index: index.name, m: index.m, efConstruction: index.efConstruction, configured: { m: config.hnswM, efConstruction: config.hnswEfConstruction } },
        `the HNSW index ${index.name} was built with m = ${index.m}, ef_construction = ${index.efConstruction}; the configured ${buildOptions(config)} apply once it is rebuilt: npm run reindex-knowledge, with the server stopped`,
      );
    }
  }

  async function ensureVectorIndex(dimensions: number): Promise<void> {
    if (!vectors || indexed.has(dimensions)) return;
    if (dimensions > HNSW_MAX_DIMENSIONS) {
      logger.warn({ dimensions }, 'embeddings longer than 2000 dimensions cannot have an HNSW index; vector search scans them exactly');
      indexed.add(dimensions);
      return;
    }
    try {
      await db.exec(createVectorIndex(dimensions, config));
    } catch (error) {
      if (!isDuplicateObject(error)) throw error;
    }
    indexed.add(dimensions);
  }

  function embeddingModelOf(id: string, field: string) {
    const model = models.get(id);
    if (!model?.capabilities.includes('embeddings')) {
      throw new ApiError('invalid_request', `${id} is not an embedding model of this server.`, { details: [{ field, message: 'not an embedding model' }] });
    }
    return model;
  }

  async function embed(userId: string, apiKeyId: string | null, collection: CollectionRow, texts: string[], signal?: AbortSignal): Promise<number[][]> {
    if (!models.get(collection.embedding_model)) {
      throw new ApiError(
        'conflict',
        `The collection ${collection.name} was embedded with ${collection.embedding_model}, which this server's model catalog no longer has.`,
      );
    }
    const served = await models.embed(collection.embedding_model, texts, undefined, signal ? { signal } : {});
    await usage.record({ userId, apiKeyId, model: served.model.id, kind: 'embedding', promptTokens: served.result.promptTokens, completionTokens: 0 });
    if (served.model.id !== collection.embedding_model) {
      throw new ApiError(
        'upstream_error',
        `${collection.embedding_model} failed and its fallback ${served.model.id} answered; a collection's vectors all come from one model, so they were not used.`,
      );
    }
    const { vectors: result } = served.result;
    if (result.length !== texts.length || result.some((vector) => vector.length !== collection.dimensions)) {
      throw new ApiError(
        'upstream_error',
        `${collection.embedding_model} returned vectors of ${result[0]?.length ?? 0} dimensions; the collection ${collection.name} holds ${collection.dimensions}.`,
      );
    }
    return result;
  }

  /** The collection, created with its embedding model and dimension when it is new. */
  async function collectionFor(userId: string, apiKeyId: string | null, name: string, requestedModel: string | undefined): Promise<CollectionRow> {
    const existing = await store.findCollection(db, userId, name);
    if (existing) {
      if (requestedModel !== undefined && requestedModel !== existing.embedding_model) {
        throw new ApiError(
          'conflict',
          `The collection ${name} embeds with ${existing.embedding_model} (${existing.dimensions} dimensions); it cannot take documents embedded with ${requestedModel}. Use another collection for another model.`,
          { details: [{ field: 'embedding_model', message: `the collection uses ${existing.embedding_model}` }] },
        );
      }
      return existing;
    }
    const model = embeddingModelOf(requestedModel ?? models.defaults.embeddings, 'embedding_model');
    let dimensions = model.dimensions;
    if (dimensions === undefined) {
      // The catalog does not say; one embedding tells.
      const served = await models.embed(model.id, ['dimension probe'], undefined);
      await usage.record({ userId, apiKeyId, model: served.model.id, kind: 'embedding', promptTokens: served.result.promptTokens, completionTokens: 0 });
      dimensions = served.result.vectors[0]?.length;
      if (!dimensions || served.model.id !== model.id) throw new ApiError('upstream_error', `${model.id} did not return an embedding to measure.`);
    }
    await ensureVectorIndex(dimensions);
    return store.insertCollection(db, userId, { name, embedding_model: model.id, dimensions, created_at: new Date(clock()) });
  }

  function chunksOf(content: string, contentType: string): Chunk[] {
    return chunkText(content, {
      maxTokens: config.chunkTokens,
      overlapTokens: config.chunkOverlapTokens,
      headings: contentType === 'text/markdown' || contentType === 'text/html',
    });
  }

  /**
   * Chunks, embeds and stores a document, then marks it ready. Returns the ready row, or undefined when
   * the document was deleted meanwhile. The holder's lease is renewed for `leaseMs` after every batch.
   */
  async function ingest(doc: DocumentRow, content: string, signal: AbortSignal | undefined, leaseMs: number): Promise<DocumentRow | undefined> {
    const collection = await store.findCollection(db, doc.user_id, doc.collection);
    if (!collection) return undefined;
    const chunks = chunksOf(content, doc.content_type);
    // A document taken over from a crashed worker may hold some of its chunks already.
    await db.query('DELETE FROM knowledge_chunks WHERE document_id = $1', [doc.id]);
    try {
      for (let first = 0; first < chunks.length; first += config.embedBatchSize) {
        signal?.throwIfAborted();
        const batch = chunks.slice(first, first + config.embedBatchSize);
        const embeddings = vectors ? await embed(doc.user_id, doc.api_key_id, collection, batch.map((c) => c.text), signal) : undefined;
        await store.insertChunks(db, {
          documentId: doc.id,
          userId: doc.user_id,
          collection: doc.collection,
          dimensions: collection.dimensions,
          ids: batch.map(() => newId('chk', clock())),
          first,
          texts: batch.map((chunk) => chunk.text),
          embeddings,
        });
        const held = await db.query(`UPDATE knowledge_documents SET lease_until = $2 WHERE id = $1 AND status = 'processing' RETURNING id`, [
          doc.id,
          new Date(clock() + leaseMs),
        ]);
        if (held.length === 0) return undefined;
      }
    } catch (error) {
      if (isForeignKeyViolation(error)) return undefined;
      throw error;
    }
    return one<DocumentRow>(
      db,
      `UPDATE knowledge_documents SET status = 'ready', error = NULL, chunk_count = $2, lease_until = NULL, updated_at = $3
       WHERE id = $1 AND status = 'processing' RETURNING ${store.DOCUMENT_COLUMNS}`,
      [doc.id, chunks.length, new Date(clock())],
    );
  }

  async function markFailed(doc: DocumentRow, error: unknown): Promise<DocumentRow | undefined> {
    if (!(error instanceof ApiError)) logger.error({ err: error, documentId: doc.id }, 'knowledge document processing failed');
    await db.query('DELETE FROM knowledge_chunks WHERE document_id = $1', [doc.id]);
    return one<DocumentRow>(
      db,
      `UPDATE knowledge_documents SET status = 'failed', error = $2, chunk_count = 0, lease_until = NULL, updated_at = $3
       WHERE id = $1 RETURNING ${store.DOCUMENT_COLUMNS}`,
      [doc.id, reasonOf(error), new Date(clock())],
    );
  }

  // Whoever processes a document holds it by a lease (renewed per batch): the request that added it, or
  // the job. So two never process one document at once, and a holder that died is replaced when its lease
  // lapses: a request's after LEASE_MS, a job's (whose worker pg-boss sees die within seconds) sooner.
  const closing = new AbortController();

  /** Takes a document that is still processing and that nobody holds; undefined when done, gone or held. */
  async function claim(documentId: string, leaseMs: number): Promise<(DocumentRow & { content: string }) | undefined> {
    const now = clock();
    return one<DocumentRow & { content: string }>(
      db,
      `UPDATE knowledge_documents SET lease_until = $2
       WHERE id = $1 AND status = 'processing' AND (lease_until IS NULL OR lease_until < $3)
       RETURNING ${store.DOCUMENT_COLUMNS}, content`,
      [documentId, new Date(now + leaseMs), new Date(now)],
    );
  }

  /** Processes a document it can claim; answers false when someone else holds it. */
  async function processDocument(documentId: string, signal: AbortSignal): Promise<boolean> {
    const doc = await claim(documentId, JOB_LEASE_MS);
    if (!doc) {
      const [row] = await db.query<{ status: string }>('SELECT status FROM knowledge_documents WHERE id = $1', [documentId]);
      return row?.status !== 'processing';
    }
    try {
      await ingest(doc, doc.content, signal, JOB_LEASE_MS);
    } catch (error) {
      if (!signal.aborted) {
        await markFailed(doc, error);
        return true;
      }
      // Stopping: the document is free at once for the job's next attempt, here after a restart or elsewhere.
      await db.query(`UPDATE knowledge_documents SET lease_until = NULL WHERE id = $1 AND status = 'processing'`, [doc.id]).catch(() => undefined);
      throw error;
    }
    return true;
  }

  async function ingestJob({ documentId }: { documentId: string }, job: { signal: AbortSignal }): Promise<void> {
    // Thrown, the job is retried later: by then the holder has finished, or its lease has lapsed.
    if (!(await processDocument(documentId, AbortSignal.any([job.signal, closing.signal])))) {
      throw new Error(`The knowledge document ${documentId} is held by another worker.`);
    }
  }

  /** Stores a document's job in `tx` (with the document), or on its own. */
  const enqueueIngest = (documentId: string, options: { tx?: Queryable; delaySeconds?: number } = {}) =>
    jobs.enqueue(INGEST_JOB, { documentId }, { key: documentId, ...options });

  async function resolveCollections(userId: string, names: string[] | undefined): Promise<CollectionRow[]> {
    const found = await store.findCollections(db, userId, names);
    if (names) {
      const missing = names.filter((name) => !found.some((row) => row.name === name));
      if (missing.length > 0) {
        throw new ApiError('not_found', `No knowledge collection ${missing.join(', ')}.`, {
          details: missing.map((name) => ({ field: 'collections', message: `no collection ${name}` })),
        });
      }
    }
    return found;
  }

  async function vectorResults(userId: string, ctx: CallContext, collections: CollectionRow[], scope: Omit<Scope, 'collections'>, query: string, limit: number) {
    // Collections made with different models need the query embedded by each model.
    const groups = new Map<string, CollectionRow[]>();
    for (const collection of collections) {
      const key = `${collection.embedding_model}\u0000${collection.dimensions}`;
      groups.set(key, [...(groups.get(key) ?? []), collection]);
    }
    const lists: SearchResult[][] = [];
    for (const group of groups.values()) {
      const [vector] = await embed(userId, ctx.apiKeyId, group[0]!, [query], ctx.signal);
      lists.push(
        await db.transaction(async (tx) => {
          await tx.query("SELECT set_config('hnsw.ef_search', $1, true)", [String(Math.min(1000, Math.max(config.hnswEfSearch, limit * 2)))]);
          if (iterativeScans) await tx.query("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)");
          return vectorSearch(tx, { ...scope, collections: group.map((c) => c.name) }, group[0]!.dimensions, vector!, limit);
        }),
      );
    }
    return lists.flat().sort((a, b) => b.score - a.score).slice(0, limit);
  }

  return {
    /** Whether vector search is possible here (pgvector installed). */
    vectors,

    /** Takes jobs; a document left processing without a job (stored before jobs existed) gets one. */
    async start(): Promise<void> {
      await jobs.register(INGEST_JOB, ingestJob, { concurrency: 2, retryLimit: 10, retryDelaySeconds: 5 });
      // PGlite serves one process (the data directory is locked), so no request can hold a lease at start.
      if (db.engine === 'pglite') await db.query(`UPDATE knowledge_documents SET lease_until = NULL WHERE status = 'processing'`);
      const stranded = await db.query<{ id: string }>(`SELECT id FROM knowledge_documents WHERE status = 'processing'`);
      // Keyed by document: a document whose job is waiting or running gets no second one.
      for (const { id } of stranded) await enqueueIngest(id);
    },

    /** Stops taking jobs and gives up a document being processed; its job runs again later or elsewhere. */
    async close(): Promise<void> {
      closing.abort(new Error('The server is shutting down.'));
      await jobs.unregister(INGEST_JOB);
    },

    /** Processes, here and now, every waiting document nobody holds (tests, and a restart's catch-up). */
    async processPending(): Promise<void> {
      const now = new Date(clock());
      const waiting = await db.query<{ id: string }>(
        `SELECT id FROM knowledge_documents WHERE status = 'processing' AND (lease_until IS NULL OR lease_until < $1) ORDER BY id`,
        [now],
      );
      for (const { id } of waiting) await processDocument(id, closing.signal).catch(() => undefined);
      // A job may hold one: wait for what it holds to be finished.
      for (;;) {
        const [held] = await db.query<{ count: number }>(
          `SELECT count(*)::int AS count FROM knowledge_documents WHERE status = 'processing' AND lease_until >= $1 AND lease_until <= $2`,
          [new Date(clock()), new Date(clock() + JOB_LEASE_MS)],
        );
        if (!held?.count || closing.signal.aborted) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },

    async addDocument(userId: string, input: NewDocument, ctx: CallContext): Promise<AddedDocument> {
      const content = input.text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
      const bytes = Buffer.byteLength(content);
      if (bytes > config.maxBytes) throw new ApiError('payload_too_large', `A document may hold at most ${config.maxBytes} bytes of text.`);
      if (!/[\p{L}\p{N}]/u.test(content)) {
        throw new ApiError('invalid_request', 'The document has no text.', { details: [{ field: 'text', message: 'no text' }] });
      }
      const name = input.collection ?? DEFAULT_COLLECTION;
      const collection = await collectionFor(userId, ctx.apiKeyId, name, input.embeddingModel);
      const hash = sha256(content);
      const existing = await store.findDocumentByContent(db, userId, name, hash);
      if (existing?.status === 'failed') {
        // Posting a failed document again is how a client retries it.
        await store.deleteDocument(db, userId, existing.id);
      } else if (existing) {
        return { status: 200, document: store.toDocument(existing) };
      }
      const inline = bytes <= config.inlineMaxBytes;
      const now = clock();
      const [documentLimit, byteLimit] = deps.limitOf
        ? await Promise.all([deps.limitOf(userId, 'knowledge_documents'), deps.limitOf(userId, 'knowledge_bytes')])
        : [null, null];
      const doc = await db.transaction(async (tx) => {
        // Locks taken in the same order by every insert: documents, then bytes.
        await holdQuota(tx, { userId, metric: 'knowledge_documents', limit: documentLimit, count: async () => (await store.countForUser(tx, userId)).documents });
        await holdQuota(tx, { userId, metric: 'knowledge_bytes', limit: byteLimit, adding: bytes, count: async () => (await store.countForUser(tx, userId)).bytes });
        const inserted = await store.insertDocument(tx, {
          id: newId('doc', now),
          userId,
          collection: name,
          title: input.title ?? null,
          source: input.source ?? null,
          contentType: input.contentType,
          content,
          bytes,
          sha256: hash,
          metadata: input.metadata ?? {},
          embeddingModel: collection.embedding_model,
          apiKeyId: ctx.apiKeyId,
          leaseUntil: inline ? new Date(now + LEASE_MS) : null,
          now: new Date(now),
        });
        // An inline document's job waits out the request's lease, in case the request's server dies.
        if (inserted) await enqueueIngest(inserted.id, { tx, ...(inline ? { delaySeconds: LEASE_MS / 1000 + 5 } : {}) });
        return inserted;
      });
      if (!doc) {
        // The same content arrived concurrently and won.
        const winner = await store.findDocumentByContent(db, userId, name, hash);
        if (winner) return { status: 200, document: store.toDocument(winner) };
        throw new ApiError('conflict', 'The same document is being added concurrently; retry.');
      }
      if (!inline) return { status: 202, document: store.toDocument(doc) };
      try {
        const ready = await ingest(doc, content, undefined, LEASE_MS);
        if (!ready) throw notFound('knowledge document', doc.id);
        return { status: 201, document: store.toDocument(ready) };
      } catch (error) {
        await markFailed(doc, error);
        if (error instanceof ApiError && error.status !== 404) {
          throw new ApiError(error.code, `${error.message} The document ${doc.id} is stored as failed; post it again to retry.`, {
            headers: error.headers,
            cause: error,
          });
        }
        throw error;
      }
    },

    async getDocument(userId: string, id: string): Promise<KnowledgeDocument> {
      const row = await store.findDocument(db, userId, id);
      if (!row) throw notFound('knowledge document', id);
      return store.toDocument(row);
    },

    async listDocuments(userId: string, request: PageRequest & { collection?: string | undefined }): Promise<Page<KnowledgeDocument>> {
      const limit = limitOf(request);
      const rows = await store.listDocuments(db, userId, request.collection, cursorOf(request, 'doc'), limit);
      return toPage(rows, limit, store.toDocument);
    },

    /** Deletes the document with its chunks and vectors. */
    async deleteDocument(userId: string, id: string): Promise<void> {
      if (!(await store.deleteDocument(db, userId, id))) throw notFound('knowledge document', id);
    },

    /** The user's collections in name order; the cursor is the last name of the previous page. */
    async listCollections(userId: string, request: PageRequest): Promise<Page<KnowledgeCollection>> {
      const limit = limitOf(request);
      const rows = await store.listCollections(db, userId, request.after ?? null, limit);
      return toPage(rows, limit, store.toCollection);
    },

    /** The names among `names` the user has no collection of (empty when all exist). */
    async missingCollections(userId: string, names: string[]): Promise<string[]> {
      const found = new Set((await store.findCollections(db, userId, names)).map((row) => row.name));
      return names.filter((name) => !found.has(name));
    },

    /** Documents and bytes of text the user stores, for plan limits. */
    countForUser(userId: string): Promise<{ documents: number; bytes: number }> {
      return store.countForUser(db, userId);
    },

    /**
     * The chunks most relevant to `query` among the user's documents, best first. Throws not_found for a
     * collection the user does not have, and service_unavailable for `vector` without pgvector.
     */
    async search(userId: string, request: SearchRequest, ctx: CallContext): Promise<SearchResponse> {
      const topK = request.top_k ?? DEFAULT_TOP_K;
      let mode = request.mode ?? 'hybrid';
      if (!vectors) {
        if (mode === 'vector') {
          throw new ApiError('service_unavailable', 'Vector search needs the pgvector extension, which this database does not have; use mode keyword.');
        }
        mode = 'keyword';
      }
      const collections = await resolveCollections(userId, request.collections);
      if (collections.length === 0) return { mode, results: [] };
      const scope = { userId, filter: request.filter };
      const names = collections.map((c) => c.name);
      if (mode === 'keyword') return { mode, results: await keywordSearch(db, { ...scope, collections: names }, request.query, topK) };
      if (mode === 'vector') return { mode, results: await vectorResults(userId, ctx, collections, scope, request.query, topK) };
      const depth = Math.max(topK * HYBRID_DEPTH, 20);
      const [byVector, byKeyword] = await Promise.all([
        vectorResults(userId, ctx, collections, scope, request.query, depth),
        keywordSearch(db, { ...scope, collections: names }, request.query, depth),
      ]);
      return { mode, results: reciprocalRankFusion([byVector, byKeyword], topK) };
    },
  };
}

export type Knowledge = Awaited<ReturnType<typeof createKnowledge>>;
