// Fresh databases for tests: an in-memory PGlite started from a migrated template, or a new database on
// the local PostgreSQL. Each test file gets its own, so no state is shared between files.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Db } from '../store/db.ts';
import { listMigrations, migrate } from '../store/migrate.ts';
import { openPglite } from '../store/pglite.ts';
import { openPostgres } from '../store/postgres.ts';

export type Engine = 'pglite' | 'postgres';

export const postgresUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let postgresReachable: Promise<boolean> | undefined;

/** The engines to test on: PGlite always; PostgreSQL when it answers, and always on CI, where it must. */
export async function availableEngines(): Promise<Engine[]> {
  postgresReachable ??= (async () => {
    const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.end();
      return true;
    } catch {
      return false;
    }
  })();
  if (await postgresReachable) return ['pglite', 'postgres'];
  if (process.env.CI) throw new Error(`PostgreSQL at ${postgresUrl} is required on CI but does not answer.`);
  return ['pglite'];
}

function templatePath(): string {
  const hash = createHash('sha256');
  for (const migration of listMigrations()) hash.update(migration.version).update(migration.sql);
  return path.join(tmpdir(), `open-agent-api-pglite-${hash.digest('hex').slice(0, 16)}.tar`);
}

/** A migrated PGlite in memory. The first call per migration set builds a template; later ones load it. */
export async function createPgliteDatabase(): Promise<Db> {
  const template = templatePath();
  if (existsSync(template)) {
    return openPglite({ loadDataDir: new Blob([readFileSync(template)]) });
  }
  const db = await openPglite();
  await migrate(db);
  const dump = new Uint8Array(await (await db.dump()).arrayBuffer());
  const partial = `${template}.${process.pid}.tmp`;
  writeFileSync(partial, dump);
  renameSync(partial, template);
  return db;
}

export interface TestDatabase {
  db: Db;
  /** A connection string for child processes (PostgreSQL only). */
  url: string | undefined;
  drop(): Promise<void>;
}

export async function createTestDatabase(engine: Engine): Promise<TestDatabase> {
  if (engine === 'pglite') {
    const db = await createPgliteDatabase();
    return { db, url: undefined, drop: () => db.close() };
  }
  const name = `oaa_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  const db = await openPostgres(url.toString(), { max: 5 });
  await migrate(db);
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.close();
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}
