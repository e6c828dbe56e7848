// Quotas over registered counters: enforced where a counter exists, left out (and logged once) where
// none does, and 402 details for each quota used up.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS, createPlanBook } from '../billing/plans.ts';
import { ApiError } from '../errors.ts';
import { findOrCreateUser } from '../identity/users.ts';
import type { Db } from '../store/db.ts';
import { availableEngines, createTestDatabase, type TestDatabase } from '../testing/database.ts';
import { createUsageMeter } from '../usage/meter.ts';
import { createQuotas, utcMonth } from './quotas.ts';
import { quotaMetricsOf } from './guards.ts';

function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const plans = createPlanBook(DEFAULT_PLANS);
const free = plans.get('free')!;
const enterprise = plans.get('enterprise')!;
const NOW = Date.UTC(2026, 10, 15, 12);

describe.each(await availableEngines())('quotas on %s', (engine) => {
  let database: TestDatabase;
  let db: Db;
  let userId: string;
  beforeAll(async () => {
    database = await createTestDatabase(engine);
    db = database.db;
    userId = (await findOrCreateUser(db, `quota-${engine}@example.com`)).user.id;
  });
  afterAll(() => database?.drop());

  it('enforces a registered counter, says which quotas nothing counts, and leaves those out', async () => {
    const { logger, lines } = capturingLogger();
    let agents = 4;
    const quotas = createQuotas({ usage: createUsageMeter(db, () => NOW), counters: { agents: async () => agents }, clock: () => NOW, logger });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, metrics: ['teams', 'knowledge_documents', 'knowledge_bytes'] });
    expect(quotas.counted).toEqual(['tokens_per_month', 'runs_per_day', 'agents']);

    expect(await quotas.enforce(userId, free, ['agents'])).toEqual([{ metric: 'agents', used: 4, limit: 5, resetsAt: null }]);
    agents = 5;
    const refused = await quotas.enforce(userId, free, ['agents']).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 402, code: 'quota_exceeded', details: [{ metric: 'agents', limit: 5, used: 5 }] });
    // Unlimited on another plan.
    expect(await quotas.enforce(userId, enterprise, ['agents'])).toEqual([{ metric: 'agents', used: 5, limit: null, resetsAt: null }]);
    // A quota nobody counts is not read at all, rather than read as 0.
    expect(await quotas.read(userId, free, ['teams', 'knowledge_bytes'])).toEqual([]);
  });

  it('names every quota used up at once, from the usage meter', async () => {
    const usage = createUsageMeter(db, () => NOW);
    const quotas = createQuotas({ usage, counters: {}, clock: () => NOW, logger: pino({ level: 'silent' }) });
    await usage.record({ userId, apiKeyId: null, model: 'local', kind: 'chat', promptTokens: 100_000, completionTokens: 0 });
    for (let run = 0; run < 200; run++) await usage.recordRun(userId);
    const refused = await quotas.enforce(userId, free, quotaMetricsOf('chatWithAgent')).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: 'quota_exceeded',
      details: [
        { metric: 'tokens_per_month', limit: 100_000, used: 100_000 },
        { metric: 'runs_per_day', limit: 200, used: 200 },
      ],
    });
  });

  it('maps operations to the quotas they spend', () => {
    expect(quotaMetricsOf('createChatCompletion')).toEqual(['tokens_per_month']);
    expect(quotaMetricsOf('respondWithTeam')).toEqual(['tokens_per_month', 'runs_per_day']);
    expect(quotaMetricsOf('createKnowledgeDocument')).toEqual(['knowledge_documents', 'knowledge_bytes']);
    expect(quotaMetricsOf('listAgents')).toEqual([]);
    expect(utcMonth(Date.UTC(2026, 11, 31, 23, 59))).toEqual({ start: new Date('2026-12-01T00:00:00Z'), end: new Date('2027-01-01T00:00:00Z') });
  });
});
