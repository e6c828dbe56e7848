// PostgreSQL through node-postgres, for running several stateless API servers on one database.
import pg from 'pg';
import type { Db, Queryable, SqlValue } from './db.ts';
import { createListener, type Listener } from './listener.ts';

// int8 (counts, sums) and numeric as numbers, as PGlite gives them; our values stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value: string) => Number(value));

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query<T>(sql: string, params: readonly SqlValue[] = []) {
      const result = await client.query(sql, params as unknown[]);
      return result.rows as T[];
    },
    async exec(sql) {
      await client.query(sql);
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
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn(wrap(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    async withAdvisoryLock(key, fn) {
      const client = await pool.connect();
      try {
        await client.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
        try {
          return await fn(connectionDb(client, db));
        } finally {
          await client.query('SELECT pg_advisory_unlock(hashtext($1))', [key]);
        }
      } finally {
        client.release();
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
