// The embedded default: PostgreSQL compiled to WebAssembly, in-process, with pgvector.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PGlite, types } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import type { Db, Queryable, SqlValue } from './db.ts';
import { preparedQueries, type PreparedQueries } from './pglite-statements.ts';

export interface PgliteOptions {
  /** A directory for the data; omitted, the database lives in memory (tests). */
  dataDir?: string;
  /** A `dumpDataDir` tarball to start from (tests start from a migrated template). */
  loadDataDir?: Blob;
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
  let unlock = () => {};
  if (options.dataDir) {
    mkdirSync(options.dataDir, { recursive: true });
    unlock = lockDataDir(options.dataDir);
  }
  const pg = new PGlite({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    extensions: { vector },
    parsers,
    // PostgreSQL's default of 128 MB of shared buffers lives in PGlite's WebAssembly memory for good: at
    // 16 MB an idle PGlite takes about 120 MB less resident memory (371 → 249 MB, measured alone), and
    // the files it reads stay in the operating system's page cache anyway.
    postgresqlconf: ['shared_buffers=16MB'],
  });
  try {
    await pg.waitReady;
  } catch (error) {
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
