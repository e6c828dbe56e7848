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

  it('stores the calls of one write as a row per user, API key, model and kind, with their monthly rollup', async () => {
    const { user } = await findOrCreateUser(database.db, `meter-batch-${engine}@example.com`);
    const { user: other } = await findOrCreateUser(database.db, `meter-batch-other-${engine}@example.com`);
    const meter = createUsageMeter(database.db, () => NOW, { batchWindowMs: 20 });
    await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => meter.record(record(user.id, i), { defer: true })),
      meter.record({ ...record(user.id, 100), model: 'other-model' }, { defer: true }),
      meter.record({ ...record(user.id, 200), kind: 'completion' }, { defer: true }),
      meter.record(record(other.id, 300), { defer: true }),
    ]);
    const rows = await database.db.query('SELECT model, kind, requests, prompt_tokens, completion_tokens, total_tokens FROM usage_records WHERE user_id = $1 ORDER BY id', [user.id]);
    expect(rows).toEqual([
      { model: 'local', kind: 'chat', requests: 40, prompt_tokens: (39 * 40) / 2, completion_tokens: 40, total_tokens: (39 * 40) / 2 + 40 },
      { model: 'other-model', kind: 'chat', requests: 1, prompt_tokens: 100, completion_tokens: 1, total_tokens: 101 },
      { model: 'local', kind: 'completion', requests: 1, prompt_tokens: 200, completion_tokens: 1, total_tokens: 201 },
    ]);
    expect(await database.db.query('SELECT requests, prompt_tokens FROM usage_records WHERE user_id = $1', [other.id])).toEqual([{ requests: 1, prompt_tokens: 300 }]);
    const [monthly] = await database.db.query('SELECT period, requests, tokens FROM usage_monthly WHERE user_id = $1', [user.id]);
    expect(monthly).toMatchObject({ requests: 42, tokens: (39 * 40) / 2 + 40 + 101 + 201 });
    expect((monthly!.period as Date).toISOString().slice(0, 10)).toBe(monthOf(NOW));
    expect(await meter.byModel(user.id, new Date(NOW - 1000))).toEqual([
      { model: 'local', requests: 41, prompt_tokens: (39 * 40) / 2 + 200, completion_tokens: 41, total_tokens: (39 * 40) / 2 + 41 + 200 },
      { model: 'other-model', requests: 1, prompt_tokens: 100, completion_tokens: 1, total_tokens: 101 },
    ]);
  });

  it('splits the calls of one write by month', async () => {
    const { user } = await findOrCreateUser(database.db, `meter-months-${engine}@example.com`);
    const newYear = Date.UTC(2027, 0, 1);
    let now = newYear - 1;
    const meter = createUsageMeter(database.db, () => now, { batchWindowMs: 20 });
    const first = meter.record(record(user.id, 1), { defer: true });
    now = newYear;
    await Promise.all([first, meter.record(record(user.id, 2), { defer: true })]);
    const rows = await database.db.query<{ requests: number; created_at: Date }>('SELECT requests, created_at FROM usage_records WHERE user_id = $1 ORDER BY created_at', [user.id]);
    expect(rows.map((row) => [row.requests, row.created_at.getTime()])).toEqual([
      [1, newYear - 1],
      [1, newYear],
    ]);
    const months = await database.db.query<{ period: Date; requests: number }>('SELECT period, requests FROM usage_monthly WHERE user_id = $1 ORDER BY period', [user.id]);
    expect(months.map((row) => [row.period.toISOString().slice(0, 10), row.requests])).toEqual([
      ['2026-12-01', 1],
      ['2027-01-01', 1],
    ]);
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
    expect(await database.db.query('SELECT sum(requests)::int AS calls FROM usage_records WHERE user_id = $1', [user.id])).toEqual([{ calls: 2 }]);
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
