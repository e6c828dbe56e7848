// The embedded default: PostgreSQL compiled to WebAssembly, in-process, with pgvector.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import path from 'node:path';
import { PGlite, types } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import type { Db, Queryable, SqlValue } from './db.ts';
import { lockWithoutGenerators } from './pglite-locks.ts';
import { preparedQueries, type PreparedQueries } from './pglite-statements.ts';

export interface PgliteOptions {
  /** A directory for the data; omitted, the database lives in memory (tests). */
  dataDir?: string;
  /** A `dumpDataDir` tarball to start from (tests start from a migrated template). */
  loadDataDir?: Blob;
  /**
   * Shared buffers in megabytes, or `auto` (the default): the minimum, raised at start-up to hold the
   * tables a data directory searches by vector, with their indexes (up to AUTO_SHARED_BUFFERS_MAX_MB).
   */
  sharedBuffers?: number | 'auto';
}

/**
 * PostgreSQL's default of 128 MB of shared buffers lives in PGlite's WebAssembly memory for good: at 16 MB
 * an idle PGlite takes about 120 MB less resident memory (371 → 249 MB, measured alone).
 */
export const MIN_SHARED_BUFFERS_MB = 16;
/**
 * What `auto` gives at most: 1 GB, or a quarter of the machine's memory (PostgreSQL's own rule of thumb)
 * where that is less. An HNSW search reads pages all over its index, and every page missing from the
 * buffers is read through Emscripten's file system, a JavaScript call per 8 kB page.
 */
export const AUTO_SHARED_BUFFERS_MAX_MB = Math.min(1024, Math.floor(totalmem() / 4 / 2 ** 20));

/**
 * The minimum plus, for the tables searched by vector (those with an HNSW index: knowledge chunks), their
 * size with all their indexes and a quarter more for growth, in megabytes. A hybrid search reads the HNSW
 * index, then the rows its keyword half matches (whose full-text vectors it ranks) from all over the table.
 */
async function buffersForSearch(pg: PGlite): Promise<number> {
  const { rows } = await pg.query<{ bytes: number }>(
    `SELECT coalesce(sum(pg_total_relation_size(t.indrelid)), 0)::float8 AS bytes
     FROM (SELECT DISTINCT i.indrelid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'hnsw') t`,
  );
  const wanted = MIN_SHARED_BUFFERS_MB + Math.ceil((1.25 * (rows[0]?.bytes ?? 0)) / 2 ** 20);
  return Math.min(AUTO_SHARED_BUFFERS_MAX_MB, wanted);
}

const parsers = {
  [types.INT8]: (value: string) => Number(value),
  [types.NUMERIC]: (value: string) => Number(value),
};

function wrap(pg: Pick<PGlite, 'query' | 'exec'>, prepared: PreparedQueries, inTransaction: boolean): Queryable {
  return {
    query<T>(sql: string, params: readonly SqlValue[] = []) {
      return prepared.query<T>(sql, params, pg, inTransaction);
    },
    async exec(sql) {
      await pg.exec(sql);
    },
  };
}

export interface PgliteDb extends Db {
  /** A tarball of the database's files, to start other in-memory databases from (test templates). */
  dump(): Promise<Blob>;
  /** The shared buffers it was started with. */
  sharedBuffersMb: number;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * When a process started, in clock ticks since boot (Linux: field 22 of /proc/<pid>/stat), or undefined
 * where that cannot be read. With the pid it names one process: a pid alone may have been reused.
 */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses; the fields after its last ')' do not.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * PGlite is one process's database: a second process on the same directory would corrupt it. A lock
 * file keeps a second server (or `npm run create-key`) out while one runs. It names the holder by pid
 * and start time, so that a lock left by a killed server is told apart from a live one even when the
 * pid now belongs to another process (after a reboot, or in a container where every start is pid 1).
 */
function lockDataDir(dataDir: string): () => void {
  const lockFile = path.join(dataDir, 'open-agent-api.lock');
  const ours = processStartTime(process.pid);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, ours ? `${process.pid} ${ours}` : String(process.pid), { flag: 'wx' });
      return () => rmSync(lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const [pidText, started] = readFileSync(lockFile, 'utf8').trim().split(/\s+/);
      const holder = Number(pidText);
      const live = holder && holder !== process.pid && isAlive(holder);
      // Where start times can be read, a live pid with another start time is a different process.
      const same = live && (started === undefined || processStartTime(holder) === undefined || processStartTime(holder) === started);
      if (same) {
        throw new Error(
          `The data directory ${dataDir} is in use by process ${holder}; stop it first (PGlite serves one process). ` +
            `If no server runs on it, the lock is stale: delete ${lockFile}.`,
          { cause: error },
        );
      }
      rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`Could not lock the data directory ${dataDir}.`);
}

export async function openPglite(options: PgliteOptions = {}): Promise<PgliteDb> {
  lockWithoutGenerators();
  let unlock = () => {};
  if (options.dataDir) {
    mkdirSync(options.dataDir, { recursive: true });
    unlock = lockDataDir(options.dataDir);
  }
  const start = async (sharedBuffersMb: number) => {
    const started = new PGlite({
      ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
      extensions: { vector },
      parsers,
      postgresqlconf: [`shared_buffers=${sharedBuffersMb}MB`],
    });
    await started.waitReady;
    return started;
  };
  const requested = options.sharedBuffers ?? 'auto';
  let sharedBuffersMb = requested === 'auto' ? MIN_SHARED_BUFFERS_MB : requested;
  let pg: PGlite | undefined;
  try {
    pg = await start(sharedBuffersMb);
    // Shared buffers are set when PostgreSQL starts: a data directory whose tables want more is reopened,
    // when they want enough more to be worth a second start of PGlite.
    const wanted = requested === 'auto' && options.dataDir ? await buffersForSearch(pg) : sharedBuffersMb;
    if (wanted >= sharedBuffersMb + MIN_SHARED_BUFFERS_MB / 2) {
      await pg.close();
      sharedBuffersMb = wanted;
      pg = await start(sharedBuffersMb);
    }
  } catch (error) {
    if (pg && !pg.closed) await pg.close().catch(() => undefined);
    unlock();
    throw error;
  }
  const prepared = preparedQueries(pg);
  const queryable = wrap(pg, prepared, false);
  // One session: an advisory lock would be re-entrant, so a JavaScript queue stands in for it.
  let lockChain: Promise<unknown> = Promise.resolve();
  const db: PgliteDb = {
    engine: 'pglite',
    hasVector: true,
    sharedBuffersMb,
    ...queryable,
    async transaction(fn) {
      return pg.transaction((tx) => fn(wrap(tx, prepared, true)));
    },
    withAdvisoryLock(_key, fn) {
      const run = lockChain.then(() => fn(db));
      lockChain = run.catch(() => undefined);
      return run;
    },
    // In-process: the one session both notifies and hears, so nothing can be lost to a reconnect.
    async listen(channel, handler) {
      const unlisten = await pg.listen(channel, handler);
      return async () => {
        if (!pg.closed) await unlisten();
      };
    },
    native: { engine: 'pglite', pglite: pg },
    async close() {
      if (!pg.closed) await pg.close();
      unlock();
    },
    async dump() {
      return pg.dumpDataDir('none');
    },
  };
  return db;
}
