// What the limit guards cost per request: reading the user's plan (cached and not), counting the request
// in the limiter (memory and Redis), and reading the month's tokens for a quota, on PGlite and, when it
// answers, PostgreSQL. Prints a table of microseconds per operation; asserts nothing.
//
//   npm run bench:limits            (TEST_DATABASE_URL and TEST_REDIS_URL as for the tests)
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createAccountPlans } from '../server/billing/account-plans.ts';
import { createPlanBook, DEFAULT_PLANS } from '../server/billing/plans.ts';
import { findOrCreateUser } from '../server/identity/users.ts';
import { createRateLimiter } from '../server/limits/rate-limiter.ts';
import { availableEngines, createTestDatabase } from '../server/testing/database.ts';
import { availableLimiterBackends, redisUrl, uniqueRedisPrefix } from '../server/testing/redis.ts';
import { createUsageMeter } from '../server/usage/meter.ts';

const ITERATIONS = 2000;

async function perOperation(fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 200; i++) await fn();
  const start = performance.now();
  for (let i = 0; i < ITERATIONS; i++) await fn();
  return ((performance.now() - start) * 1000) / ITERATIONS;
}

const rows: { operation: string; backend: string; 'µs/op': string }[] = [];
const record = (operation: string, backend: string, micros: number) => rows.push({ operation, backend, 'µs/op': micros.toFixed(1) });

const plans = createPlanBook({ ...DEFAULT_PLANS, plans: DEFAULT_PLANS.plans.map((plan) => (plan.id === 'pro' ? { ...plan, stripePriceId: 'price_pro' } : plan)) });
const logger = pino({ level: 'silent' });

for (const engine of await availableEngines()) {
  const database = await createTestDatabase(engine);
  const { user } = await findOrCreateUser(database.db, `bench-${engine}@example.com`);
  const cached = createAccountPlans({ db: database.db, plans, billingEnabled: true, logger });
  const uncached = createAccountPlans({ db: database.db, plans, billingEnabled: true, logger, ttlMs: 0 });
  record('plan lookup, cached (5 s TTL)', engine, await perOperation(() => cached.planOf(user.id)));
  record('plan lookup, no cache (one SELECT)', engine, await perOperation(() => uncached.planOf(user.id)));
  const usage = createUsageMeter(database.db, Date.now);
  record('tokens this month (quota read)', engine, await perOperation(() => usage.tokensThisMonth(user.id)));
  await database.drop();
}

for (const backend of await availableLimiterBackends()) {
  const redis = backend === 'redis' ? new Redis(redisUrl) : undefined;
  const limiter = createRateLimiter({ ...(redis ? { redis } : {}), keyPrefix: uniqueRedisPrefix() });
  const rule = { name: 'requests', points: 1_000_000, windowSeconds: 60 };
  record('limiter consume', backend, await perOperation(() => limiter.consume(rule, 'bench-user')));
  redis?.disconnect();
}

console.table(rows);
