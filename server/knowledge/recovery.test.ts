// Documents left `processing` by a crash, a restart or a shutdown are finished later, by this instance or
// another, and never by two at once: whoever processes a document (the request that added it, or its
// job) holds it through a lease renewed per batch.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../store/ids.ts';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer, type TestUser } from '../testing/harness.ts';
import { createKnowledge } from './service.ts';
import { insertDocument } from './store.ts';
import { unlimitedPlanEnv } from '../testing/plans.ts';
import { modelsFileFor, startUpstream, type Upstream } from './testdata/upstream.ts';

describe.each(await availableEngines())('knowledge recovery on %s', (engine) => {
  let server: TestServer;
  let user: TestUser;
  let upstream: Upstream;

  beforeAll(async () => {
    upstream = await startUpstream();
    server = await startTestServer({ engine, env: { ...unlimitedPlanEnv(), MODELS_FILE: modelsFileFor(upstream) } });
    user = await server.signUp();
    for (const [collection, model] of [['notes', 'local-embedding'], ['remote', 'flaky-embedding']]) {
      const made = await user.client.POST('/v1/knowledge/documents', { body: { text: `Makes ${collection}.`, collection, embedding_model: model } });
      expect(made.response.status).toBe(201);
    }
    // The server's own worker stands aside (stops taking ingestion jobs), so that each test decides which instance does the work.
    await server.services.knowledge.close();
  });
  afterAll(async () => {
    await server?.close();
    await upstream?.close();
  });

  const instance = (clock: () => number) =>
    createKnowledge({
      db: server.services.db,
      models: server.services.models,
      usage: server.services.usage,
      logger: server.services.logger,
      clock,
      config: server.services.config.knowledge,
      jobs: server.services.jobs,
    });

  /** Starts an instance as a restart does, lets it finish what is pending, then checks it and closes it. */
  async function restart(check: (restarted: Awaited<ReturnType<typeof instance>>) => Promise<void>): Promise<void> {
    const restarted = await instance(Date.now);
    try {
      await restarted.start();
      await restarted.processPending();
      await check(restarted);
    } finally {
      await restarted.close();
    }
  }

  /** A document as a worker leaves it mid-way: processing, one stray chunk stored, its lease as given. */
  async function leftProcessing(text: string, leaseUntil: Date | null, collection = 'notes'): Promise<string> {
    const id = newId('doc');
    await insertDocument(server.services.db, {
      id,
      userId: user.userId,
      collection,
      title: null,
      source: null,
      contentType: 'text/markdown',
      content: text,
      bytes: Buffer.byteLength(text),
      sha256: createHash('sha256').update(text).digest('hex'),
      metadata: {},
      embeddingModel: 'local-embedding',
      apiKeyId: null,
      leaseUntil,
      now: new Date(),
    });
    await server.services.db.query(
      `INSERT INTO knowledge_chunks (id, document_id, user_id, collection, position, text, dimensions) VALUES ($1, $2, $3, $4, 0, 'stray', 256)`,
      [newId('chk'), id, user.userId, collection],
    );
    return id;
  }

  const stateOf = async (id: string) => {
    const { data } = await user.client.GET('/v1/knowledge/documents/{documentId}', { params: { path: { documentId: id } } });
    const chunks = await server.services.db.query<{ text: string }>('SELECT text FROM knowledge_chunks WHERE document_id = $1 ORDER BY position', [id]);
    return { status: data!.status, chunk_count: data!.chunk_count, texts: chunks.map((c) => c.text) };
  };

  it('takes over a document whose worker died once its lease lapses, and not before', async () => {
    let now = Date.now();
    const id = await leftProcessing('# Crash\n\nThe worker died while embedding this.', new Date(now + 60_000));
    const peer = await instance(() => now);
    try {
      await peer.processPending();
      expect(await stateOf(id)).toEqual({ status: 'processing', chunk_count: 0, texts: ['stray'] });
      now += 3 * 60_000;
      await peer.processPending();
      expect(await stateOf(id)).toEqual({ status: 'ready', chunk_count: 1, texts: ['Crash\n\nThe worker died while embedding this.'] });
    } finally {
      await peer.close();
    }
  });

  it('picks up at start-up a document a shutdown left without a lease', async () => {
    const id = await leftProcessing('# Shutdown\n\nThe server stopped before this was embedded.', null);
    await restart(async () => expect(await stateOf(id)).toMatchObject({ status: 'ready', chunk_count: 1 }));
  });

  it.runIf(engine === 'pglite')('on PGlite, which one process owns, picks up at start-up even a document still under lease', async () => {
    const id = await leftProcessing('# Restart\n\nThe process was killed mid-request.', new Date(Date.now() + 60_000));
    await restart(async () => expect(await stateOf(id)).toMatchObject({ status: 'ready', chunk_count: 1 }));
  });

  // Only where documents are embedded (pgvector): elsewhere there is no model call to interrupt.
  it.runIf(engine === 'pglite')('stops at shutdown in the middle of an embedding call and leaves the document to the next start', async () => {
    upstream.hanging = true;
    const id = await leftProcessing('# Remote\n\nEmbedded upstream, slowly.', null, 'remote');
    const stopping = await instance(Date.now);
    const embedding = upstream.nextRequest();
    await stopping.start();
    await embedding;
    await stopping.close();
    const [row] = await server.services.db.query<{ status: string; lease_until: Date | null }>('SELECT status, lease_until FROM knowledge_documents WHERE id = $1', [id]);
    expect(row).toEqual({ status: 'processing', lease_until: null });

    upstream.release();
    await restart(async () => expect(await stateOf(id)).toMatchObject({ status: 'ready', chunk_count: 1 }));
  });

  it('makes searchable what it recovered', async () => {
    const id = await leftProcessing('# Lighthouse\n\nThe keeper trims the wick at dusk.', null);
    await restart(async (restarted) => {
      const found = await restarted.search(user.userId, { query: 'keeper trims the wick', mode: 'keyword', top_k: 1 }, { apiKeyId: null });
      expect(found.results.map((r) => r.document_id)).toEqual([id]);
    });
  });
});
