// The partial HNSW indexes of knowledge chunks, one per embedding dimension: how they were built, and
// rebuilding them with the configured settings (npm run reindex-knowledge); and rewriting the chunks'
// rows, which rebuilds every index of the table on the way.
import type { Db, Queryable } from '../store/db.ts';

export interface HnswSettings {
  hnswM: number;
  hnswEfConstruction: number;
}

export interface VectorIndex {
  name: string;
  dimensions: number;
  m: number;
  efConstruction: number;
}

/** pgvector's defaults, which an index made without options has. */
const PGVECTOR_DEFAULTS = { m: 16, efConstruction: 64 };

/** The WITH clause of an index built with these settings. */
export const buildOptions = (settings: HnswSettings) => `m = ${settings.hnswM}, ef_construction = ${settings.hnswEfConstruction}`;

/** The partial HNSW index of the chunks of `dimensions`, as vector search's cast finds it. */
export const vectorIndexName = (dimensions: number) => `knowledge_chunks_embedding_${dimensions}_idx`;

/** The statement that makes vectorIndexName(dimensions) with these settings, unless it exists. */
export const createVectorIndex = (dimensions: number, settings: HnswSettings) =>
  `CREATE INDEX IF NOT EXISTS ${vectorIndexName(dimensions)} ON knowledge_chunks
   USING hnsw ((embedding::vector(${dimensions})) vector_cosine_ops) WITH (${buildOptions(settings)}) WHERE dimensions = ${dimensions}`;

export async function vectorIndexes(db: Queryable): Promise<VectorIndex[]> {
  const rows = await db.query<{ name: string; options: string[] | null }>(
    `SELECT c.relname AS name, c.reloptions AS options FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid = 'knowledge_chunks'::regclass AND c.relname LIKE 'knowledge_chunks_embedding_%_idx' ORDER BY c.relname`,
  );
  return rows.map(({ name, options }) => {
    const built = Object.fromEntries((options ?? []).map((option) => option.split('=')));
    return {
      name,
      dimensions: Number(/_(\d+)_idx$/.exec(name)?.[1]),
      m: Number(built.m ?? PGVECTOR_DEFAULTS.m),
      efConstruction: Number(built.ef_construction ?? PGVECTOR_DEFAULTS.efConstruction),
    };
  });
}

export const builtAs = (index: VectorIndex, settings: HnswSettings) =>
  index.m === settings.hnswM && index.efConstruction === settings.hnswEfConstruction;

/**
 * Rebuilds every index not built with `settings`, one after another; knowledge cannot be written while
 * its index is rebuilt. Answers the indexes rebuilt, each with how long it took.
 */
export async function rebuildVectorIndexes(db: Db, settings: HnswSettings): Promise<{ name: string; seconds: number }[]> {
  const rebuilt = [];
  for (const index of await vectorIndexes(db)) {
    if (builtAs(index, settings)) continue;
    const start = performance.now();
    await db.transaction(async (tx) => {
      // Enough memory to build the graph in memory at 100k chunks of 256 dimensions; on disk it is far slower.
      await tx.query("SELECT set_config('maintenance_work_mem', '512MB', true)");
      await tx.exec(`ALTER INDEX ${index.name} SET (${buildOptions(settings)})`);
      await tx.exec(`REINDEX INDEX ${index.name}`);
    });
    rebuilt.push({ name: index.name, seconds: (performance.now() - start) / 1000 });
  }
  return rebuilt;
}

/** The bytes of the chunks' TOAST table: the values stored out of their rows. */
export async function chunksOutOfLine(db: Queryable): Promise<number> {
  const [row] = await db.query<{ bytes: number }>(
    "SELECT pg_relation_size(reltoastrelid)::int8 AS bytes FROM pg_class WHERE oid = 'knowledge_chunks'::regclass",
  );
  return row?.bytes ?? 0;
}

/**
 * Rewrites the chunks table (VACUUM FULL), so that chunks stored before migration 0016 keep their
 * embedding in their row as new ones do; every index of the table is rebuilt with it. A vector index not
 * built with `settings` takes them first, so that the rewrite builds it once, as configured, and
 * rebuildVectorIndexes has nothing left to do. Nothing can read or write knowledge meanwhile. Answers how
 * long it took and the vector indexes whose settings it changed.
 */
export async function rewriteChunkRows(db: Db, settings: HnswSettings): Promise<{ seconds: number; resettled: string[] }> {
  const start = performance.now();
  const resettled: string[] = [];
  // One connection for the setting and the rewrite; VACUUM cannot run in a transaction.
  await db.withAdvisoryLock('open-agent-api:rewrite-knowledge', async (conn) => {
    for (const index of db.hasVector ? await vectorIndexes(conn) : []) {
      if (builtAs(index, settings)) continue;
      // Only the catalog changes here; the rewrite below builds the index with these options.
      await conn.exec(`ALTER INDEX ${index.name} SET (${buildOptions(settings)})`);
      resettled.push(index.name);
    }
    await conn.exec("SET maintenance_work_mem = '512MB'");
    try {
      await conn.exec('VACUUM FULL knowledge_chunks');
    } finally {
      await conn.exec('RESET maintenance_work_mem');
    }
  });
  return { seconds: (performance.now() - start) / 1000, resettled };
}
