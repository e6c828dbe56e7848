// One small interface over PGlite (embedded) and PostgreSQL (node-postgres), so that repositories run
// the same SQL on both. Parameters are `$1, $2, …`; int8 and numeric come back as numbers on both.
import type { PGlite } from '@electric-sql/pglite';

export type SqlValue = string | number | boolean | null | Date | Buffer | Uint8Array | object;

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** Runs several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly engine: 'pglite' | 'postgres';
  /** Whether the pgvector extension is available (always on PGlite; on PostgreSQL when installed). */
  readonly hasVector: boolean;
  /** Runs `fn` in one transaction on one connection; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs `fn` while holding a session-level advisory lock, on one connection. */
  withAdvisoryLock<T>(key: string, fn: (conn: Db) => Promise<T>): Promise<T>;
  /**
   * LISTEN: calls `handler` with the payload of every notification on `channel` (sent by `pg_notify`,
   * delivered once the sending transaction commits). `onReconnect` runs when the listening connection
   * was lost and is back: notifications sent meanwhile are lost. Resolves, listening, to an unlisten.
   */
  listen(channel: string, handler: (payload: string) => void, onReconnect?: () => void): Promise<() => Promise<void>>;
  /** How a library that brings its own driver reaches this database (the job queue). */
  readonly native: { engine: 'pglite'; pglite: PGlite } | { engine: 'postgres'; connectionString: string };
  close(): Promise<void>;
}

export async function one<T>(db: Queryable, sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
  const rows = await db.query<T>(sql, params);
  return rows[0];
}

/**
 * The size of a PGlite instance's WebAssembly memory, in bytes. PGlite keeps its Emscripten module in a
 * field its types mark protected; the memory is read from it, and 0 is the answer when a release moves it.
 */
export function pgliteMemoryBytes(pglite: PGlite): number {
  const module = (pglite as unknown as { mod?: { wasmMemory?: WebAssembly.Memory } }).mod;
  return module?.wasmMemory?.buffer.byteLength ?? 0;
}
