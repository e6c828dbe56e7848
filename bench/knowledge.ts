// Knowledge on PGlite: ingestion throughput through the service (chunking, the local embedder, inserts
// with the HNSW and GIN indexes in place), what storing a chunk costs PGlite part by part, search latency
// per mode at growing corpus sizes, and recall@10 of the HNSW index against an exact scan of the same
// query, and ingestion again into the corpus of each size. It runs on a data directory, as the server
// does, reopened after each bulk load as a restarted server would open it. Prints a table and writes JSON
// to bench/results/; asserts nothing. The HNSW settings and PGLITE_SHARED_BUFFERS come from the
// environment, as the server's do.
//
//   npm run bench -- knowledge
//   npm run bench:knowledge -- --sizes 10000,100000 --queries 200 --documents 100
//   KNOWLEDGE_HNSW_M=32 KNOWLEDGE_HNSW_EF_CONSTRUCTION=128 npm run bench -- knowledge
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../server/config.ts';
import { findOrCreateUser } from '../server/identity/users.ts';
import { createKnowledge, type Knowledge, type SearchMode } from '../server/knowledge/service.ts';
import { keywordSearch, vectorSearch } from '../server/knowledge/search.ts';
import { insertChunks, vectorLiteral } from '../server/knowledge/store.ts';
import { createVectorIndex, vectorIndexName } from '../server/knowledge/vector-indexes.ts';
import { embedText } from '../server/models/local.ts';
import { createModelGateway } from '../server/models/providers.ts';
import type { Db } from '../server/store/db.ts';
import { createJobs } from '../server/jobs/jobs.ts';
import { newId } from '../server/store/ids.ts';
import { openPglite, type PgliteDb } from '../server/store/pglite.ts';
import { prepareDatabase } from '../server/testing/database.ts';
import { table } from './gateway.ts';
import { createUsageMeter } from '../server/usage/meter.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,100000' },
    queries: { type: 'string', default: '200' },
    documents: { type: 'string', default: '150' },
  },
});
const sizes = values.sizes.split(',').map(Number).sort((a, b) => a - b);
const queryCount = Number(values.queries);
const documentCount = Number(values.documents);

const DIMENSIONS = 256;
const COLLECTION = 'bench';

// Deterministic text with the shape of a real corpus: made-up words drawn with a Zipf distribution (as
// words are in real text, so keyword search meets both common and rare terms), and passages about topics,
// each topic with its own words, so that embeddings cluster as real ones do. Uniformly random text would
// have no near neighbours at all, which no real corpus is like.
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const syllables = 'ka lo mi ne ru sa ti vo pe da gu fi ho ja be zo wa ce ly xu'.split(' ');
const vocabulary = syllables.flatMap((a) => syllables.flatMap((b) => syllables.map((c) => a + b + c)));
const cumulative: number[] = [];
vocabulary.reduce((sum, _, rank) => {
  const next = sum + 1 / (rank + 1) ** 1.07;
  cumulative.push(next);
  return next;
}, 0);
const rng = random(42);
function word(): string {
  const target = rng() * cumulative[cumulative.length - 1]!;
  let low = 0;
  let high = cumulative.length - 1;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (cumulative[mid]! < target) low = mid + 1;
    else high = mid;
  }
  return vocabulary[low]!;
}
const TOPICS = 1000;
const topics = Array.from({ length: TOPICS }, () => Array.from({ length: 30 }, () => vocabulary[Math.floor(rng() * vocabulary.length)]!));
const topicWord = (topic: number) => topics[topic]![Math.floor(rng() * 30)]!;
const sentence = (topic: number) => `${Array.from({ length: 10 }, () => (rng() < 0.6 ? topicWord(topic) : word())).join(' ')}.`;
const passage = (topic = Math.floor(rng() * TOPICS)) => Array.from({ length: 6 }, () => sentence(topic)).join(' ');
const question = () => {
  const topic = Math.floor(rng() * TOPICS);
  return `${topicWord(topic)} ${topicWord(topic)} ${topicWord(topic)}`;
};

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const logger = pino({ level: 'silent' });
const fromEnvironment = ['KNOWLEDGE_HNSW_M', 'KNOWLEDGE_HNSW_EF_CONSTRUCTION', 'KNOWLEDGE_HNSW_EF_SEARCH', 'PGLITE_SHARED_BUFFERS'] as const;
const config = loadConfig({
  ...Object.fromEntries(fromEnvironment.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : []))),
  LOG_LEVEL: 'silent',
  KNOWLEDGE_INLINE_MAX_BYTES: String(10 * 1024 * 1024),
});
const { hnswM, hnswEfConstruction } = config.knowledge;
const models = await createModelGateway(config.models, { logger, clock: Date.now });

