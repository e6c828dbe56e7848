// Search quality and scope through the API: a corpus of three dozen documents on distinct topics, and for
// each mode every question must find its document in the top 3. Vector and hybrid search need pgvector,
// which PGlite has; on a PostgreSQL without it keyword search carries the load and hybrid says so.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { corpus, queries } from './testdata/corpus.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { keywordQuery, queryWords, reciprocalRankFusion, type SearchResult } from './search.ts';

type Mode = 'vector' | 'keyword' | 'hybrid';

describe.each(await availableEngines())('knowledge search on %s', (engine) => {
  let server: TestServer;
  let owner: TestUser;
  const ids = new Map<string, string>();

  beforeAll(async () => {
    server = await startTestServer({ engine, env: unlimitedPlanEnv() });
    owner = await server.signUp();
    for (const item of corpus) {
      const created = await owner.client.POST('/v1/knowledge/documents', {
        body: { text: item.text, title: item.title, source: `https://example.com/${item.key}`, collection: 'encyclopedia', metadata: item.metadata },
      });
      expect(created.response.status).toBe(201);
      ids.set(item.key, created.data!.id);
    }
  });
  afterAll(() => server?.close());

  const search = (user: TestUser, body: { query: string; mode?: Mode; top_k?: number; collections?: string[]; filter?: Record<string, string> }) =>
    user.client.POST('/v1/knowledge/search', { body });

  const modes = (): Mode[] => (server.services.knowledge.vectors ? ['vector', 'keyword', 'hybrid'] : ['keyword']);

  it('ranks the right document in the top 3 for every question, in every mode the database supports', async () => {
    for (const mode of modes()) {
      const misses: string[] = [];
      for (const { query, expected } of queries) {
        const { data, response } = await search(owner, { query, mode, top_k: 3 });
        expect(response.status).toBe(200);
        expect(data!.mode).toBe(mode);
        if (!data!.results.some((result) => result.document_id === ids.get(expected))) {
          misses.push(`${query} → ${data!.results.map((r) => r.title).join(', ')}`);
        }
      }
      expect({ mode, misses }).toEqual({ mode, misses: [] });
    }
  });

  it('answers with the document title, source, metadata and a score that orders the results', async () => {
    const { data } = await search(owner, { query: 'Gutenberg printing press movable type', top_k: 5 });
    expect(data!.results.length).toBeGreaterThan(0);
    const [best] = data!.results;
    expect(best).toMatchObject({
      document_id: ids.get('printing'),
      collection: 'encyclopedia',
      title: 'The printing press',
      source: 'https://example.com/printing',
      metadata: { area: 'history' },
    });
    expect(best!.text).toContain('Gutenberg');
    const scores = data!.results.map((r) => r.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });

  it('keeps only documents whose metadata matches the filter', async () => {
    const { data } = await search(owner, { query: 'water', top_k: 20, mode: 'keyword', filter: { area: 'history' } });
    expect(data!.results.length).toBeGreaterThan(0);
    expect(new Set(data!.results.map((r) => r.metadata.area))).toEqual(new Set(['history']));
    expect(data!.results.map((r) => r.document_id)).toContain(ids.get('aqueducts'));
  });

  it('searches only the named collections, and answers 404 for a collection the user does not have', async () => {
    const other = await owner.client.POST('/v1/knowledge/documents', {
      body: { text: 'Aqueducts of the modern era are pipelines and tunnels.', collection: 'engineering' },
    });
    expect(other.response.status).toBe(201);
    const scoped = await search(owner, { query: 'aqueducts', collections: ['engineering'], mode: 'keyword' });
    expect(scoped.data!.results.map((r) => r.document_id)).toEqual([other.data!.id]);
    const everywhere = await search(owner, { query: 'aqueducts', mode: 'keyword', top_k: 10 });
    expect(everywhere.data!.results.map((r) => r.document_id)).toEqual(expect.arrayContaining([other.data!.id, ids.get('aqueducts')]));

    const missing = await search(owner, { query: 'aqueducts', collections: ['engineering', 'nowhere'] });
    expect(missing.response.status).toBe(404);
    expect(missing.error!.error.code).toBe('not_found');
    expect(missing.error!.error.message).toContain('nowhere');
  });

  it("never finds another user's text, in any mode", async () => {
    const stranger = await server.signUp();
    const empty = await search(stranger, { query: 'volcano lava magma eruption' });
    expect(empty.response.status).toBe(200);
    expect(empty.data!.results).toEqual([]);

    // With a collection of the same name, the stranger still sees only their own document.
    const own = await stranger.client.POST('/v1/knowledge/documents', {
      body: { text: 'Volcano notes: my own words about lava.', collection: 'encyclopedia' },
    });
    for (const mode of modes()) {
      const { data } = await search(stranger, { query: 'volcano lava magma eruption', mode, top_k: 50 });
      expect(data!.results.map((r) => r.document_id)).toEqual([own.data!.id]);
    }
    const theirs = await search(stranger, { query: 'volcano', collections: ['encyclopedia'], top_k: 50 });
    expect(theirs.data!.results.every((r) => r.document_id === own.data!.id)).toBe(true);
  });

  it('runs hybrid as keyword where pgvector is missing, and refuses vector there with 503', async () => {
    const hybrid = await search(owner, { query: 'black hole event horizon' });
    expect(hybrid.data!.mode).toBe(server.services.knowledge.vectors ? 'hybrid' : 'keyword');
    expect(hybrid.data!.results[0]!.document_id).toBe(ids.get('black-holes'));
    const vector = await search(owner, { query: 'black hole event horizon', mode: 'vector' });
    if (server.services.knowledge.vectors) {
      expect(vector.response.status).toBe(200);
    } else {
      expect(vector.response.status).toBe(503);
      expect(vector.error!.error.code).toBe('service_unavailable');
      expect(vector.error!.error.message).toContain('pgvector');
    }
  });

  it('meters the embeddings of documents and queries', async () => {
    const user = await server.signUp();
    await user.client.POST('/v1/knowledge/documents', { body: { text: 'Metering test about kites and wind.' } });
    await search(user, { query: 'kites', mode: 'hybrid' });
    const byModel = await server.services.usage.byModel(user.userId, new Date(0));
    if (server.services.knowledge.vectors) {
      expect(byModel).toEqual([expect.objectContaining({ model: 'local-embedding', requests: 2 })]);
      expect(byModel[0]!.prompt_tokens).toBeGreaterThan(0);
    } else {
      expect(byModel).toEqual([]);
    }
  });
});

describe('search building blocks', () => {
  it('keeps only the words of a question, so that it cannot carry operators', () => {
    expect(queryWords('how long -do "I" have? (or not) & x:*')).toBe('how long do I have or not x');
    expect(queryWords('¿?!')).toBe('');
  });

  it('leaves common lexemes out of the keyword query, and asks for all of them when every one is common', () => {
    const terms = (...counts: number[]) => counts.map((chunks, i) => ({ lexeme: `w${i}`, chunks }));
    // 100k chunks: common means in more than 10,000 of them.
    expect(keywordQuery(terms(12, 40_000, 9_000), 100_000)).toBe("'w0' | 'w2'");
    expect(keywordQuery(terms(12, 40_000, 9_000), 100_000, true)).toBe("'w0' | 'w1' | 'w2'");
    expect(keywordQuery(terms(60_000, 40_000), 100_000)).toBe("'w0' & 'w1'");
    // A small collection keeps every word until it is in 1,000 chunks.
    expect(keywordQuery(terms(900, 3), 1_500)).toBe("'w0' | 'w1'");
    expect(keywordQuery(terms(1_200, 3), 1_500)).toBe("'w1'");
    expect(keywordQuery([{ lexeme: "o'neil\\", chunks: 1 }], 10)).toBe("'o''neil\\\\'");
  });

  it('fuses ranked lists by reciprocal rank, rewarding results both lists agree on', () => {
    const result = (id: string): SearchResult => ({ id, document_id: 'doc_x', collection: 'c', text: id, score: 0, title: null, source: null, metadata: {} });
    const fused = reciprocalRankFusion(
      [
        [result('a'), result('b'), result('c')],
        [result('c'), result('a'), result('d')],
      ],
      3,
    );
    // c, third and first, beats b, second in one list only.
    expect(fused.map((r) => r.id)).toEqual(['a', 'c', 'b']);
    expect(fused[0]!.score).toBeCloseTo(1 / 61 + 1 / 62);
    expect(fused[2]!.score).toBeCloseTo(1 / 62);
  });
});
