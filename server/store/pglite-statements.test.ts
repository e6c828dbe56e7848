// PGlite queries as prepared statements: the same rows, errors, transactions and notifications as
// PGlite's own query(), for statements prepared once and run many times, for statements a migration
// changed under them, and past the number kept prepared.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite, type PgliteDb } from './pglite.ts';

describe('PGlite prepared statements', () => {
  let db: PgliteDb;

  beforeAll(async () => {
    db = await openPglite();
    await db.exec(`CREATE TABLE things (id text PRIMARY KEY, n int8, price numeric, tags text[], doc jsonb, at timestamptz, ok boolean, raw bytea)`);
  });
  afterAll(() => db.close());

  it('writes and reads every kind of value the server uses, the first time and the times after', async () => {
    const at = new Date('2026-11-27T12:00:00.000Z');
    for (const id of ['a', 'b', 'c']) {
      await db.query('INSERT INTO things (id, n, price, tags, doc, at, ok, raw) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
        id,
        9_007_199_254_740_991,
        '12.5',
        ['x', 'y, z', 'q"uote'],
        { nested: { list: [1, 'two'] }, text: `it's ${id}` },
        at,
        id !== 'b',
        new Uint8Array([0, 1, 255]),
      ]);
    }
    const rows = await db.query<Record<string, unknown>>('SELECT * FROM things WHERE id = ANY($1::text[]) ORDER BY id', [['a', 'b']]);
    expect(rows).toEqual([
      { id: 'a', n: 9_007_199_254_740_991, price: 12.5, tags: ['x', 'y, z', 'q"uote'], doc: { nested: { list: [1, 'two'] }, text: "it's a" }, at, ok: true, raw: new Uint8Array([0, 1, 255]) },
      { id: 'b', n: 9_007_199_254_740_991, price: 12.5, tags: ['x', 'y, z', 'q"uote'], doc: { nested: { list: [1, 'two'] }, text: "it's b" }, at, ok: false, raw: new Uint8Array([0, 1, 255]) },
    ]);
    expect(await db.query('SELECT id FROM things WHERE n = $1 AND doc->>$2 IS NULL ORDER BY id', [9_007_199_254_740_991, 'missing'])).toEqual([{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
    expect(await db.query('SELECT count(*) AS n FROM unnest($1::text[], $2::int[]) AS u(a, b)', [['p', 'q'], [1, null]])).toEqual([{ n: 2 }]);
  });

  it('answers a statement that returns nothing with no rows, and null parameters as null', async () => {
    expect(await db.query('UPDATE things SET price = $2 WHERE id = $1', ['c', null])).toEqual([]);
    expect(await db.query('SELECT price FROM things WHERE id = $1', ['c'])).toEqual([{ price: null }]);
  });

  it('throws PostgreSQL errors with their code, and goes on working after one', async () => {
    const sql = 'INSERT INTO things (id) VALUES ($1)';
    await db.query(sql, ['dup']);
    await expect(db.query(sql, ['dup'])).rejects.toMatchObject({ code: '23505' });
    await expect(db.query('SELECT nope FROM things')).rejects.toMatchObject({ code: '42703' });
    await db.query(sql, ['dup2']);
    expect(await db.query('SELECT count(*) AS n FROM things WHERE id LIKE $1', ['dup%'])).toEqual([{ n: 2 }]);
  });

  it('runs a transaction on its own: what it writes is seen inside, kept on commit, dropped on rollback', async () => {
    let outsideSawIt: unknown;
    await db.transaction(async (tx) => {
      await tx.query('INSERT INTO things (id) VALUES ($1)', ['tx-kept']);
      expect(await tx.query('SELECT id FROM things WHERE id = $1', ['tx-kept'])).toEqual([{ id: 'tx-kept' }]);
      // A statement outside waits for the transaction to end, so it sees the committed row.
      outsideSawIt = db.query('SELECT id FROM things WHERE id = $1', ['tx-kept']);
    });
    expect(await outsideSawIt).toEqual([{ id: 'tx-kept' }]);
    await expect(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO things (id) VALUES ($1)', ['tx-dropped']);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await db.query('SELECT id FROM things WHERE id = $1', ['tx-dropped'])).toEqual([]);
  });

  it('prepares a statement again when a migration changed the table it reads', async () => {
    const sql = 'SELECT * FROM things WHERE id = $1';
    expect(Object.keys((await db.query<Record<string, unknown>>(sql, ['a']))[0]!)).not.toContain('extra');
    await db.exec("ALTER TABLE things ADD COLUMN extra text NOT NULL DEFAULT 'new'");
    expect((await db.query<Record<string, unknown>>(sql, ['a']))[0]).toMatchObject({ id: 'a', extra: 'new' });
    expect((await db.query<Record<string, unknown>>(sql, ['a']))[0]).toMatchObject({ id: 'a', extra: 'new' });
  });

  it('still answers statements past the number kept prepared', async () => {
    for (let i = 0; i < 450; i++) {
      expect(await db.query(`SELECT $1::int + ${i} AS n`, [1])).toEqual([{ n: i + 1 }]);
    }
  });

  it('delivers notifications sent by a prepared statement', async () => {
    const heard: string[] = [];
    const unlisten = await db.listen('pglite_statements_test', (payload) => heard.push(payload));
    await db.query("SELECT pg_notify('pglite_statements_test', $1)", ['one']);
    await db.query("SELECT pg_notify('pglite_statements_test', $1)", ['two']);
    await expect.poll(() => heard).toEqual(['one', 'two']);
    await unlisten();
  });
});
