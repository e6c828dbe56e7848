// Versioned, forward-only SQL migrations, applied at start-up under an advisory lock so that servers
// starting together on one PostgreSQL database do not both migrate.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.ts';

const migrationsDir = fileURLToPath(new URL('./migrations/', import.meta.url));

export interface Migration {
  version: string;
  sql: string;
}

export function listMigrations(dir = migrationsDir): Migration[] {
  return readdirSync(dir)
    .filter((name) => /^\d{4}_[a-z0-9_]+\.sql$/.test(name))
    .sort()
    .map((name) => ({ version: name.replace(/\.sql$/, ''), sql: readFileSync(dir + name, 'utf8') }));
}

/** Applies the migrations not applied yet, each in its own transaction. Returns the versions applied. */
export async function migrate(db: Db, migrations = listMigrations()): Promise<string[]> {
  return db.withAdvisoryLock('open-agent-api:migrate', async (conn) => {
    await conn.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const done = new Set((await conn.query<{ version: string }>('SELECT version FROM schema_migrations')).map((r) => r.version));
    const applied: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await conn.transaction(async (tx) => {
        await tx.exec(migration.sql);
        await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [migration.version]);
      });
      applied.push(migration.version);
    }
    return applied;
  });
}