interface Opened {
  db: PgliteDb;
  knowledge: Knowledge;
  userId: string;
  close(): Promise<void>;
}

/** The database in `dataDir` as the server opens it (shared buffers as PGLITE_SHARED_BUFFERS says), migrated. */
async function open(dataDir: string): Promise<Opened> {
  const db = await openPglite({ dataDir, sharedBuffers: config.pgliteSharedBuffers });
  await prepareDatabase(db);
  const usage = createUsageMeter(db, Date.now);
  const jobs = createJobs({ db, logger, instanceId: 'bench' });
  await jobs.start();
  const knowledge = await createKnowledge({ db, models, usage, logger, clock: Date.now, config: config.knowledge, jobs });
  // As the server does at start-up: the ingest job is registered before any document is added.
  await knowledge.start();
  const { user } = await findOrCreateUser(db, 'bench@example.com');
  return {
    db,
    knowledge,
    userId: user.id,
    async close() {
      await knowledge.close();
      await jobs.stop();
      await db.close();
    },
  };
}

async function inDataDir<T>(work: (dataDir: string) => Promise<T>): Promise<T> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-bench-knowledge-'));
  try {
    return await work(dataDir);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const markdownDocuments = (count: number) =>
  Array.from({ length: count }, (_, d) =>
    Array.from({ length: 8 }, (_, s) => `## Section ${d}.${s}\n\n${passage()}\n\n${passage()}\n\n${passage()}`).join('\n\n'),
  );

/** Adds the documents one after another through the service, as POST /v1/knowledge/documents does inline. */
async function addDocuments(knowledge: Knowledge, userId: string, documents: string[]) {
  let chunks = 0;
  const ids: string[] = [];
  const start = performance.now();
  for (const text of documents) {
    const added = await knowledge.addDocument(userId, { text, contentType: 'text/markdown', collection: COLLECTION }, { apiKeyId: null });
    chunks += added.document.chunk_count;
    ids.push(added.document.id);
  }
  const seconds = (performance.now() - start) / 1000;
  return { ids, chunks, seconds, chunksPerSecond: chunks / seconds };
}

// 1. Ingestion through the service into a new collection.
async function ingestion() {
  return inDataDir(async (dataDir) => {
    const { knowledge, userId, close } = await open(dataDir);
    const documents = markdownDocuments(documentCount);
    // The collection and its HNSW index exist before the clock starts.
    await knowledge.addDocument(userId, { text: 'warm-up', contentType: 'text/markdown', collection: COLLECTION }, { apiKeyId: null });
    const { chunks, seconds } = await addDocuments(knowledge, userId, documents);
    // The local embedder alone, to tell its share from the database's.
    const texts = documents.slice(0, 10).flatMap((text) => text.split('\n\n'));
    const embedStart = performance.now();
    for (const text of texts) embedText(text);
    const embedPerSecond = texts.length / ((performance.now() - embedStart) / 1000);
    await close();
    return { documents: documentCount, chunks, seconds, chunksPerSecond: chunks / seconds, localEmbedderTextsPerSecond: embedPerSecond };
  });
}

// 1b. What storing a chunk costs PGlite, part by part: the service's own insert of chunk rows (in statements of
// the embedding batch size, embeddings made beforehand), on a data directory whose chunks table has been
// stripped to the parts named, each added back in turn: the row with its text, its embedding, the full-text
// vector PostgreSQL generates from the text, the full-text index with the term counts its triggers keep, and
// the HNSW index, which is the table as served. Each step warms up on as many chunks as it measures, so that
// PGlite's WebAssembly has been compiled by its optimizing tier. The last step's rate is what any ingestion
// into this table can reach, however little the rest of the service costs.
const FLOOR_CHUNKS = 2000;
const FLOOR_STEPS = [
  { part: 'the row: ids, position and text', embedding: false, fullText: 'none', hnsw: false },
  { part: '+ its embedding', embedding: true, fullText: 'none', hnsw: false },
  { part: '+ its full-text vector (generated from the text)', embedding: true, fullText: 'vector', hnsw: false },
  { part: '+ the full-text index and the term counts', embedding: true, fullText: 'indexed', hnsw: false },
  { part: '+ the HNSW index (the table as served)', embedding: true, fullText: 'indexed', hnsw: true },
] as const;

async function storageFloor() {
  const texts = Array.from({ length: 2 * FLOOR_CHUNKS }, () => passage());
  const embeddings = texts.map((text) => embedText(text, DIMENSIONS));
  const batch = config.knowledge.embedBatchSize;
  const steps = [];
  for (const step of FLOOR_STEPS) {
    steps.push(
      await inDataDir(async (dataDir) => {
        const { db, userId, close } = await open(dataDir);
        if (step.fullText !== 'indexed') {
          await db.exec('DROP TRIGGER knowledge_terms_added ON knowledge_chunks; DROP TRIGGER knowledge_terms_removed ON knowledge_chunks');
          await db.exec('DROP INDEX knowledge_chunks_tsv_idx');
        }
        if (step.fullText === 'none') await db.exec('ALTER TABLE knowledge_chunks DROP COLUMN tsv');
        if (step.hnsw) await db.exec(createVectorIndex(DIMENSIONS, config.knowledge));
        await db.query(`INSERT INTO knowledge_collections (user_id, name, embedding_model, dimensions) VALUES ($1, $2, 'local-embedding', $3)`, [
          userId,
          COLLECTION,
          DIMENSIONS,
        ]);
        const documentId = newId('doc');
        await db.query(
          `INSERT INTO knowledge_documents (id, user_id, collection, content_type, content, bytes, content_sha256, status, embedding_model)
           VALUES ($1, $2, $3, 'text/markdown', '', 0, $1, 'ready', 'local-embedding')`,
          [documentId, userId, COLLECTION],
        );
        const store = async (from: number, to: number) => {
          for (let first = from; first < to; first += batch) {
            const last = Math.min(to, first + batch);
            await insertChunks(db, {
              documentId,
              userId,
              collection: COLLECTION,
              dimensions: DIMENSIONS,
              ids: Array.from({ length: last - first }, () => newId('chk')),
              first,
              texts: texts.slice(first, last),
              embeddings: step.embedding ? embeddings.slice(first, last) : undefined,
            });
          }
        };
        await store(0, FLOOR_CHUNKS);
        const start = performance.now();
        await store(FLOOR_CHUNKS, 2 * FLOOR_CHUNKS);
        const msPerChunk = (performance.now() - start) / FLOOR_CHUNKS;
        await close();
        return { part: step.part, msPerChunk, chunksPerSecond: 1000 / msPerChunk };
      }),
    );
  }
  return { chunks: FLOOR_CHUNKS, statementRows: batch, steps };
}

// 2. Search at each size. The corpus is bulk-loaded (rows inserted without the HNSW index, which is then
// built once, as a bulk import would), because inserting 100k rows one index update at a time would
// measure the loader rather than search.
async function bulkLoad(db: Db, userId: string, from: number, to: number): Promise<void> {
  const perDocument = 100;
  for (let first = from; first < to; first += 1000) {
    const count = Math.min(1000, to - first);
    const texts = Array.from({ length: count }, () => passage());
    const documentIds = Array.from({ length: Math.ceil(count / perDocument) }, () => newId('doc'));
    await db.query(
      `INSERT INTO knowledge_documents (id, user_id, collection, content_type, content, bytes, content_sha256, status, chunk_count, embedding_model)
       SELECT id, $2, $3, 'text/markdown', '', 0, id, 'ready', $4, 'local-embedding' FROM unnest($1::text[]) AS t(id)`,
      [documentIds, userId, COLLECTION, perDocument],
    );
    await db.query(
      `INSERT INTO knowledge_chunks (id, document_id, user_id, collection, position, text, dimensions, embedding)
       SELECT t.id, t.document_id, $1, $2, t.position, t.text, ${DIMENSIONS}, t.embedding::vector
       FROM unnest($3::text[], $4::text[], $5::int[], $6::text[], $7::text[]) AS t(id, document_id, position, text, embedding)`,
      [
        userId,
        COLLECTION,
        texts.map(() => newId('chk')),
        texts.map((_, i) => documentIds[Math.floor(i / perDocument)]!),
        texts.map((_, i) => i % perDocument),
        texts,
        texts.map((text) => vectorLiteral(embedText(text, DIMENSIONS))),
      ],
    );
  }
}

async function latencies(knowledge: Knowledge, userId: string, queries: string[], mode: SearchMode) {
  for (const query of queries.slice(0, 20)) await knowledge.search(userId, { query, mode, top_k: 10 }, { apiKeyId: null });
  const times: number[] = [];
  for (const query of queries) {
    const start = performance.now();
    await knowledge.search(userId, { query, mode, top_k: 10 }, { apiKeyId: null });
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

const EF_SWEEP = [40, 100, 200, 400, 800];

/**
 * Recall@10 of the HNSW index: its top 10 (the service's query, at each ef_search) against the exact top
 * 10 of the same query with index scans off, which makes PostgreSQL compute every distance.
 */
async function recallAt10(db: Db, userId: string, queries: string[]) {
  const scope = { userId, collections: [COLLECTION], filter: undefined };
  const vectors = queries.map((query) => embedText(query, DIMENSIONS));
  const exactStart = performance.now();
  const truths: Set<string>[] = [];
  for (const vector of vectors) {
    const exact = await db.transaction(async (tx) => {
      await tx.query("SELECT set_config('enable_indexscan', 'off', true), set_config('enable_bitmapscan', 'off', true)");
      return vectorSearch(tx, scope, DIMENSIONS, vector, 10);
    });
    truths.push(new Set(exact.map((r) => r.id)));
  }
  const exactMs = (performance.now() - exactStart) / queries.length;
  const byEf: Record<number, { recall: number; msPerQuery: number }> = {};
  for (const ef of EF_SWEEP) {
    let found = 0;
    const start = performance.now();
    for (const [i, vector] of vectors.entries()) {
      const approximate = await db.transaction(async (tx) => {
        await tx.query("SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'strict_order', true)", [String(ef)]);
        return vectorSearch(tx, scope, DIMENSIONS, vector, 10);
      });
      found += approximate.filter((r) => truths[i]!.has(r.id)).length;
    }
    byEf[ef] = { recall: found / (queries.length * 10), msPerQuery: (performance.now() - start) / queries.length };
  }
  return { exactMsPerQuery: exactMs, byEf };
}

/**
 * Keyword search as the service runs it (common words left out) against the same search keeping every
 * word, side by side: the latency of each, and how many of the top 10 they share.
 */
async function commonWords(db: Db, userId: string, queries: string[]) {
  const scope = { userId, collections: [COLLECTION], filter: undefined };
  const timed = async (keepCommon: boolean) => {
    const times: number[] = [];
    const tops: string[][] = [];
    for (const query of queries) {
      const start = performance.now();
      tops.push((await keywordSearch(db, scope, query, 10, { keepCommon })).map((r) => r.id));
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    return { p50: percentile(times, 50), p99: percentile(times, 99), tops };
  };
  await timed(true);
  const left = await timed(false);
  const kept = await timed(true);
  const shared = left.tops.reduce((sum, top, i) => sum + top.filter((id) => kept.tops[i]!.includes(id)).length, 0);
  const total = kept.tops.reduce((sum, top) => sum + top.length, 0);
  return { left: { p50: left.p50, p99: left.p99 }, kept: { p50: kept.p50, p99: kept.p99 }, top10Shared: total ? shared / total : 1 };
}

async function planOf(db: Db, userId: string): Promise<string> {
  const rows = await db.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN SELECT c.id FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
     WHERE c.user_id = $1 AND c.collection = ANY($2::text[]) AND d.status = 'ready' AND c.dimensions = ${DIMENSIONS} AND c.embedding IS NOT NULL
     ORDER BY c.embedding::vector(${DIMENSIONS}) <=> $3::vector(${DIMENSIONS}) LIMIT 10`,
    [userId, [COLLECTION], vectorLiteral(embedText('kalomi nerusa', DIMENSIONS))],
  );
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}

async function search() {
  return inDataDir(async (dataDir) => {
    let opened = await open(dataDir);
    // Makes the collection and its HNSW index; dropped during each bulk load and rebuilt after.
    await opened.knowledge.addDocument(opened.userId, { text: 'warm-up', contentType: 'text/markdown', collection: COLLECTION }, { apiKeyId: null });
    const indexName = vectorIndexName(DIMENSIONS);
    const results = [];
    let loaded = 1;
    for (const size of sizes) {
      const { db, userId } = opened;
      await db.exec(`DROP INDEX IF EXISTS ${indexName}`);
      const loadStart = performance.now();
      await bulkLoad(db, userId, loaded, size);
      const loadSeconds = (performance.now() - loadStart) / 1000;
      loaded = size;
      const indexStart = performance.now();
      await db.exec(`SET maintenance_work_mem = '1GB'`);
      await db.exec(createVectorIndex(DIMENSIONS, config.knowledge));
      await db.exec('RESET maintenance_work_mem; ANALYZE');
      const indexSeconds = (performance.now() - indexStart) / 1000;
      // Measured after a restart, as a server would find this corpus (shared buffers sized at start-up).
      await opened.close();
      opened = await open(dataDir);
      const { knowledge } = opened;
      const queries = Array.from({ length: queryCount }, question);
      const modes = {} as Record<SearchMode, { p50: number; p99: number }>;
      for (const mode of ['vector', 'keyword', 'hybrid'] as const) modes[mode] = await latencies(knowledge, userId, queries, mode);
      const recall = await recallAt10(opened.db, userId, queries.slice(0, Math.min(queryCount, 100)));
      const keywords = await commonWords(opened.db, userId, queries);
      const plan = await planOf(opened.db, userId);
      // Ingestion into the corpus of this size, whose index is as large as it gets here; then taken out again.
      const ingestAtSize = await addDocuments(knowledge, userId, markdownDocuments(Math.max(10, Math.round(documentCount / 4))));
      for (const id of ingestAtSize.ids) await knowledge.deleteDocument(userId, id);
      results.push({
        chunks: size,
        sharedBuffersMb: opened.db.sharedBuffersMb,
        bulkLoadSeconds: loadSeconds,
        indexBuildSeconds: indexSeconds,
        latencyMs: modes,
        recallAt10: recall.byEf[config.knowledge.hnswEfSearch]?.recall ?? null,
        recallByEfSearch: recall.byEf,
        exactScanMsPerQuery: recall.exactMsPerQuery,
        keywordCommonWords: keywords,
        ingestionChunksPerSecond: ingestAtSize.chunksPerSecond,
        usesHnswIndex: plan.includes(indexName),
        plan,
      });
      console.error(`  ${size} chunks measured`);
    }
    await opened.close();
    return results;
  });
}

console.error('knowledge: ingesting…');
const ingest = await ingestion();
console.error('knowledge: storing chunks part by part…');
const floor = await storageFloor();
console.error('knowledge: searching…');
const searches = await search();

const ms = (value: number) => value.toFixed(1);
console.log(`HNSW built with m = ${hnswM}, ef_construction = ${hnswEfConstruction}; searched with ef_search ${config.knowledge.hnswEfSearch}`);
console.log(
  `Ingestion (PGlite, local embedder, HNSW + GIN maintained): ${ingest.chunks} chunks from ${ingest.documents} documents in ` +
    `${ingest.seconds.toFixed(1)} s = ${ingest.chunksPerSecond.toFixed(0)} chunks/s ` +
    `(the local embedder alone: ${ingest.localEmbedderTextsPerSecond.toFixed(0)} texts/s)`,
);
console.log(
  `\nWhat storing a chunk costs PGlite, part by part (${floor.chunks} chunks in statements of ${floor.statementRows}, into an HNSW index of ${floor.chunks} to ${2 * floor.chunks}, after as many to warm up; embeddings made beforehand):`,
);
console.log(
  table(
    ['the chunks table with', 'ms per chunk', 'chunks/s at most', 'ms this part adds'],
    floor.steps.map((step, i) => [step.part, step.msPerChunk.toFixed(3), step.chunksPerSecond.toFixed(0), (step.msPerChunk - (floor.steps[i - 1]?.msPerChunk ?? 0)).toFixed(3)]),
  ),
);
const served = floor.steps.at(-1)!;
console.log(
  `target 5: ingestion >= 2,000 chunks/s: ${ingest.chunksPerSecond.toFixed(0)} chunks/s through the service, ${ingest.chunksPerSecond >= 2000 ? 'met' : 'NOT met'}; ` +
    `storing the chunks alone allows ${served.chunksPerSecond.toFixed(0)}/s, the row with its embedding alone ${floor.steps[1]!.chunksPerSecond.toFixed(0)}/s\n`,
);
console.table(
  searches.map((row) => ({
    chunks: row.chunks,
    'vector p50/p99 ms': `${ms(row.latencyMs.vector.p50)} / ${ms(row.latencyMs.vector.p99)}`,
    'keyword p50/p99 ms': `${ms(row.latencyMs.keyword.p50)} / ${ms(row.latencyMs.keyword.p99)}`,
    'hybrid p50/p99 ms': `${ms(row.latencyMs.hybrid.p50)} / ${ms(row.latencyMs.hybrid.p99)}`,
    [`recall@10 (ef ${config.knowledge.hnswEfSearch})`]: row.recallAt10?.toFixed(3),
    'HNSW used': row.usesHnswIndex,
    'shared buffers MB': row.sharedBuffersMb,
    'bulk load s': row.bulkLoadSeconds.toFixed(0),
    'index build s': row.indexBuildSeconds.toFixed(0),
    'ingestion at this size, chunks/s': row.ingestionChunksPerSecond.toFixed(0),
  })),
);
console.log('\nRecall@10 and time per raw vector query by hnsw.ef_search, against an exact scan:');
console.table(
  searches.map((row) => ({
    chunks: row.chunks,
    ...Object.fromEntries(Object.entries(row.recallByEfSearch).map(([ef, { recall, msPerQuery }]) => [`ef ${ef}`, `${recall.toFixed(3)} (${ms(msPerQuery)} ms)`])),
    'exact scan': `1.000 (${ms(row.exactScanMsPerQuery)} ms)`,
  })),
);
console.log('\nKeyword search leaving out words in over a tenth of the chunks (as served) / keeping every word, raw queries:');
console.table(
  searches.map((row) => ({
    chunks: row.chunks,
    'common words left out p50/p99 ms': `${ms(row.keywordCommonWords.left.p50)} / ${ms(row.keywordCommonWords.left.p99)}`,
    'every word kept p50/p99 ms': `${ms(row.keywordCommonWords.kept.p50)} / ${ms(row.keywordCommonWords.kept.p99)}`,
    'p99 ratio': (row.keywordCommonWords.left.p99 / row.keywordCommonWords.kept.p99).toFixed(2),
    'top 10 shared': row.keywordCommonWords.top10Shared.toFixed(3),
  })),
);
const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const file = `${resultsDir}knowledge-${new Date().toISOString().replaceAll(':', '-')}.json`;
writeFileSync(file, `${JSON.stringify({ engine: 'pglite', queries: queryCount, hnsw: { m: hnswM, efConstruction: hnswEfConstruction }, ingestion: ingest, storageFloor: floor, search: searches }, null, 2)}\n`);
console.log(`\nFigures written to ${file}`);
