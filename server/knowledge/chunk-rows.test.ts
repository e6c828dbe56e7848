// A chunk's row keeps its embedding with it (migration 0016): an exact scan reads vectors from the rows it
// visits instead of looking each one up in the TOAST table. A row too large for a page still goes out of
// line and reads back whole. On PGlite, which always has pgvector.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOrCreateUser } from '../identity/users.ts';
import type { Db } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import { createPgliteDatabase } from '../testing/database.ts';
import { vectorLiteral } from './search.ts';

describe('knowledge chunk rows on PGlite', () => {
  let db: Db;
  let userId: string;

  beforeAll(async () => {
    db = await createPgliteDatabase();
    userId = (await findOrCreateUser(db, 'rows@example.com')).user.id;
    await db.query(`INSERT INTO knowledge_collections (user_id, name, embedding_model, dimensions) VALUES ($1, 'c', 'local-embedding', 256)`, [userId]);
  });
  afterAll(() => db?.close());

  const outOfLine = async () => {
    const [row] = await db.query<{ bytes: number }>(
      `SELECT pg_relation_size(reltoastrelid)::int8 AS bytes FROM pg_class WHERE relname = 'knowledge_chunks'`,
    );
    return row!.bytes;
  };

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
});
