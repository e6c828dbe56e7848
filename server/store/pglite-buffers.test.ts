// PGlite's shared buffers: the minimum for a data directory without sizeable vector search, raised at
// start-up to hold the tables it searches by vector, with their indexes (PGLITE_SHARED_BUFFERS=auto, the
// default), or as configured.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.ts';
import { MIN_SHARED_BUFFERS_MB, openPglite, type PgliteDb } from './pglite.ts';

async function sharedBuffers(db: PgliteDb): Promise<string | undefined> {
  const [row] = await db.query<{ shared_buffers: string }>('SHOW shared_buffers');
  return row?.shared_buffers;
}

describe('PGlite shared buffers', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oaa-buffers-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('are read from PGLITE_SHARED_BUFFERS: auto, or a size from 16 MB to 16 GB', () => {
    expect(loadConfig({}).pgliteSharedBuffers).toBe('auto');
    expect(loadConfig({ PGLITE_SHARED_BUFFERS: '256MB' }).pgliteSharedBuffers).toBe(256);
    expect(loadConfig({ PGLITE_SHARED_BUFFERS: '2GB' }).pgliteSharedBuffers).toBe(2048);
    for (const bad of ['8MB', '32GB', 'lots', '256']) {
      expect(() => loadConfig({ PGLITE_SHARED_BUFFERS: bad })).toThrow(ConfigError);
    }
  });

  it('hold the tables searched by vector of the data directory they start on, or what is asked', { timeout: 60_000 }, async () => {
    const fresh = await openPglite({ dataDir });
    expect(fresh.sharedBuffersMb).toBe(MIN_SHARED_BUFFERS_MB);
    expect(await sharedBuffers(fresh)).toBe(`${MIN_SHARED_BUFFERS_MB}MB`);
    // About 11 MB of HNSW index: 1,300 vectors of 2,000 dimensions take a page each.
    await fresh.exec(`CREATE EXTENSION IF NOT EXISTS vector;
      CREATE TABLE v (id int PRIMARY KEY, e vector(2000));
      INSERT INTO v SELECT g, array_fill(g::real, ARRAY[2000])::vector(2000) FROM generate_series(1, 1300) g;
      CREATE INDEX v_e ON v USING hnsw (e vector_l2_ops) WITH (m = 2, ef_construction = 4);`);
    const [table] = await fresh.query<{ bytes: number }>(`SELECT pg_total_relation_size('v')::float8 AS bytes`);
    await fresh.close();

    const restarted = await openPglite({ dataDir });
    const expected = MIN_SHARED_BUFFERS_MB + Math.ceil((1.25 * table!.bytes) / 2 ** 20);
    expect(expected).toBeGreaterThan(MIN_SHARED_BUFFERS_MB + 8);
    expect(restarted.sharedBuffersMb).toBe(expected);
    expect(await sharedBuffers(restarted)).toBe(`${expected}MB`);
    // The data is all there after the second start.
    expect(await restarted.query('SELECT id FROM v ORDER BY e <-> $1 LIMIT 1', [`[${Array(2000).fill(7).join(',')}]`])).toEqual([{ id: 7 }]);
    await restarted.close();

    const configured = await openPglite({ dataDir, sharedBuffers: 64 });
    expect(configured.sharedBuffersMb).toBe(64);
    expect(await sharedBuffers(configured)).toBe('64MB');
    await configured.close();
  });
});
