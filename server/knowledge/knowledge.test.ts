// Documents through the API on both engines: JSON and file uploads, duplicates, collections and their
// embedding models, background processing, failures, ownership and bad input. The upstream embedding
// model is a real OpenAI-compatible HTTP server on loopback that can be told to fail.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../generated/openapi.gen.ts';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { makePdf } from './testdata/pdf.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { modelsFileFor, startUpstream, type Upstream } from './testdata/upstream.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A Markdown document of `sections` sections, each a few paragraphs long. */
function longMarkdown(sections: number, topic: string): string {
  return Array.from(
    { length: sections },
    (_, s) =>
      `## ${topic} part ${s + 1}\n\n` +
      Array.from({ length: 4 }, (_, p) => `Paragraph ${p + 1} of part ${s + 1} explains ${topic} in some detail, with several words to fill the budget.`).join('\n\n'),
  ).join('\n\n');
}

describe.each(await availableEngines())('knowledge documents on %s', (engine) => {
  let upstream: Upstream;
  let server: TestServer;
  let alice: TestUser;
  let vectors: boolean;

  beforeAll(async () => {
    upstream = await startUpstream();
    server = await startTestServer({
      engine,
      env: {
        ...unlimitedPlanEnv(),
        MODELS_FILE: modelsFileFor(upstream),
        KNOWLEDGE_MAX_BYTES: '16384',
        KNOWLEDGE_INLINE_MAX_BYTES: '2048',
        KNOWLEDGE_CHUNK_TOKENS: '64',
        KNOWLEDGE_CHUNK_OVERLAP_TOKENS: '8',
        KNOWLEDGE_EMBED_BATCH_SIZE: '4',
      },
    });
    alice = await server.signUp();
    vectors = server.services.knowledge.vectors;
  });
  afterAll(async () => {
    await server?.close();
    await upstream?.close();
  });

  const post = (user: TestUser, body: components['schemas']['KnowledgeDocumentCreate']) => user.client.POST('/v1/knowledge/documents', { body });

  async function upload(user: TestUser, content: string | Buffer, type: string, filename: string, fields: Record<string, string> = {}) {
    const form = new FormData();
    form.set('file', new Blob([typeof content === 'string' ? content : new Uint8Array(content)], { type }), filename);
    for (const [name, value] of Object.entries(fields)) form.set(name, value);
    const response = await fetch(`${server.url}/v1/knowledge/documents`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${user.apiKey}` },
      body: form,
    });
    return { status: response.status, body: (await response.json()) as Record<string, never> };
  }

  const chunkCount = async (documentId: string) =>
    (await server.services.db.query<{ n: number }>('SELECT count(*)::int8 AS n FROM knowledge_chunks WHERE document_id = $1', [documentId]))[0]!.n;

  it('adds a JSON document that is ready at once, and reads, lists and deletes it', async () => {
    const text = '# Returns\n\nItems can be returned within 30 days with the receipt.';
    const created = await post(alice, { text, metadata: { team: 'support', priority: 2 } });
    expect(created.response.status).toBe(201);
    const doc = created.data!;
    expect(doc).toMatchObject({
      object: 'knowledge.document',
      collection: 'default',
      title: 'Returns',
      source: null,
      content_type: 'text/markdown',
      bytes: Buffer.byteLength(text),
      chunk_count: 1,
      status: 'ready',
      error: null,
      metadata: { team: 'support', priority: 2 },
      content_sha256: sha256(text),
      embedding_model: 'local-embedding',
    });
    expect(doc.id).toMatch(/^doc_/);
    expect(await chunkCount(doc.id)).toBe(1);

    const read = await alice.client.GET('/v1/knowledge/documents/{documentId}', { params: { path: { documentId: doc.id } } });
    expect(read.data).toEqual(doc);

    const deleted = await alice.client.DELETE('/v1/knowledge/documents/{documentId}', { params: { path: { documentId: doc.id } } });
    expect(deleted.response.status).toBe(204);
    expect(await chunkCount(doc.id)).toBe(0);
    const gone = await alice.client.GET('/v1/knowledge/documents/{documentId}', { params: { path: { documentId: doc.id } } });
    expect(gone.response.status).toBe(404);
    const again = await alice.client.DELETE('/v1/knowledge/documents/{documentId}', { params: { path: { documentId: doc.id } } });
    expect(again.response.status).toBe(404);
    const search = await alice.client.POST('/v1/knowledge/search', { body: { query: 'returned within 30 days receipt', mode: 'keyword' } });
    expect(search.data!.results.map((r) => r.document_id)).not.toContain(doc.id);
  });

  it('lists documents newest first, a page at a time, optionally of one collection', async () => {
    const user = await server.signUp();
    const ids: string[] = [];
    for (const [i, collection] of ['one', 'two', 'one', 'one'].entries()) {
      ids.push((await post(user, { text: `List test document ${i}.`, collection })).data!.id);
    }
    const first = await user.client.GET('/v1/knowledge/documents', { params: { query: { limit: 3 } } });
    expect(first.data!.data.map((d) => d.id)).toEqual([ids[3], ids[2], ids[1]]);
    expect(first.data!.has_more).toBe(true);
    const second = await user.client.GET('/v1/knowledge/documents', { params: { query: { limit: 3, after: first.data!.next_cursor! } } });
    expect(second.data).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.data!.data.map((d) => d.id)).toEqual([ids[0]]);
    const one = await user.client.GET('/v1/knowledge/documents', { params: { query: { collection: 'one' } } });
    expect(one.data!.data.map((d) => d.id)).toEqual([ids[3], ids[2], ids[0]]);
    const none = await user.client.GET('/v1/knowledge/documents', { params: { query: { collection: 'three' } } });
    expect(none.data!.data).toEqual([]);
    expect(await server.services.knowledge.countForUser(user.userId)).toEqual({
      documents: 4,
      bytes: [0, 1, 2, 3].reduce((sum, i) => sum + Buffer.byteLength(`List test document ${i}.`), 0),
    });
  });

  it('answers the existing document when the same content is posted to the same collection again', async () => {
    const text = 'Duplicate detection: the same words twice.';
    const first = await post(alice, { text, collection: 'dupes' });
    const second = await post(alice, { text, collection: 'dupes', title: 'Another title' });
    expect(first.response.status).toBe(201);
    expect(second.response.status).toBe(200);
    expect(second.data).toEqual(first.data);
    const elsewhere = await post(alice, { text, collection: 'other-dupes' });
    expect(elsewhere.response.status).toBe(201);
    expect(elsewhere.data!.id).not.toBe(first.data!.id);
    const list = await alice.client.GET('/v1/knowledge/documents', { params: { query: { collection: 'dupes' } } });
    expect(list.data!.data).toHaveLength(1);
  });

  it("keeps users apart: another user's document is a 404 to read and delete, and absent from lists", async () => {
    const mine = await post(alice, { text: 'Private notes about the launch date.', collection: 'private' });
    const mallory = await server.signUp();
    const params = { params: { path: { documentId: mine.data!.id } } };
    expect((await mallory.client.GET('/v1/knowledge/documents/{documentId}', params)).response.status).toBe(404);
    expect((await mallory.client.DELETE('/v1/knowledge/documents/{documentId}', params)).response.status).toBe(404);
    expect((await alice.client.GET('/v1/knowledge/documents/{documentId}', params)).response.status).toBe(200);
    const theirs = await mallory.client.GET('/v1/knowledge/documents', {});
    expect(theirs.data!.data).toEqual([]);
    const collections = await mallory.client.GET('/v1/knowledge/collections', {});
    expect(collections.data!.data).toEqual([]);
    const search = await mallory.client.POST('/v1/knowledge/search', { body: { query: 'launch date', collections: ['private'] } });
    expect(search.response.status).toBe(404);
  });

  it('uploads Markdown, HTML and PDF files and makes their text searchable', async () => {
    const markdown = await upload(alice, '# Kite flying\n\nKites need steady wind of about 15 km/h.', 'text/markdown', 'kites.md', {
      collection: 'files',
      metadata: '{"kind":"guide"}',
    });
    expect(markdown.status).toBe(201);
    expect(markdown.body).toMatchObject({ content_type: 'text/markdown', title: 'Kite flying', source: 'kites.md', metadata: { kind: 'guide' }, status: 'ready' });

    const html = await upload(
      alice,
      '<html><head><title>Greenhouse manual</title><script>var hidden = "zucchini";</script></head><body><h1>Greenhouse</h1><h2>Ventilation</h2><p>Open the roof vents when it passes 25&deg;C.</p></body></html>',
      'text/html',
      'greenhouse.html',
      { collection: 'files', source: 'https://example.com/greenhouse' },
    );
    expect(html.status).toBe(201);
    expect(html.body).toMatchObject({ content_type: 'text/html', title: 'Greenhouse manual', source: 'https://example.com/greenhouse' });

    const pdf = await upload(alice, await makePdf([['Harbour rules'], ['Anchoring is forbidden inside the breakwater.']], 'Harbour rules'), 'application/pdf', 'harbour.pdf', {
      collection: 'files',
    });
    expect(pdf.status).toBe(201);
    expect(pdf.body).toMatchObject({ content_type: 'application/pdf', title: 'Harbour rules', status: 'ready' });

    const find = async (query: string) =>
      (await alice.client.POST('/v1/knowledge/search', { body: { query, collections: ['files'], mode: 'keyword', top_k: 1 } })).data!.results[0];
    expect((await find('steady wind for kites'))!.document_id).toBe(markdown.body.id);
    const vent = await find('when to open the roof vents');
    expect(vent!.document_id).toBe(html.body.id);
    // The heading path travels with the chunk; the script never made it into the text.
    expect(vent!.text).toBe('Greenhouse › Ventilation\n\nOpen the roof vents when it passes 25°C.');
    expect(await find('zucchini')).toBeUndefined();
    expect((await find('anchoring breakwater'))!.document_id).toBe(pdf.body.id);
  });

  it('refuses bad input: empty text, no words, unsupported types, oversize documents, bad metadata', async () => {
    const empty = await post(alice, { text: '' });
    expect(empty.response.status).toBe(400);
    expect(empty.error!.error.code).toBe('validation_error');

    const blank = await post(alice, { text: ' \n\n\t ' });
    expect(blank.response.status).toBe(400);
    expect(blank.error!.error).toMatchObject({ code: 'invalid_request', message: 'The document has no text.' });

    const image = await upload(alice, Buffer.from([0x89, 0x50, 0x4e, 0x47]), 'image/png', 'photo.png');
    expect(image.status).toBe(415);
    expect(image.body.error).toMatchObject({ code: 'unsupported_media_type' });

    const notJson = await fetch(`${server.url}/v1/knowledge/documents`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${alice.apiKey}`, 'Content-Type': 'text/plain' },
      body: 'hello',
    });
    expect(notJson.status).toBe(415);

    const bigFile = await upload(alice, 'x '.repeat(9000), 'text/plain', 'big.txt');
    expect(bigFile.status).toBe(413);
    expect(bigFile.body.error).toMatchObject({ code: 'payload_too_large' });

    const bigText = await post(alice, { text: 'y '.repeat(9000) });
    expect(bigText.response.status).toBe(413);
    expect(bigText.error!.error.code).toBe('payload_too_large');

    const badMetadata = await upload(alice, 'fine text', 'text/plain', 'a.txt', { metadata: '{"nested":{"no":1}}' });
    expect(badMetadata.status).toBe(400);
    expect(badMetadata.body.error).toMatchObject({ code: 'validation_error', details: [{ path: '/body/metadata' }] });

    const postForm = (fields: Record<string, string>) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.set(name, value);
      return fetch(`${server.url}/v1/knowledge/documents`, { method: 'POST', headers: { Authorization: `Bearer ${alice.apiKey}` }, body: form });
    };
    expect((await postForm({ collection: 'no-file' })).status).toBe(400);
    const stringAsFile = await postForm({ file: 'just a string, not a file' });
    expect(stringAsFile.status).toBe(400);
    expect((await stringAsFile.json()).error.details).toEqual([{ path: '/body/file', message: 'must be a file' }]);

    const unknownModel = await post(alice, { text: 'words', collection: 'new-one', embedding_model: 'no-such-model' });
    expect(unknownModel.response.status).toBe(400);
    expect(unknownModel.error!.error.details).toEqual([{ path: '/body/embedding_model', message: 'not an embedding model' }]);

    const unknownCollection = await alice.client.POST('/v1/knowledge/search', { body: { query: 'words', collection: 'never-made' } });
    expect(unknownCollection.response.status).toBe(404);
  });

  it('records each collection\'s embedding model and dimension, and refuses a different model for it with 409', async () => {
    const user = await server.signUp();
    expect((await post(user, { text: 'Default model text about owls.', collection: 'birds' })).response.status).toBe(201);
    const clash = await post(user, { text: 'More text about owls at night.', collection: 'birds', embedding_model: 'second-embedding' });
    expect(clash.response.status).toBe(409);
    expect(clash.error!.error.message).toContain('The collection birds embeds with local-embedding (256 dimensions)');
    const same = await post(user, { text: 'Owls again, same model named.', collection: 'birds', embedding_model: 'local-embedding' });
    expect(same.response.status).toBe(201);

    const second = await post(user, { text: 'Text about owl pellets and bones.', collection: 'pellets', embedding_model: 'second-embedding' });
    expect(second.response.status).toBe(201);
    expect(second.data!.embedding_model).toBe('second-embedding');
    const eight = await post(user, { text: 'Owls on the upstream model.', collection: 'upstream-owls', embedding_model: 'flaky-embedding' });
    expect(eight.response.status).toBe(201);

    const collections = await user.client.GET('/v1/knowledge/collections', {});
    expect(collections.data!.data.map(({ name, embedding_model, dimensions, document_count }) => ({ name, embedding_model, dimensions, document_count }))).toEqual([
      { name: 'birds', embedding_model: 'local-embedding', dimensions: 256, document_count: 2 },
      // second-embedding does not state its dimension; one embedding measured it.
      { name: 'pellets', embedding_model: 'second-embedding', dimensions: 256, document_count: 1 },
      { name: 'upstream-owls', embedding_model: 'flaky-embedding', dimensions: 8, document_count: 1 },
    ]);
    const paged = await user.client.GET('/v1/knowledge/collections', { params: { query: { limit: 2 } } });
    expect(paged.data).toMatchObject({ has_more: true, next_cursor: 'pellets' });

    // One search over collections of three models and two dimensions embeds the query once per model.
    const found = await user.client.POST('/v1/knowledge/search', { body: { query: 'owl', top_k: 10 } });
    expect(found.response.status).toBe(200);
    expect(new Set(found.data!.results.map((r) => r.collection))).toEqual(new Set(['birds', 'pellets', 'upstream-owls']));
  });

  it('processes large documents in the background, embedding in batches', async () => {
    const user = await server.signUp();
    const text = longMarkdown(8, 'beekeeping');
    expect(Buffer.byteLength(text)).toBeGreaterThan(2048);
    const accepted = await post(user, { text, title: 'Beekeeping handbook' });
    expect(accepted.response.status).toBe(202);
    expect(accepted.data).toMatchObject({ status: 'processing', chunk_count: 0 });

    await server.services.knowledge.processPending();
    const ready = await user.client.GET('/v1/knowledge/documents/{documentId}', { params: { path: { documentId: accepted.data!.id } } });
    expect(ready.data).toMatchObject({ status: 'ready', error: null });
    const chunks = ready.data!.chunk_count;
    expect(chunks).toBeGreaterThan(8);
    expect(await chunkCount(accepted.data!.id)).toBe(chunks);
    const calls = (await server.services.usage.byModel(user.userId, new Date(0)))[0]?.requests ?? 0;
    expect(calls).toBe(vectors ? Math.ceil(chunks / 4) : 0);

    const search = await user.client.POST('/v1/knowledge/search', { body: { query: 'beekeeping part 7', top_k: 3 } });
    expect(search.data!.results[0]!.text).toContain('beekeeping part 7');
  });

  it('marks a document failed with the reason when embedding fails, and retries it when posted again', async () => {
    const user = await server.signUp();
    upstream.failing = true;
    const callsBefore = upstream.calls;
    try {
      const inline = await post(user, { text: 'Short text on a failing model.', collection: 'flaky', embedding_model: 'flaky-embedding' });
      const big = await post(user, { text: longMarkdown(8, 'failing'), collection: 'flaky' });
      await server.services.knowledge.processPending();
      const list = await user.client.GET('/v1/knowledge/documents', {});
      if (!vectors) {
        // Without pgvector there is nothing to embed: keyword search needs no model.
        expect(inline.response.status).toBe(201);
        expect(list.data!.data.map((d) => d.status)).toEqual(['ready', 'ready']);
        expect(upstream.calls).toBe(callsBefore);
        return;
      }
      expect(inline.response.status).toBe(502);
      expect(inline.error!.error.message).toMatch(/The model flaky-embedding failed \(status 500\)\. The document doc_\w+ is stored as failed/);
      expect(big.response.status).toBe(202);
      expect(list.data!.data.map((d) => [d.status, d.error, d.chunk_count])).toEqual([
        ['failed', 'The model flaky-embedding failed (status 500).', 0],
        ['failed', 'The model flaky-embedding failed (status 500).', 0],
      ]);
      expect(await chunkCount(big.data!.id)).toBe(0);

      upstream.failing = false;
      const retried = await post(user, { text: 'Short text on a failing model.', collection: 'flaky' });
      expect(retried.response.status).toBe(201);
      expect(retried.data!.status).toBe('ready');
      const ids = (await user.client.GET('/v1/knowledge/documents', {})).data!.data.map((d) => d.id);
      expect(ids).toContain(retried.data!.id);
      expect(ids).toHaveLength(2);
    } finally {
      upstream.failing = false;
    }
  });

  it("never mixes models: vectors from a fallback model are refused, not stored", async () => {
    const user = await server.signUp();
    upstream.failing = true;
    try {
      const result = await post(user, { text: 'Guarded text.', collection: 'guarded', embedding_model: 'guarded-embedding' });
      if (!vectors) {
        expect(result.response.status).toBe(201);
        return;
      }
      expect(result.response.status).toBe(502);
      const [doc] = (await user.client.GET('/v1/knowledge/documents', {})).data!.data;
      expect(doc!.status).toBe('failed');
      expect(doc!.error).toContain('guarded-embedding failed and its fallback local-embedding answered');
      expect(await chunkCount(doc!.id)).toBe(0);
    } finally {
      upstream.failing = false;
    }
  });
});
