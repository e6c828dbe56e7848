// Queries on PGlite as prepared statements, one trip into WebAssembly each.
//
// PGlite's own query() crosses into WebAssembly six times per call (parse, describe, bind, describe,
// execute, sync) and parses and plans the SQL every time: about 430 µs for a primary-key look-up on this
// machine. The server sends a few dozen distinct statements over and over, so each is parsed once as a
// named prepared statement (its parameter types read then), and every later call is one message buffer
// (bind, describe, execute, sync) handed over in one call: about 100 µs for the same look-up
// (`npm run bench -- runs` shows what it does to a run's events).
//
// The statements take PGlite's own locks, so they queue with its query(), exec() and transactions as
// those do with each other.
import { parse, protocol, type PGlite } from '@electric-sql/pglite';
import type { SqlValue } from './db.ts';

/** Distinct statements kept prepared; SQL beyond them (built on the fly) takes PGlite's query(). */
const STATEMENT_LIMIT = 400;

/** A prepared statement no longer usable as prepared: dropped, or its result's shape changed (a migration). */
const STALE_STATEMENT = new Set(['26000', '0A000']);

const { serialize } = protocol;

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

interface Statement {
  name: string;
  /** The type of each parameter, which decides how a value is written. */
  parameterTypes: number[];
}

/** Where a statement goes when it is not prepared: PGlite itself, or the transaction the caller is in. */
export type Fallback = Pick<PGlite, 'query'>;

export interface PreparedQueries {
  /**
   * Runs `sql` with `params`. `fallback` runs what is not prepared; it is a transaction's own object when
   * the caller is in one (PGlite's transaction lock is then held already).
   */
  query<T>(sql: string, params: readonly SqlValue[], fallback: Fallback, inTransaction: boolean): Promise<T[]>;
}

const UNPREPARED = Symbol('unprepared');

export function preparedQueries(pg: PGlite): PreparedQueries {
  const statements = new Map<string, Statement>();
  let named = 0;

  async function prepare(sql: string): Promise<Statement | undefined> {
    const known = statements.get(sql);
    if (known || statements.size >= STATEMENT_LIMIT) return known;
    named += 1;
    const name = `oaa_${named}`;
    const { messages } = await pg.execProtocol(concat([serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync()]), { syncToFs: false });
    const statement = { name, parameterTypes: parse.parseDescribeStatementResults(messages) };
    statements.set(sql, statement);
    return statement;
  }

  function values(statement: Statement, params: readonly SqlValue[]): (string | null)[] {
    return params.map((value, index) => {
      if (value === null || value === undefined) return null;
      const write = pg.serializers[statement.parameterTypes[index]!];
      return write ? (write(value) as string) : String(value);
    });
  }

  /** Runs a prepared statement, or answers UNPREPARED for the caller to run it otherwise, outside the locks. */
  async function run<T>(sql: string, params: readonly SqlValue[], inTransaction: boolean): Promise<T[] | typeof UNPREPARED> {
    const statement = await prepare(sql);
    if (!statement) return UNPREPARED;
    try {
      const { messages } = await pg.execProtocol(
        concat([serialize.bind({ statement: statement.name, values: values(statement, params) }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
        { syncToFs: !inTransaction },
      );
      return (parse.parseResults(messages, pg.parsers)[0]?.rows ?? []) as T[];
    } catch (error) {
      if (!STALE_STATEMENT.has((error as { code?: string }).code ?? '')) throw error;
      // Prepared before a migration changed what it reads: prepared again at its next use.
      statements.delete(sql);
      await pg.execProtocol(concat([serialize.close({ type: 'S', name: statement.name }), serialize.sync()]), { syncToFs: false, throwOnError: false });
      return UNPREPARED;
    }
  }

  return {
    async query<T>(sql: string, params: readonly SqlValue[], fallback: Fallback, inTransaction: boolean): Promise<T[]> {
      const exclusive = () => pg._runExclusiveQuery(() => run<T>(sql, params, inTransaction));
      // Outside a transaction a statement waits for any transaction to end, as PGlite's query() does.
      const rows = await (inTransaction ? exclusive() : pg._runExclusiveTransaction(exclusive));
      if (rows !== UNPREPARED) return rows;
      return (await fallback.query<T>(sql, params as unknown[])).rows;
    },
  };
}
