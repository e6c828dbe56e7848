import { afterAll, describe, expect, it } from 'vitest';
import { availableEngines, createTestDatabase, postgresUrl, type TestDatabase } from '../testing/database.ts';
import { newId } from './ids.ts';
import { listMigrations, migrate } from './migrate.ts';
import { openPostgres } from './postgres.ts';

describe('ids', () => {
  it('are prefixed, match the contract and sort by creation time', () => {
    const first = newId('agt', Date.parse('2026-01-01T00:00:00Z'));
    const later = newId('agt', Date.parse('2026-01-01T00:00:00.001Z'));
    expect(first).toMatch(/^agt_[0-9A-Z]{26}$/);
    expect(first < later).toBe(true);
    expect(new Set(Array.from({ length: 1000 }, () => newId('x'))).size).toBe(1000);
  });
});

describe.each(await availableEngines())('store on %s', (engine) => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    for (const database of databases) await database.drop();
  });

  it('has applied every migration, and applying again changes nothing', async () => {
    const database = await createTestDatabase(engine);
    databases.push(database);
    const applied = await database.db.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(applied.map((row) => row.version)).toEqual(listMigrations().map((m) => m.version));
    expect(await migrate(database.db)).toEqual([]);
  });

  it('returns int8 as numbers and rolls a failed transaction back', async () => {
    const database = await createTestDatabase(engine);
    databases.push(database);
    const [row] = await database.db.query<{ n: number }>('SELECT 9007199254740::int8 AS n');
    expect(row?.n).toBe(9007199254740);
    await expect(
      database.db.transaction(async (tx) => {
        await tx.query("INSERT INTO users (id, email) VALUES ('usr_01JD3V7R2N8Q4X6Y0Z1A2B3C4D', 'tx@example.com')");
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await database.db.query("SELECT id FROM users WHERE email = 'tx@example.com'")).toEqual([]);
  });
});

describe.runIf((await availableEngines()).includes('postgres'))('migrations on PostgreSQL', () => {
  it('are applied once when two servers start together', async () => {
    const database = await createTestDatabase('postgres');
    // A fresh, empty database: drop what createTestDatabase migrated, then race two migrators.
    await database.db.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
    const url = database.url ?? postgresUrl;
    const a = await openPostgres(url, { max: 2 });
    const b = await openPostgres(url, { max: 2 });
    try {
      const [first, second] = await Promise.all([migrate(a), migrate(b)]);
      const all = listMigrations().map((m) => m.version);
      expect([...first, ...second].sort()).toEqual(all);
      expect(first.length === 0 || second.length === 0).toBe(true);
      const rows = await a.query<{ version: string }>('SELECT version FROM schema_migrations');
      expect(rows.map((r) => r.version).sort()).toEqual(all);
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  });
});
