// Keyword search leaves out of a question the words a tenth of the searched chunks hold. The counts it
// decides by (knowledge_terms, knowledge_collections.chunk_count) are kept by triggers: they must equal a
// recount after every way chunks come and go, and hold nothing of deleted text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../store/db.ts';
import { newId } from '../store/ids.ts';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';

interface Count {
  collection: string;
  lexeme: string;
  chunks: number;
}

/** The counts as the triggers keep them, and as a recount of the stored chunks gives them. */
async function counts(db: Db, userId: string) {
  const order = 'ORDER BY collection, lexeme';
  const kept = await db.query<Count>(`SELECT collection, lexeme, chunks::int8 AS chunks FROM knowledge_terms WHERE user_id = $1 ${order}`, [userId]);
  const recount = await db.query<Count>(
    `SELECT collection, lexeme, count(*)::int8 AS chunks FROM knowledge_chunks, unnest(tsvector_to_array(tsv)) AS lexeme
     WHERE user_id = $1 GROUP BY 1, 2 ${order}`,
    [userId],
  );
  const collections = await db.query<{ name: string; chunk_count: number; stored: number }>(
    `SELECT name, chunk_count::int8 AS chunk_count,
            (SELECT count(*) FROM knowledge_chunks c WHERE c.user_id = k.user_id AND c.collection = k.name)::int8 AS stored
     FROM knowledge_collections k WHERE user_id = $1 ORDER BY name`,
    [userId],
  );
  return { kept, recount, collections };
}

describe.each(await availableEngines())('keyword search without common words on %s', (engine) => {
  let server: TestServer;
  let owner: TestUser;
  let db: Db;

  beforeAll(async () => {
    server = await startTestServer({ engine, env: unlimitedPlanEnv() });
    owner = await server.signUp();
    db = server.services.db;
  });
  afterAll(() => server?.close());

  const add = async (user: TestUser, text: string, collection: string) => {
    const { data, response } = await user.client.POST('/v1/knowledge/documents', { body: { text, collection } });
    expect(response.status).toBe(201);
    return data!.id;
  };

  it('keeps the chunks per lexeme and per collection equal to a recount as documents come and go', async () => {
    const first = await add(owner, 'Walruses bask on ice floes. Walruses eat clams.', 'zoo');
    await add(owner, 'Penguins swim under the ice.', 'zoo');
    await add(owner, 'Ice cream melts in summer.', 'kitchen');
    let now = await counts(db, owner.userId);
    expect(now.kept).toEqual(now.recount);
    expect(now.kept).toContainEqual({ collection: 'zoo', lexeme: 'ice', chunks: 2 });
    expect(now.kept).toContainEqual({ collection: 'kitchen', lexeme: 'ice', chunks: 1 });
    for (const collection of now.collections) expect(collection.chunk_count).toBe(collection.stored);

    const deleted = await owner.client.DELETE('/v1/knowledge/documents/{documentId}', { params: { path: { documentId: first } } });
    expect(deleted.response.status).toBe(204);
    now = await counts(db, owner.userId);
    expect(now.kept).toEqual(now.recount);
    // The words only the deleted document held leave no row behind.
    expect(now.kept.map((row) => row.lexeme)).not.toContain('walrus');
    expect(now.kept).toContainEqual({ collection: 'zoo', lexeme: 'ice', chunks: 1 });
    for (const collection of now.collections) expect(collection.chunk_count).toBe(collection.stored);
  });

  it('holds nothing of a deleted user', async () => {
    const leaving = await server.signUp();
    await add(leaving, 'Narwhal tusks are teeth.', 'sea');
    expect((await counts(db, leaving.userId)).kept.length).toBeGreaterThan(0);
    await db.query('DELETE FROM users WHERE id = $1', [leaving.userId]);
    expect(await db.query('SELECT lexeme FROM knowledge_terms WHERE user_id = $1', [leaving.userId])).toEqual([]);
  });

  it('leaves a word a tenth of the chunks hold out of the question, unless nothing else matches', async () => {
    const user = await server.signUp();
    await add(user, 'Harbour notes.', 'port');
    // 1,500 chunks that all say "tide", one of which also says "lighthouse"; stored as a bulk import would.
    const documentId = newId('doc');
    await db.query(
      `INSERT INTO knowledge_documents (id, user_id, collection, content_type, content, bytes, content_sha256, status, chunk_count, embedding_model)
       VALUES ($1, $2, 'port', 'text/plain', '', 0, $1, 'ready', 1500, 'local-embedding')`,
      [documentId, user.userId],
    );
    const texts = Array.from({ length: 1500 }, (_, i) => (i === 700 ? 'The tide turns at the lighthouse.' : `Tide table entry ${i}.`));
    await db.query(
      `INSERT INTO knowledge_chunks (id, document_id, user_id, collection, position, text, dimensions)
       SELECT t.id, $1, $2, 'port', t.position, t.text, 256 FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS t(id, text, position)`,
      [documentId, user.userId, texts.map(() => newId('chk')), texts],
    );
    const now = await counts(db, user.userId);
    expect(now.kept).toEqual(now.recount);
    expect(now.collections).toEqual([{ name: 'port', chunk_count: 1501, stored: 1501 }]);

    const keyword = async (query: string) => {
      const { data, response } = await user.client.POST('/v1/knowledge/search', { body: { query, mode: 'keyword', top_k: 50 } });
      expect(response.status).toBe(200);
      return data!.results.map((result) => result.text);
    };
    // "tide" is in every chunk: only the lighthouse chunk answers, where ranking all 1,500 would give 50.
    expect(await keyword('tide lighthouse')).toEqual(['The tide turns at the lighthouse.']);
    // Every word common: chunks must hold them all.
    const both = await keyword('tide table');
    expect(both).toHaveLength(50);
    expect(both.every((text) => text.startsWith('Tide table entry'))).toBe(true);
    // The rare word matches nothing: the common one answers after all.
    expect(await keyword('tide zeppelin')).toHaveLength(50);
    // Another user's chunks count for nothing in this user's search, and show nothing.
    const stranger = await server.signUp();
    await add(stranger, 'A tide and a lighthouse, and a tide again.', 'port');
    const theirs = await stranger.client.POST('/v1/knowledge/search', { body: { query: 'tide lighthouse', mode: 'keyword', top_k: 50 } });
    expect(theirs.data!.results.map((result) => result.text)).toEqual(['A tide and a lighthouse, and a tide again.']);
  });
});
