// PostgreSQL through node-postgres, for running several stateless API servers on one database.
import pg from 'pg';
import { ApiError } from '../errors.ts';
import type { Db, Queryable, SqlValue } from './db.ts';
import { createListener, type Listener } from './listener.ts';

// int8 (counts, sums) and numeric as numbers, as PGlite gives them; our values stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value: string) => Number(value));

const LOST_CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', '53300', '57P01', '57P02', '57P03']);

/**
 * Whether an error says the database is away (terminated, restarting, refusing connections, out of
 * connection slots) rather than that a statement was wrong: SQLSTATE class 08, the shutdown codes of
 * class 57, or node-postgres's own words for a connection that dropped.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (LOST_CONNECTION_CODES.has(code) || code.startsWith('08'))) return true;
  return /Connection terminated|not queryable|timeout exceeded when trying to connect|not currently accepting connections|the database system is (starting up|shutting down)/i.test(error.message);
}

/** The 503 for a database that is away; the cause stays in the log, not in the answer. */
function unavailable(error: unknown): unknown {
  return isDatabaseUnavailable(error) ? new ApiError('service_unavailable', 'The database is unavailable; retry shortly.', { cause: error }) : error;
}

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query<T>(sql: string, params: readonly SqlValue[] = []) {
      try {
        const result = await client.query(sql, params as unknown[]);
        return result.rows as T[];
      } catch (error) {
        throw unavailable(error);
      }
    },
    async exec(sql) {
      try {
        await client.query(sql);
      } catch (error) {
        throw unavailable(error);
      }
    },
  };
}

/** A client out of the pool. While it is out, the pool does not listen to it: a connection lost then
 * would be an unhandled 'error' event and end the process. The statement in flight fails by itself. */
async function checkOut(pool: pg.Pool): Promise<{ client: pg.PoolClient; release: (error?: unknown) => void }> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw unavailable(error);
  }
  let lost = false;
  const onError = () => {
    lost = true;
  };
  client.on('error', onError);
  return {
    client,
    release(error) {
      client.off('error', onError);
      // A client whose connection is gone, or that failed mid-transaction, is discarded, not reused.
      client.release(lost || (error !== undefined && isDatabaseUnavailable(error instanceof ApiError ? error.cause : error)) ? true : undefined);
    },
  };
}

function connectionDb(client: pg.PoolClient, parent: Db): Db {
  const queryable = wrap(client);
  return {
    engine: 'postgres',
    hasVector: parent.hasVector,
    native: parent.native,
    listen: (channel, handler, onReconnect) => parent.listen(channel, handler, onReconnect),
    ...queryable,
    async transaction(fn) {
      await client.query('BEGIN');
      try {
        const result = await fn(queryable);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    },
    withAdvisoryLock() {
      throw new Error('advisory locks do not nest');
    },
    async close() {},
  };
}

export interface PostgresOptions {
  max?: number;
  /** Told about errors of the listening connection, which it survives by reconnecting. */
  onListenerError?: (error: unknown) => void;
}

export async function openPostgres(connectionString: string, options: PostgresOptions = {}): Promise<Db> {
  const pool = new pg.Pool({ connectionString, max: options.max ?? 10 });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it. Queries report their own errors.
  });
  const queryable = wrap(pool);
  const [row] = await queryable.query<{ available: boolean }>(
    "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available",
  );
  const hasVector = row?.available === true;
  // Opened at the first LISTEN: a process that never listens (a script) holds no extra connection.
  let listener: Listener | undefined;
  const db: Db = {
    engine: 'postgres',
    hasVector,
    native: { engine: 'postgres', connectionString },
    ...queryable,
    async transaction(fn) {
      const { client, release } = await checkOut(pool);
      const tx = wrap(client);
      let failure: unknown;
      try {
        await tx.exec('BEGIN');
        const result = await fn(tx);
        await tx.exec('COMMIT');
        return result;
      } catch (error) {
        failure = error;
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        release(failure);
      }
    },
    async withAdvisoryLock(key, fn) {
      const { client, release } = await checkOut(pool);
      const locked = wrap(client);
      let failure: unknown;
      try {
        await locked.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
        try {
          return await fn(connectionDb(client, db));
        } finally {
          await locked.query('SELECT pg_advisory_unlock(hashtext($1))', [key]);
        }
      } catch (error) {
        failure = error;
        throw error;
      } finally {
        release(failure);
      }
    },
    listen(channel, handler, onReconnect) {
      listener ??= createListener(connectionString, options.onListenerError);
      return listener.listen(channel, handler, onReconnect);
    },
    async close() {
      await listener?.close();
      await pool.end();
    },
  };
  return db;
}
