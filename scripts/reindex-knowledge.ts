// Rebuilds the knowledge vector indexes not built with the configured KNOWLEDGE_HNSW_M and
// KNOWLEDGE_HNSW_EF_CONSTRUCTION (the server's start-up log names them). With --rewrite, first rewrites
// the chunks table, so that chunks stored before migration 0016 keep their embedding in their row.
//   npm run reindex-knowledge [-- --rewrite]
// It opens the same store the server uses (DATA_DIR or DATABASE_URL), so with the embedded PGlite run it
// while the server is stopped; on PostgreSQL, knowledge cannot be written while an index is rebuilt.
import { parseArgs } from 'node:util';
import { loadConfig } from '../server/config.ts';
import { buildOptions, chunksOutOfLine, rebuildVectorIndexes, rewriteChunkRows, vectorIndexes } from '../server/knowledge/vector-indexes.ts';
import { migrate } from '../server/store/migrate.ts';
import { openDatabase } from '../server/services.ts';

const { values } = parseArgs({ options: { rewrite: { type: 'boolean', default: false } } });
const config = loadConfig();
const db = await openDatabase(config);
try {
  await migrate(db);
  if (values.rewrite) {
    const before = await chunksOutOfLine(db);
    console.error(`Rewriting the knowledge chunks (${(before / 1e6).toFixed(1)} MB stored out of their rows)…`);
    const { seconds, resettled } = await rewriteChunkRows(db, config.knowledge);
    console.log(`knowledge_chunks: rewritten in ${seconds.toFixed(1)} s; ${((await chunksOutOfLine(db)) / 1e6).toFixed(1)} MB stay out of their rows.`);
    for (const name of resettled) console.log(`${name}: rebuilt with ${buildOptions(config.knowledge)} by the rewrite`);
  }
  if (!db.hasVector) {
    console.error('This database has no pgvector, so knowledge has no vector indexes.');
  } else {
    const before = await vectorIndexes(db);
    console.error(`Rebuilding the vector indexes not built with ${buildOptions(config.knowledge)} (of ${before.length} in all)…`);
    const rebuilt = await rebuildVectorIndexes(db, config.knowledge);
    for (const { name, seconds } of rebuilt) console.log(`${name}: rebuilt in ${seconds.toFixed(1)} s`);
    if (rebuilt.length === 0) console.log('Every vector index is built with the configured settings already.');
  }
} finally {
  await db.close();
}
