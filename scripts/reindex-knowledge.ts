// Rebuilds the knowledge vector indexes not built with the configured KNOWLEDGE_HNSW_M and
// KNOWLEDGE_HNSW_EF_CONSTRUCTION (the server's start-up log names them).
//   npm run reindex-knowledge
// It opens the same store the server uses (DATA_DIR or DATABASE_URL), so with the embedded PGlite run it
// while the server is stopped; on PostgreSQL, knowledge cannot be written while an index is rebuilt.
import { loadConfig } from '../server/config.ts';
import { buildOptions, rebuildVectorIndexes, vectorIndexes } from '../server/knowledge/vector-indexes.ts';
import { migrate } from '../server/store/migrate.ts';
import { openDatabase } from '../server/services.ts';

const config = loadConfig();
const db = await openDatabase(config);
try {
  await migrate(db);
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
