// How HNSW indexes are built: KNOWLEDGE_HNSW_M and KNOWLEDGE_HNSW_EF_CONSTRUCTION reach the index a new
// dimension gets, are refused at start-up outside pgvector's bounds, an index built otherwise is named in
// the start-up log, and a rebuild applies them. On PGlite, which always has pgvector.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.ts';
import { findOrCreateUser } from '../identity/users.ts';
import { createJobs } from '../jobs/jobs.ts';
import { createModelGateway } from '../models/providers.ts';
import type { Db } from '../store/db.ts';
import { createPgliteDatabase } from '../testing/database.ts';
import { createUsageMeter } from '../usage/meter.ts';
import { createKnowledge } from './service.ts';
import { rebuildVectorIndexes, vectorIndexes } from './vector-indexes.ts';

describe('HNSW build settings', () => {
  it('default to pgvector’s own and are checked against its bounds', () => {
    expect(loadConfig({}).knowledge).toMatchObject({ hnswM: 16, hnswEfConstruction: 64 });
    expect(loadConfig({ KNOWLEDGE_HNSW_M: '32', KNOWLEDGE_HNSW_EF_CONSTRUCTION: '128' }).knowledge).toMatchObject({ hnswM: 32, hnswEfConstruction: 128 });
    expect(() => loadConfig({ KNOWLEDGE_HNSW_M: '1' })).toThrow(ConfigError);
    expect(() => loadConfig({ KNOWLEDGE_HNSW_M: '101' })).toThrow(ConfigError);
    expect(() => loadConfig({ KNOWLEDGE_HNSW_M: '32', KNOWLEDGE_HNSW_EF_CONSTRUCTION: '40' })).toThrow(/at least twice KNOWLEDGE_HNSW_M \(64\)/);
  });

  describe('on PGlite', () => {
    let db: Db;
    let jobs: ReturnType<typeof createJobs>;
    let userId: string;
    const lines: { msg: string; index?: string; m?: number }[] = [];
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );

    async function knowledgeWith(env: Record<string, string>) {
      const config = loadConfig({ LOG_LEVEL: 'silent', ...env });
      const models = await createModelGateway(config.models, { logger, clock: Date.now });
      return createKnowledge({ db, models, usage: createUsageMeter(db, Date.now), logger, clock: Date.now, config: config.knowledge, jobs });
    }

    beforeAll(async () => {
      db = await createPgliteDatabase();
      jobs = createJobs({ db, logger, instanceId: 'hnsw-settings' });
      await jobs.start();
      userId = (await findOrCreateUser(db, 'hnsw@example.com')).user.id;
    });
    afterAll(async () => {
      await jobs?.stop();
      await db?.close();
    });

    it('builds the index a new dimension gets with them, and names an index built otherwise at start-up', async () => {
      const knowledge = await knowledgeWith({ KNOWLEDGE_HNSW_M: '8', KNOWLEDGE_HNSW_EF_CONSTRUCTION: '20' });
      await knowledge.start();
      const text = 'Lighthouses guide ships along the rocky coast at night.';
      await knowledge.addDocument(userId, { text, contentType: 'text/plain', collection: 'coast' }, { apiKeyId: null });
      const [index] = await db.query<{ options: string[] }>(
        `SELECT reloptions AS options FROM pg_class WHERE relname = 'knowledge_chunks_embedding_256_idx'`,
      );
      expect(index?.options).toEqual(['m=8', 'ef_construction=20']);
      const found = await knowledge.search(userId, { query: 'lighthouse ships', mode: 'vector', top_k: 1 }, { apiKeyId: null });
      expect(found.results.map((result) => result.text)).toEqual([text]);
      expect(lines).toEqual([]);

      // A restart with other settings keeps the index and says how it was built.
      await knowledgeWith({});
      expect(lines).toMatchObject([{ index: 'knowledge_chunks_embedding_256_idx', m: 8 }]);
      expect(lines[0]!.msg).toMatch(/m = 8, ef_construction = 20; the configured m = 16, ef_construction = 64 apply once it is rebuilt: npm run reindex-knowledge/);
      lines.length = 0;
      await knowledgeWith({ KNOWLEDGE_HNSW_M: '8', KNOWLEDGE_HNSW_EF_CONSTRUCTION: '20' });
      expect(lines).toEqual([]);

      // Rebuilt with the defaults (what npm run reindex-knowledge does): the settings change, the data stays searchable.
      const defaults = loadConfig({}).knowledge;
      expect((await rebuildVectorIndexes(db, defaults)).map((index) => index.name)).toEqual(['knowledge_chunks_embedding_256_idx']);
      expect(await vectorIndexes(db)).toEqual([{ name: 'knowledge_chunks_embedding_256_idx', dimensions: 256, m: 16, efConstruction: 64 }]);
      expect(await rebuildVectorIndexes(db, defaults)).toEqual([]);
      const again = await knowledge.search(userId, { query: 'lighthouse ships', mode: 'vector', top_k: 1 }, { apiKeyId: null });
      expect(again.results.map((result) => result.text)).toEqual([text]);
      await knowledgeWith({});
      expect(lines).toEqual([]);
      await knowledge.close();
    });
  });
});
