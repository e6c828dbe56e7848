// Keyword search leaves out of a question the words a tenth of the searched chunks hold. The counts it
// decides by (knowledge_terms over one chunk in eight, knowledge_collections.chunk_count over all) are
// kept by triggers: they must equal a recount after every way chunks come and go, and hold nothing of
// deleted text.
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

/** The counts as the triggers keep them, and as a recount of the stored chunks (those sampled) gives them. */
async function counts(db: Db, userId: string) {
  const order = 'ORDER BY collection, lexeme';
  const kept = await db.query<Count>(`SELECT collection, lexeme, chunks::int8 AS chunks FROM knowledge_terms WHERE user_id = $1 ${order}`, [userId]);
  const recount = await db.query<Count>(
    `SELECT collection, lexeme, count(*)::int8 AS chunks FROM knowledge_chunks, unnest(tsvector_to_array(tsv)) AS lexeme
     WHERE user_id = $1 AND right(id, 1) IN ('0', '1', '2', '3') GROUP BY 1, 2 ${order}`,
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

  /**
   * Stores a ready document of these chunks as a bulk import would; `idEnd` picks the last character of
   * each chunk's id, and so whether knowledge_terms counts it (0 to 3).
   */
  async function insertChunks(userId: string, collection: string, texts: string[], idEnd: (i: number) => string): Promise<string> {
    const documentId = newId('doc');
    await db.query(
      `INSERT INTO knowledge_documents (id, user_id, collection, content_type, content, bytes, content_sha256, status, chunk_count, embedding_model)
       VALUES ($1, $2, $3, 'text/plain', '', 0, $1, 'ready', $4, 'local-embedding')`,
      [documentId, userId, collection, texts.length],
    );
    await db.query(
      `INSERT INTO knowledge_chunks (id, document_id, user_id, collection, position, text, dimensions)
       SELECT t.id, $1, $2, $3, t.position, t.text, 256 FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS t(id, text, position)`,
      [documentId, userId, collection, texts.map((_, i) => newId('chk').slice(0, -1) + idEnd(i)), texts],
    );
    return documentId;
  }

  const add = async (user: TestUser, text: string, collection: string) => {
    const { data, response } = await user.client.POST('/v1/knowledge/documents', { body: { text, collection } });
    expect(response.status).toBe(201);
    return data!.id;
  };

  it('keeps the counts equal to a recount as documents come and go through the API', async () => {
    // Ids are random here, so which chunks are counted is chance: the counts must equal the recount either way.
    const first = await add(owner, 'Walruses bask on ice floes. Walruses eat clams.', 'zoo');
    await add(owner, 'Penguins swim under the ice.', 'zoo');
    await add(owner, 'Ice cream melts in summer.', 'kitchen');
    let now = await counts(db, owner.userId);
    expect(now.kept).toEqual(now.recount);
    expect(now.collections.map((c) => [c.name, c.chunk_count, c.stored])).toEqual([['kitchen', 1, 1], ['zoo', 2, 2]]);

    const deleted = await owner.client.DELETE('/v1/knowledge/documents/{documentId}', { params: { path: { documentId: first } } });
    expect(deleted.response.status).toBe(204);
    now = await counts(db, owner.userId);
    expect(now.kept).toEqual(now.recount);
    expect(now.collections.map((c) => [c.name, c.chunk_count, c.stored])).toEqual([['kitchen', 1, 1], ['zoo', 1, 1]]);
  });

  it('counts the chunks whose id ends in 0 to 3, and keeps no row for a word no counted chunk holds', async () => {
    const user = await server.signUp();
    await add(user, 'Shelf notes.', 'shelf');
    const texts = ['Walruses rest on the ice.', 'Ice floes drift.', 'Ice again, in an uncounted chunk.'];
    const documentId = await insertChunks(user.userId, 'shelf', texts, (i) => ['0', '3', 'Z'][i]!);
    let now = await counts(db, user.userId);
    expect(now.kept).toEqual(now.recount);
    expect(now.kept).toContainEqual({ collection: 'shelf', lexeme: 'ice', chunks: 2 });
    expect(now.kept).toContainEqual({ collection: 'shelf', lexeme: 'walrus', chunks: 1 });
    expect(now.kept.map((row) => row.lexeme)).not.toContain('uncount');
    expect(now.collections.map((c) => c.chunk_count)).toEqual([4]);

    const deleted = await user.client.DELETE('/v1/knowledge/documents/{documentId}', { params: { path: { documentId } } });
    expect(deleted.response.status).toBe(204);
    now = await counts(db, user.userId);
    expect(now.kept).toEqual(now.recount);
    expect(now.kept.map((row) => row.lexeme)).not.toContain('walrus');
    expect(now.kept.map((row) => row.lexeme)).not.toContain('ice');
    expect(now.collections.map((c) => c.chunk_count)).toEqual([1]);
  });

  it('keeps the counts right when documents of one collection are added and deleted at once', async () => {
    const user = await server.signUp();
    const words = ['harbour', 'tide', 'anchor', 'rope', 'sail', 'keel', 'mast', 'hull'];
    // Every document shares most of its words with the others, so their counts' rows are written at once.
    const texts = (round: number) => words.map((_, i) => `${words.slice(i).join(' ')} ${words.slice(0, i).join(' ')} log ${round}-${i}.`);
    const first = await Promise.all(texts(1).map((text) => add(user, text, 'dock')));
    const [, deleted] = await Promise.all([
      Promise.all(texts(2).map((text) => add(user, text, 'dock'))),
      Promise.all(first.map((documentId) => user.client.DELETE('/v1/knowledge/documents/{documentId}', { params: { path: { documentId } } }))),
    ]);
    expect(deleted.map((d) => d.response.status)).toEqual(first.map(() => 204));
    const now = await counts(db, user.userId);
    expect(now.kept).toEqual(now.recount);
    expect(now.collections).toEqual([{ name: 'dock', chunk_count: 8, stored: 8 }]);
  });

  it('holds nothing of a deleted user', async () => {
    const leaving = await server.signUp();
    await add(leaving, 'Sea notes.', 'sea');
    await insertChunks(leaving.userId, 'sea', ['Narwhal tusks are teeth.'], () => '0');
    expect((await counts(db, leaving.userId)).kept.length).toBeGreaterThan(0);
    await db.query('DELETE FROM users WHERE id = $1', [leaving.userId]);
    expect(await db.query('SELECT lexeme FROM knowledge_terms WHERE user_id = $1', [leaving.userId])).toEqual([]);
  });

  it('leaves a word a tenth of the chunks hold out of the question, unless nothing else matches', async () => {
    const user = await server.signUp();
    await add(user, 'Harbour notes.', 'port');
    // 1,500 chunks that all say "tide", one of which also says "lighthouse"; one in eight of them counted.
    const texts = Array.from({ length: 1500 }, (_, i) => (i === 700 ? 'The tide turns at the lighthouse.' : `Tide table entry ${i}.`));
    await insertChunks(user.userId, 'port', texts, (i) => '0123456789ABCDEFGHJKMNPQRSTVWXYZ'[i % 32]!);
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
