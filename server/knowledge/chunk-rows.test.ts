// A chunk's row keeps its embedding with it (migration 0016): an exact scan reads vectors from the rows it
// visits instead of looking each one up in the TOAST table. A row too large for a page still goes out of
// line and reads back whole; rows stored before the migration move in when the table is rewritten
// (npm run reindex-knowledge -- --rewrite). On PGlite, which always has pgvector.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOrCreateUser } from '../identity/users.ts';
import type { Db } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import { createPgliteDatabase } from '../testing/database.ts';
import { vectorLiteral } from './store.ts';
import { chunksOutOfLine, rebuildVectorIndexes, rewriteChunkRows, vectorIndexes } from './vector-indexes.ts';

describe('knowledge chunk rows on PGlite', () => {
  let db: Db;
  let userId: string;

  beforeAll(async () => {
    db = await createPgliteDatabase();
    userId = (await findOrCreateUser(db, 'rows@example.com')).user.id;
    await db.query(`INSERT INTO knowledge_collections (user_id, name, embedding_model, dimensions) VALUES ($1, 'c', 'local-embedding', 256)`, [userId]);
  });
  afterAll(() => db?.close());

  const outOfLine = () => chunksOutOfLine(db);

  async function insert(dimensions: number, count: number): Promise<string[]> {
    const documentId = newId('doc');
    await db.query(
      `INSERT INTO knowledge_documents (id, user_id, collection, content_type, content, bytes, content_sha256, status, embedding_model)
       VALUES ($1, $2, 'c', 'text/plain', '', 0, $1, 'ready', 'local-embedding')`,
      [documentId, userId],
    );
    // About 450 characters of words no dictionary stems alike: a tsvector as large as a real chunk's.
    const texts = Array.from({ length: count }, (_, i) => Array.from({ length: 60 }, (_, w) => `w${i}x${w}q`).join(' '));
    const vectors = texts.map((_, i) => vectorLiteral(Array.from({ length: dimensions }, (_, d) => Math.sin(i + d))));
    const ids = texts.map(() => newId('chk'));
    await db.query(
      `INSERT INTO knowledge_chunks (id, document_id, user_id, collection, position, text, dimensions, embedding)
       SELECT t.id, $1, $2, 'c', t.position, t.text, ${dimensions}, t.embedding::vector
       FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS t(id, text, embedding, position)`,
      [documentId, userId, ids, texts, vectors],
    );
    return ids;
  }

  it('keeps a 256-dimension chunk whole in its row', async () => {
    await insert(256, 50);
    const [size] = await db.query<{ bytes: number }>('SELECT min(pg_column_size(k.*))::int8 AS bytes FROM knowledge_chunks k');
    // Past the 2 kB at which PostgreSQL would otherwise move the embedding out of line.
    expect(size!.bytes).toBeGreaterThan(2100);
    expect(await outOfLine()).toBe(0);
  });

  it('moves a row larger than a page out of line, and reads it back whole', async () => {
    const [id] = (await insert(3000, 1)) as [string];
    expect(await outOfLine()).toBeGreaterThan(0);
    const [row] = await db.query<{ dims: number }>('SELECT vector_dims(embedding) AS dims FROM knowledge_chunks WHERE id = $1', [id]);
    expect(row!.dims).toBe(3000);
  });

  it('moves chunks stored out of line before migration 0016 into their rows when the table is rewritten', async () => {
    await db.exec('DELETE FROM knowledge_chunks');
    await db.exec('VACUUM FULL knowledge_chunks');
    // As the table stored them before the migration.
    await db.exec('ALTER TABLE knowledge_chunks RESET (toast_tuple_target)');
    const ids = await insert(256, 30);
    await db.exec('ALTER TABLE knowledge_chunks SET (toast_tuple_target = 8160)');
    expect(await outOfLine()).toBeGreaterThan(0);
    const defaults = { hnswM: 16, hnswEfConstruction: 64 };
    expect(await rewriteChunkRows(db, defaults)).toMatchObject({ resettled: [] });
    expect(await outOfLine()).toBe(0);
    const rows = await db.query<{ id: string; dims: number }>('SELECT id, vector_dims(embedding) AS dims FROM knowledge_chunks ORDER BY id');
    expect(rows).toEqual([...ids].sort().map((id) => ({ id, dims: 256 })));
  });

  it('builds a vector index with new settings during the rewrite, once, leaving nothing to rebuild', async () => {
    const ids = await insert(256, 20);
    const settings = { hnswM: 12, hnswEfConstruction: 48 };
    // As the knowledge service makes it, with pgvector's defaults.
    await db.exec(`CREATE INDEX knowledge_chunks_embedding_256_idx ON knowledge_chunks
      USING hnsw ((embedding::vector(256)) vector_cosine_ops) WHERE dimensions = 256`);
    const before = (await vectorIndexes(db)).find((index) => index.dimensions === 256)!;
    expect(before).toMatchObject({ m: 16, efConstruction: 64 });
    const { resettled } = await rewriteChunkRows(db, settings);
    expect(resettled).toContain(before.name);
    expect((await vectorIndexes(db)).find((index) => index.name === before.name)).toMatchObject({ m: 12, efConstruction: 48 });
    expect(await rebuildVectorIndexes(db, settings)).toEqual([]);
    // The index the rewrite built answers searches.
    await db.exec('SET enable_seqscan = off');
    const [near] = await db.query<{ id: string }>(
      `SELECT id FROM knowledge_chunks WHERE dimensions = 256 ORDER BY embedding::vector(256) <=> $1::vector(256) LIMIT 1`,
      [vectorLiteral(Array.from({ length: 256 }, (_, d) => Math.sin(3 + d)))],
    );
    await db.exec('RESET enable_seqscan');
    expect(ids).toContain(near!.id);
  });
});
