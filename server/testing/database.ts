// Fresh databases for tests: an in-memory PGlite started from a migrated template, or a new database on
// the local PostgreSQL. Each test file gets its own, so no state is shared between files.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { installJobs } from '../jobs/jobs.ts';
import { createLogger } from '../logger.ts';
import type { Db } from '../store/db.ts';
import { listMigrations, migrate } from '../store/migrate.ts';
import { openPglite } from '../store/pglite.ts';
import { openPostgres } from '../store/postgres.ts';

export type Engine = 'pglite' | 'postgres';

export const postgresUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Whether the PostgreSQL at `url` accepts a connection within two seconds. */
export async function postgresReachable(url = postgresUrl): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `work` with the URL of an empty database made for it on the server `url` names, dropped afterwards
 * (the benchmarks' PostgreSQL rounds, which start servers that migrate it themselves).
 */
export async function withScratchDatabase<T>(url: string, name: string, work: (databaseUrl: string) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  try {
    const scratch = new URL(url);
    scratch.pathname = `/${name}`;
    return await work(scratch.href);
  } finally {
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  }
}

let testPostgresReachable: Promise<boolean> | undefined;

/** The engines to test on: PGlite always; PostgreSQL when it answers, and always on CI, where it must. */
export async function availableEngines(): Promise<Engine[]> {
  testPostgresReachable ??= postgresReachable();
  if (await testPostgresReachable) return ['pglite', 'postgres'];
  if (process.env.CI) throw new Error(`PostgreSQL at ${postgresUrl} is required on CI but does not answer.`);
  return ['pglite'];
}

/** What a fresh database holds: our migrations and the job queue's schema, of this version. */
function schemaHash(): string {
  const hash = createHash('sha256');
  for (const migration of listMigrations()) hash.update(migration.version).update(migration.sql);
  hash.update(JSON.parse(readFileSync(createRequire(import.meta.url).resolve('pg-boss/package.json'), 'utf8')).version);
  return hash.digest('hex').slice(0, 16);
}

/** Migrations, then the job queue's tables, as a server's start would make them. */
export async function prepareDatabase(db: Db): Promise<void> {
  await migrate(db);
  await installJobs(db, createLogger('silent'));
}

/** A migrated PGlite in memory. The first call per schema builds a template; later ones load it. */
export async function createPgliteDatabase(): Promise<Db> {
  const template = path.join(tmpdir(), `open-agent-api-pglite-${schemaHash()}.tar`);
  if (existsSync(template)) {
    return openPglite({ loadDataDir: new Blob([readFileSync(template)]) });
  }
  const db = await openPglite();
  await prepareDatabase(db);
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
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${await postgresTemplate(admin)}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(name);
  const db = await openPostgres(url, { max: 5 });
  // Migrations newer than the template (none, unless one was added while a template was being made).
  await migrate(db);
  return {
    db,
    url,
    async drop() {
      await db.close();
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

function databaseUrl(name: string): string {
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A database migrated once per schema, that test databases are copied from (CREATE DATABASE … TEMPLATE
 * copies files, much faster than migrating). Made under an advisory lock, as test files run in parallel.
 */
async function postgresTemplate(admin: pg.Client): Promise<string> {
  const name = `oaa_template_${schemaHash()}`;
  await admin.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
  try {
    const [existing] = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rows;
    if (existing) return name;
    // Made under another name and renamed when complete, so that a run killed half-way leaves no template.
    const partial = `${name}_partial`;
    await admin.query(`DROP DATABASE IF EXISTS ${partial} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${partial}`);
    const db = await openPostgres(databaseUrl(partial), { max: 2 });
    try {
      await prepareDatabase(db);
    } finally {
      await db.close();
    }
    await admin.query(`ALTER DATABASE ${partial} RENAME TO ${name}`);
    return name;
  } finally {
    await admin.query('SELECT pg_advisory_unlock(hashtext($1))', [name]);
  }
}
