// The local Redis for tests of shared state (rate limits across servers). Like availableEngines(): used
// when it answers, and required on CI.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

export const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export type LimiterBackend = 'memory' | 'redis';

let reachable: Promise<boolean> | undefined;

export async function availableLimiterBackends(): Promise<LimiterBackend[]> {
  reachable ??= (async () => {
    const client = new Redis(redisUrl, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      await client.connect();
      return (await client.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  })();
  if (await reachable) return ['memory', 'redis'];
  if (process.env.CI) throw new Error(`Redis at ${redisUrl} is required on CI but does not answer.`);
  return ['memory'];
}

/** A key prefix no other test run uses, so that test files running at once never share counters. */
export function uniqueRedisPrefix(): string {
  return `oaa-test-${randomUUID()}`;
}

/** Environment for a test server on `backend`: REDIS_URL and a fresh REDIS_KEY_PREFIX for Redis. */
export function limiterEnv(backend: LimiterBackend, prefix = uniqueRedisPrefix()): Record<string, string> {
  return backend === 'redis' ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix } : {};
}
