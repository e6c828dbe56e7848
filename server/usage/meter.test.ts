// The usage meter on both engines: group commit stores every record and its rollup, one bad record does not
// cost its batch, and the month's token total counts records still on their way.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOrCreateUser } from '../identity/users.ts';
import { availableEngines, createTestDatabase, type TestDatabase } from '../testing/database.ts';
import { createUsageMeter, monthOf } from './meter.ts';

const NOW = Date.UTC(2026, 10, 20, 12);

describe.each(await availableEngines())('usage meter on %s', (engine) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
  });
  afterAll(() => database?.drop());

  const record = (userId: string, promptTokens: number) => ({ userId, apiKeyId: null, model: 'local', kind: 'chat' as const, promptTokens, completionTokens: 1 });

  it('stores records that arrive together in order, with their monthly rollup', async () => {
    const { user } = await findOrCreateUser(database.db, `meter-batch-${engine}@example.com`);
    const meter = createUsageMeter(database.db, () => NOW, { batchWindowMs: 20 });
    await Promise.all(Array.from({ length: 40 }, (_, i) => meter.record(record(user.id, i), { defer: true })));
    const rows = await database.db.query<{ prompt_tokens: number }>('SELECT prompt_tokens FROM usage_records WHERE user_id = $1 ORDER BY id', [user.id]);
    expect(rows.map((row) => row.prompt_tokens)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    const [monthly] = await database.db.query('SELECT period, requests, tokens FROM usage_monthly WHERE user_id = $1', [user.id]);
    expect(monthly).toMatchObject({ requests: 40, tokens: (39 * 40) / 2 + 40 });
    expect((monthly!.period as Date).toISOString().slice(0, 10)).toBe(monthOf(NOW));
  });

  it('fails only the record that cannot be stored, not the others of its batch', async () => {
    const { user } = await findOrCreateUser(database.db, `meter-fail-${engine}@example.com`);
    const meter = createUsageMeter(database.db, () => NOW, { batchWindowMs: 20 });
    const results = await Promise.allSettled([meter.record(record(user.id, 5)), meter.record(record('usr_nobody', 6)), meter.record(record(user.id, 7))]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const rows = await database.db.query<{ prompt_tokens: number }>('SELECT prompt_tokens FROM usage_records WHERE user_id = $1 ORDER BY id', [user.id]);
    expect(rows.map((row) => row.prompt_tokens)).toEqual([5, 7]);
  });

  it('counts records on their way in the month’s tokens, and serves the total from memory for a while', async () => {
    const { user } = await findOrCreateUser(database.db, `meter-cache-${engine}@example.com`);
    const meter = createUsageMeter(database.db, () => NOW, { batchWindowMs: 120_000, monthlyCacheMs: 60_000 });
    void meter.record(record(user.id, 99), { defer: true });
    // Not stored yet, but already counted.
    expect(await database.db.query('SELECT 1 FROM usage_records WHERE user_id = $1', [user.id])).toEqual([]);
    expect(await meter.tokensThisMonth(user.id)).toBe(100);
    await meter.flush();
    expect(await meter.tokensThisMonth(user.id)).toBe(100);
    // Stored once, counted once, also by a meter that reads it all from the store.
    expect(await createUsageMeter(database.db, () => NOW).tokensThisMonth(user.id)).toBe(100);
    await meter.record(record(user.id, 9));
    expect(await meter.tokensThisMonth(user.id)).toBe(110);

    // Another instance's usage shows once the cached total expires; without a cache, at once.
    await database.db.query('UPDATE usage_monthly SET tokens = tokens + 1000 WHERE user_id = $1', [user.id]);
    expect(await meter.tokensThisMonth(user.id)).toBe(110);
    expect(await createUsageMeter(database.db, () => NOW).tokensThisMonth(user.id)).toBe(1110);
  });

  it('writes a record that is not deferred at once, whatever the batch window', async () => {
    const { user } = await findOrCreateUser(database.db, `meter-prompt-${engine}@example.com`);
    // Longer than the test may take: waiting for the window would fail it.
    const meter = createUsageMeter(database.db, () => NOW, { batchWindowMs: 120_000 });
    const deferred = meter.record(record(user.id, 1), { defer: true });
    await meter.record(record(user.id, 2));
    await deferred;
    expect(await database.db.query('SELECT 1 FROM usage_records WHERE user_id = $1', [user.id])).toHaveLength(2);
  });

  it('flushes what is waiting without waiting for the batch window', async () => {
    const { user } = await findOrCreateUser(database.db, `meter-flush-${engine}@example.com`);
    // Longer than the test may take: only an early write lets it pass.
    const meter = createUsageMeter(database.db, () => NOW, { batchWindowMs: 120_000 });
    void meter.record(record(user.id, 1), { defer: true });
    await meter.flush();
    expect(await database.db.query('SELECT 1 FROM usage_records WHERE user_id = $1', [user.id])).toHaveLength(1);
  });
});

describe('monthOf', () => {
  it('names the UTC month of a time, across month and year boundaries and back', () => {
    const times: [number, string][] = [
      [Date.UTC(2026, 0, 31, 23, 59, 59, 999), '2026-01-01'],
      [Date.UTC(2026, 1, 1), '2026-02-01'],
      [Date.UTC(2026, 0, 15), '2026-01-01'],
      [Date.UTC(2026, 11, 31, 23, 59, 59, 999), '2026-12-01'],
      [Date.UTC(2027, 0, 1), '2027-01-01'],
      [Date.UTC(2026, 1, 28, 12), '2026-02-01'],
      [Date.UTC(2026, 1, 1) - 1, '2026-01-01'],
    ];
    expect(times.map(([time]) => monthOf(time))).toEqual(times.map(([, month]) => month));
  });
});
